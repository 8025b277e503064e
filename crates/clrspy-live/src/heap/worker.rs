//! Heap snapshots while a process is recorded, for `clrspy record` now and the agent later:
//! the worker that carries out the consumers' `Action::Snapshot` requests (a heap dump session
//! of its own on the same target — EventPipe runs several sessions at once — written as
//! `<trace stem>_<stamp>.gcdump` beside the trace), and the stop trigger's consumer wrapped so
//! that its first firing also asks for a snapshot. What happens is told to a callback.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clrspy_collect::trigger::Triggers;
use clrspy_collect::{Action, EventConsumer, LiveFeeds, StopSignal, Worker, WorkerHandle};
use diagnostics_client::Endpoint;

use super::{take, HeapSnapError, SnapEvent, Taken};

/// How long one snapshot may take.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the snapshot worker tells its caller.
pub enum SnapshotNote<'a> {
    /// A snapshot starts, asked for `reason`, into `out`.
    Writing {
        /// Why it was asked for.
        reason: &'a str,
        /// The file.
        out: &'a Path,
    },
    /// The snapshot under way progresses.
    Progress(SnapEvent),
    /// A snapshot was written.
    Wrote {
        /// The file.
        out: &'a Path,
        /// The snapshot.
        taken: &'a Taken,
    },
    /// A snapshot failed.
    Failed(HeapSnapError),
    /// The trigger fired but the worker was busy: no snapshot asked.
    Busy,
}

/// The callback told of the worker's snapshots.
type Say = Arc<Mutex<dyn FnMut(SnapshotNote<'_>) + Send>>;

fn tell(say: &Say, note: SnapshotNote<'_>) {
    if let Ok(mut f) = say.lock() {
        f(note);
    }
}

/// The snapshot worker of one recording.
pub struct Snapshots {
    worker: Worker<Action>,
    say: Say,
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
    /// A worker snapshotting the process at `endpoint` beside the trace `trace`, telling `say`
    /// what it does; with `on_trigger`, the stop trigger's firing asks for one too.
    pub fn start(
        endpoint: Endpoint,
        trace: PathBuf,
        on_trigger: bool,
        say: impl FnMut(SnapshotNote<'_>) + Send + 'static,
    ) -> Self {
        let say: Say = Arc::new(Mutex::new(say));
        let said = say.clone();
        let worker = Worker::start("clrspy-heap-snapshot", 2, move |job: Action| {
            let Action::Snapshot { reason } = job else {
                return;
            };
            let out = snapshot_path(
                &trace,
                &clrspy_values::time::file_stamp(std::time::SystemTime::now()),
            );
            tell(
                &said,
                SnapshotNote::Writing {
                    reason: &reason,
                    out: &out,
                },
            );
            let stop = StopSignal::new();
            let result = take(&endpoint, &out, SNAPSHOT_TIMEOUT, &stop, &mut |e| {
                tell(&said, SnapshotNote::Progress(e))
            });
            match result {
                Ok(taken) => tell(
                    &said,
                    SnapshotNote::Wrote {
                        out: &out,
                        taken: &taken,
                    },
                ),
                Err(e) => tell(&said, SnapshotNote::Failed(e)),
            }
        });
        Snapshots {
            worker,
            say,
            on_trigger,
        }
    }

    /// Hands the recording's requests to the worker and installs `triggers` (when given),
    /// their firing also asking for a snapshot when the worker was started `on_trigger`.
    pub fn install(&self, triggers: Option<&Triggers>, live: &mut LiveFeeds<'_>) {
        let handle = self.worker.handle();
        live.requests = Some(handle.clone());
        let Some(t) = triggers else { return };
        match t.consumer() {
            Some(inner) if self.on_trigger => live.consumers.push(Box::new(SnapshotOnTrigger {
                inner,
                handle,
                say: self.say.clone(),
                asked: false,
            })),
            Some(inner) => live.consumers.push(inner),
            None => {}
        }
        live.exit_trigger |= t.on_exit();
    }

    /// Waits for the snapshots asked so far.
    pub fn finish(self) {
        self.worker.finish();
    }
}

/// A trigger consumer whose first firing also asks the worker for a heap snapshot.
struct SnapshotOnTrigger {
    inner: Box<dyn EventConsumer>,
    handle: WorkerHandle<Action>,
    say: Say,
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
                    tell(&self.say, SnapshotNote::Busy);
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
