//! System and process metrics as files: a CSV (one row per sample, the columns fixed by the
//! first row, numbers in the invariant culture) and a self-contained HTML page of SVG line
//! charts, one per group (CPU, memory, disk, network, load, threads and files, throttling) —
//! no script, nothing fetched. Rows come in as named values (the sampler's
//! `MetricsRow::columns` in clrspy-collect); this module knows only the naming conventions.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::html::escape;

/// A number as the CSV and the charts write it: at most two decimals, no trailing zeros, `.`
/// as the decimal point whatever the locale; empty when unknown.
pub(crate) fn format_value(v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return String::new();
    };
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A time in ms since the Unix epoch as ISO 8601 UTC with milliseconds
/// (`2026-11-27T12:03:44.120Z`).
pub fn utc_iso(unix_ms: u64) -> String {
    let ns = i64::try_from(unix_ms).map_or(i64::MAX, |ms| ms.saturating_mul(1_000_000));
    clrspy_values::time::format_utc(ns, 3)
}

/// Writes samples as CSV: `time_utc,elapsed_s,` then the first row's names. A later row's
/// value for a name not in the header is dropped; a header name missing from a row is empty.
#[derive(Debug)]
pub struct MetricsCsv<W: Write> {
    out: W,
    header: Vec<String>,
    start_ms: Option<u64>,
}

impl<W: Write> MetricsCsv<W> {
    /// A writer into `out` (nothing written yet).
    pub fn new(out: W) -> MetricsCsv<W> {
        MetricsCsv {
            out,
            header: Vec::new(),
            start_ms: None,
        }
    }

    /// The column names after the time columns (empty before the first row).
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Writes one row (the header before the first), and flushes.
    pub fn write(&mut self, unix_ms: u64, values: &[(String, Option<f64>)]) -> io::Result<()> {
        let start = *self.start_ms.get_or_insert(unix_ms);
        let mut line = String::new();
        if self.header.is_empty() {
            self.header = values.iter().map(|(n, _)| n.clone()).collect();
            line.push_str("time_utc,elapsed_s");
            for n in &self.header {
                line.push(',');
                line.push_str(n);
            }
            line.push('\n');
        }
        let _ = write!(
            line,
            "{},{}",
            utc_iso(unix_ms),
            format_value(Some(unix_ms.saturating_sub(start) as f64 / 1000.0))
        );
        for (i, name) in self.header.iter().enumerate() {
            line.push(',');
            line.push_str(&format_value(value_of(values, i, name)));
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        self.out.flush()
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The value named `name`, looked for at `hint` first (rows usually keep the header's order).
fn value_of(values: &[(String, Option<f64>)], hint: usize, name: &str) -> Option<f64> {
    match values.get(hint) {
        Some((n, v)) if n == name => *v,
        _ => values.iter().find(|(n, _)| n == name).and_then(|(_, v)| *v),
    }
}

/// Points kept per series at most: past this, neighbours are averaged in pairs (the chart of
/// a long run stays this wide; memory stays bounded).
pub(crate) const MAX_POINTS: usize = 1024;

/// The samples a chart page is drawn from, bounded at `MAX_POINTS` per series.
#[derive(Debug, Default)]
pub struct MetricsChart {
    names: Vec<String>,
    /// Seconds since the first sample.
    times: Vec<f64>,
    /// One per name; NaN where unknown.
    series: Vec<Vec<f64>>,
    start_ms: Option<u64>,
    first_utc: String,
    last_utc: String,
    /// How many samples each point stands for now (1, 2, 4...).
    per_point: usize,
    /// Samples waiting to be merged into one point (fewer than `per_point`).
    pending: Vec<(f64, Vec<f64>)>,
}

impl MetricsChart {
    /// An empty chart.
    pub fn new() -> MetricsChart {
        MetricsChart {
            per_point: 1,
            ..MetricsChart::default()
        }
    }

    /// Adds a sample (the first fixes the names).
    pub fn push(&mut self, unix_ms: u64, values: &[(String, Option<f64>)]) {
        if self.names.is_empty() {
            self.names = values.iter().map(|(n, _)| n.clone()).collect();
            self.series = vec![Vec::new(); self.names.len()];
            self.first_utc = utc_iso(unix_ms);
        }
        self.last_utc = utc_iso(unix_ms);
        let start = *self.start_ms.get_or_insert(unix_ms);
        let t = unix_ms.saturating_sub(start) as f64 / 1000.0;
        let row: Vec<f64> = (0..self.names.len())
            .map(|i| value_of(values, i, &self.names[i]).unwrap_or(f64::NAN))
            .collect();
        self.pending.push((t, row));
        if self.pending.len() < self.per_point {
            return;
        }
        let (t, row) = merge(&self.pending);
        self.pending.clear();
        self.times.push(t);
        for (s, v) in self.series.iter_mut().zip(row) {
            s.push(v);
        }
        if self.times.len() >= MAX_POINTS {
            halve(&mut self.times);
            for s in &mut self.series {
                halve(s);
            }
            self.per_point *= 2;
        }
    }

    /// Samples pushed so far that are drawn (whole points).
    pub fn points(&self) -> usize {
        self.times.len()
    }

    /// Writes the page: a heading with the time span, then one chart per group that has
    /// values.
    pub fn write_html(&self, title: &str, out: &mut dyn Write) -> io::Result<()> {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>{t}</title><style>\
body{{font:14px system-ui,sans-serif;margin:24px;color:#222}}h1{{font-size:20px}}h2{{font-size:16px;margin:24px 0 4px}}\
.note{{color:#666}}svg{{display:block}}</style></head><body><h1>{t}</h1><p class=note>{a} to {b} UTC, {n} points</p>",
            t = escape(title),
            a = escape(&self.first_utc),
            b = escape(&self.last_utc),
            n = self.times.len()
        );
        for g in GROUPS {
            let series: Vec<(&str, Vec<f64>)> = self
                .names
                .iter()
                .zip(&self.series)
                .filter(|(n, s)| (g.member)(n) && s.iter().any(|v| v.is_finite()))
                .map(|(n, s)| (n.as_str(), s.iter().map(|v| v / g.scale).collect()))
                .collect();
            if series.is_empty() {
                continue;
            }
            let _ = write!(h, "<h2>{}</h2>", escape(g.title));
            h.push_str(&line_chart(&self.times, &series));
        }
        let _ = writeln!(
            h,
            "<p class=note>clrspy {}</p></body></html>",
            env!("CARGO_PKG_VERSION")
        );
        out.write_all(h.as_bytes())
    }
}

/// The mean time and the mean of each value (NaN only when all are) of some samples.
fn merge(samples: &[(f64, Vec<f64>)]) -> (f64, Vec<f64>) {
    let n = samples.len().max(1) as f64;
    let t = samples.iter().map(|(t, _)| t).sum::<f64>() / n;
    let width = samples.first().map_or(0, |(_, r)| r.len());
    let row = (0..width)
        .map(|i| {
            let vals = samples
                .iter()
                .filter_map(|(_, r)| r.get(i))
                .filter(|v| v.is_finite());
            let (sum, k) = vals.fold((0.0, 0), |(s, k), v| (s + v, k + 1));
            if k == 0 {
                f64::NAN
            } else {
                sum / f64::from(k)
            }
        })
        .collect();
    (t, row)
}

/// Averages neighbours in pairs (an odd last one stays).
fn halve(v: &mut Vec<f64>) {
    let merged: Vec<f64> = v
        .chunks(2)
        .map(|c| {
            let f: Vec<f64> = c.iter().copied().filter(|x| x.is_finite()).collect();
            if f.is_empty() {
                f64::NAN
            } else {
                f.iter().sum::<f64>() / f.len() as f64
            }
        })
        .collect();
    *v = merged;
}

/// A chart's columns and unit.
struct Group {
    title: &'static str,
    /// Values are divided by this for the chart.
    scale: f64,
    member: fn(&str) -> bool,
}

const MB: f64 = 1024.0 * 1024.0;

const GROUPS: &[Group] = &[
    Group {
        title: "CPU (% busy; the process: % of one core)",
        scale: 1.0,
        member: |n| n.ends_with("_pct"),
    },
    Group {
        title: "Memory (MB)",
        scale: MB,
        member: |n| n.ends_with("_bytes"),
    },
    Group {
        title: "Disk I/O (KB/s)",
        scale: 1024.0,
        member: |n| n.starts_with("disk_"),
    },
    Group {
        title: "Network (KB/s)",
        scale: 1024.0,
        member: |n| n.starts_with("net_"),
    },
    Group {
        title: "Load average",
        scale: 1.0,
        member: |n| n.starts_with("load"),
    },
    Group {
        title: "Threads and open files",
        scale: 1.0,
        member: |n| n == "threads" || n == "fds",
    },
    Group {
        title: "Container CPU (limit in cores; throttled periods and ms per sample)",
        scale: 1.0,
        member: |n| n.starts_with("cgroup_cpu") || n.starts_with("cgroup_throttled"),
    },
];

const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// One SVG line chart: time (s) across, the values up from 0 to their maximum, a polyline
/// per series (broken where a value is unknown) and a legend.
pub(crate) fn line_chart(times: &[f64], series: &[(&str, Vec<f64>)]) -> String {
    let (w, h, left, right, top, bottom) = (900.0, 240.0, 60.0, 20.0, 10.0, 30.0);
    let legend_rows = series.len().div_ceil(4);
    let total_h = h + 18.0 * legend_rows as f64;
    let t_max = times.last().copied().unwrap_or(0.0).max(1e-9);
    let v_max = series
        .iter()
        .flat_map(|(_, s)| s.iter())
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let v_max = if v_max > 0.0 { v_max } else { 1.0 };
    let x = |t: f64| left + (t / t_max) * (w - left - right);
    let y = |v: f64| top + (1.0 - v / v_max) * (h - top - bottom);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{total_h}\" viewBox=\"0 0 {w} {total_h}\" font-family=\"sans-serif\" font-size=\"11\">\
<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#ccc\"/>\
<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{vmax}</text><text x=\"{lx}\" y=\"{by}\" text-anchor=\"end\">0</text>\
<text x=\"{left}\" y=\"{ay}\">0 s</text><text x=\"{rx}\" y=\"{ay}\" text-anchor=\"end\">{tmax} s</text>",
        pw = w - left - right,
        ph = h - top - bottom,
        lx = left - 4.0,
        ty = top + 8.0,
        by = h - bottom,
        vmax = escape(&format_value(Some(v_max))),
        ay = h - bottom + 14.0,
        rx = w - right,
        tmax = escape(&format_value(Some(t_max))),
    );
    for (i, (name, values)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts = String::new();
        for (t, v) in times.iter().zip(values) {
            if v.is_finite() {
                let _ = write!(pts, "{:.1},{:.1} ", x(*t), y(*v));
            } else if !pts.is_empty() {
                polyline(&mut s, &pts, color);
                pts.clear();
            }
        }
        if !pts.is_empty() {
            polyline(&mut s, &pts, color);
        }
        let (col, row) = (i % 4, i / 4);
        let (lx, ly) = (left + 210.0 * col as f64, h + 4.0 + 18.0 * row as f64);
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"{ry}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{tx}\" y=\"{ty}\">{n}</text>",
            ry = ly,
            tx = lx + 14.0,
            ty = ly + 9.0,
            n = escape(name)
        );
    }
    s.push_str("</svg>");
    s
}

fn polyline(s: &mut String, pts: &str, color: &str) {
    let _ = write!(
        s,
        "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
        pts.trim_end()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cpu: f64, extra: bool) -> Vec<(String, Option<f64>)> {
        let mut v = vec![
            ("cpu_pct".to_string(), Some(cpu)),
            ("process_rss_bytes".to_string(), Some(52_428_800.0)),
            ("gc_heap_bytes".to_string(), None),
            ("net_eth0_rx_bps".to_string(), Some(1536.0)),
        ];
        if extra {
            v.insert(1, ("net_new_rx_bps".to_string(), Some(1.0)));
        }
        v
    }

    #[test]
    fn numbers_and_times() {
        assert_eq!(format_value(Some(200.0)), "200");
        assert_eq!(format_value(Some(12.345)), "12.35");
        assert_eq!(format_value(Some(0.5)), "0.5");
        assert_eq!(format_value(Some(-0.001)), "0");
        assert_eq!(format_value(None), "");
        assert_eq!(format_value(Some(f64::NAN)), "");
        assert_eq!(utc_iso(0), "1970-01-01T00:00:00.000Z");
        // `date -u -d @1795780000`: Fri Nov 27 11:46:40 UTC 2026.
        assert_eq!(utc_iso(1_795_780_000_120), "2026-11-27T11:46:40.120Z");
        assert_eq!(utc_iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn the_first_row_fixes_the_columns() {
        let mut csv = MetricsCsv::new(Vec::new());
        csv.write(1_000, &row(50.0, false)).unwrap();
        csv.write(2_500, &row(75.25, true)).unwrap();
        let mut short = row(1.0, false);
        short.pop();
        csv.write(3_000, &short).unwrap();
        let text = String::from_utf8(csv.into_inner()).unwrap();
        assert_eq!(
            text,
            "time_utc,elapsed_s,cpu_pct,process_rss_bytes,gc_heap_bytes,net_eth0_rx_bps\n\
             1970-01-01T00:00:01.000Z,0,50,52428800,,1536\n\
             1970-01-01T00:00:02.500Z,1.5,75.25,52428800,,1536\n\
             1970-01-01T00:00:03.000Z,2,1,52428800,,\n"
        );
    }

    #[test]
    fn charts_are_bounded_and_self_contained() {
        let mut chart = MetricsChart::new();
        for i in 0..(MAX_POINTS * 3) {
            chart.push(i as u64 * 1000, &row(i as f64, false));
        }
        assert!(chart.points() < MAX_POINTS, "{}", chart.points());
        assert!(chart.points() >= MAX_POINTS / 2);
        let mut page = Vec::new();
        chart.write_html("Metrics of <app>", &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("Metrics of &lt;app&gt;"));
        assert_eq!(page.matches("<svg").count(), 3, "CPU, memory, network");
        // Nothing to run or fetch (the SVG namespace is a name, not a link).
        assert!(!page.contains("<script") && !page.contains("src=") && !page.contains("href="));
        // The CPU series climbs: its maximum (the last points' mean) is the axis top.
        assert!(
            !page.contains(">gc_heap_bytes<"),
            "a column with no value has no line"
        );
        assert!(page.contains(">cpu_pct<"));
    }

    #[test]
    fn a_chart_breaks_at_unknown_values() {
        let svg = line_chart(
            &[0.0, 1.0, 2.0, 3.0],
            &[("a", vec![1.0, f64::NAN, 2.0, 4.0])],
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        // Top of the axis is the maximum.
        assert!(svg.contains(">4</text>"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
