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
pub mod runqueue;
pub mod stack;
pub mod summary;
pub mod text;
pub mod threads;
pub mod tree;

use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};
use rustc_hash::FxHashMap;
use serde::Serialize;

pub use needs::{providers_for, Needs};
pub use text::TextStyle;

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

/// A method and its weight.
#[derive(Clone, Debug, Serialize)]
pub struct MethodWeight {
    /// Frame name.
    pub method: String,
    /// Samples (CPU or waiting share; fractional where measured), bytes for allocations, or
    /// events for contention.
    pub samples: f64,
    /// Share of the total, percent.
    pub percent: f64,
    /// The same as time, ms.
    pub ms: f64,
}

/// A stack and what it did.
#[derive(Clone, Debug, Serialize)]
pub struct StackCount {
    /// Frames, leaf first.
    pub frames: Vec<String>,
    /// Events.
    pub count: u64,
    /// Bytes (allocations) or ms (contention), when they apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

/// A name and a count.
#[derive(Clone, Debug, Serialize)]
pub struct NameCount {
    /// The name (a message, a method).
    pub name: String,
    /// How many.
    pub count: u64,
}

/// The `top` largest counts of a map, most first (ties by name).
pub(crate) fn sorted_counts(m: &FxHashMap<String, u64>, top: usize) -> Vec<NameCount> {
    let mut v: Vec<NameCount> = m
        .iter()
        .map(|(n, c)| NameCount {
            name: n.clone(),
            count: *c,
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    v.truncate(top);
    v
}
