//! `counters monitor`'s table: the latest value of every time series, grouped by source, drawn
//! to fit the terminal (names cut, a "… N more" line) and redrawn in place without flicker
//! (cursor home, every line overwritten and cleared to its end, the rest of the screen
//! cleared); or, without a terminal, printed as plain blocks.

use std::collections::BTreeMap;
use std::time::Duration;

use clrspy_analysis::counters::{CounterKind, CounterRow, CounterValue};

/// Clears the screen and hides the cursor.
pub const START: &str = "\x1b[?25l\x1b[2J\x1b[H";
/// Shows the cursor again.
pub const END: &str = "\x1b[?25h\n";

/// Width kept for the value column.
const VALUE_WIDTH: usize = 40;

/// The latest rows, by (source, name, tags).
#[derive(Debug)]
pub struct Table {
    refresh: Duration,
    rows: BTreeMap<(String, String, String), CounterRow>,
    last_end_ns: i64,
}

impl Table {
    /// An empty table.
    pub fn new(refresh: Duration) -> Table {
        Table {
            refresh,
            rows: BTreeMap::new(),
            last_end_ns: 0,
        }
    }

    /// Takes in an interval's rows.
    pub fn add(&mut self, rows: &[CounterRow]) {
        for r in rows {
            self.last_end_ns = self.last_end_ns.max(r.interval_end_ns);
            let tags = r
                .tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            self.rows
                .insert((r.provider.clone(), r.name.clone(), tags), r.clone());
        }
    }

    fn title(&self) -> String {
        let at = if self.last_end_ns > 0 {
            nettrace::format_unix_ns(self.last_end_ns)
                .get(..19)
                .map(|s| format!("  {}Z", s.replace('T', " ")))
                .unwrap_or_default()
        } else {
            String::new()
        };
        format!(
            "clrspy counters (every {} s; rates per second){at}",
            self.refresh.as_secs_f64()
        )
    }

    /// The table's lines (no width limit): (is a source header, name, tags, value). Tags are
    /// shown by their values (`[gen0]`); the files keep their keys.
    fn lines(&self) -> Vec<(bool, String, String, String)> {
        let mut out = Vec::new();
        let mut source = None;
        for ((provider, name, _), r) in &self.rows {
            if source != Some(provider) {
                out.push((true, format!("[{provider}]"), String::new(), String::new()));
                source = Some(provider);
            }
            let tags = if r.tags.is_empty() {
                String::new()
            } else {
                let values: Vec<&str> = r.tags.iter().map(|(_, v)| v.as_str()).collect();
                format!(" [{}]", values.join(","))
            };
            out.push((false, format!("    {name}"), tags, value_text(r)));
        }
        out
    }

    /// The whole screen for a `width` × `height` terminal: cursor home, every line cleared to
    /// its end, the rest of the screen cleared.
    pub fn screen(&self, width: usize, height: usize) -> String {
        let width = width.max(20);
        let height = height.max(3);
        let lines = self.lines();
        let room = height - 1;
        let (shown, more) = if lines.len() > room {
            (room - 1, lines.len() - (room - 1))
        } else {
            (lines.len(), 0)
        };
        let mut out = String::from("\x1b[H");
        out.push_str(&cut(&self.title(), width));
        out.push_str("\x1b[K");
        for (header, label, tags, value) in lines.iter().take(shown) {
            out.push_str("\r\n");
            out.push_str(&line(*header, label, tags, value, width));
            out.push_str("\x1b[K");
        }
        if more > 0 {
            out.push_str("\r\n");
            out.push_str(&cut(&format!("… {more} more"), width));
            out.push_str("\x1b[K");
        }
        out.push_str("\x1b[J");
        out
    }

    /// The table as a plain block (no terminal): title, lines, an empty line.
    pub fn block(&self) -> String {
        let mut out = self.title();
        out.push('\n');
        for (header, label, tags, value) in self.lines() {
            out.push_str(&line(header, &label, &tags, &value, 80));
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

/// A name, its tags and its value on one line `width` wide: the name cut (the tags kept while
/// they fit) to leave the value room.
fn line(header: bool, name: &str, tags: &str, value: &str, width: usize) -> String {
    if header {
        return cut(name, width);
    }
    let vw = VALUE_WIDTH.min(width / 2);
    let lw = width.saturating_sub(vw + 1);
    let tw = tags.chars().count();
    let label = if name.chars().count() + tw <= lw {
        format!("{name}{tags}")
    } else if tw + 8 <= lw {
        format!("{}{tags}", cut(name, lw - tw))
    } else {
        cut(&format!("{name}{tags}"), lw)
    };
    let pad = lw.saturating_sub(label.chars().count());
    format!("{label}{} {}", " ".repeat(pad), cut(value, vw))
}

/// `s` cut to `width` characters, with "…" where it was cut.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A number in few characters.
fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 1e12 {
        format!("{v:.3e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1000.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        // Three significant digits: 0.0123, 0.160.
        let digits = (2.0 - a.log10().floor()) as usize;
        format!("{v:.digits$}")
    } else {
        format!("{v:.2e}")
    }
}

fn value_text(r: &CounterRow) -> String {
    let unit = if r.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", r.unit)
    };
    match r.value {
        CounterValue::Number(v) if r.kind == CounterKind::Rate => {
            let secs = r.interval_sec();
            let per = if secs > 0.0 { v / secs } else { v };
            format!("{}{unit}/s", num(per))
        }
        CounterValue::Number(v) => format!("{}{unit}", num(v)),
        CounterValue::Histogram(h) => {
            // How many values per second (requests, for a request duration), then where
            // they lay; durations in seconds are shown in ms (shorter, and how people read
            // them).
            let secs = r.interval_sec();
            let per = if secs > 0.0 {
                h.count as f64 / secs
            } else {
                h.count as f64
            };
            let (scale, unit) = if r.unit == "s" {
                (1000.0, " ms".to_string())
            } else {
                (1.0, unit)
            };
            let q = |x: Option<f64>| x.map(|v| num(v * scale)).unwrap_or_else(|| "-".into());
            format!(
                "{}/s p50 {} p95 {} p99 {}{unit}",
                num(per),
                q(h.p50),
                q(h.p95),
                q(h.p99)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use clrspy_analysis::counters::HistogramSummary;

    use super::*;

    fn row(provider: &str, name: &str, kind: CounterKind, value: CounterValue) -> CounterRow {
        CounterRow {
            interval_start_ns: 0,
            interval_end_ns: 2_000_000_000,
            provider: provider.into(),
            name: name.into(),
            tags: vec![],
            kind,
            unit: String::new(),
            value,
        }
    }

    #[test]
    fn fits_80x24_with_a_more_line_and_rates_per_second() {
        let mut t = Table::new(Duration::from_secs(1));
        let rows: Vec<CounterRow> = (0..40)
            .map(|i| {
                row(
                    "System.Runtime",
                    &format!("dotnet.a.very.long.instrument.name.that.goes.on.and.on.{i:02}"),
                    CounterKind::Rate,
                    CounterValue::Number(10.0),
                )
            })
            .collect();
        t.add(&rows);
        let s = t.screen(80, 24);
        let lines: Vec<&str> = s.split("\r\n").collect();
        assert_eq!(lines.len(), 24);
        for l in &lines {
            let visible = l
                .replace("\x1b[K", "")
                .replace("\x1b[H", "")
                .replace("\x1b[J", "");
            assert!(visible.chars().count() <= 80, "{visible:?}");
        }
        assert!(lines[23].starts_with("… 19 more"), "{}", lines[23]);
        assert!(lines[2].contains("5/s"), "{}", lines[2]);
        assert!(lines[2].contains('…'));
    }

    #[test]
    fn histograms_show_percentiles_and_a_block_has_every_row() {
        let mut t = Table::new(Duration::from_secs(1));
        t.add(&[row(
            "M",
            "lat",
            CounterKind::Histogram,
            CounterValue::Histogram(HistogramSummary {
                count: 3,
                sum: 6.0,
                p50: Some(2.0),
                p95: Some(3.0),
                p99: None,
            }),
        )]);
        let b = t.block();
        assert!(b.contains("[M]"));
        // 3 values over the row's 2 s interval.
        assert!(b.contains("1.50/s p50 2 p95 3 p99 -"), "{b}");
        assert_eq!(num(0.16), "0.160");
        assert_eq!(num(0.000_123), "1.23e-4");
        assert_eq!(num(0.0123), "0.0123");
    }

    #[test]
    fn a_cut_name_keeps_its_tags() {
        let mut t = Table::new(Duration::from_secs(1));
        let mut r = row(
            "System.Runtime",
            "dotnet.gc.last_collection.heap.fragmentation.size",
            CounterKind::UpDown,
            CounterValue::Number(1.0),
        );
        r.tags = vec![("gc.heap.generation".into(), "gen2".into())];
        t.add(&[r]);
        let s = t.screen(60, 10);
        let l = s.split("\r\n").nth(2).unwrap();
        assert!(l.contains("… [gen2]"), "{l}");
        assert!(l.replace("\x1b[K", "").chars().count() <= 60);
    }
}
