//! What the bundle takes beside its trace: system metrics every second (a thread of their
//! own, for the whole window), heap snapshots before and after the window and their diff,
//! every thread's stack before it, a dump after it, the target's environment.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrspy_analysis::heap::HeapModel;
use clrspy_collect::sysmetrics::{MetricsRow, SysSampler};
use clrspy_collect::StopSignal;
use clrspy_export::metrics::{MetricsChart, MetricsCsv};
use clrspy_export::report::{write_json, TextStyle};
use clrspy_export::views::{self, Input, ViewOptions};
use diagnostics_client::Endpoint;

use super::staging::Staging;
use crate::HandoffError;

/// The most metrics rows kept (an hour at one a second): a bundle waiting long for a trigger
/// keeps the newest, as its trace ring does.
const MAX_ROWS: usize = 3600;

/// The metrics thread.
pub(crate) struct Metrics {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<MetricsRun>>,
}

/// What the metrics thread measured.
#[derive(Default)]
pub(crate) struct MetricsRun {
    /// The rows, oldest first.
    pub(crate) rows: VecDeque<MetricsRow>,
    /// Rows dropped from the front (past [`MAX_ROWS`]).
    pub(crate) dropped: u64,
    /// The first reading error other than the process's end.
    pub(crate) error: Option<String>,
    /// The thread's own CPU time, ns.
    pub(crate) cpu_ns: u64,
    /// Its wall time.
    pub(crate) elapsed: Duration,
}

impl Metrics {
    /// Starts sampling `pid` every second.
    pub(crate) fn start(pid: u32) -> Metrics {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("clrspy-bundle-metrics".into())
            .spawn(move || sample(pid, &s))
            .ok();
        Metrics { stop, handle }
    }

    /// Stops sampling: what was measured.
    pub(crate) fn finish(mut self) -> MetricsRun {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The thread's loop: a row every second on a fixed schedule, until stopped or the process
/// ends.
fn sample(pid: u32, stop: &AtomicBool) -> MetricsRun {
    let mut run = MetricsRun::default();
    let cpu0 = clrspy_collect::procstat::thread_cpu_ns();
    let start = Instant::now();
    let mut sampler = SysSampler::new(pid);
    let mut tick = 0u32;
    while !stop.load(Ordering::SeqCst) {
        match sampler.sample() {
            Ok(Some(row)) => {
                if run.rows.len() == MAX_ROWS {
                    run.rows.pop_front();
                    run.dropped += 1;
                }
                run.rows.push_back(row);
            }
            Ok(None) => {}
            Err(e) => {
                if diagnostics_client::procfs::alive(pid) {
                    run.error = Some(e.to_string());
                }
                break;
            }
        }
        tick += 1;
        let next = start + Duration::from_secs(u64::from(tick));
        // Short sleeps, so the end of the window is not held up by a second.
        while !stop.load(Ordering::SeqCst) && Instant::now() < next {
            std::thread::sleep(Duration::from_millis(50).min(next - Instant::now()));
        }
    }
    run.elapsed = start.elapsed();
    run.cpu_ns = match (cpu0, clrspy_collect::procstat::thread_cpu_ns()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    run
}

/// Writes the metrics as CSV and a page of charts, the GC heap's size (from the counters)
/// joined to each row: the newest value at or before it.
pub(crate) fn write_metrics(
    run: &mut MetricsRun,
    gc_heap: &[(u64, u64)],
    label: &str,
    staging: &mut Staging,
) -> Result<(), HandoffError> {
    let mut chart = MetricsChart::new();
    let mut i = 0;
    let mut last = None;
    let path = staging.create(
        "metrics/metrics.csv",
        "system and process metrics every second (CSV)",
    )?;
    let file =
        clrspy_collect::private::create_private(&path).map_err(|e| HandoffError::io(&path, e))?;
    let mut csv = MetricsCsv::new(std::io::BufWriter::new(file));
    for row in run.rows.iter_mut() {
        while i < gc_heap.len() && gc_heap[i].0 <= row.unix_ms {
            last = Some(gc_heap[i].1);
            i += 1;
        }
        row.gc_heap_bytes = last;
        let values = row.columns();
        csv.write(row.unix_ms, &values)
            .map_err(|e| HandoffError::io(&path, e))?;
        chart.push(row.unix_ms, &values);
    }
    std::io::Write::flush(&mut csv.into_inner()).map_err(|e| HandoffError::io(&path, e))?;
    staging.write(
        "metrics/metrics.html",
        "charts of the metrics over the window (CPU, memory, disk, network, limits)",
        |w| chart.write_html(&format!("Metrics of {label}"), w),
    )?;
    Ok(())
}

/// A heap snapshot of `endpoint` into `rel` in the staging folder.
pub(crate) fn heap_snapshot(
    endpoint: &Endpoint,
    rel: &str,
    what: &str,
    staging: &mut Staging,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<HeapModel, HandoffError> {
    let path = staging.create(rel, what)?;
    let mut lines = |e: clrspy_live::heap::SnapEvent| {
        if let Some(l) = e.line() {
            say(&l);
        }
    };
    let taken =
        clrspy_live::heap::take(endpoint, &path, Duration::from_secs(120), stop, &mut lines)
            .map_err(|e| HandoffError::Other(format!("heap snapshot: {e}")))?;
    Ok(HeapModel::new(taken.dump.graph))
}

/// The diff of two snapshots, as `clrspy heap diff` prints it (text and JSON); returns its
/// findings (a type that grew, held by a static), as the manifest lists them.
pub(crate) fn heap_diff(
    old: &HeapModel,
    new: &HeapModel,
    staging: &mut Staging,
) -> Result<Vec<crate::manifest::FindingBrief>, HandoffError> {
    let input = Input::HeapDiff(old, new);
    let view = views::find("heap-diff")
        .ok_or_else(|| HandoffError::Other("no heap-diff view".into()))?
        .build(&input, &ViewOptions::default())
        .map_err(|e| HandoffError::Other(e.to_string()))?;
    staging.write(
        "heap/diff.txt",
        "what grew between the snapshots (clrspy heap diff)",
        |w| view.write_text(w, &TextStyle::default()),
    )?;
    let json = view.json();
    staging.write("heap/diff.json", "the heap diff (JSON)", |w| {
        write_json(w, &json)
    })?;
    let text = |f: &serde_json::Value, k: &str| f[k].as_str().unwrap_or_default().to_string();
    Ok(json["findings"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| crate::manifest::FindingBrief {
                    id: text(f, "id"),
                    severity: text(f, "severity"),
                    title: text(f, "title"),
                    said: text(f, "said"),
                })
                .collect()
        })
        .unwrap_or_default())
}

/// Every thread's stack now.
pub(crate) fn stacks(endpoint: &Endpoint, staging: &mut Staging) -> Result<(), HandoffError> {
    let (snap, _) =
        clrspy_live::stack::take_stacks(endpoint, &clrspy_live::stack::StackOptions::default())
            .map_err(|e| HandoffError::Other(format!("thread stacks: {e}")))?;
    staging.write(
        "stacks.txt",
        "every thread's managed stack before the window (clrspy stack)",
        |w| clrspy_export::thread_stacks::write_text(&snap, w),
    )
}

/// Who holds which monitor now and the deadlock cycles (a hang): a heap dump into a private
/// temporary folder, read by the runtime's own library, gone after; only what it says goes
/// into the bundle (`hangs-now.txt`, `.json`: threads, monitors, method and type names — no
/// memory). A deadlock that began before the window is named this way; the trace cannot.
pub(crate) fn monitors(endpoint: &Endpoint, staging: &mut Staging) -> Result<String, HandoffError> {
    let dir = tempfile::tempdir().map_err(|e| HandoffError::Other(format!("monitors: {e}")))?;
    let path = dir.path().join("hang.core.zst");
    let (_, analysis) =
        clrspy_collect::hang_dump(endpoint.pid, &path, std::time::Duration::from_secs(300))
            .map_err(|e| HandoffError::Other(format!("monitors now (a dump): {e}")))?;
    let a = analysis.map_err(|e| HandoffError::Other(format!("monitors now: {e}")))?;
    staging.write(
        "hangs-now.txt",
        "who holds which monitor and the deadlock cycles before the window, from a heap dump read by the runtime's own library (the dump is not kept)",
        |w| coredump::text::write_hangs(w, &a),
    )?;
    let v = serde_json::json!({
        "deadlocks": a.deadlocks,
        "locks": a.locks,
        "blocked_entering_monitor": a.threads.iter().filter(|t| t.entering_monitor).count(),
        "warnings": a.warnings,
    });
    staging.write("hangs-now.json", "the same, as JSON", |w| write_json(w, &v))?;
    let waiting: u32 = a.locks.iter().map(|l| l.waiters).sum();
    Ok(format!(
        "monitors now: {} deadlock(s), {} monitor(s) held, {waiting} thread(s) waiting to enter them",
        a.deadlocks.len(),
        a.locks.len()
    ))
}

/// A dump after the window (with the heap, gzip-compressed as `record` writes them).
pub(crate) fn dump(endpoint: &Endpoint, staging: &mut Staging) -> Result<u64, HandoffError> {
    let path = staging.create(
        "dump/core.dmp.gz",
        "a dump of the process with its heap, after the window (gzip)",
    )?;
    let spec = clrspy_collect::DumpSpec {
        kind: diagnostics_client::DumpType::WithHeap,
        compress: clrspy_collect::Compression::Gzip,
        ..clrspy_collect::DumpSpec::default()
    };
    let r = clrspy_collect::write_dump_file(endpoint, endpoint.pid, &path, &spec)
        .map_err(|e| HandoffError::Other(format!("dump: {e}")))?;
    if r.dac.is_some() {
        // Written beside the dump already: listed, so the reader knows what it is for.
        staging.create(
            "dump/core.dmp.gz.libmscordaccore.so",
            "the target runtime's own data access library: `clrspy dump analyze dump/core.dmp.gz` reads the dump with it on any machine",
        )?;
    }
    Ok(r.file_bytes)
}
