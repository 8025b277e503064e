//! clrspy's views, in these registries:
//! - [`views`]: every view keyed by name with the input it takes (a trace's analysis, a heap
//!   snapshot, two snapshots) and what it needs recorded — the trace reports and the heap
//!   views (`clrspy heap`, `heap --type`, `heap diff`);
//! - [`report`]: every report of a trace as an object with a JSON view and a text view
//!   (`clrspy report`, the summary, `clrspy profile`, the HTML report);
//! - [`format`]: the files people's viewers read — speedscope, the Chromium trace event format
//!   (Perfetto, chrome://tracing), folded stacks, an interactive flame graph SVG, pprof
//!   (profile.proto, gzip) and a self-contained HTML report — written through one [`export`].
//!
//! Every stack format can show CPU time, waiting time or allocated bytes ([`Metric`]). Inputs
//! are the aggregated models (one row per distinct thread and stack), so memory follows
//! distinct stacks, never events; formats that need time order (Chromium) stream the trace a
//! second time. Units and rounding shared by every view are in `units`; the recording
//! profiles in words in [`profiles`]. System and process metrics (CSV and SVG charts) are in
//! [`metrics`]; counter rows as files in [`counters`], their Prometheus exposition (the CLI's
//! and the agent's `/metrics`) in [`prometheus`].
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod chromium;
pub mod conversion;
pub mod counters;
pub mod diff;
mod flamegraph;
mod folded;
pub mod html;
mod pprof;
mod speedscope;
mod stack_unit;
pub mod thread_stacks;

pub mod event_filter;
pub mod event_json;
pub mod event_text;
mod format;
mod heap_stacks;
pub mod info;
pub mod log_text;
pub mod metrics;
mod owner_only;
pub mod profiles;
pub mod prometheus;
pub mod repair;
pub mod report;
mod units;
pub mod views;

pub use clrspy_analysis::Metric;
pub use format::{export, ExportOptions, Exported, Format};
pub use report::{ReportKind, ReportOptions, ReportView, TextStyle};

use std::sync::Arc;

use clrspy_analysis::{Analysis, StackFilter};

/// One distinct (thread, stack) and its weight.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightedStack {
    /// OS thread id (0 when the metric has no thread, e.g. allocations).
    pub thread: u64,
    /// Frame names, root first (shared: a name is one allocation however many stacks hold it).
    pub frames: Vec<Arc<str>>,
    /// Weight in [`Metric::unit`].
    pub weight: f64,
}

/// The stacks of `metric`, root first, heaviest first, with zero weights left out.
pub fn weighted_stacks(a: &Analysis, metric: Metric, filter: &StackFilter) -> Vec<WeightedStack> {
    let mut out = Vec::new();
    let group = filter
        .just_my_code
        .as_ref()
        .map(|g| g.for_symbols(&a.symbols));
    match metric {
        // Without a single sample there are no stacks: the CPU readings' groups
        // (`[runtime: native]`, ...) are the threads' CPU, not where it went.
        Metric::Cpu | Metric::Wait if a.cpu.span_ns().is_none() => {}
        Metric::Cpu | Metric::Wait => {
            let m = metric;
            let ms = a.sampling_interval_ns as f64 / 1e6;
            let profile = a.profile(filter);
            // Each frame's name once, shared by every stack that holds it.
            let mut names: Vec<Option<Arc<str>>> = vec![None; a.symbols.frame_count()];
            for r in &profile.rows {
                let w = r.weight(m) * ms;
                if w <= 0.0 {
                    continue;
                }
                let frames = r
                    .frames
                    .iter()
                    .rev()
                    .map(|&f| match names.get_mut(f.0 as usize) {
                        Some(slot) => slot
                            .get_or_insert_with(|| Arc::from(a.symbols.frame(f).name.as_str()))
                            .clone(),
                        None => Arc::from(a.symbols.frame(f).name.as_str()),
                    })
                    .collect();
                out.push(WeightedStack {
                    thread: r.thread,
                    frames,
                    weight: w,
                });
            }
        }
        Metric::Alloc => {
            let entries: Vec<_> = a.alloc.by_stack.iter().map(|(k, v)| (*k, *v)).collect();
            for ((t, _, stack), (_, bytes)) in entries {
                if bytes == 0 {
                    continue;
                }
                let mut frames = a.frames(stack);
                frames.reverse();
                if let Some(g) = &group {
                    frames = g.fold_names(frames);
                }
                // The allocated type is the leaf, as PerfView's allocation stacks show it.
                frames.push(format!("[type] {}", a.alloc.type_name(t)));
                out.push(WeightedStack {
                    thread: 0,
                    frames: frames.into_iter().map(Arc::from).collect(),
                    weight: bytes as f64,
                });
            }
        }
    }
    // Different addresses in the same methods are one stack to a viewer.
    let mut merged: rustc_hash::FxHashMap<(u64, Vec<Arc<str>>), f64> = Default::default();
    for s in out {
        *merged.entry((s.thread, s.frames)).or_default() += s.weight;
    }
    let mut out: Vec<WeightedStack> = merged
        .into_iter()
        .map(|((thread, frames), weight)| WeightedStack {
            thread,
            frames,
            weight,
        })
        .collect();
    out.sort_by(|x, y| {
        y.weight
            .total_cmp(&x.weight)
            .then_with(|| x.thread.cmp(&y.thread))
            .then_with(|| x.frames.cmp(&y.frames))
    });
    out
}

/// A thread's display name ([`Analysis::thread_name`]: its own name, or what started it),
/// else "thread <tid>".
pub(crate) fn thread_label(a: &Analysis, tid: u64) -> String {
    match a.thread_name(tid) {
        Some(n) => format!("{n} ({tid})"),
        None if tid == 0 => "all threads".into(),
        None => format!("thread {tid}"),
    }
}
