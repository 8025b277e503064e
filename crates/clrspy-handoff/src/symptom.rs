//! The symptoms `bundle --symptom` and `doctor` know, and what each needs recorded: the trace
//! profile, and what is taken beside the trace (heap snapshots around the window, every
//! thread's stack, a dump on a crash).

use std::fmt;

/// A symptom a user reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Symptom {
    /// The process burns CPU.
    HighCpu,
    /// Memory grows and is not given back.
    MemoryLeak,
    /// Requests are slow (ASP.NET Core).
    SlowRequests,
    /// The process hangs or stops answering.
    Hang,
    /// Requests fail (ASP.NET Core: 500s, errors in the app's logs).
    RequestErrors,
    /// Thread-pool starvation: work queues while the pool grows slowly.
    Starvation,
    /// Too much time in garbage collection.
    ExcessiveGc,
    /// Outgoing HTTP fails: 5xx, timeouts, refused connections, DNS or TLS errors.
    HttpErrors,
    /// Assemblies fail to load (FileNotFoundException, version conflicts, plugins).
    AssemblyLoad,
    /// The process crashes.
    Crash,
}

impl Symptom {
    /// Every symptom, in the order they are offered.
    pub(crate) const ALL: [Symptom; 10] = [
        Symptom::HighCpu,
        Symptom::MemoryLeak,
        Symptom::SlowRequests,
        Symptom::Hang,
        Symptom::ExcessiveGc,
        Symptom::HttpErrors,
        Symptom::AssemblyLoad,
        Symptom::Crash,
        Symptom::RequestErrors,
        Symptom::Starvation,
    ];

    /// The name on the command line: `high-cpu`, `memory-leak`, ...
    pub(crate) fn name(self) -> &'static str {
        match self {
            Symptom::HighCpu => "high-cpu",
            Symptom::MemoryLeak => "memory-leak",
            Symptom::SlowRequests => "slow-requests",
            Symptom::Hang => "hang",
            Symptom::RequestErrors => "request-errors",
            Symptom::Starvation => "starvation",
            Symptom::ExcessiveGc => "excessive-gc",
            Symptom::HttpErrors => "http-errors",
            Symptom::AssemblyLoad => "assembly-load",
            Symptom::Crash => "crash",
        }
    }

    /// One line for a menu.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Symptom::HighCpu => "the process uses much more CPU than expected",
            Symptom::MemoryLeak => "memory grows over time and is not given back",
            Symptom::SlowRequests => "ASP.NET Core requests are slow (latency, timeouts)",
            Symptom::Hang => "the process hangs, deadlocks or stops answering",
            Symptom::RequestErrors => "ASP.NET Core requests fail: 500s, errors in the app's logs",
            Symptom::Starvation => {
                "work queues while the thread pool grows slowly (thread-pool starvation)"
            }
            Symptom::ExcessiveGc => "much time in garbage collection, long GC pauses",
            Symptom::HttpErrors => "outgoing HTTP calls fail: 5xx, timeouts, refused, DNS or TLS",
            Symptom::AssemblyLoad => "assemblies fail to load (FileNotFoundException, versions)",
            Symptom::Crash => "the process crashes or exits unexpectedly",
        }
    }

    /// The symptom named `s` (its name, or a few common other spellings).
    pub(crate) fn parse(s: &str) -> Option<Symptom> {
        let s = s.trim().to_ascii_lowercase().replace('_', "-");
        Symptom::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .or(match s.as_str() {
                "cpu" => Some(Symptom::HighCpu),
                "leak" | "memory" => Some(Symptom::MemoryLeak),
                "slow" | "requests" | "latency" => Some(Symptom::SlowRequests),
                "deadlock" | "hung" => Some(Symptom::Hang),
                "500" | "500s" | "errors" | "failing-requests" => Some(Symptom::RequestErrors),
                "thread-pool" | "threadpool" | "pool" | "thread-pool-starvation" => {
                    Some(Symptom::Starvation)
                }
                "gc" => Some(Symptom::ExcessiveGc),
                "http" | "5xx" | "timeouts" => Some(Symptom::HttpErrors),
                "loader" | "assemblies" => Some(Symptom::AssemblyLoad),
                _ => None,
            })
    }

    /// The trace profile that records what this symptom needs (clr-events' profiles).
    pub(crate) fn profile(self) -> &'static str {
        match self {
            Symptom::HighCpu => "cpu",
            Symptom::MemoryLeak => "alloc",
            Symptom::SlowRequests => "aspnet",
            Symptom::Hang => "hangs",
            Symptom::RequestErrors => "aspnet",
            Symptom::Starvation => "hangs",
            Symptom::ExcessiveGc => "gc-verbose",
            Symptom::HttpErrors => "net",
            Symptom::AssemblyLoad => "loader",
            Symptom::Crash => "exceptions",
        }
    }

    /// True when the bundle takes a heap snapshot before and after the window and their diff.
    pub(crate) fn heap_diff(self) -> bool {
        self == Symptom::MemoryLeak
    }

    /// True when the bundle takes every thread's stack before the window.
    pub(crate) fn stacks_first(self) -> bool {
        matches!(
            self,
            Symptom::Hang | Symptom::SlowRequests | Symptom::Starvation
        )
    }
}

impl fmt::Display for Symptom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// For clap: a symptom, or the list of names.
pub(crate) fn parse_arg(s: &str) -> Result<Symptom, String> {
    Symptom::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Symptom::ALL.iter().map(|x| x.name()).collect();
        format!("unknown symptom '{s}' (one of: {})", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_profiles_exist() {
        for s in Symptom::ALL {
            assert_eq!(Symptom::parse(s.name()), Some(s));
            assert!(
                clr_events::profiles::find_profile(s.profile()).is_some(),
                "{s}"
            );
        }
        assert_eq!(Symptom::parse("Memory_Leak"), Some(Symptom::MemoryLeak));
        assert!(parse_arg("slowness").unwrap_err().contains("memory-leak"));
    }
}
