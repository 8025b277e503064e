//! What reports need, as their declarations ([`super::ReportDef`]) say: recorded — the
//! runtime provider's keywords and level, and whether thread samples (`clrspy profile` derives
//! the providers it enables from the reports chosen) — and analysed: the models it reads
//! ([`ReportKind::models`]; `clrspy report gc` runs only those).

use clr_events::provider_spec::ProviderSpec;

use clrspy_analysis::ModelSet;

use super::view::Models;
use super::ReportKind;

/// The runtime's `GC` keyword: GC events and allocation ticks.
pub const GC: u64 = 0x1;
/// The runtime's `Loader` and `Jit` keywords: method and module names, always on.
pub const LOADER_AND_JIT: u64 = 0x8 | 0x10;
/// The runtime's `Contention` keyword.
pub const CONTENTION: u64 = 0x4000;
/// The runtime's `Exception` keyword.
pub const EXCEPTION: u64 = 0x8000;
/// The runtime keywords of the time reports (dotnet-trace's cpu-sampling set).
pub const SAMPLING: u64 = 0x0014_C14F_CCBD;

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

impl Needs {
    /// Runtime events of these keywords at this level, no samples.
    pub const fn runtime(runtime_keywords: u64, runtime_level: u32) -> Needs {
        Needs {
            runtime_keywords,
            runtime_level,
            samples: false,
        }
    }

    /// Thread samples, with the runtime's sampling keywords (informational).
    pub const SAMPLES: Needs = Needs {
        runtime_keywords: SAMPLING,
        runtime_level: 4,
        samples: true,
    };
}

impl ReportKind {
    /// What the report needs recorded.
    pub fn needs(self) -> Needs {
        self.def().needs
    }

    /// The analysis models the report reads (symbols always run); a name the model registry
    /// does not know (a test checks there is none) picks every model.
    pub fn models(self) -> ModelSet {
        let named = |names| ModelSet::named(names).unwrap_or(ModelSet::ALL);
        match self.def().models {
            Models::Named(names) => named(names),
            Models::OfSummarySections => ReportKind::ALL
                .into_iter()
                .filter(|k| k.def().summary.is_some())
                .filter_map(|k| match k.def().models {
                    Models::Named(names) => Some(named(names)),
                    Models::OfSummarySections => None,
                })
                .fold(ModelSet::NONE, ModelSet::union),
        }
    }
}

/// The models an analysis for `kinds` runs.
pub fn models_for(kinds: &[ReportKind]) -> ModelSet {
    kinds
        .iter()
        .fold(ModelSet::NONE, |set, k| set.union(k.models()))
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
            if let Models::Named(names) = k.def().models {
                assert!(ModelSet::named(names).is_ok(), "{}: {:?}", k.name(), names);
            }
        }
        let gc = models_for(&[ReportKind::Gc]);
        assert!(gc.contains(clrspy_analysis::ModelKind::Gc));
        assert!(
            !gc.contains(clrspy_analysis::ModelKind::Cpu),
            "report gc runs no CPU model"
        );
    }

    #[test]
    fn the_summary_runs_the_models_of_its_sections() {
        let summary = models_for(&[ReportKind::Summary]);
        let named = ModelSet::named(&["cpu", "alloc", "exceptions", "contention", "gc", "threads"]);
        assert_eq!(Ok(summary), named);
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
