//! The session loop shared by attach and launch: read the runtime's stream, write it to disk
//! as it arrives, watch the stop conditions, and ask the runtime to stop (from a side thread:
//! the runtime answers StopTracing only after it wrote the rundown into the stream we must keep
//! draining).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use diagnostics_client::{start_session, stop_session, Connector, Endpoint, Session};

use crate::counter::Counter;
use crate::{Error, OnProgress, Progress, Recording, StopReason, Summary};

/// How long each command may take before the runtime is considered unresponsive.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Records a session on a running process's `endpoint` into `rec.out`.
pub fn record(
    endpoint: &Endpoint,
    rec: &Recording<'_>,
    on_progress: OnProgress<'_>,
) -> Result<Summary, Error> {
    // The file first: an unwritable path fails before the target is touched.
    let file = create_output(rec.out)?;
    let to: Arc<dyn Connector> = Arc::new(endpoint.clone());
    let session = start_session(to.as_ref(), rec.config, COMMAND_TIMEOUT).map_err(Error::Client)?;
    drain(session, to, file, rec, on_progress)
}

/// Creates the output file, with the path in the error.
pub(crate) fn create_output(out: &Path) -> Result<File, Error> {
    File::create(out).map_err(|e| Error::Output(out.to_path_buf(), e))
}

/// Streams `session` into `file` until a stop condition; `to` opens the connection for
/// StopTracing.
pub(crate) fn drain(
    mut session: Session,
    to: Arc<dyn Connector>,
    mut file: File,
    rec: &Recording<'_>,
    on_progress: OnProgress<'_>,
) -> Result<Summary, Error> {
    let out = rec.out;
    let write_err = |e| Error::Output(out.to_path_buf(), e);
    session
        .set_read_timeout(Duration::from_millis(100))
        .map_err(Error::Client)?;
    let started = Instant::now();
    let mut counter = Counter::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut reason = None;
    let mut stop_sent = false;
    let mut complete = true;
    let mut stopper: Option<std::thread::JoinHandle<diagnostics_client::Result<()>>> = None;
    loop {
        match session.read(&mut buf) {
            Ok(0) => {
                reason.get_or_insert(StopReason::TargetEnded);
                break;
            }
            Ok(n) => {
                file.write_all(&buf[..n]).map_err(write_err)?;
                counter.feed(&buf[..n]);
                bytes += n as u64;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                // The connection broke (the target died): what arrived is on disk.
                reason.get_or_insert(StopReason::TargetEnded);
                complete = false;
                break;
            }
        }
        let (events, dropped_events) = counter.counts();
        on_progress(&Progress {
            elapsed: started.elapsed(),
            bytes,
            events,
            dropped_events,
        });
        if !stop_sent {
            let why = if rec.stop.count() > 0 {
                Some(StopReason::Requested)
            } else if rec.duration.is_some_and(|d| started.elapsed() >= d) {
                Some(StopReason::Duration)
            } else {
                None
            };
            if let Some(why) = why {
                reason = Some(why);
                stop_sent = true;
                let (to, id) = (to.clone(), session.id);
                stopper = Some(std::thread::spawn(move || {
                    stop_session(to.as_ref(), id, COMMAND_TIMEOUT)
                }));
            }
        } else if rec.stop.count() > 1 {
            // A second request: stop waiting for the rundown.
            complete = false;
            break;
        } else if stopper.as_ref().is_some_and(|h| h.is_finished()) {
            if let Some(Err(_)) = stopper.take().map(|h| h.join().unwrap_or(Ok(()))) {
                // The runtime refused or did not answer: keep what arrived.
                complete = false;
                break;
            }
        }
    }
    file.flush()
        .and_then(|_| file.sync_all())
        .map_err(write_err)?;
    let (events, dropped_events) = counter.finish();
    Ok(Summary {
        path: out.to_path_buf(),
        bytes,
        events,
        dropped_events,
        reason: reason.unwrap_or(StopReason::TargetEnded),
        complete,
        elapsed: started.elapsed(),
        command_version: session.command_version,
        degraded: session.degraded.clone(),
    })
}
