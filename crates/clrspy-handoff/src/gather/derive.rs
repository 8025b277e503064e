//! What the bundle derives from its trace file after the window, as `clrspy report`, `logs`
//! and `counters` would offline: every report the session recorded (text, JSON) and the HTML
//! report, the app's log messages (text like the console logger, and JSON Lines), and the
//! runtime's counters (CSV). The trace is the redacted one, so all of these are too.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use clrspy_analysis::counters::{CounterRow, CounterStream, CounterUpdate};
use clrspy_analysis::log_stream::{LogRecord, LogStream};
use clrspy_analysis::trace_file::OpenTrace;
use clrspy_analysis::{Analysis, Metric, Options};
use clrspy_export::counters::{CounterFormat, CounterWriter};
use clrspy_export::log_text::{write_log_json, write_log_text};
use clrspy_export::report::{self, ReportKind, ReportOptions, TextStyle};
use diagnostics_client::SessionConfig;

use super::session::{supports, Planned};
use super::staging::Staging;
use crate::HandoffError;

/// What the derived files hold, for the manifest's notes and the user.
#[derive(Debug, Default)]
pub(crate) struct Derived {
    /// Reports written (names).
    pub(crate) reports: Vec<&'static str>,
    /// Log messages.
    pub(crate) log_records: u64,
    /// Counter rows.
    pub(crate) counter_rows: u64,
    /// The GC heap's size over time: (ms since the Unix epoch, bytes).
    pub(crate) gc_heap: Vec<(u64, u64)>,
    /// What the reader could not read (a cut trace).
    pub(crate) read_error: Option<String>,
    /// The findings of the trace, most severe first.
    pub(crate) findings: Vec<crate::manifest::FindingBrief>,
}

/// Writes the reports, logs and counters of `trace` into `staging`.
pub(crate) fn derive(
    trace: &Path,
    planned: &Planned,
    staging: &mut Staging,
) -> Result<Derived, HandoffError> {
    let mut d = Derived::default();
    let open = |p: &Path| OpenTrace::open(p).map_err(|e| HandoffError::Other(e.to_string()));
    let t = open(trace)?;
    let mut reader = t.reader().map_err(|e| HandoffError::Other(e.to_string()))?;
    let a = Analysis::run(&mut reader, Options::default(), &mut |_| {})
        .map_err(|e| HandoffError::Other(format!("{}: {e}", trace.display())))?;
    d.read_error = a.read_error.as_ref().map(|e| e.to_string());
    write_reports(&a, &planned.config, staging, &mut d)?;
    d.findings = findings(&a);
    let mut reader = t.reader().map_err(|e| HandoffError::Other(e.to_string()))?;
    logs_and_counters(&mut reader, planned, staging, &mut d)?;
    Ok(d)
}

/// Every report the session recorded, as text and JSON, and the HTML report.
fn write_reports(
    a: &Analysis,
    config: &SessionConfig,
    staging: &mut Staging,
    d: &mut Derived,
) -> Result<(), HandoffError> {
    let o = ReportOptions {
        trace: "trace.nettrace".into(),
        ..ReportOptions::default()
    };
    let style = TextStyle {
        width: 120,
        bold: false,
    };
    for kind in ReportKind::ALL {
        if !supports(kind, config) {
            continue;
        }
        let r = report::build(kind, a, &o);
        let name = kind.name();
        staging.write(
            &format!("reports/{name}.txt"),
            &format!("{name} report (text)"),
            |w| r.write_text(w, &style),
        )?;
        staging.write(
            &format!("reports/{name}.json"),
            &format!("{name} report (JSON)"),
            |w| report::write_json(w, &r.json()),
        )?;
        d.reports.push(name);
    }
    staging.write(
        "report.html",
        "the HTML report (every report's tables and the flame graphs)",
        |w| clrspy_export::html::write(a, "clrspy bundle", Metric::Cpu, w),
    )?;
    Ok(())
}

/// The findings of the trace, as the manifest lists them.
fn findings(a: &Analysis) -> Vec<crate::manifest::FindingBrief> {
    clrspy_export::report::findings::build(a, &ReportOptions::default())
        .findings
        .into_iter()
        .map(|f| crate::manifest::FindingBrief {
            id: f.id.to_string(),
            severity: f.severity.name().to_string(),
            title: f.title.to_string(),
            said: f.said,
        })
        .collect()
}

/// The app's log messages and the runtime's counters, in one more pass over the trace.
fn logs_and_counters(
    reader: &mut clrspy_analysis::trace_file::FileReader,
    planned: &Planned,
    staging: &mut Staging,
    d: &mut Derived,
) -> Result<(), HandoffError> {
    let text_path = staging.create("logs/app.log", "the app's log messages (text)")?;
    let json_path = staging.create("logs/app.jsonl", "the app's log messages (JSON Lines)")?;
    let csv_path = staging.create("counters/counters.csv", "the runtime's counters (CSV)")?;
    let mut text = BufWriter::new(open_w(&text_path)?);
    let mut json = BufWriter::new(open_w(&json_path)?);
    let mut csv = CounterWriter::new(BufWriter::new(open_w(&csv_path)?), CounterFormat::Csv);
    let mut logs = LogStream::new();
    let mut counters =
        CounterStream::new(planned.counters_session.clone(), planned.counters.clone());
    let mut records: Vec<LogRecord> = Vec::new();
    let mut err: Option<std::io::Error> = None;
    let mut put_logs = |records: &mut Vec<LogRecord>, d: &mut Derived| -> std::io::Result<()> {
        for r in records.drain(..) {
            write_log_text(&mut text, &r)?;
            write_log_json(&mut json, &r)?;
            d.log_records += 1;
        }
        Ok(())
    };
    let mut put_rows = |rows: &[CounterRow], d: &mut Derived| -> std::io::Result<()> {
        if let Some(point) = gc_heap(rows) {
            d.gc_heap.push(point);
        }
        d.counter_rows += rows.len() as u64;
        csv.write_rows(rows)
    };
    let read = reader.for_each_event(|ev| {
        logs.event(ev, &mut records);
        let r = put_logs(&mut records, d).and_then(|()| match counters.event(ev) {
            Some(CounterUpdate::Rows(rows)) => put_rows(&rows, d),
            _ => Ok(()),
        });
        match r {
            Ok(()) => true,
            Err(e) => {
                err = Some(e);
                false
            }
        }
    });
    logs.finish(&mut records);
    let end = put_logs(&mut records, d);
    if let Some(e) = err.or(end.err()) {
        return Err(HandoffError::io(staging.root(), e));
    }
    // A cut trace: what was read is kept (the analysis said so already).
    let _ = read;
    for (p, w) in [
        (&text_path, text.into_inner()),
        (&json_path, json.into_inner()),
    ] {
        w.map_err(|e| HandoffError::io(p, e.into_error()))?
            .sync_all()
            .map_err(|e| HandoffError::io(p, e))?;
    }
    csv.into_inner()
        .flush()
        .map_err(|e| HandoffError::io(&csv_path, e))?;
    Ok(())
}

/// The GC heap's size in one interval's rows, when they say it: System.Runtime's meter
/// (`dotnet.gc.last_collection.heap.size`, bytes, one row per generation: summed) or its
/// EventCounter (`gc-heap-size`, MB); (ms since the Unix epoch, bytes).
fn gc_heap(rows: &[CounterRow]) -> Option<(u64, u64)> {
    let mut total: Option<(i64, f64)> = None;
    for r in rows {
        let Some(v) = r.number() else { continue };
        let bytes = match r.name.as_str() {
            "gc-heap-size" => v * 1e6,
            "dotnet.gc.last_collection.heap.size" => v,
            _ => continue,
        };
        let t = total.get_or_insert((r.interval_end_ns, 0.0));
        t.1 += bytes;
    }
    total.map(|(ns, b)| ((ns.max(0) / 1_000_000) as u64, b as u64))
}

fn open_w(p: &Path) -> Result<File, HandoffError> {
    clrspy_collect::private::create_private(p).map_err(|e| HandoffError::io(p, e))
}
