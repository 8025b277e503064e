//! A recording run on its own thread, and the refresh loop of a view over a live analysis.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrspy_analysis::Analysis;
use clrspy_collect::{
    Broadcast, Error, EventConsumer, LiveFeeds, Progress, Recording, StopSignal, Summary,
};
use diagnostics_client::{Endpoint, SessionConfig};

use crate::LiveAnalysis;

/// What a live session records and where.
#[derive(Clone, Debug, Default)]
pub struct SessionSpec {
    /// Providers, buffer, rundown.
    pub config: SessionConfig,
    /// The trace file, if one is kept.
    pub out: Option<PathBuf>,
    /// Stop after this long (None: until [`LiveSession::stop`] or the target's exit).
    pub duration: Option<Duration>,
    /// Thread CPU readings this often (Linux); None for none.
    pub thread_cpu: Option<Duration>,
    /// The tap waits for its consumers instead of skipping (see
    /// [`LiveFeeds::lossless`](clrspy_collect::LiveFeeds::lossless)).
    pub lossless: bool,
}

/// Why a live session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The recording failed (the target refused the session, the file could not be written).
    #[error("{0}")]
    Record(#[from] Error),
    /// The session's thread ended without an answer (a consumer panicked).
    #[error("the live session's thread ended abnormally")]
    Abnormal,
}

/// A recording running on its own thread.
pub struct LiveSession {
    stop: Arc<StopSignal>,
    broadcast: Broadcast,
    progress: Arc<Mutex<Progress>>,
    thread: Option<JoinHandle<Result<Summary, Error>>>,
}

impl std::fmt::Debug for LiveSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSession")
            .field("running", &self.is_running())
            .field("progress", &self.progress())
            .finish()
    }
}

impl LiveSession {
    /// Starts recording `spec` on the process behind `endpoint`, feeding `consumers`; more
    /// join through [`LiveSession::broadcast`]. Errors (the target refused the session, the
    /// file could not be written) come from [`LiveSession::join`].
    pub fn attach(
        endpoint: Endpoint,
        spec: SessionSpec,
        consumers: Vec<Box<dyn EventConsumer>>,
    ) -> std::io::Result<LiveSession> {
        let stop = Arc::new(StopSignal::new());
        let broadcast = Broadcast::new();
        let progress = Arc::new(Mutex::new(Progress::default()));
        let (s, b, p) = (stop.clone(), broadcast.clone(), progress.clone());
        let thread = std::thread::Builder::new()
            .name("clrspy-live-session".into())
            .spawn(move || {
                let rec = Recording {
                    config: &spec.config,
                    out: spec.out.as_deref(),
                    duration: spec.duration,
                    stop: &s,
                    thread_cpu: spec.thread_cpu,
                    ring: None,
                };
                let live = LiveFeeds {
                    consumers,
                    broadcast: Some(b),
                    lossless: spec.lossless,
                    ..LiveFeeds::default()
                };
                clrspy_collect::record_live(&endpoint, &rec, live, &mut |now| {
                    if let Ok(mut q) = p.lock() {
                        *q = *now;
                    }
                })
            })?;
        Ok(LiveSession {
            stop,
            broadcast,
            progress,
            thread: Some(thread),
        })
    }

    /// Where views join and leave this session.
    pub fn broadcast(&self) -> &Broadcast {
        &self.broadcast
    }

    /// Where the recording stands.
    pub fn progress(&self) -> Progress {
        self.progress.lock().map(|p| *p).unwrap_or_default()
    }

    /// True while the recording runs.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Asks the recording to stop (the rundown is still written); [`LiveSession::join`] waits.
    pub fn stop(&self) {
        self.stop.request();
    }

    /// Waits for the recording to end; what it wrote, or why it failed.
    pub fn join(mut self) -> Result<Summary, SessionError> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => Ok(r?),
            _ => Err(SessionError::Abnormal),
        }
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.request();
            let _ = t.join();
        }
    }
}

/// Hands `view` a finished snapshot of `live` every `every` until it returns false or the
/// session ended (the last call then has the final analysis).
pub fn refresh(live: &LiveAnalysis, every: Duration, view: &mut dyn FnMut(&Analysis) -> bool) {
    let mut next = Instant::now() + every;
    loop {
        let ended = live.end().is_some();
        if let Some(a) = live.snapshot() {
            if !view(&a) || ended {
                return;
            }
        } else if ended {
            return;
        }
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += every;
    }
}
