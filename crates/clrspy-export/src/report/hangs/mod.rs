//! The `hangs` report: deadlocks (threads blocked on locks held by other blocked threads,
//! named as cycles with each thread's name, locks and stack), the threads still blocked at
//! the trace's end, thread-pool starvation with its evidence (the pool's injections, its
//! worker counts, workers blocked in sync-over-async), long waits by stack, and a hang that
//! was already in progress when the recording began (threads blocked in a lock the whole
//! trace, no wait started in it). The objects and their builder are in `build`; `view` has their
//! text view, the summary section (order 66) and the HTML table (order 84).

use super::def::ReportDef;
use super::needs::Models;
use super::sections::{HtmlDef, SummaryDef};

mod build;
mod groups;
mod view;

pub use build::*;

/// The `hangs` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "hangs",
    description: "Deadlocks, blocked threads, thread-pool starvation and long waits",
    needs: build::NEEDS,
    models: Models::Named(&["hangs", "threads", "cpu"]),
    rows: None,
    build: |a, o| Box::new(build::build(a, o)),
    summary: Some(SummaryDef {
        order: 66,
        build: |i| Box::new(view::HangsSection::build(i)),
    }),
    html: Some(HtmlDef { build: view::html }),
};

#[cfg(test)]
mod tests;
