//! What each report needs, beside the report registry: recorded — the runtime provider's
//! keywords and level, and whether thread samples (`clrspy profile` derives the providers it
//! enables from the reports chosen) — and analysed: the models it reads
//! ([`ReportKind::models`]; `clrspy report gc` runs only those). A report and what it reads are
//! declared in one place.

use clr_events::provider_spec::ProviderSpec;

use super::view::ReportKind;

/// The runtime's `GC` keyword: GC events and allocation ticks.
const GC: u64 = 0x1;
/// The runtime's `Loader` and `Jit` keywords: method and module names, always on.
const LOADER_AND_JIT: u64 = 0x8 | 0x10;
/// The runtime's `Contention` keyword.
const CONTENTION: u64 = 0x4000;
/// The runtime's `Exception` keyword.
const EXCEPTION: u64 = 0x8000;
/// The runtime keywords of the time reports (dotnet-trace's cpu-sampling set).
const SAMPLING: u64 = 0x0014_C14F_CCBD;

/// What one report needs recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Keywords of the runtime provider (`Microsoft-Windows-DotNETRuntime`).
    pub runtime_keywords: u64,
    /// The runtime provider's level (4 informational, 5 verbose).
    pub runtime_level: u32,
    /// Thread samples (`Microsoft-DotNETCore-SampleProfiler`).
    pub samples: bool,
}

impl ReportKind {
    /// What the report needs recorded.
    pub fn needs(self) -> Needs {
        let (runtime_keywords, runtime_level, samples) = match self {
            ReportKind::Cpu | ReportKind::Waits | ReportKind::Threads | ReportKind::Summary => {
                (SAMPLING, 4, true)
            }
            ReportKind::Gc => (GC, 4, false),
            // Allocation ticks are verbose.
            ReportKind::Alloc => (GC, 5, false),
            ReportKind::Exceptions => (EXCEPTION, 4, false),
            // Contention start/stop are verbose.
            ReportKind::Contention => (CONTENTION, 5, false),
        };
        Needs {
            runtime_keywords,
            runtime_level,
            samples,
        }
    }
}

impl ReportKind {
    /// The analysis models the report reads (by their registry names; symbols always run).
    pub fn models(self) -> &'static [&'static str] {
        match self {
            ReportKind::Summary => &["cpu", "alloc", "exceptions", "contention", "gc", "threads"],
            // Stacks of waiting threads are grouped by the threads' names and roles.
            ReportKind::Cpu | ReportKind::Waits | ReportKind::Threads => &["cpu", "threads"],
            // The GC report shows the allocation rate beside the GCs.
            ReportKind::Gc => &["gc", "alloc"],
            ReportKind::Alloc => &["alloc"],
            ReportKind::Exceptions => &["exceptions"],
            ReportKind::Contention => &["contention"],
        }
    }
}

/// The models an analysis for `kinds` runs.
pub fn models_for(kinds: &[ReportKind]) -> clrspy_analysis::ModelSet {
    kinds
        .iter()
        .fold(clrspy_analysis::ModelSet::NONE, |set, k| {
            // Every name is the registry's (a test checks): an unknown one would pick nothing.
            set.union(
                clrspy_analysis::ModelSet::named(k.models())
                    .unwrap_or(clrspy_analysis::ModelSet::ALL),
            )
        })
}

/// The providers a recording for `kinds` enables: the runtime provider with the union of
/// their keywords (loader and JIT always, for names) at the highest level any needs, and the
/// sample profiler when one needs samples.
pub fn providers_for(kinds: &[ReportKind]) -> Vec<ProviderSpec> {
    let mut keywords = LOADER_AND_JIT;
    let mut level = 4;
    let mut samples = false;
    for n in kinds.iter().map(|k| k.needs()) {
        keywords |= n.runtime_keywords;
        level = level.max(n.runtime_level);
        samples |= n.samples;
    }
    let mut p = vec![ProviderSpec {
        name: clr_events::RUNTIME_PROVIDER.into(),
        keywords,
        level,
        arguments: None,
    }];
    if samples {
        p.push(ProviderSpec {
            name: clr_events::SAMPLE_PROFILER_PROVIDER.into(),
            keywords: 0,
            level: 5,
            arguments: None,
        });
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(kinds: &[ReportKind]) -> (u64, u32, usize) {
        let p = providers_for(kinds);
        assert_eq!(p[0].name, clr_events::RUNTIME_PROVIDER);
        (p[0].keywords, p[0].level, p.len())
    }

    #[test]
    fn profiles_default_set_is_the_recorded_session_of_before() {
        use ReportKind::*;
        // `clrspy profile` with no report named: cpu, waits, gc, exceptions, contention.
        let p = providers_for(&[Cpu, Waits, Gc, Exceptions, Contention]);
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].keywords, p[0].level),
            (0x18 | 0x0014_C14F_CCBD | 0x1 | 0x8000 | 0x4000, 5)
        );
        assert_eq!(
            (p[1].name.as_str(), p[1].keywords, p[1].level),
            (clr_events::SAMPLE_PROFILER_PROVIDER, 0, 5)
        );
    }

    #[test]
    fn every_report_names_models_of_the_registry() {
        for k in ReportKind::ALL {
            assert!(
                clrspy_analysis::ModelSet::named(k.models()).is_ok(),
                "{}: {:?}",
                k.name(),
                k.models()
            );
        }
        let gc = models_for(&[ReportKind::Gc]);
        assert!(gc.contains(clrspy_analysis::ModelKind::Gc));
        assert!(
            !gc.contains(clrspy_analysis::ModelKind::Cpu),
            "report gc runs no CPU model"
        );
    }

    #[test]
    fn each_report_adds_its_keywords() {
        use ReportKind::*;
        assert_eq!(runtime(&[Gc]), (0x19, 4, 1));
        assert_eq!(runtime(&[Alloc]), (0x19, 5, 1));
        assert_eq!(runtime(&[Exceptions]), (0x8018, 4, 1));
        assert_eq!(runtime(&[Contention]), (0x4018, 5, 1));
        assert_eq!(runtime(&[Cpu]), (0x0014_C14F_CCBD | 0x18, 4, 2));
        assert_eq!(runtime(&[Alloc, Exceptions]), (0x8019, 5, 1));
        assert_eq!(runtime(&[]), (0x18, 4, 1));
    }
}
