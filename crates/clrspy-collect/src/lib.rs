//! Collection: finding the target (a pid, a name, a command to launch; containers too),
//! running an EventPipe session on it — attached, or launched by clrspy suspended so nothing
//! before `Main` is missed — and pumping its bytes, as they arrive, into sinks (the trace file;
//! nothing is held in memory) and an event tap whose consumers may ask the pump to stop, dump
//! or snapshot. A recording ends when the caller asks, a duration passes, a consumer asks, or
//! the target exits; stopping asks the runtime to end the session so the rundown (method names)
//! is written, and a second stop request gives up waiting for it. Core dumps and the target's
//! thread CPU readings live here too: dumps compressed as createdump writes them (through a
//! FIFO), taken on first-chance exceptions by a worker with a per-rule limit (or, in hold mode,
//! while a startup hook holds the throwing thread), and a launched program's crash report.
//! A launched program's whole process tree can be recorded too, one trace per .NET process.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod cgroup;
mod code_kinds;
mod consumer;
mod coredump;
pub mod crash;
pub mod disk;
mod dump_analysis;
mod dump_options;
mod dumper;
mod dumpfile;
mod error;
mod exception_dumps;
pub mod heapsnap;
#[cfg(unix)]
mod hold;
#[cfg(not(unix))]
#[path = "hold_stub.rs"]
mod hold;
pub mod inject;
mod inlines;
pub mod kernel;
mod launch;
mod native;
mod osr;
pub mod private;
pub mod procstat;
mod r2r;
mod readings;
mod ring;
mod run;
mod session;
mod sink;
/// System and process metrics from /proc and the cgroups, sampled at an interval.
pub mod sysmetrics;
mod tap;
mod tap_feed;
mod target;
mod tree;
pub mod trigger;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

pub use consumer::{Action, Broadcast, End, EventConsumer, Lost, Subscription};
pub use coredump::dump_path;
pub use crash::{CrashCapture, CrashReport};
pub use dump_analysis::{
    analysis_line, analysis_path, analyze_dump, dac_sidecar, hang_dump, write_analysis,
};
pub use dump_options::{DumpOptions, DumpOptionsError};
pub(crate) use dumper::{thrown_type, with_exception_events};
pub use dumper::{
    DumpGate, DumpHandle, DumpNotice, DumpOutcome, DumpPlan, DumpRequest, ExceptionTrigger, OnDump,
};
pub use dumpfile::{
    compress_core_into, compressed_dump_name, core_limit_for, write_dump_file, Compression,
    CopyLimits, DumpReport, DumpSpec,
};
pub use error::{Error, ErrorKind, Result};
pub(crate) use exception_dumps::exception_patterns;
pub use exception_dumps::{DumpsStarted, Env, ExceptionDumps};
pub(crate) use hold::HoldServer;
pub use launch::{end_child, launch_live, ChildOutput, ExtraRuntimes, LaunchOptions, Launched};
pub use ring::{parse_buffer_size, parse_ring_size, RingStats};
pub use run::{run, with_method_loads, ChildEnd, RunObserver, RunOptions, RunOutcome, Started};
pub use session::{record_live, record_via, LiveFeeds};
pub use sink::{ByteSink, SinkReport};
pub use tap::TapLoss;
pub use target::{default_output, endpoint_for_pid, launch_name, Resolved, Target};
pub use tree::{record_tree, ConsumerFactory, TreeNotice, TreeOptions, TreeOutcome, TreeTrace};
pub use worker::{Worker, WorkerHandle};

use diagnostics_client::SessionConfig;

/// Why recording ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The requested duration passed.
    Duration,
    /// The user asked (Ctrl+C, Enter).
    Requested,
    /// The target closed the session (it exited, or another tool stopped the session).
    TargetEnded,
    /// An event consumer asked to stop ([`Summary::trigger`] says why).
    Triggered,
}

/// What to record and where.
#[derive(Clone, Debug)]
pub struct Recording<'a> {
    /// The session: providers, buffer, rundown, stacks.
    pub config: &'a SessionConfig,
    /// The output file; None for a session that only feeds live consumers (or the caller's
    /// sinks). Thread CPU readings, thread names and ReadyToRun names run either way.
    pub out: Option<&'a Path>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop requests (Ctrl+C, Enter).
    pub stop: &'a StopSignal,
    /// Read every target thread's CPU time this often and splice it into the trace (Linux);
    /// None to leave the runtime's stream as it is.
    pub thread_cpu: Option<Duration>,
    /// Keep only the newest part of the stream, about this many bytes, in the file (a ring:
    /// see `RingSink`); None to keep all of it.
    pub ring: Option<u64>,
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
    /// What the live view skipped because its consumers fell behind (the file has it all).
    pub tap_lost: Option<TapLoss>,
    /// When a stop trigger fired ([`Action::Trigger`]): how long the recording goes on.
    pub stopping_in: Option<Duration>,
}

/// What a recording wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The output file (None when the session wrote none).
    pub path: Option<PathBuf>,
    /// Bytes written.
    pub bytes: u64,
    /// Events in the trace, counted as they streamed (None when the count was given up).
    pub events: Option<u64>,
    /// Events the runtime lost (its buffer was full), counted from sequence numbers.
    pub dropped_events: Option<u64>,
    /// What the live view (the event count, the consumers) skipped because it fell behind;
    /// the file has it all.
    pub tap_lost: Option<TapLoss>,
    /// Why it ended.
    pub reason: StopReason,
    /// What the consumer that stopped the recording said (with [`StopReason::Triggered`]).
    pub trigger: Option<String>,
    /// The stop trigger that fired ([`Action::Trigger`]), if one did.
    pub fired: Option<trigger::Fired>,
    /// With a ring ([`Recording::ring`]): what it kept and dropped.
    pub ring: Option<RingStats>,
    /// True when the runtime finished the trace after the stop (rundown included); false when
    /// the wait for it was cut short or the connection broke.
    pub complete: bool,
    /// How long the session ran.
    pub elapsed: Duration,
    /// The CollectTracing version the runtime accepted.
    pub command_version: u8,
    /// Options this runtime could not honour, in words.
    pub degraded: Vec<String>,
    /// What the recording did otherwise than asked, in words (the kernel refused to sample a
    /// launched program, so the runtime's sampler took the samples).
    pub notes: Vec<String>,
    /// clrspy's own events spliced into the trace (thread CPU readings, names, module maps).
    pub spliced_events: u64,
    /// When the runtime's stream stopped before its end (target killed, connection broken,
    /// rundown wait cut short, disk full), clrspy ended the file itself after the last whole
    /// block, so it opens everywhere: the bytes of the partial block it dropped. None when the
    /// runtime ended the stream.
    pub closed_by_clrspy: Option<u64>,
}

impl Summary {
    /// The file the recording wrote, for messages: "the trace" for a session without one.
    pub fn file(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new("the trace"))
    }
}

/// A provider of a spec (dotnet-trace's `Name:Keywords:Level:Args`, parsed by clr-events) as
/// a session enables it.
pub fn session_provider(
    p: clr_events::provider_spec::ProviderSpec,
) -> diagnostics_client::Provider {
    diagnostics_client::Provider {
        name: p.name,
        keywords: p.keywords,
        level: p.level,
        arguments: p.arguments,
    }
}

/// Stop requests, counted: the first asks the runtime to stop, the second gives up waiting.
///
/// Requests that come within 300 ms (`StopSignal::SAME_REQUEST`) of the first count once: a
/// signal sent to a process and then to its process group (GNU `timeout -s INT`, a service
/// manager stopping a unit) arrives twice microseconds apart, and must not be read as the
/// user's second Ctrl+C, which throws the rundown away.
#[derive(Debug, Default)]
pub struct StopSignal {
    count: AtomicU32,
    /// Microseconds from [`stop_epoch`] to the first request, plus one (0: none yet).
    first_us: AtomicU64,
}

/// The clock's start for [`StopSignal`] (a `static` signal cannot hold an `Instant`).
fn stop_epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

impl StopSignal {
    /// How close after the first request another one is taken as the same request.
    pub(crate) const SAME_REQUEST: std::time::Duration = std::time::Duration::from_millis(300);

    /// A signal with no requests.
    pub const fn new() -> StopSignal {
        StopSignal {
            count: AtomicU32::new(0),
            first_us: AtomicU64::new(0),
        }
    }

    /// Records one stop request.
    pub fn request(&self) {
        let now = stop_epoch().elapsed().as_micros() as u64 + 1;
        match self
            .first_us
            .compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {
                self.count.fetch_add(1, Ordering::SeqCst);
            }
            Err(first) => {
                if now.saturating_sub(first) >= Self::SAME_REQUEST.as_micros() as u64 {
                    self.count.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// Number of requests so far (those within 300 ms of the first count once).
    pub fn count(&self) -> u32 {
        self.count.load(Ordering::SeqCst)
    }
}

/// Progress callback.
pub type OnProgress<'a> = &'a mut dyn FnMut(&Progress);

#[cfg(test)]
mod stop_signal_tests {
    use super::StopSignal;

    #[test]
    fn two_signals_microseconds_apart_are_one_request() {
        let s = StopSignal::new();
        assert_eq!(s.count(), 0);
        s.request();
        s.request();
        s.request();
        assert_eq!(
            s.count(),
            1,
            "a signal to the process and its group is one stop"
        );
        std::thread::sleep(StopSignal::SAME_REQUEST + std::time::Duration::from_millis(50));
        s.request();
        assert_eq!(
            s.count(),
            2,
            "a later Ctrl+C gives up waiting for the rundown"
        );
        s.request();
        assert_eq!(s.count(), 3, "after the first, each later request counts");
    }
}
