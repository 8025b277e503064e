//! The report registry: every report clrspy prints is an object built from an [`Analysis`],
//! serializable (its JSON view, whose keys are documented in docs/report-json.md: add keys,
//! never rename them) and with a text view beside it. `clrspy report`, its `--json`, the
//! summary, `clrspy profile` and the HTML report all use these objects.
//!
//! Adding a report is one [`ReportKind`] variant (with its name and description) and one file
//! holding the report's struct (serializable: its JSON view), its builder and its
//! [`TextView`]; [`build`] maps the kind to the builder.

pub mod alloc;
pub mod callers;
pub mod contention;
pub mod exceptions;
pub mod gc;
pub mod needs;
pub mod processes;
pub mod rows;
pub mod runqueue;
pub mod stack;
pub mod summary;
pub mod text;
pub mod threads;
pub mod tree;
pub mod view;

use clrspy_analysis::{Analysis, Metric};

pub use needs::{models_for, providers_for, Needs};
pub use rows::{MethodWeight, NameCount, StackCount};
pub use text::TextStyle;
pub use view::{write_json, Report, ReportKind, ReportOptions, ReportView, TextView, TreeOptions};

/// Builds the report `kind` of an analysis.
pub fn build(kind: ReportKind, a: &Analysis, o: &ReportOptions) -> Report {
    let o = &ReportOptions {
        top: o.top.max(1),
        ..o.clone()
    };
    match kind {
        ReportKind::Summary => Box::new(summary::build(a, o)),
        ReportKind::Cpu | ReportKind::Waits => {
            let metric = if kind == ReportKind::Cpu {
                Metric::Cpu
            } else {
                Metric::Wait
            };
            match &o.callers {
                Some(m) => Box::new(callers::build(a, metric, m, o)),
                None => Box::new(stack::build(a, metric, o)),
            }
        }
        ReportKind::Alloc => Box::new(alloc::build(a, o)),
        ReportKind::Exceptions => Box::new(exceptions::build(a, o)),
        ReportKind::Contention => Box::new(contention::build(a, o)),
        ReportKind::Gc => Box::new(gc::build(a, o)),
        ReportKind::Threads => Box::new(threads::build(a, o)),
    }
}
