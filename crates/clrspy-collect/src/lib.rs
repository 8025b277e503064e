//! Collection: running an EventPipe session on a live process and streaming its trace to disk
//! as the bytes arrive (nothing is held in memory), until the caller asks to stop, a duration
//! passes, or the target exits. Stopping asks the runtime to end the session so the rundown
//! (method names) is written; a second stop request gives up waiting for it.
#![deny(missing_docs)]

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use diagnostics_client::{start_session, stop_session, Endpoint, SessionConfig};

/// Why recording ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The requested duration passed.
    Duration,
    /// The user asked (Ctrl+C, Enter).
    Requested,
    /// The target closed the session (it exited, or another tool stopped the session).
    TargetEnded,
}

/// What a recording wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The output file.
    pub path: PathBuf,
    /// Bytes written.
    pub bytes: u64,
    /// Why it ended.
    pub reason: StopReason,
    /// True when the runtime finished the trace after the stop (rundown included); false when
    /// the wait for it was cut short.
    pub complete: bool,
    /// How long the session ran.
    pub elapsed: Duration,
}

/// What can go wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Creating or writing the output file failed (full disk, permissions).
    Output(PathBuf, std::io::Error),
    /// Talking to the runtime failed.
    Client(diagnostics_client::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Output(p, e) => write!(f, "writing {}: {e}", p.display()),
            Error::Client(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

/// Stop requests, counted: the first asks the runtime to stop, the second gives up waiting.
#[derive(Debug, Default)]
pub struct StopSignal(AtomicU32);

impl StopSignal {
    /// A signal with no requests.
    pub const fn new() -> StopSignal {
        StopSignal(AtomicU32::new(0))
    }

    /// Records one stop request.
    pub fn request(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// Number of requests so far.
    pub fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Progress callback: elapsed time and bytes written so far.
pub type OnProgress<'a> = &'a mut dyn FnMut(Duration, u64);

/// Records a session on `endpoint` into `out`.
pub fn record(
    endpoint: &Endpoint,
    config: &SessionConfig,
    out: &Path,
    duration: Option<Duration>,
    stop: &StopSignal,
    on_progress: OnProgress<'_>,
) -> Result<Summary, Error> {
    // The file first: an unwritable path fails before the target is touched.
    let mut file = File::create(out).map_err(|e| Error::Output(out.to_path_buf(), e))?;
    let timeout = Duration::from_secs(5);
    let mut session = start_session(endpoint, config, timeout).map_err(Error::Client)?;
    session
        .set_read_timeout(Duration::from_millis(200))
        .map_err(Error::Client)?;
    let started = Instant::now();
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut reason = None;
    let mut stop_sent_at: Option<Instant> = None;
    let mut complete = true;
    let mut stopper: Option<std::thread::JoinHandle<diagnostics_client::Result<()>>> = None;
    loop {
        match session.read(&mut buf) {
            Ok(0) => {
                reason.get_or_insert(StopReason::TargetEnded);
                break;
            }
            Ok(n) => {
                file.write_all(&buf[..n])
                    .map_err(|e| Error::Output(out.to_path_buf(), e))?;
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
        on_progress(started.elapsed(), bytes);
        if stop_sent_at.is_none() {
            let why = if stop.count() > 0 {
                Some(StopReason::Requested)
            } else if duration.is_some_and(|d| started.elapsed() >= d) {
                Some(StopReason::Duration)
            } else {
                None
            };
            if let Some(why) = why {
                reason = Some(why);
                stop_sent_at = Some(Instant::now());
                // Ask from another thread: the runtime answers only after it wrote the rundown
                // into this session's stream, which must keep being drained meanwhile.
                let (ep, id) = (endpoint.clone(), session.id);
                stopper = Some(std::thread::spawn(move || stop_session(&ep, id, timeout)));
            }
        } else if stop.count() > 1 {
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
        .map_err(|e| Error::Output(out.to_path_buf(), e))?;
    Ok(Summary {
        path: out.to_path_buf(),
        bytes,
        reason: reason.unwrap_or(StopReason::TargetEnded),
        complete,
        elapsed: started.elapsed(),
    })
}
