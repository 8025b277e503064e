//! Counter rows as files: CSV, JSON Lines and the Prometheus text exposition format
//! ([`crate::prometheus`]'s). Numbers
//! are written the same in every locale (Rust's formatting does not follow the locale), times
//! as RFC 3339 UTC. Each interval's rows go out in one write of whole lines and are flushed,
//! so a reader tailing the file never sees half a line.

use std::io::{self, Write};

use clrspy_analysis::counters::{CounterRow, CounterValue};

use crate::prometheus::{self, Series};

/// A counters file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterFormat {
    /// CSV with a header line (`CSV_HEADER`).
    Csv,
    /// One JSON object per value and line.
    JsonLines,
    /// The Prometheus text exposition format: the whole exposition each interval.
    Prometheus,
}

/// The CSV header. `value` is empty for histograms, whose `count`, `sum`, `p50`, `p95` and
/// `p99` columns are filled instead; `tags` is `k=v;k=v`.
pub(crate) const CSV_HEADER: &str =
    "interval_start,interval_end,provider,name,tags,kind,unit,value,count,sum,p50,p95,p99";

/// Writes rows in one format, an interval at a time.
#[derive(Debug)]
pub struct CounterWriter<W: Write> {
    out: W,
    format: CounterFormat,
    header_written: bool,
    prometheus: Series,
}

impl<W: Write> CounterWriter<W> {
    /// A writer of `format` to `out`.
    pub fn new(out: W, format: CounterFormat) -> CounterWriter<W> {
        CounterWriter {
            out,
            format,
            header_written: false,
            prometheus: Series::new(),
        }
    }

    /// Writes one interval's rows (CSV: the header first, once) in one write, and flushes.
    /// Prometheus: the whole exposition as it stands after these rows, then an empty line.
    pub fn write_rows(&mut self, rows: &[CounterRow]) -> io::Result<()> {
        let mut text = String::new();
        match self.format {
            CounterFormat::Csv => {
                if !self.header_written {
                    text.push_str(CSV_HEADER);
                    text.push('\n');
                    self.header_written = true;
                }
                for r in rows {
                    csv_line(&mut text, r);
                }
            }
            CounterFormat::JsonLines => {
                for r in rows {
                    text.push_str(&json_line(r));
                    text.push('\n');
                }
            }
            CounterFormat::Prometheus => {
                if rows.is_empty() {
                    return Ok(());
                }
                self.prometheus.add(rows);
                text = self.prometheus_text();
                text.push('\n');
            }
        }
        if !text.is_empty() {
            self.out.write_all(text.as_bytes())?;
        }
        self.out.flush()
    }

    /// The Prometheus exposition as it stands (whatever the format).
    pub(crate) fn prometheus_text(&self) -> String {
        prometheus::render([(None, &self.prometheus)], &[])
    }

    /// The output, back.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Counter rows written to a file an interval at a time: appended (CSV, JSON Lines), or for
/// Prometheus the whole exposition replacing the file at once each interval (a temporary file
/// beside it renamed over it), as a textfile collector wants it.
#[derive(Debug)]
pub struct CounterFile {
    path: std::path::PathBuf,
    inner: FileWriter,
}

#[derive(Debug)]
enum FileWriter {
    Append(CounterWriter<std::fs::File>),
    Replace(CounterWriter<io::Sink>),
}

impl CounterFile {
    /// Creates `path` for `format` (a Prometheus file appears with its first interval).
    pub fn create(path: &std::path::Path, format: CounterFormat) -> io::Result<CounterFile> {
        let inner = match format {
            CounterFormat::Prometheus => {
                FileWriter::Replace(CounterWriter::new(io::sink(), format))
            }
            _ => FileWriter::Append(CounterWriter::new(crate::owner_only::create(path)?, format)),
        };
        Ok(CounterFile {
            path: path.to_path_buf(),
            inner,
        })
    }

    /// Writes one interval's rows.
    pub fn write_rows(&mut self, rows: &[CounterRow]) -> io::Result<()> {
        match &mut self.inner {
            FileWriter::Append(w) => w.write_rows(rows),
            FileWriter::Replace(w) => {
                w.write_rows(rows)?;
                let mut tmp = self.path.as_os_str().to_owned();
                tmp.push(".tmp");
                let tmp = std::path::PathBuf::from(tmp);
                std::fs::write(&tmp, w.prometheus_text())?;
                std::fs::rename(&tmp, &self.path)
            }
        }
    }
}

/// RFC 3339 UTC, microseconds.
fn time(ns: i64) -> String {
    nettrace::format_unix_ns(ns)
}

/// A number as text: shortest round-trip form, none for NaN or infinities.
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

/// A CSV field, quoted (RFC 4180) when it holds a comma, quote or line break.
fn field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn tags_text(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn csv_line(out: &mut String, r: &CounterRow) {
    let (value, count, sum, p50, p95, p99) = match r.value {
        CounterValue::Number(v) => (num(v), String::new(), String::new(), None, None, None),
        CounterValue::Histogram(h) => (
            String::new(),
            h.count.to_string(),
            num(h.sum),
            h.p50,
            h.p95,
            h.p99,
        ),
    };
    let cols = [
        time(r.interval_start_ns),
        time(r.interval_end_ns),
        r.provider.clone(),
        r.name.clone(),
        tags_text(&r.tags),
        r.kind.as_str().to_string(),
        r.unit.clone(),
        value,
        count,
        sum,
        opt(p50),
        opt(p95),
        opt(p99),
    ];
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(out, c);
    }
    out.push('\n');
}

fn json_num(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v)
        .map(serde_json::Value::Number)
        .unwrap_or(serde_json::Value::Null)
}

/// One row as a JSON object on one line: `interval_start`, `interval_end`, `provider`, `name`,
/// `tags` (an object), `kind`, `unit`, `value` (a number, or for a histogram an object of
/// `count`, `sum`, `p50`, `p95`, `p99`).
pub(crate) fn json_line(r: &CounterRow) -> String {
    let mut tags = serde_json::Map::new();
    for (k, v) in &r.tags {
        tags.insert(k.clone(), serde_json::Value::String(v.clone()));
    }
    let value = match r.value {
        CounterValue::Number(v) => json_num(v),
        CounterValue::Histogram(h) => {
            let mut o = serde_json::Map::new();
            o.insert("count".into(), h.count.into());
            o.insert("sum".into(), json_num(h.sum));
            for (k, v) in [("p50", h.p50), ("p95", h.p95), ("p99", h.p99)] {
                o.insert(k.into(), v.map(json_num).unwrap_or(serde_json::Value::Null));
            }
            serde_json::Value::Object(o)
        }
    };
    let mut o = serde_json::Map::new();
    o.insert("interval_start".into(), time(r.interval_start_ns).into());
    o.insert("interval_end".into(), time(r.interval_end_ns).into());
    o.insert("provider".into(), r.provider.clone().into());
    o.insert("name".into(), r.name.clone().into());
    o.insert("tags".into(), serde_json::Value::Object(tags));
    o.insert("kind".into(), r.kind.as_str().into());
    o.insert("unit".into(), r.unit.clone().into());
    o.insert("value".into(), value);
    serde_json::Value::Object(o).to_string()
}

#[cfg(test)]
#[path = "counters_tests.rs"]
mod tests;
