//! The report registry: every report clrspy prints is an object built from an [`Analysis`],
//! serializable (its JSON view, whose keys are documented in docs/report-json.md: add keys,
//! never rename them) and with a text view beside it. `clrspy report`, its `--json`, the
//! summary, `clrspy profile` and the HTML report all use these objects.
//!
//! A report is one file holding its object (serializable: its JSON view), its builder, its
//! [`TextView`] and its declaration, a `pub const REPORT:` [`ReportDef`] (name, what it needs
//! recorded, the models it reads, and its sections of the summary and the HTML report,
//! [`sections`]); plus one line in the `reports!` list below, which declares the module,
//! registers the declaration and derives [`ReportKind`]. The summary and the HTML report are
//! composed from the declarations' sections, so a new report appears in them by declaring one.

pub mod callers;
pub mod needs;
pub mod processes;
pub mod rows;
pub mod runqueue;
pub mod sections;
pub mod stack;
pub mod text;
pub mod tree;
pub mod view;

use clrspy_analysis::Analysis;

pub use needs::{models_for, providers_for, Needs};
pub use rows::{MethodWeight, NameCount, StackCount};
pub use sections::{HtmlDef, SummaryDef};
pub use text::{window_line, TextStyle};
pub use view::{
    write_json, Models, Report, ReportDef, ReportOptions, ReportView, TextView, TreeOptions,
};

/// Declares each report's module and derives [`ReportKind`] from the list: one variant per
/// report, in the list's order, each mapped to its module's `REPORT`.
macro_rules! reports {
    ($($m:ident: $v:ident),* $(,)?) => {
        $(pub mod $m;)*

        /// Which report: one per entry of the registry.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ReportKind {
            $(
                #[doc = concat!("The `", stringify!($m), "` report (its `REPORT`).")]
                $v,
            )*
        }

        impl ReportKind {
            /// Every report, in the order they are listed.
            pub const ALL: [ReportKind; [$(stringify!($v)),*].len()] = [$(ReportKind::$v),*];

            /// Its declaration.
            pub fn def(self) -> &'static ReportDef {
                match self {
                    $(ReportKind::$v => &$m::REPORT,)*
                }
            }
        }
    };
}

reports!(
    summary: Summary,
    cpu: Cpu,
    waits: Waits,
    alloc: Alloc,
    exceptions: Exceptions,
    contention: Contention,
    gc: Gc,
    threads: Threads,
);

/// Builds the report `kind` of an analysis.
pub fn build(kind: ReportKind, a: &Analysis, o: &ReportOptions) -> Report {
    let o = &ReportOptions {
        top: o.top.max(1),
        ..o.clone()
    };
    (kind.def().build)(a, o)
}
