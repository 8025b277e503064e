//! The Prometheus text exposition (format 0.0.4) of counter rows: the latest value of every
//! series, counters (`rate` rows) as running totals `NAME_total`, up-down counters, gauges and
//! EventCounters means as gauges, histograms as summaries (quantile labels 0.5, 0.95, 0.99;
//! `_sum` and `_count` running totals). A family's name is `PROVIDER_NAME` made valid
//! (`metric_name`); its HELP line names the source, instrument and unit.
//!
//! One exposition for every writer: `clrspy counters collect --format prometheus` and watch's
//! counters files render one [`Series`] with no process labels; the agent's `/metrics` renders
//! a bounded [`Series`] per process, each with its [`Target`]'s `pid`, `process` and (when
//! known) `container_id` labels, and appends its own figures ([`Figure`]). A tag whose label
//! name is reserved (`__...`) or one of the process labels becomes `exported_NAME`.

use std::collections::BTreeMap;
use std::fmt::Write;

use clrspy_analysis::counters::{CounterKind, CounterRow, CounterValue};

/// The labels a process's series carry.
const TARGET_LABELS: [&str; 3] = ["pid", "process", "container_id"];

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricType {
    /// Only goes up (a running total).
    Counter,
    /// Any value.
    Gauge,
    /// Quantiles with a running `_sum` and `_count`.
    Summary,
}

impl MetricType {
    /// The name on a `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Summary => "summary",
        }
    }
}

/// The process a set of series belongs to: its labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// Its pid.
    pub pid: u32,
    /// Its name (the entry assembly, else the kernel's name).
    pub name: String,
    /// Its container's id, when known.
    pub container_id: Option<String>,
}

impl Target {
    /// The target's labels, as written inside braces.
    fn labels(&self) -> String {
        let mut s = format!(
            "pid=\"{}\",process=\"{}\"",
            self.pid,
            label_value(&self.name)
        );
        if let Some(c) = &self.container_id {
            let _ = write!(s, ",container_id=\"{}\"", label_value(c));
        }
        s
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Sample {
    value: f64,
    count: u64,
    sum: f64,
    quantiles: [Option<f64>; 3],
}

#[derive(Debug)]
struct Family {
    kind: MetricType,
    help: String,
    /// Tag labels text → the latest sample.
    series: BTreeMap<String, Sample>,
}

/// The latest value of each series, at most a bound of them when one is set.
#[derive(Debug, Default)]
pub struct Series {
    families: BTreeMap<String, Family>,
    count: usize,
    max_series: Option<usize>,
}

impl Series {
    /// No series yet, and no bound.
    pub fn new() -> Series {
        Series::default()
    }

    /// No series yet; at most `max_series` kept.
    pub fn bounded(max_series: usize) -> Series {
        Series {
            max_series: Some(max_series),
            ..Series::default()
        }
    }

    /// How many series are kept.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True with no series.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Takes in one interval's rows; returns how many were dropped (a new series beyond the
    /// bound, or one whose name another type already holds).
    pub fn add(&mut self, rows: &[CounterRow]) -> u64 {
        let mut dropped = 0;
        for r in rows {
            let base = format!("{}_{}", metric_name(&r.provider), metric_name(&r.name));
            let (name, kind) = match r.kind {
                CounterKind::Rate => (format!("{base}_total"), MetricType::Counter),
                CounterKind::Histogram => (base, MetricType::Summary),
                _ => (base, MetricType::Gauge),
            };
            let labels = tag_labels(&r.tags);
            let room = self.max_series.is_none_or(|max| self.count < max);
            let fam = match self.families.get_mut(&name) {
                Some(f) => f,
                None if room => self.families.entry(name).or_insert_with(|| Family {
                    kind,
                    help: help(r),
                    series: BTreeMap::new(),
                }),
                None => {
                    dropped += 1;
                    continue;
                }
            };
            if fam.kind != kind {
                dropped += 1;
                continue;
            }
            let s = match fam.series.get_mut(&labels) {
                Some(s) => s,
                None if room => {
                    self.count += 1;
                    fam.series.entry(labels).or_default()
                }
                None => {
                    dropped += 1;
                    continue;
                }
            };
            match r.value {
                CounterValue::Number(v) if kind == MetricType::Counter => s.value += v,
                CounterValue::Number(v) => s.value = v,
                CounterValue::Histogram(h) => {
                    s.count += h.count;
                    s.sum += h.sum;
                    s.quantiles = [h.p50, h.p95, h.p99];
                }
            }
        }
        dropped
    }
}

fn help(r: &CounterRow) -> String {
    if r.unit.is_empty() {
        format!("{} {}", r.provider, r.name)
    } else {
        format!("{} {} ({})", r.provider, r.name, r.unit)
    }
}

/// A Prometheus metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`, other characters as `_`, lower case.
pub(crate) fn metric_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A label value escaped for the text format: backslash, double quote and newline.
pub fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value as the text format writes it (`NaN`, `+Inf`, `-Inf`).
pub(crate) fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A tag's label name: valid (`[a-zA-Z_][a-zA-Z0-9_]*`), never reserved (`__`) and never one
/// of the target's labels.
pub(crate) fn label_name(tag: &str) -> String {
    let n = metric_name(tag).replace(':', "_");
    if n.starts_with("__") || TARGET_LABELS.contains(&n.as_str()) {
        format!("exported_{}", n.trim_start_matches('_'))
    } else {
        n
    }
}

/// HELP text escaped for the text format: backslash and newline.
fn help_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn tag_labels(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(k, v)| format!("{}=\"{}\"", label_name(k), label_value(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A figure given whole, with its series (the agent's own: requests served, sessions open).
#[derive(Clone, Debug)]
pub struct Figure {
    /// Its name (`clrspy_agent_...`).
    pub name: &'static str,
    /// Its type.
    pub kind: MetricType,
    /// Its help text.
    pub help: &'static str,
    /// Its series: labels text (may be empty) and value.
    pub series: Vec<(String, f64)>,
}

/// A family being written: its type, help and sample lines.
struct Out<'a> {
    kind: MetricType,
    help: &'a str,
    lines: Vec<String>,
}

/// The exposition of each set of series with its process's labels, if any (merged by family:
/// one HELP and TYPE each), followed by `figures`.
pub fn render<'a>(
    sets: impl IntoIterator<Item = (Option<&'a Target>, &'a Series)>,
    figures: &[Figure],
) -> String {
    let mut families: BTreeMap<&str, Out<'_>> = BTreeMap::new();
    for (target, series) in sets {
        let tl = target.map(Target::labels).unwrap_or_default();
        for (name, fam) in &series.families {
            let out = families.entry(name.as_str()).or_insert_with(|| Out {
                kind: fam.kind,
                help: &fam.help,
                lines: Vec::new(),
            });
            if out.kind != fam.kind {
                // Another process's family of that name has another type: not exposable.
                continue;
            }
            for (labels, s) in &fam.series {
                let with = |extra: &str| {
                    let parts = [tl.as_str(), labels.as_str(), extra];
                    let l: Vec<&str> = parts.into_iter().filter(|p| !p.is_empty()).collect();
                    if l.is_empty() {
                        String::new()
                    } else {
                        format!("{{{}}}", l.join(","))
                    }
                };
                if fam.kind == MetricType::Summary {
                    for (q, v) in ["0.5", "0.95", "0.99"].iter().zip(s.quantiles) {
                        let v = v.map(number).unwrap_or_else(|| "NaN".into());
                        let l = with(&format!("quantile=\"{q}\""));
                        out.lines.push(format!("{name}{l} {v}"));
                    }
                    let l = with("");
                    out.lines.push(format!("{name}_sum{l} {}", number(s.sum)));
                    out.lines.push(format!("{name}_count{l} {}", s.count));
                } else {
                    let l = with("");
                    out.lines.push(format!("{name}{l} {}", number(s.value)));
                }
            }
        }
    }
    let mut text = String::new();
    for (name, fam) in &families {
        write_family(&mut text, name, fam.kind, fam.help, &fam.lines);
    }
    for m in figures {
        let lines: Vec<String> = m
            .series
            .iter()
            .map(|(labels, v)| {
                if labels.is_empty() {
                    format!("{} {}", m.name, number(*v))
                } else {
                    format!("{}{{{labels}}} {}", m.name, number(*v))
                }
            })
            .collect();
        write_family(&mut text, m.name, m.kind, m.help, &lines);
    }
    text
}

/// `figures` alone (appended after [`render`]'s text: families stay unique as long as the
/// names differ).
pub fn render_figures(figures: &[Figure]) -> String {
    render(std::iter::empty(), figures)
}

fn write_family(text: &mut String, name: &str, kind: MetricType, help: &str, lines: &[String]) {
    let _ = writeln!(text, "# HELP {name} {}", help_text(help));
    let _ = writeln!(text, "# TYPE {name} {}", kind.as_str());
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
}

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod tests;
