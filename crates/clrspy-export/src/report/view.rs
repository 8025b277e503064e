//! What a report is, shared by every report module: which report ([`ReportKind`]), what it
//! is built with ([`ReportOptions`], [`TreeOptions`]), its views ([`TextView`],
//! [`ReportView`]) and its JSON writing. It imports no report, so every report can import it.

use std::io::{self, Write};

use clrspy_analysis::{Metric, StackFilter};
use serde::Serialize;

use super::text::TextStyle;

/// Which report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportKind {
    /// One screen over everything the trace supports, with what to look at next.
    Summary,
    /// CPU time by method (waiting threads excluded).
    Cpu,
    /// Waiting time by method (blocked, sleeping, idle threads).
    Waits,
    /// Allocations by type and stack.
    Alloc,
    /// Exceptions by type, message, throw and catch site.
    Exceptions,
    /// Lock contention by method and lock.
    Contention,
    /// One row per GC, and totals.
    Gc,
    /// Threads and the thread pool.
    Threads,
}

impl ReportKind {
    /// Every report, in the order they are listed.
    pub const ALL: [ReportKind; 8] = [
        ReportKind::Summary,
        ReportKind::Cpu,
        ReportKind::Waits,
        ReportKind::Alloc,
        ReportKind::Exceptions,
        ReportKind::Contention,
        ReportKind::Gc,
        ReportKind::Threads,
    ];

    /// Its name on the command line and as a JSON key.
    pub fn name(self) -> &'static str {
        match self {
            ReportKind::Summary => "summary",
            ReportKind::Cpu => "cpu",
            ReportKind::Waits => "waits",
            ReportKind::Alloc => "alloc",
            ReportKind::Exceptions => "exceptions",
            ReportKind::Contention => "contention",
            ReportKind::Gc => "gc",
            ReportKind::Threads => "threads",
        }
    }

    /// The stack report of a metric: CPU time or waiting time.
    pub(crate) fn of_metric(metric: Metric) -> ReportKind {
        if metric == Metric::Cpu {
            ReportKind::Cpu
        } else {
            ReportKind::Waits
        }
    }

    /// What it shows, in words.
    pub fn description(self) -> &'static str {
        match self {
            ReportKind::Summary => {
                "One screen over everything the trace supports, with what to look at next"
            }
            ReportKind::Cpu => "CPU time by method (waiting threads excluded)",
            ReportKind::Waits => "Waiting time by method (blocked, sleeping, idle threads)",
            ReportKind::Alloc => "Allocations by type and stack",
            ReportKind::Exceptions => "Exceptions by type, message, throw and catch site",
            ReportKind::Contention => "Lock contention by method and lock",
            ReportKind::Gc => "One row per GC, and totals",
            ReportKind::Threads => "Threads and the thread pool",
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

/// How the call tree is laid out in text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeOptions {
    /// Deepest level shown.
    pub depth: usize,
    /// Children shown per node.
    pub width: usize,
    /// Nodes under this percent of the total are hidden.
    pub cutoff: f64,
    /// Past `depth`, the hottest path (the heaviest child at each level, from the root) still
    /// goes on to its leaf; every other cut says how many levels it hides.
    pub follow_hottest: bool,
}

impl Default for TreeOptions {
    fn default() -> TreeOptions {
        TreeOptions {
            depth: 30,
            width: 8,
            cutoff: 1.0,
            follow_hottest: true,
        }
    }
}

/// What every report is built with.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Rows per table.
    pub top: usize,
    /// Stack filters (thread, focus, exclude) for the CPU and waits views.
    pub filter: StackFilter,
    /// The call tree, when asked for (cpu, waits).
    pub tree: Option<TreeOptions>,
    /// Instead of the tables, the caller tree of this method (cpu, waits: `--callers`).
    pub callers: Option<String>,
    /// The trace as the user named it (the summary's heading and its hints).
    pub trace: String,
    /// True when a time window or a stack filter (`--from`/`--to`, `--thread`, `--focus`,
    /// `--exclude`) narrowed what the reports see: an empty result then says so, instead of
    /// advising to record differently.
    pub narrowed: bool,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions {
            top: 20,
            filter: StackFilter::default(),
            tree: None,
            callers: None,
            trace: "trace".into(),
            narrowed: false,
        }
    }
}

/// A built report: its JSON and text views.
pub trait ReportView {
    /// Which report it is.
    fn kind(&self) -> ReportKind;
    /// The JSON view (keys in docs/report-json.md).
    fn json(&self) -> serde_json::Value;
    /// The text view.
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()>;
}

/// A report object's text view; its JSON view is its serialization (every report object
/// implements this, and so [`ReportView`]).
pub trait TextView: Serialize {
    /// Which report it is.
    fn kind(&self) -> ReportKind;
    /// The text view.
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()>;
}

impl<T: TextView> ReportView for T {
    fn kind(&self) -> ReportKind {
        TextView::kind(self)
    }

    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        TextView::write_text(self, out, style)
    }
}

/// A built report of any kind.
pub type Report = Box<dyn ReportView>;

/// Writes JSON pretty-printed, with a newline.
pub fn write_json(out: &mut dyn Write, v: &serde_json::Value) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v).map_err(io::Error::from)?;
    writeln!(out)
}

/// A report's JSON value, with every `-0.0` written as `0.0`.
pub(crate) fn to_json(v: &impl Serialize) -> serde_json::Value {
    let mut v = serde_json::to_value(v).unwrap_or_else(
        |e| serde_json::json!({ "error": format!("the report could not be serialized: {e}") }),
    );
    drop_negative_zeros(&mut v);
    v
}

fn drop_negative_zeros(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n)
            if n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) =>
        {
            if let Some(z) = serde_json::Number::from_f64(0.0) {
                *n = z;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_negative_zeros),
        serde_json::Value::Object(o) => o.values_mut().for_each(drop_negative_zeros),
        _ => {}
    }
}
