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
use crate::inject::{Injected, Splicer};
use crate::procstat::{monotonic_ns, ProcSampler};
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
    drain(session, to, file, endpoint.pid, rec, on_progress)
}

/// Creates the output file, with the path in the error.
pub(crate) fn create_output(out: &Path) -> Result<File, Error> {
    File::create(out).map_err(|e| Error::Output(out.to_path_buf(), e))
}

/// Streams `session` into `file` until a stop condition; `to` opens the connection for
/// StopTracing; `pid` is the target as seen from here (for its thread CPU readings).
pub(crate) fn drain(
    mut session: Session,
    to: Arc<dyn Connector>,
    file: File,
    pid: u32,
    rec: &Recording<'_>,
    on_progress: OnProgress<'_>,
) -> Result<Summary, Error> {
    let out = rec.out;
    let write_err = |e| Error::Output(out.to_path_buf(), e);
    let interval = rec.thread_cpu.filter(|_| cfg!(target_os = "linux"));
    let read_timeout = interval
        .map_or(Duration::from_millis(100), |i| {
            i.min(Duration::from_millis(100))
        })
        .max(Duration::from_millis(1));
    session
        .set_read_timeout(read_timeout)
        .map_err(Error::Client)?;
    let mut file = Splicer::new(file);
    let mut sampler = interval.map(|_| ProcSampler::new(pid));
    let mut next_tick = Instant::now();
    let mut next_maps = Instant::now();
    let mut first_tick = true;
    let started = Instant::now();
    let mut counter = Counter::new();
    let mut buf = vec![0u8; 256 * 1024];
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
                file.write_runtime(&buf[..n]).map_err(write_err)?;
                counter.feed(&buf[..n]);
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
        if let (Some(s), Some(i)) = (sampler.as_mut(), interval) {
            if Instant::now() >= next_tick && file.is_active() {
                next_tick += i;
                if next_tick < Instant::now() {
                    next_tick = Instant::now() + i;
                }
                let readings = s.threads();
                let ts = monotonic_ns();
                if first_tick {
                    first_tick = false;
                    file.push(
                        ts,
                        Injected::SamplerInfo {
                            interval_ms: i.as_millis().min(u128::from(u32::MAX)) as u32,
                            source: s.source.into(),
                        },
                    );
                }
                if Instant::now() >= next_maps {
                    next_maps = Instant::now() + Duration::from_secs(2);
                    for m in s.new_mappings() {
                        file.push(
                            ts,
                            Injected::ModuleMap {
                                start: m.start,
                                end: m.end,
                                offset: m.offset,
                                path: m.path,
                            },
                        );
                    }
                }
                for r in readings {
                    if let Some(name) = r.name {
                        file.push(ts, Injected::ThreadName { tid: r.tid, name });
                    }
                    file.push(
                        ts,
                        Injected::ThreadCpu {
                            tid: r.tid,
                            cpu_ns: r.cpu_ns,
                            state: r.state,
                        },
                    );
                }
                file.push(ts, Injected::Tick);
            }
            file.inject().map_err(write_err)?;
        }
        let (events, dropped_events) = counter.counts();
        on_progress(&Progress {
            elapsed: started.elapsed(),
            bytes: file.written(),
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
    let spliced_events = file.spliced;
    let bytes = file.written();
    let mut file = file.into_inner().map_err(write_err)?;
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
        spliced_events,
    })
}
