//! What a report is, shared by every report module: its declaration ([`ReportDef`]), what it
//! is built with ([`ReportOptions`], [`TreeOptions`]), its views ([`TextView`],
//! [`ReportView`]) and its JSON writing. It imports no report, so every report can import it.

use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};
use serde::Serialize;

use super::needs::Needs;
use super::sections::{HtmlDef, SummaryDef};
use super::text::TextStyle;
use super::ReportKind;

/// A report's declaration: its name, what it needs recorded and analysed, its builder (whose
/// object carries its text and JSON views), and what it adds to the summary and the HTML
/// report. Each report file holds its `pub const REPORT`; the `reports!` list in
/// [`crate::report`] registers it, and [`ReportKind`] is derived from that list.
#[derive(Clone, Copy)]
pub struct ReportDef {
    /// Its name on the command line and as a JSON key.
    pub name: &'static str,
    /// What it shows, in words.
    pub description: &'static str,
    /// What it needs recorded (`clrspy profile` enables the providers of the reports chosen).
    pub needs: Needs,
    /// The analysis models it reads (`clrspy report NAME` runs only those).
    pub models: Models,
    /// Builds the report (options normalized by [`crate::report::build`]).
    pub build: fn(&Analysis, &ReportOptions) -> Report,
    /// Its section of the summary, if it has one.
    pub summary: Option<SummaryDef>,
    /// Its section of the HTML report, if it has one.
    pub html: Option<HtmlDef>,
}

impl std::fmt::Debug for ReportDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportDef")
            .field("name", &self.name)
            .field("models", &self.models)
            .finish()
    }
}

/// The models a report reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Models {
    /// These, by their names in the model registry (symbols always run).
    Named(&'static [&'static str]),
    /// Those of every report with a summary section (the summary's).
    OfSummarySections,
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

    /// The stack report of a metric: CPU time or waiting time.
    pub(crate) fn of_metric(metric: Metric) -> ReportKind {
        if metric == Metric::Cpu {
            ReportKind::Cpu
        } else {
            ReportKind::Waits
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
