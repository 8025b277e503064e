//! `record`'s heap snapshots: the worker that carries out the consumers' `Action::Snapshot`
//! requests while a process is recorded (a heap dump session of its own on the same target —
//! EventPipe runs several sessions at once — written as `<trace stem>_<stamp>.gcdump` beside
//! the trace, with a line on stderr), and `--snapshot-heap`: the stop trigger's consumer,
//! wrapped so that its firing also asks for a snapshot, taken while the recording goes on
//! through `--after-trigger`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clrspy_collect::trigger::Triggers;
use clrspy_collect::{Action, EventConsumer, LiveFeeds, StopSignal, Worker, WorkerHandle};
use diagnostics_client::Endpoint;

use super::heap_snap;

/// How long one snapshot may take.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(30);

/// The snapshot worker of one recording.
pub(crate) struct Snapshots {
    worker: Worker<Action>,
    /// Take one when the stop trigger fires.
    on_trigger: bool,
}

/// Where a snapshot of the recording `trace` taken at `stamp` goes: beside the trace,
/// `<stem>_<stamp>.gcdump`.
pub(crate) fn snapshot_path(trace: &Path, stamp: &str) -> PathBuf {
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    trace.with_file_name(format!("{stem}_{stamp}.gcdump"))
}

impl Snapshots {
    /// A worker snapshotting the process at `endpoint` (`label`) beside the trace `trace`.
    pub(crate) fn start(
        endpoint: Endpoint,
        label: String,
        trace: PathBuf,
        on_trigger: bool,
    ) -> Self {
        let worker = Worker::start("clrspy-heap-snapshot", 2, move |job: Action| {
            let Action::Snapshot { reason } = job else {
                return;
            };
            let out = snapshot_path(&trace, &clrspy_collect::utc_stamp());
            eprintln!("Heap snapshot ({reason}): writing {} ...", out.display());
            let stop = StopSignal::new();
            match heap_snap::take(&endpoint, &label, &out, SNAPSHOT_TIMEOUT, &stop) {
                Ok(t) => eprintln!(
                    "Heap snapshot: wrote {} ({} objects, {:.1} MB) in {:.2} s.",
                    out.display(),
                    t.dump.graph.object_count(),
                    t.file_bytes as f64 / 1048576.0,
                    t.recorded.as_secs_f64()
                ),
                Err(e) => eprintln!("Heap snapshot: failed: {e}"),
            }
        });
        Snapshots { worker, on_trigger }
    }

    /// Hands the recording's requests to the worker and installs `triggers` (when given),
    /// their firing also asking for a snapshot with `--snapshot-heap`.
    pub(crate) fn install(&self, triggers: Option<&Triggers>, live: &mut LiveFeeds<'_>) {
        let handle = self.worker.handle();
        live.requests = Some(handle.clone());
        let Some(t) = triggers else { return };
        match t.consumer() {
            Some(inner) if self.on_trigger => live.consumers.push(Box::new(SnapshotOnTrigger {
                inner,
                handle,
                asked: false,
            })),
            Some(inner) => live.consumers.push(inner),
            None => {}
        }
        live.exit_trigger |= t.on_exit();
    }

    /// Waits for the snapshots asked so far.
    pub(crate) fn finish(self) {
        self.worker.finish();
    }
}

/// A trigger consumer whose first firing also asks the worker for a heap snapshot.
struct SnapshotOnTrigger {
    inner: Box<dyn EventConsumer>,
    handle: WorkerHandle<Action>,
    asked: bool,
}

impl EventConsumer for SnapshotOnTrigger {
    fn start(&mut self, header: &nettrace::TraceHeader) {
        self.inner.start(header);
    }

    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        let a = self.inner.event(ev);
        if let Action::Trigger { fired, .. } = &a {
            if !self.asked {
                self.asked = true;
                let reason = format!("trigger {}: {}", fired.trigger, fired.reason);
                if !self.handle.submit(Action::Snapshot { reason }) {
                    eprintln!("Heap snapshot: not taken (the snapshot worker is busy)");
                }
            }
        }
        a
    }

    fn lost(&mut self, lost: &clrspy_collect::Lost) {
        self.inner.lost(lost);
    }

    fn end(&mut self, end: &clrspy_collect::End) {
        self.inner.end(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_goes_beside_the_trace_under_its_stem() {
        assert_eq!(
            snapshot_path(
                Path::new("/t/app_20260101_000000.nettrace"),
                "20260101_000005"
            ),
            Path::new("/t/app_20260101_000000_20260101_000005.gcdump")
        );
        assert_eq!(
            snapshot_path(Path::new("run.nettrace"), "S"),
            Path::new("run_S.gcdump")
        );
    }
}
