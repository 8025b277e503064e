//! The diff in text: who was compared with what and per what, the verdict, the regressions
//! across tables, then each table's rows.

use std::io::{self, Write};

use super::model::{DiffRow, Presence, SideFacts, TraceDiff};
use crate::report::TextStyle;
use crate::units::{group, human_bytes};

impl TraceDiff {
    /// The text view.
    pub fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let side = |s: &SideFacts| {
            let mut t = format!("{} ({:.1} s", s.label, s.seconds);
            if s.requests > 0 {
                t.push_str(&format!(", {} requests", group(s.requests)));
            }
            t + ")"
        };
        writeln!(
            out,
            "Comparing {} with {}, per {}: {}.",
            side(&self.base),
            side(&self.new),
            self.per,
            self.per_reason
        )?;
        let n = self.regressions.len();
        let verdict = match self.verdict {
            "regressed" => format!(
                "regressed: {n} {} beyond the noise and the thresholds",
                if n == 1 { "row" } else { "rows" }
            ),
            "improved" => {
                "improved: no regression, and rows that shrank beyond the noise and the thresholds"
                    .to_string()
            }
            _ => "unchanged: no row moved beyond the noise and the thresholds".to_string(),
        };
        writeln!(out, "{}", style.heading(&format!("Verdict: {verdict}")))?;
        if !self.regressions.is_empty() {
            writeln!(out)?;
            for (table, r) in &self.regressions {
                writeln!(out, "  {:<18} {}", table, sentence(r, &self.per))?;
            }
        }
        for n in &self.notes {
            writeln!(out, "note: {n}")?;
        }
        if !self.failed.is_empty() {
            writeln!(
                out,
                "\n--fail-if crossed by {} {}:",
                self.failed.len(),
                if self.failed.len() == 1 {
                    "row"
                } else {
                    "rows"
                }
            )?;
            for (table, r) in &self.failed {
                writeln!(out, "  {:<18} {}", table, sentence(r, &self.per))?;
            }
        }
        for t in &self.tables {
            if t.rows.is_empty() {
                continue;
            }
            writeln!(out, "\n{}", style.heading(t.title))?;
            writeln!(
                out,
                "  {:>10} {:>10} {:>10} {:>8} {:>19} {:<15} {}",
                "base", "new", "delta", "change", "noise (interval)", "verdict", t.key
            )?;
            for r in &t.rows {
                let label = if r.measure.is_empty() {
                    r.name.clone()
                } else {
                    format!("{} · {}", r.name, r.measure)
                };
                let unit = unit(r, &self.per);
                let width = style.width.saturating_sub(82).max(30);
                writeln!(
                    out,
                    "  {:>10} {:>10} {:>10} {:>8} {:>19} {:<15} {} {}",
                    value(r, r.base_per),
                    value(r, r.new_per),
                    signed(r, r.delta),
                    change(r),
                    interval(r),
                    r.verdict.name(),
                    crate::units::fit(&label, width),
                    unit
                )?;
            }
            if t.rows_more > 0 {
                writeln!(out, "  … {} more rows (--top)", t.rows_more)?;
            }
        }
        writeln!(out, "\nNoise: {}.", self.interval)
    }
}

/// A regression in one line: `Hot.Work: 0.812 → 0.981 ms/request (+20.9%; noise +15.2%…)`.
fn sentence(r: &DiffRow, per: &str) -> String {
    let label = if r.measure.is_empty() {
        r.name.clone()
    } else {
        format!("{} {}", r.name, r.measure)
    };
    format!(
        "{label}: {} → {} {} ({}; sampling explains {})",
        value(r, r.base_per),
        value(r, r.new_per),
        unit(r, per),
        change(r),
        interval(r)
    )
}

/// The row's unit: `ms/request`, `bytes/second`, `ms`, `%`.
fn unit(r: &DiffRow, per: &str) -> String {
    let per_unit = !matches!(r.measure, "p50" | "p95" | "p99") && r.unit != "percent";
    match (r.unit, per_unit) {
        ("percent", _) => "%".into(),
        ("ms", true) => format!("ms per {per}"),
        (_, true) => format!("per {per}"),
        (u, false) => u.into(),
    }
}

/// A figure for people: bytes in binary units, else three significant digits or so.
fn value(r: &DiffRow, v: f64) -> String {
    if r.unit == "bytes" {
        return human_bytes(v.max(0.0).round() as u64);
    }
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A delta with its sign.
fn signed(r: &DiffRow, v: f64) -> String {
    let s = value(r, v.abs());
    if v < 0.0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

/// `+20.9%`, `new`, `gone`.
fn change(r: &DiffRow) -> String {
    match (r.presence, r.delta_percent) {
        (Presence::New, _) => "new".into(),
        (Presence::Gone, _) => "gone".into(),
        (_, Some(p)) => format!("{p:+.1}%"),
        (_, None) => "-".into(),
    }
}

/// `+15.2% … +26.8%`, `+40% … ∞`, `-`.
fn interval(r: &DiffRow) -> String {
    let end = |v: Option<f64>| v.map_or_else(|| "∞".to_string(), |p| format!("{p:+.0}%"));
    match r.interval_percent {
        Some([lo, hi]) => format!("{} … {}", end(lo), end(hi)),
        None => "-".into(),
    }
}
