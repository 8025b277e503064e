//! A recording run on its own thread.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use clrspy_collect::{
    Broadcast, Error, EventConsumer, LaunchOptions, Launched, LiveFeeds, Progress, Recording,
    StopSignal, Summary,
};
use diagnostics_client::{Endpoint, SessionConfig};

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

impl SessionSpec {
    /// The recording and the live feeds of this spec, stopped by `stop`, feeding `consumers`
    /// and the views that join at `broadcast`.
    fn parts<'a>(
        &'a self,
        stop: &'a StopSignal,
        consumers: Vec<Box<dyn EventConsumer>>,
        broadcast: Broadcast,
    ) -> (Recording<'a>, LiveFeeds<'static>) {
        let rec = Recording {
            config: &self.config,
            out: self.out.as_deref(),
            duration: self.duration,
            stop,
            thread_cpu: self.thread_cpu,
            ring: None,
        };
        let live = LiveFeeds {
            consumers,
            broadcast: Some(broadcast),
            lossless: self.lossless,
            ..LiveFeeds::default()
        };
        (rec, live)
    }
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

/// How a launched program ended, beside its recording's summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChildEnd {
    /// The child's process id.
    pub pid: u32,
    /// How it exited (None when it was still running when clrspy left it).
    pub status: Option<ExitStatus>,
    /// True when clrspy ended it (the session stopped before the program did).
    pub terminated_by_clrspy: bool,
}

type Outcome = Result<(Summary, Option<ChildEnd>), Error>;

/// A recording running on its own thread.
pub struct LiveSession {
    stop: Arc<StopSignal>,
    broadcast: Broadcast,
    progress: Arc<Mutex<Progress>>,
    /// The launched child's pid once it started (0 before, and for an attach).
    child_pid: Arc<AtomicU32>,
    thread: Option<JoinHandle<Outcome>>,
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
                let (rec, live) = spec.parts(&s, consumers, b);
                clrspy_collect::record_live(&endpoint, &rec, live, &mut |now| {
                    if let Ok(mut q) = p.lock() {
                        *q = *now;
                    }
                })
                .map(|s| (s, None))
            })?;
        Ok(LiveSession {
            stop,
            broadcast,
            progress,
            child_pid: Arc::default(),
            thread: Some(thread),
        })
    }

    /// Starts `command` (program and arguments) held at its first instruction, records `spec`
    /// from there feeding `consumers`, and ends with the program (or asks it to end when the
    /// session is stopped first). `opts` says where its output goes. An empty command fails
    /// at [`LiveSession::join`].
    pub fn launch(
        command: Vec<OsString>,
        spec: SessionSpec,
        consumers: Vec<Box<dyn EventConsumer>>,
        opts: LaunchOptions,
    ) -> std::io::Result<LiveSession> {
        let stop = Arc::new(StopSignal::new());
        let broadcast = Broadcast::new();
        let progress = Arc::new(Mutex::new(Progress::default()));
        let child_pid = Arc::new(AtomicU32::new(0));
        let (s, b, p, c) = (
            stop.clone(),
            broadcast.clone(),
            progress.clone(),
            child_pid.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("clrspy-live-session".into())
            .spawn(move || {
                let Some((program, args)) = command.split_first() else {
                    return Err(Error::Spawn {
                        program: PathBuf::new(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            "no command to start",
                        ),
                    });
                };
                let (rec, live) = spec.parts(&s, consumers, b);
                let l: Launched = clrspy_collect::launch_live(
                    program,
                    args,
                    &rec,
                    opts,
                    live,
                    &mut |pid| c.store(pid, Ordering::Relaxed),
                    &mut |now| {
                        if let Ok(mut q) = p.lock() {
                            *q = *now;
                        }
                    },
                )?;
                let end = ChildEnd {
                    pid: l.pid,
                    status: l.status,
                    terminated_by_clrspy: l.terminated_by_clrspy,
                };
                Ok((l.summary, Some(end)))
            })?;
        Ok(LiveSession {
            stop,
            broadcast,
            progress,
            child_pid,
            thread: Some(thread),
        })
    }

    /// The launched program's pid once it started (None for an attach, or before).
    pub(crate) fn child_pid(&self) -> Option<u32> {
        Some(self.child_pid.load(Ordering::Relaxed)).filter(|&p| p != 0)
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
    pub(crate) fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Asks the recording to stop (the rundown is still written); [`LiveSession::join`] waits.
    pub fn stop(&self) {
        self.stop.request();
    }

    /// Waits for the recording to end; what it wrote, or why it failed.
    pub fn join(self) -> Result<Summary, SessionError> {
        self.join_child().map(|(s, _)| s)
    }

    /// [`LiveSession::join`], with how the launched program ended (None for an attach).
    pub(crate) fn join_child(mut self) -> Result<(Summary, Option<ChildEnd>), SessionError> {
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
