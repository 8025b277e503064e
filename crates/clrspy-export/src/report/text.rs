//! What the text views share: the terminal's width and whether it takes bold, headings, and
//! the method table.

use std::io::{self, Write};

use crate::units::{fit, human_bytes};

use super::rows::MethodWeight;

/// How text is laid out: table width, and whether headings are bold (a terminal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextStyle {
    /// Columns available (names are shortened to fit).
    pub width: usize,
    /// Bold headings (ANSI), for a terminal.
    pub bold: bool,
}

impl Default for TextStyle {
    /// No width limit, plain: what piped output gets, so names stay whole for scripts.
    fn default() -> TextStyle {
        TextStyle {
            width: usize::MAX,
            bold: false,
        }
    }
}

impl TextStyle {
    /// A heading line.
    pub fn heading(&self, s: &str) -> String {
        if self.bold {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Room left for a name after `used` columns (at least 20).
    pub fn room(&self, used: usize) -> usize {
        self.width.saturating_sub(used).max(20)
    }
}

/// The unit of a method table's first column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Milliseconds.
    Ms,
    /// Bytes (the `samples` field holds bytes).
    Bytes,
}

/// Writes a table of methods: value, percent, name.
pub(crate) fn method_table(
    out: &mut dyn Write,
    rows: &[MethodWeight],
    unit: Unit,
    style: &TextStyle,
) -> io::Result<()> {
    let head = match unit {
        Unit::Ms => "ms",
        Unit::Bytes => "bytes",
    };
    writeln!(out, "  {head:>10} {:>7}  Method", "%")?;
    for r in rows {
        let value = match unit {
            Unit::Ms => format!("{:.1}", r.ms),
            Unit::Bytes => human_bytes(r.samples.max(0.0) as u64),
        };
        // Native work at the leaf says which managed method paid for it.
        let name = match &r.called_from {
            Some(c) => format!("{} from {} ({:.0}%)", r.method, c.method, c.percent),
            None => r.method.clone(),
        };
        writeln!(
            out,
            "  {value:>10} {:>6.1}%  {}",
            r.percent,
            fit(&name, style.room(23))
        )?;
    }
    Ok(())
}

/// The header line that names a report's `--from`/`--to` window, each as the user wrote it and
/// its time since the trace start, ns (none without a window).
pub fn window_line(from: Option<(&str, i64)>, to: Option<(&str, i64)>) -> Option<String> {
    let at = |(text, ns): (&str, i64)| format!("{text} ({:.3} s)", ns as f64 / 1e9);
    let inside = "everything below is inside it";
    match (from, to) {
        (None, None) => None,
        (Some(f), Some(t)) => Some(format!(
            "Window: from {} to {} of the trace; {inside}",
            at(f),
            at(t)
        )),
        (Some(f), None) => Some(format!(
            "Window: from {} to the trace's end; {inside}",
            at(f)
        )),
        (None, Some(t)) => Some(format!(
            "Window: from the trace's start to {}; {inside}",
            at(t)
        )),
    }
}
