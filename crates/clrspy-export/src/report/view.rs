//! What a report is, shared by every report module: what it is built with
//! ([`ReportOptions`], [`TreeOptions`]), its views ([`TextView`], [`ReportView`]) and its JSON
//! writing. It imports no report and not the registry, so every report can import it.

use std::io::{self, Write};

use clrspy_analysis::StackFilter;
use serde::Serialize;

use super::text::TextStyle;

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
    /// The hottest source lines too (cpu, waits: `--lines`), from the trace's IL-to-native
    /// maps and the app's PDBs.
    pub lines: bool,
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
            lines: false,
        }
    }
}

/// A built report: its JSON and text views.
pub trait ReportView {
    /// The JSON view (keys in docs/report-json.md).
    fn json(&self) -> serde_json::Value;
    /// The text view.
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()>;
}

/// A report object's text view; its JSON view is its serialization (every report object
/// implements this, and so [`ReportView`]).
pub(crate) trait TextView: Serialize {
    /// The text view.
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()>;
}

impl<T: TextView> ReportView for T {
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
