//! What reports need, as their declarations ([`super::ReportDef`]) say: recorded ([`Needs`]:
//! the runtime provider's keywords and level, and whether thread samples; `clrspy profile`
//! derives the providers it enables from the reports chosen) and analysed ([`Models`]: the
//! models it reads; `clrspy report gc` runs only those). The registry ([`crate::report`])
//! answers these for a set of reports.

/// The runtime's `GC` keyword: GC events and allocation ticks.
pub(crate) const GC: u64 = 0x1;
/// The runtime's `Loader` and `Jit` keywords: method and module names, always on.
pub const LOADER_AND_JIT: u64 = 0x8 | 0x10;
/// The runtime's `Contention` keyword.
pub(crate) const CONTENTION: u64 = 0x4000;
/// The runtime's `Exception` keyword.
pub(crate) const EXCEPTION: u64 = 0x8000;
/// The runtime keywords of the time reports (dotnet-trace's cpu-sampling set).
pub(crate) const SAMPLING: u64 = 0x0014_C14F_CCBD;

/// What one report needs recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Keywords of the runtime provider (`Microsoft-Windows-DotNETRuntime`).
    pub runtime_keywords: u64,
    /// The runtime provider's level (4 informational, 5 verbose).
    pub runtime_level: u32,
    /// Thread samples (`Microsoft-DotNETCore-SampleProfiler`).
    pub samples: bool,
    /// Other providers, in `Name:Keywords:Level[:Args]` form, comma-separated (empty: none):
    /// the EventSources of the request, HTTP and logging reports.
    pub providers: &'static str,
    /// The `clrspy record --profile` that records what the report reads (its "nothing
    /// recorded" line names it), when one does.
    pub profile: Option<&'static str>,
}

impl Needs {
    /// Runtime events of these keywords at this level, no samples.
    pub const fn runtime(runtime_keywords: u64, runtime_level: u32) -> Needs {
        Needs {
            runtime_keywords,
            runtime_level,
            samples: false,
            providers: "",
            profile: None,
        }
    }

    /// The same, with these providers too (`Name:Keywords:Level[:Args]`, comma-separated).
    pub(crate) const fn with_providers(self, providers: &'static str) -> Needs {
        Needs { providers, ..self }
    }

    /// The same, with thread samples.
    pub(crate) const fn with_samples(self) -> Needs {
        Needs {
            samples: true,
            ..self
        }
    }

    /// The same, naming the profile that records it.
    pub(crate) const fn with_profile(self, profile: &'static str) -> Needs {
        Needs {
            profile: Some(profile),
            ..self
        }
    }

    /// The line a report prints when the trace has none of what it reads: `what` was not
    /// recorded, and the command that records it.
    pub(crate) fn missing_line(&self, what: &str) -> String {
        match self.profile {
            Some(p) => format!(
                "This trace has no {what}: record them with `clrspy record --profile {p}` (attach with -p PID, or -- COMMAND)."
            ),
            None => format!("This trace has no {what}."),
        }
    }

    /// Thread samples, with the runtime's sampling keywords (informational).
    pub const SAMPLES: Needs = Needs {
        runtime_keywords: SAMPLING,
        runtime_level: 4,
        samples: true,
        providers: "",
        profile: None,
    };
}

/// The models a report reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Models {
    /// These, by their names in the model registry (symbols always run).
    Named(&'static [&'static str]),
    /// Those of every report with a summary section (the summary's).
    OfSummarySections,
}
