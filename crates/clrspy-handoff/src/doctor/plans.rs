//! The plan for a symptom: what to collect, why, the exact clrspy commands, what each costs
//! the process and the disk, and the trade-offs — adapted to the environment (privileges,
//! ptrace, the kernel sampler, containers, free disk).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clrspy_values::human_bytes;
use serde::{Serialize, Serializer};

use super::environment::Environment;
use crate::symptom::Symptom;

/// Below this much free disk a bundle is warned about (traces, snapshots and reports).
const LOW_DISK: u64 = 1 << 30;

/// What to do for a symptom.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Plan {
    /// The symptom.
    #[serde(serialize_with = "symptom_name")]
    pub(crate) symptom: Symptom,
    /// The environment it was made for.
    pub(crate) environment: Environment,
    /// The steps, in order.
    pub(crate) steps: Vec<Step>,
    /// What the choices trade, and what to change when the environment differs.
    pub(crate) tradeoffs: Vec<String>,
}

/// One step of a plan.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub(crate) struct Step {
    /// What it collects or shows.
    pub(crate) what: String,
    /// Why it is needed for this symptom.
    pub(crate) why: String,
    /// The exact command (`PID`, `COMMAND` are placeholders when not known).
    pub(crate) command: String,
    /// What it costs the process and the disk, and its risk.
    pub(crate) cost: String,
}

fn symptom_name<S: Serializer>(s: &Symptom, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.name())
}

/// The plan for `symptom` in `env`, for process `pid` (`PID` in the commands when none),
/// with a 30-second window and the bundle's default name.
#[cfg(test)]
pub(crate) fn plan(symptom: Symptom, env: &Environment, pid: Option<u32>) -> Plan {
    let output = default_output(symptom, pid);
    plan_for(symptom, env, pid, Duration::from_secs(30), &output)
}

/// The plan with a window of `window`, writing the bundle to `output`.
pub(crate) fn plan_for(
    symptom: Symptom,
    env: &Environment,
    pid: Option<u32>,
    window: Duration,
    output: &Path,
) -> Plan {
    let c = Ctx::new(symptom, env, pid, window, output);
    let mut steps = Vec::new();
    if let Some(s) = c.access_step() {
        steps.push(s);
    }
    steps.extend(match symptom {
        Symptom::HighCpu => c.high_cpu(),
        Symptom::MemoryLeak => c.memory_leak(),
        Symptom::SlowRequests => c.slow_requests(),
        Symptom::Hang => c.hang(),
        Symptom::RequestErrors => c.request_errors(),
        Symptom::Starvation => c.starvation(),
        Symptom::ExcessiveGc => c.excessive_gc(),
        Symptom::HttpErrors => c.http_errors(),
        Symptom::AssemblyLoad => c.assembly_load(),
        Symptom::Crash => c.crash(),
    });
    if let Some(s) = c.copy_out_step() {
        steps.push(s);
    }
    let mut tradeoffs = c.symptom_tradeoffs();
    tradeoffs.extend(c.environment_tradeoffs());
    Plan {
        symptom,
        environment: env.clone(),
        steps,
        tradeoffs,
    }
}

/// `clrspy-SYMPTOM-PID.zip` (`clrspy-SYMPTOM.zip` without a process) in the current folder.
pub(crate) fn default_output(symptom: Symptom, pid: Option<u32>) -> PathBuf {
    match pid {
        Some(p) => PathBuf::from(format!("clrspy-{}-{p}.zip", symptom.name())),
        None => PathBuf::from(format!("clrspy-{}.zip", symptom.name())),
    }
}

/// What every step's text is made from.
struct Ctx<'a> {
    symptom: Symptom,
    env: &'a Environment,
    /// `4242`, or `PID`.
    pid: String,
    /// `30s`.
    window: String,
    /// The bundle's file (`clrspy-high-cpu-4242.zip`).
    zip: String,
}

fn step(what: &str, why: &str, command: String, cost: &str) -> Step {
    Step {
        what: what.into(),
        why: why.into(),
        command,
        cost: cost.into(),
    }
}

/// `90s` as `90s`, `120s` as `2m`.
pub(crate) fn duration_text(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_millis() != 0 || s == 0 {
        format!("{}ms", d.as_millis())
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

impl<'a> Ctx<'a> {
    fn new(
        symptom: Symptom,
        env: &'a Environment,
        pid: Option<u32>,
        window: Duration,
        output: &Path,
    ) -> Ctx<'a> {
        Ctx {
            symptom,
            env,
            pid: pid.map_or_else(|| "PID".to_string(), |p| p.to_string()),
            window: duration_text(window),
            zip: output.display().to_string(),
        }
    }

    /// `clrspy bundle -p PID --symptom S --duration 30s -o clrspy-S.zip`.
    fn bundle(&self) -> String {
        format!(
            "clrspy bundle -p {} --symptom {} --duration {} -o {}",
            self.pid,
            self.symptom.name(),
            self.window,
            self.zip
        )
    }

    /// `clrspy report clrspy-S.zip KIND`.
    fn report(&self, kind: &str) -> String {
        format!("clrspy report {} {kind}", self.zip)
    }

    /// What the sampled profiles cost. The bundle records with the runtime's sampler, which
    /// suspends every thread at each sample — scaled here by the process's threads — except
    /// on a process of [`MANY_THREADS`](crate::gather::MANY_THREADS) or more, where it takes the kernel's where allowed.
    fn sampling_cost(&self) -> String {
        let threads = self.env.target.as_ref().and_then(|t| t.threads);
        let kernel = self.env.kernel_sampler.allowed && self.env.kernel_sampler.note.is_none();
        match threads {
            Some(n) if n >= crate::gather::MANY_THREADS && kernel => format!(
                "the process has {n} threads: the bundle samples with the kernel's sampler (nothing suspended; a blocked thread costs it nothing), about 3-10% of a core for clrspy"
            ),
            Some(n) if n >= crate::gather::MANY_THREADS => format!(
                "the runtime's sampler suspends all {n} threads about 1000 times a second: on this many threads sampling can take most of the process's CPU (measured: 322 threads, 94%); keep the window short"
            ),
            Some(n) => format!(
                "the runtime's sampler suspends every managed thread ({n} threads now) about 1000 times a second: expect 8-20% less throughput on a busy app while it records"
            ),
            None => "the runtime's sampler suspends every managed thread about 1000 times a second: \
                     expect 8-20% less throughput on a busy app while it records"
                .into(),
        }
    }

    /// The bundle step's cost: the profile's, and the disk.
    fn bundle_cost(&self, profile_cost: &str) -> String {
        let mut s = format!("{profile_cost}; for {}", self.window);
        if let Some(free) = self.env.free_disk_bytes {
            s.push_str(&format!(
                "; {} free in {}",
                human_bytes(free),
                self.env.output_dir
            ));
            if free < LOW_DISK {
                s.push_str(" - low: free space first");
            }
        }
        s
    }

    /// When clrspy cannot attach to the named process: how to get there first.
    fn access_step(&self) -> Option<Step> {
        let t = self.env.target.as_ref()?;
        if t.can_attach {
            return None;
        }
        let (why, command) = if !t.diagnostics_socket {
            (
                format!(
                    "process {} has no diagnostics socket clrspy can see: it is not a .NET process, \
                     it runs with DOTNET_EnableDiagnostics=0, or its temporary folder is private \
                     (another container); every step below needs the socket",
                    t.pid
                ),
                "clrspy ps".to_string(),
            )
        } else {
            (
                format!(
                    "process {} runs as another user: its diagnostics socket is its user's only; \
                     run clrspy as that user or as root",
                    t.pid
                ),
                format!(
                    "sudo clrspy doctor -p {} --symptom {}",
                    t.pid,
                    self.symptom.name()
                ),
            )
        };
        Some(Step {
            what: "Reach the process first".into(),
            why,
            command,
            cost: "none".into(),
        })
    }

    fn high_cpu(&self) -> Vec<Step> {
        vec![
            step(
                "The hottest methods now, live",
                "a first look while the CPU is high: which methods burn it, refreshed every second",
                format!("clrspy top -p {}", self.pid),
                "a sampling session while it runs (Ctrl+C ends it)",
            ),
            Step {
                what: "A CPU trace with each thread's CPU time, with the app's logs, system metrics and counters over the same window".into(),
                why: "CPU samples by stack, told apart from waiting by each thread's measured CPU time: the code that burns the CPU, with what the machine and the app did meanwhile".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&self.sampling_cost()),
            },
            step(
                "CPU time by method, as a call tree",
                "where the CPU goes, waiting threads excluded (the bundle holds this report as text, JSON and HTML)",
                format!("{} --tree", self.report("cpu")),
                "none (reads the bundle)",
            ),
        ]
    }

    fn memory_leak(&self) -> Vec<Step> {
        let snapshot_size = match self.env.target.as_ref().and_then(|t| t.rss_bytes) {
            Some(rss) => format!(
                "each snapshot's file grows with the number of objects on the heap (the process holds {} now)",
                human_bytes(rss)
            ),
            None => "each snapshot's file grows with the number of objects on the heap".into(),
        };
        vec![
            step(
                "The GC heap's size over a few minutes",
                "a leak grows gc-heap-size across gen2 GCs and never gives it back; a heap that falls back after each gen2 is no leak",
                format!("clrspy counters monitor -p {}", self.pid),
                "none measurable: the runtime sends its counters once a second",
            ),
            Step {
                what: "A heap snapshot before and after the window, their diff, and an allocation trace between them".into(),
                why: "the diff names the types whose count and size grew, with the roots that keep them; the allocation trace shows the code that allocates them".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&format!(
                    "each snapshot pauses the process for a full blocking GC (up to seconds on a large heap); {snapshot_size}; allocation sampling adds a little to allocation-heavy code"
                )),
            },
            step(
                "What grew between the two snapshots",
                "types by growth of count and retained size, with what holds them: the bundle's heap/before.gcdump against its heap/after.gcdump (the bundle holds this diff too, as heap/diff.txt)",
                format!("clrspy heap diff {}", self.zip),
                "none (reads the bundle's snapshots)",
            ),
            step(
                "Who allocates",
                "allocations by type and stack over the window",
                self.report("alloc"),
                "none (reads the bundle)",
            ),
        ]
    }

    fn slow_requests(&self) -> Vec<Step> {
        vec![
            Step {
                what: "Every thread's stack first, then the requests served (route, status, duration) with thread-time samples".into(),
                why: "each slow request's time splits into CPU and what its thread waited on (locks, I/O, sync-over-async)".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&self.sampling_cost()),
            },
            step(
                "Requests by route with percentiles, the slowest with what their threads did",
                "which routes are slow and why",
                self.report("requests"),
                "none (reads the bundle)",
            ),
            step(
                "Waiting time by method",
                "blocked calls that hold requests up: locks, I/O, thread-pool starvation",
                self.report("waits"),
                "none (reads the bundle)",
            ),
        ]
    }

    fn request_errors(&self) -> Vec<Step> {
        vec![
            Step {
                what: "The requests served (route, status, duration), the app's exceptions with their throw sites and its log messages, with thread-time samples".into(),
                why: "which routes fail, with which status, and the exception or log line behind each failure".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&self.sampling_cost()),
            },
            step(
                "Requests by route with their statuses and errors",
                "which routes answer 5xx, how often, and how long they took",
                self.report("requests"),
                "none (reads the bundle)",
            ),
            step(
                "Exceptions by type, with the app's throw site and how often each was rethrown",
                "the exception behind the 500s: its message, where the app threw it, who caught it",
                self.report("exceptions"),
                "none (reads the bundle)",
            ),
            step(
                "The app's log messages of level Warning and above, live",
                "what the app itself says when a request fails (ILogger, through its EventSource logger); Ctrl+C stops",
                format!("clrspy logs -p {} --level Warning", self.pid),
                "small: one event per message at that level or above",
            ),
        ]
    }

    fn starvation(&self) -> Vec<Step> {
        vec![
            step(
                "The thread pool's counters live",
                "starvation shows as dotnet.thread_pool.queue.length staying above 0 while dotnet.thread_pool.thread.count climbs slowly (about one thread a second)",
                format!("clrspy counters monitor -p {}", self.pid),
                "none measurable: the runtime sends its counters once a second",
            ),
            step(
                "Every thread's stack, twice a few seconds apart",
                "pool threads whose stacks are the same both times, in Task.Wait/.Result or a lock, are the ones the pool is waiting for",
                format!("clrspy stack -p {p} && sleep 5 && clrspy stack -p {p}", p = self.pid),
                "a moment's sampling session each; nothing is paused beyond it",
            ),
            Step {
                what: "Every thread's stack first, then a trace of the pool's injections, blocking waits and lock waits with thread-time samples".into(),
                why: "the call that blocks the pool's threads (sync over async: Task.Result, .Wait(), GetAwaiter().GetResult()), and how many threads the pool added meanwhile".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&self.sampling_cost()),
            },
            step(
                "The starvation verdict, the blocking calls and the injections",
                "how many threads the pool injected, and the call sites the blocked pool threads wait in",
                self.report("hangs"),
                "none (reads the bundle)",
            ),
            step(
                "Waiting time by method",
                "the same waits weighed by time, with the callers that block",
                self.report("waits"),
                "none (reads the bundle)",
            ),
        ]
    }

    fn hang(&self) -> Vec<Step> {
        let mut steps = vec![
            step(
                "Who holds which lock now, and the deadlock cycles",
                "the runtime's own table of monitors and their owners, read from a heap dump: a deadlock that began before anyone recorded is named with its threads, locks and how many wait behind each (a trace sees only the waits that start while it records)",
                format!("clrspy report hangs -p {}", self.pid),
                "the process is paused while its runtime writes a heap dump (about a second per few hundred MB of heap); the dump is kept",
            ),
            step(
                "Every thread's stack, twice a few seconds apart",
                "threads whose stacks are the same both times are stuck there: a deadlock, a wait that never ends, a starved thread pool",
                format!("clrspy stack -p {p} && sleep 5 && clrspy stack -p {p}", p = self.pid),
                "a moment's sampling session each; nothing is paused beyond it",
            ),
            Step {
                what: "Every thread's stack first, then a thread-time trace with lock waits and their owners, wait handles and the thread pool's injections".into(),
                why: "who waits on whom, for how long: deadlocks, blocked threads, thread-pool starvation".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&self.sampling_cost()),
            },
            step(
                "Deadlocks, blocked threads, starvation and long waits",
                "the hang's cause, from the trace",
                self.report("hangs"),
                "none (reads the bundle)",
            ),
        ];
        steps.push(self.dump_step(
            "Optionally, a dump of the whole process",
            "keeps every thread's stack, the modules and the managed heap (`clrspy dump analyze`, or a debugger), when the trace is not enough",
        ));
        steps
    }

    /// A `clrspy dump` step with its size and the disk.
    fn dump_step(&self, what: &str, why: &str) -> Step {
        let size = match self.env.target.as_ref().and_then(|t| t.rss_bytes) {
            Some(rss) => format!(
                "about {} before compression (the process's RSS)",
                human_bytes(rss)
            ),
            None => "about the process's resident memory (VmRSS) before compression".into(),
        };
        let mut cost = format!(
            "the process is paused while its runtime writes the dump (seconds to minutes); {size}, zstd-compressed as it is written (often 10-100x smaller)"
        );
        let rss = self.env.target.as_ref().and_then(|t| t.rss_bytes);
        if let Some(free) = self.env.free_disk_bytes {
            cost.push_str(&format!(
                "; {} free in {}",
                human_bytes(free),
                self.env.output_dir
            ));
            if rss.is_some_and(|r| free < r) {
                cost.push_str(
                    " - less than the raw dump: free space first, or keep the compression on",
                );
            }
        }
        Step {
            what: what.into(),
            why: why.into(),
            command: format!("clrspy dump -p {}", self.pid),
            cost,
        }
    }

    fn excessive_gc(&self) -> Vec<Step> {
        vec![
            step(
                "GC counters live",
                "time in GC, gen0/1/2 counts and the allocation rate show how bad it is and whether gen2 or allocation drives it",
                format!("clrspy counters monitor -p {}", self.pid),
                "none measurable: the runtime sends its counters once a second",
            ),
            Step {
                what: "Every GC with its pause, generation and reason, and allocation ticks with type and stack".into(),
                why: "which GCs pause longest and why they happen, and the code whose allocations trigger them".into(),
                command: self.bundle(),
                cost: self.bundle_cost("an allocation tick every ~100 KB allocated, with its stack: a few % in allocation-heavy code"),
            },
            step(
                "One row per GC, and totals",
                "pauses, generations, reasons, time in GC",
                self.report("gc"),
                "none (reads the bundle)",
            ),
            step(
                "Allocations by type and stack",
                "what to allocate less of",
                self.report("alloc"),
                "none (reads the bundle)",
            ),
        ]
    }

    fn http_errors(&self) -> Vec<Step> {
        vec![
            Step {
                what: "Outgoing HTTP requests with DNS, connect and TLS, from the System.Net event sources, with thread-time samples".into(),
                why: "each failed request with its status, the error kind (timeout, refused, DNS, TLS) and how long each phase took".into(),
                command: self.bundle(),
                cost: self.bundle_cost(&format!(
                    "an event per request phase (small), and {}",
                    self.sampling_cost()
                )),
            },
            step(
                "Requests by host, errors by kind, pool waits, the slowest with DNS/TLS time",
                "what fails, against which host, and in which phase",
                self.report("http"),
                "none (reads the bundle)",
            ),
            step(
                "Exceptions by type, message, throw and catch site",
                "HttpRequestException, TaskCanceledException (timeouts), SocketException, AuthenticationException with where they are thrown and caught",
                self.report("exceptions"),
                "none (reads the bundle)",
            ),
        ]
    }

    fn assembly_load(&self) -> Vec<Step> {
        vec![
            Step {
                what: "Every assembly load with its load context and the paths probed, from the program's start".into(),
                why: "most loads happen at start: starting the program under clrspy records them all; attaching (-p) sees only later loads (plugins)".into(),
                command: format!(
                    "clrspy bundle --symptom assembly-load --duration {} -o {} -- COMMAND",
                    self.window, self.zip
                ),
                cost: self.bundle_cost("loader events only: little, even at start"),
            },
            step(
                "Loads per load context, failed loads with their probed paths, assemblies loaded twice",
                "which assembly failed, where the runtime looked, and version conflicts",
                self.report("loader"),
                "none (reads the bundle)",
            ),
        ]
    }

    fn crash(&self) -> Vec<Step> {
        let mut steps = vec![
            step(
                "Start the program under clrspy: exceptions traced, a dump if it crashes",
                "the exceptions that led to the crash, the fatal one with its stack, and a dump with the crash report (the runtime reads its crash-dump settings at start, so attaching later cannot arm them)",
                "clrspy record --profile exceptions --dump-on-crash -o crash.nettrace -- COMMAND".into(),
                "exception events only: little; the dump is about the process's memory at the crash, compressed as written",
            ),
            step(
                "Or, for a service started elsewhere, a watch rules file with an on_crash dump rule",
                "watch applies it to every new process it matches; start the service with DOTNET_DbgEnableMiniDump=1 so its runtime writes the dump",
                "clrspy rules example > rules.toml && clrspy watch --rules rules.toml".into(),
                "watch polls for new processes (every 250 ms); dumps as the rule limits them",
            ),
            step(
                "Exceptions by type, message, throw and catch site",
                "the fatal exception and those before it",
                "clrspy report crash.nettrace exceptions".into(),
                "none (reads the trace)",
            ),
        ];
        if self.env.target.is_some() {
            steps.insert(
                0,
                Step {
                    what: "The running process's exceptions, logs and metrics until it crashes or the window ends".into(),
                    why: "what it throws now; a crash in the window ends the bundle with the fatal exception".into(),
                    command: self.bundle(),
                    cost: self.bundle_cost("exception events only: little"),
                },
            );
        }
        steps
    }

    /// When clrspy runs in a container: how to get the files out.
    fn copy_out_step(&self) -> Option<Step> {
        let c = self.env.container.as_ref()?;
        let file = if self.symptom == Symptom::Crash && self.env.target.is_none() {
            "crash.nettrace"
        } else {
            self.zip.as_str()
        };
        let at = if file.starts_with('/') {
            file.to_string()
        } else {
            format!("{}/{file}", self.env.output_dir.trim_end_matches('/'))
        };
        let file = Path::new(file)
            .file_name()
            .map_or_else(|| file.to_string(), |f| f.to_string_lossy().into_owned());
        let command = if c.runtime == "kubernetes" {
            format!("kubectl cp {}:{at} ./{file}", self.env.hostname)
        } else {
            let name =
                c.id.as_deref()
                    .and_then(|id| id.get(..12))
                    .unwrap_or("CONTAINER");
            let tool = if c.runtime == "podman" {
                "podman"
            } else {
                "docker"
            };
            format!("{tool} cp {name}:{at} ./{file}")
        };
        Some(Step {
            what: "Copy the files out of the container".into(),
            why: format!(
                "clrspy runs in a {} container: its files land in the container's file system ({}), which goes away with it",
                c.runtime, self.env.output_dir
            ),
            command,
            cost: "none".into(),
        })
    }

    fn symptom_tradeoffs(&self) -> Vec<String> {
        let s: &[&str] = match self.symptom {
            Symptom::HighCpu => &[
                "A window of 30 s is enough while the CPU stays high; for short spikes keep a ring and stop on the spike (`clrspy bundle --ring 256MB --stop-on counter=cpu-usage>80`).",
                "The CPU report needs each thread's CPU time to tell burning from waiting; the `thread-time` profile counts waiting too (for slow work that is not CPU).",
            ],
            Symptom::MemoryLeak => &[
                "The longer the window between the two snapshots, the clearer the growth stands above the noise of normal work; each snapshot pauses the process, so not too often.",
                "A heap dump (`clrspy dump --type heap`) keeps the values too, for a debugger, but is about the size of the process; snapshots keep types, sizes and references only.",
            ],
            Symptom::SlowRequests => &[
                "Record while requests are slow: a window of quiet traffic shows nothing; under load, the sampler's cost shows in the latencies too.",
            ],
            Symptom::RequestErrors => &[
                "Record while requests fail: the trace sees only the failures in its window; for a rare one, keep a ring and stop on it (`clrspy bundle --ring 256MB --stop-on exception=TYPE`).",
            ],
            Symptom::Starvation => &[
                "Starvation shows under load only: record while requests queue. Two `stack` calls already show the blocked pool threads; the trace adds the injections and waits over time.",
                "On a process with hundreds of blocked threads the runtime's sampler suspends every one of them at each sample; the kernel's (`clrspy record -p PID`, the default where the kernel allows it) costs nothing for blocked threads.",
            ],
            Symptom::Hang => &[
                "Two `stack` calls are quick and safe; the trace shows waits over time; a dump keeps everything but pauses the process and is large.",
                "A process hung in native code or the runtime shows no managed frames in `stack`; `clrspy stack --native` or the dump shows them.",
            ],
            Symptom::ExcessiveGc => &[
                "The `gc-collect` profile costs least (GC events only) but cannot say who allocates; `gc-verbose` adds allocation ticks with stacks.",
            ],
            Symptom::HttpErrors => &[
                "The System.Net events are verbose under heavy traffic; to catch a rare failure, keep a ring and stop on it (`--ring 256MB --stop-on exception=System.Net.*`).",
            ],
            Symptom::AssemblyLoad => &[
                "Starting under clrspy (`-- COMMAND`) sees every load; attaching (`-p`) sees only loads after it, which is enough for plugins loaded on demand.",
            ],
            Symptom::Crash => &[
                "A dump at the crash holds everything but is as large as the process; the trace alone shows the exceptions and is small.",
            ],
        };
        s.iter().map(|x| x.to_string()).collect()
    }

    fn environment_tradeoffs(&self) -> Vec<String> {
        let env = self.env;
        let mut out = Vec::new();
        let sampled = matches!(
            self.symptom,
            Symptom::HighCpu
                | Symptom::SlowRequests
                | Symptom::Hang
                | Symptom::HttpErrors
                | Symptom::RequestErrors
                | Symptom::Starvation
        );
        if sampled && env.kernel_sampler.allowed && env.kernel_sampler.note.is_none() {
            out.push("The kernel's CPU sampler is allowed here, and `clrspy record -p PID` uses it by default (`--sampler auto`): it samples without suspending the threads (on-CPU samples, native frames, waits with their stacks) — an alternative to the bundle's trace (the runtime's sampler) when that costs too much.".into());
        } else if sampled && env.kernel_sampler.allowed {
            out.push(format!(
                "The kernel's CPU sampler samples user mode only here ({}): `clrspy record` keeps the runtime's sampler by default (`--sampler auto`); `--sampler kernel` samples without suspending the threads, but waits have no stacks.",
                env.kernel_sampler.note.as_deref().unwrap_or("no kernel mode")
            ));
        } else if sampled {
            out.push(format!(
                "The kernel refused its CPU sampler here ({}): only the runtime's sampler can be used, which suspends the threads to sample and cannot tell CPU from waiting as exactly.",
                env.kernel_sampler.note.as_deref().unwrap_or("perf events not allowed")
            ));
        }
        let takes_dump = matches!(self.symptom, Symptom::Hang | Symptom::Crash);
        if takes_dump {
            match env.ptrace_scope {
                Some(3) => out.push("ptrace is disabled on this machine (kernel.yama.ptrace_scope=3): the runtime cannot write dumps and `stack --native` has no native stacks, even as root; the traces work.".into()),
                Some(2) => out.push("ptrace is for administrators only here (kernel.yama.ptrace_scope=2): dumps and `stack --native` need root (CAP_SYS_PTRACE).".into()),
                _ => {}
            }
            if env.container.is_some() {
                out.push("In a container, dumps need the ptrace capability: if `clrspy dump` fails, run the container with `--cap-add=SYS_PTRACE` (Kubernetes: securityContext.capabilities.add SYS_PTRACE).".into());
            }
        }
        if let Some(t) = &env.target {
            if t.diagnostics_socket && !t.same_user && !env.is_root {
                out.push(format!(
                    "Process {} runs as another user: run clrspy as that user (`sudo -u USER clrspy ...`) or as root; dumps and stacks likewise.",
                    t.pid
                ));
            }
            if let Some(c) = &t.container {
                out.push(format!(
                    "The process runs in a {} container apart from clrspy: clrspy reaches it through /proc/{}/root; files the runtime writes (dumps) land in its temporary folder first.",
                    c.runtime, t.pid
                ));
            }
        }
        if env.free_disk_bytes.is_some_and(|f| f < LOW_DISK) {
            out.push(format!(
                "Only {} free in {}: write elsewhere (-o on another disk) before taking snapshots or dumps.",
                human_bytes(env.free_disk_bytes.unwrap_or(0)),
                env.output_dir
            ));
        }
        out
    }
}

#[cfg(test)]
#[path = "plans_tests.rs"]
mod tests;
