//! The report registry: every report clrspy prints is an object built from an [`Analysis`],
//! serializable (its JSON view, whose keys are documented in docs/report-json.md: add keys,
//! never rename them) and with a text view beside it. `clrspy report`, its `--json`, the
//! summary, `clrspy profile` and the HTML report all use these objects.
//!
//! A report is one file holding its object (serializable: its JSON view), its builder, its
//! `TextView` and its declaration, a `pub(crate) const REPORT:` [`ReportDef`] (name, what it needs
//! recorded, the models it reads, and its sections of the summary and the HTML report,
//! [`sections`]); plus one line in the `reports!` list below, which declares the module,
//! registers the declaration and derives [`ReportKind`]. The summary and the HTML report are
//! composed from the declarations' sections, so a new report appears in them by declaring one.
//!
//! This module is the top of the report modules: it answers the questions about the
//! registered reports (which one a name is, what a set of them needs recorded and analysed)
//! and hands the summary its sections. No report module imports it.

mod callers;
mod def;
pub mod lines;
pub mod needs;
mod process;
pub mod processes;
pub(crate) mod rows;
mod runqueue;
pub mod sections;
pub mod stack;
pub(crate) mod text;
mod tree;
pub(crate) mod view;

use clr_events::provider_spec::ProviderSpec;
use clrspy_analysis::rows::RowSink;
use clrspy_analysis::{Analysis, ModelSet};

pub use def::ReportDef;
pub use needs::{Models, Needs};
pub use rows::{MethodWeight, NameCount, StackCount};
pub use sections::{HtmlDef, SummaryDef};
pub use text::{window_line, TextStyle};
pub use view::{write_json, Report, ReportOptions, ReportView, TreeOptions};

/// Declares each report's module and derives [`ReportKind`] from the list: one variant per
/// report, in the list's order, each mapped to its declaration (its module's `REPORT`).
macro_rules! reports {
    ($($m:ident: $v:ident => $def:expr),* $(,)?) => {
        $(pub mod $m;)*

        /// Which report: one per entry of the registry.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ReportKind {
            $(
                #[doc = concat!("The `", stringify!($m), "` report.")]
                $v,
            )*
        }

        impl ReportKind {
            /// Every report, in the order they are listed.
            pub const ALL: [ReportKind; [$(stringify!($v)),*].len()] = [$(ReportKind::$v),*];

            /// Its declaration.
            pub fn def(self) -> &'static ReportDef {
                match self {
                    $(ReportKind::$v => &$def,)*
                }
            }
        }
    };
}

reports!(
    summary: Summary => SUMMARY,
    cpu: Cpu => cpu::REPORT,
    waits: Waits => waits::REPORT,
    alloc: Alloc => alloc::REPORT,
    exceptions: Exceptions => exceptions::REPORT,
    contention: Contention => contention::REPORT,
    gc: Gc => gc::REPORT,
    threads: Threads => threads::REPORT,
    http: Http => http::REPORT,
    loader: Loader => loader::REPORT,
    hangs: Hangs => hangs::REPORT,
    requests: Requests => requests::REPORT,
    findings: Findings => findings::REPORT,
);

/// The `summary` report's declaration: its module's, built from the summary sections of the
/// registered reports.
const SUMMARY: ReportDef =
    summary::report(|a, o| Box::new(summary::build(a, o, &summary_sections())));

/// The summary sections the registered reports declare, in the registry's order.
fn summary_sections() -> Vec<SummaryDef> {
    ReportKind::ALL
        .into_iter()
        .filter_map(|k| k.def().summary)
        .collect()
}

/// Builds the report `kind` of an analysis.
pub fn build(kind: ReportKind, a: &Analysis, o: &ReportOptions) -> Report {
    let o = &ReportOptions {
        top: o.top.max(1),
        ..o.clone()
    };
    (kind.def().build)(a, o)
}

impl ReportKind {
    /// Its name on the command line and as a JSON key.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// What it shows, in words.
    pub fn description(self) -> &'static str {
        self.def().description
    }

    /// What the report needs recorded.
    pub fn needs(self) -> Needs {
        self.def().needs
    }

    /// The analysis models the report reads (symbols always run); a name the model registry
    /// does not know (a test checks there is none) picks every model.
    pub(crate) fn models(self) -> ModelSet {
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

impl std::str::FromStr for ReportKind {
    type Err = String;

    fn from_str(s: &str) -> Result<ReportKind, String> {
        ReportKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown report '{s}'"))
    }
}

/// The sink of `--requests-jsonl FILE` for report `kind`: the file, created now (a bad path
/// fails before the pass), for the model of the report that lists its requests; an error in
/// words when the report lists none or the file cannot be made.
pub fn rows_file(kind: ReportKind, path: &std::path::Path) -> Result<RowSink, String> {
    let Some(model) = kind.def().rows else {
        let with: Vec<&str> = ReportKind::ALL
            .into_iter()
            .filter(|k| k.def().rows.is_some())
            .map(ReportKind::name)
            .collect();
        return Err(format!(
            "--requests-jsonl lists the requests of the {} reports, not of `{}`",
            with.join(" and "),
            kind.name()
        ));
    };
    let file = crate::owner_only::create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    Ok(RowSink::new(model, Box::new(file)))
}

/// Ends the file of [`rows_file`]: how many rows it holds, or the first write error (a full
/// disk) in words.
pub fn finish_rows(rows: &RowSink, path: &std::path::Path) -> Result<u64, String> {
    rows.finish().map_err(|e| {
        format!(
            "writing the requests to {} failed after {} of them: {e}",
            path.display(),
            rows.rows()
        )
    })
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
    let mut keywords = needs::LOADER_AND_JIT;
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
    for n in kinds.iter().map(|k| k.needs()) {
        // A report's list is a constant (a test parses every one).
        for spec in clr_events::provider_spec::parse_providers(n.providers).unwrap_or_default() {
            match p
                .iter_mut()
                .find(|q| q.name.eq_ignore_ascii_case(&spec.name))
            {
                Some(q) => {
                    q.keywords |= spec.keywords;
                    q.level = q.level.max(spec.level);
                }
                None => p.push(spec),
            }
        }
    }
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
mod tests;
