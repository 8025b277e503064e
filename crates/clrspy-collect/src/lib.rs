//! Collection: running an EventPipe session on a live process — attached by pid, or launched by
//! clrspy suspended so nothing before `Main` is missed — and streaming its trace to disk as the
//! bytes arrive (nothing is held in memory), until the caller asks to stop, a duration passes,
//! or the target exits. Stopping asks the runtime to end the session so the rundown (method
//! names) is written; a second stop request gives up waiting for it.
#![deny(missing_docs)]

mod counter;
pub mod inject;
mod launch;
pub mod procstat;
mod session;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

pub use launch::{launch, Launched};
pub use session::record;

use diagnostics_client::SessionConfig;

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

/// What to record and where.
#[derive(Clone, Debug)]
pub struct Recording<'a> {
    /// The session: providers, buffer, rundown, stacks.
    pub config: &'a SessionConfig,
    /// The output file.
    pub out: &'a Path,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop requests (Ctrl+C, Enter).
    pub stop: &'a StopSignal,
    /// Read every target thread's CPU time this often and splice it into the trace (Linux);
    /// None to leave the runtime's stream as it is.
    pub thread_cpu: Option<Duration>,
}

/// Where a recording stands, for a status line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Time since the session started.
    pub elapsed: Duration,
    /// Bytes written to the file.
    pub bytes: u64,
    /// Events seen in the stream so far (None when the live count was given up).
    pub events: Option<u64>,
    /// Events the runtime reports lost (sequence gaps), when counted.
    pub dropped_events: Option<u64>,
}

/// What a recording wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The output file.
    pub path: PathBuf,
    /// Bytes written.
    pub bytes: u64,
    /// Events in the trace, counted as they streamed (None when the count was given up).
    pub events: Option<u64>,
    /// Events the runtime lost (its buffer was full), counted from sequence numbers.
    pub dropped_events: Option<u64>,
    /// Why it ended.
    pub reason: StopReason,
    /// True when the runtime finished the trace after the stop (rundown included); false when
    /// the wait for it was cut short or the connection broke.
    pub complete: bool,
    /// How long the session ran.
    pub elapsed: Duration,
    /// The CollectTracing version the runtime accepted.
    pub command_version: u8,
    /// Options this runtime could not honour, in words.
    pub degraded: Vec<String>,
    /// clrspy's own events spliced into the trace (thread CPU readings, names, module maps).
    pub spliced_events: u64,
}

/// What can go wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Creating or writing the output file failed (full disk, permissions).
    Output(PathBuf, std::io::Error),
    /// Talking to the runtime failed.
    Client(diagnostics_client::Error),
    /// Starting the program to trace failed, or it never connected.
    Launch(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Output(p, e) => write!(f, "writing {}: {e}", p.display()),
            Error::Client(e) => write!(f, "{e}"),
            Error::Launch(what) => write!(f, "{what}"),
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

/// Progress callback.
pub type OnProgress<'a> = &'a mut dyn FnMut(&Progress);
