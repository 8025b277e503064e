//! CPU samples of a process's threads taken by the kernel, not by the .NET runtime.
//!
//! The runtime's sample profiler suspends every managed thread about a thousand times a
//! second to walk its stack. This crate asks the kernel instead: one `cpu-clock` software
//! perf event per thread of the target (`perf_event_open`, user space only), sampling at a
//! chosen frequency with the thread id, a `CLOCK_MONOTONIC` timestamp (the clock EventPipe
//! stamps its events with) and the user-space callchain the kernel walks through frame
//! pointers. Nothing in the target is stopped. Threads born later are found by rescanning
//! `/proc/PID/task` ([`Sampler::follow_threads`]); the ring buffers are read without blocking
//! ([`Sampler::drain`]).
//!
//! Only Linux has `perf_event_open`; elsewhere [`Sampler::open`] returns
//! [`Error::Unsupported`]. Where the kernel refuses (`perf_event_paranoid` 3, a seccomp
//! filter, another user's process) the error is [`Error::Refused`] with a message saying how
//! to allow it, so the caller can fall back to the runtime's sampler with one clear line.

#![deny(missing_docs)]
#![warn(unreachable_pub)]

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod osr;
#[cfg(target_os = "linux")]
mod ring;
#[cfg(target_os = "linux")]
mod unwind;

use std::fmt;

/// One CPU sample: which thread was on a CPU, when, and its user-space stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The thread's id (the kernel's tid, as EventPipe reports OS thread ids).
    pub tid: u32,
    /// When, in `CLOCK_MONOTONIC` nanoseconds.
    pub time_ns: u64,
    /// Return addresses, innermost first (the kernel's context markers removed).
    pub frames: Vec<u64>,
    /// The user stack pointer when the sample was taken (0 when not known): where
    /// [`Sampler::repair_osr`] looks for what the kernel's frame-pointer walk skipped.
    pub sp: u64,
}

/// A thread off its CPU: it left at `start_ns` with this user stack (blocked in a system
/// call, or `preempted` while still runnable) and came back at `end_ns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// The thread's id.
    pub tid: u32,
    /// When it left its CPU, `CLOCK_MONOTONIC` ns; 0 when that was before its thread's
    /// event opened (blocked already then).
    pub start_ns: u64,
    /// When it came back (for a wait still going on, or its thread's end: when that was seen).
    pub end_ns: u64,
    /// True when it was preempted (runnable, waiting for a CPU), not blocked.
    pub preempted: bool,
    /// Return addresses when it left, innermost first (empty when the kernel gave none).
    pub frames: Vec<u64>,
}

impl Wait {
    #[cfg(target_os = "linux")]
    /// A wait of thread `tid`, blocked since before its event opened, until `end_ns`, with
    /// the stack it was blocked with.
    pub(crate) fn blocked_before(tid: u32, end_ns: u64, frames: Vec<u64>) -> Wait {
        Wait {
            tid,
            start_ns: 0,
            end_ns,
            preempted: false,
            frames,
        }
    }
}

/// Why the sampler could not start or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel refused `perf_event_open`; the message says why and how to allow it.
    #[error("the kernel refused CPU sampling of process {pid}: {reason}")]
    Refused {
        /// The target process.
        pid: u32,
        /// Why, with the way to allow it.
        reason: Refusal,
    },
    /// The target process has no threads left (it ended) or does not exist.
    #[error("process {pid} has no threads to sample (it ended, or never existed)")]
    NoThreads {
        /// The target process.
        pid: u32,
    },
    /// A system call failed for another reason.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// This platform has no `perf_event_open`.
    #[error("the kernel sampler needs Linux (perf_event_open)")]
    Unsupported,
}

/// Why the kernel refused, with the way to allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `perf_event_paranoid` is above 2 (the value is kept).
    Paranoid(i64),
    /// Permission denied for another reason (another user's process, missing capability).
    Permission,
    /// The system call itself is not available (a container's seccomp filter, an old kernel).
    NoSyscall,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Paranoid(level) => write!(
                f,
                "kernel.perf_event_paranoid is {level}; allow it with \
                 `sysctl kernel.perf_event_paranoid=2` or give clrspy CAP_PERFMON"
            ),
            Refusal::Permission => write!(
                f,
                "permission denied (another user's process?); run as the target's user \
                 or give clrspy CAP_PERFMON"
            ),
            Refusal::NoSyscall => write!(
                f,
                "perf_event_open is not available (a container's seccomp profile?); \
                 allow it with `--security-opt seccomp=...` permitting perf_event_open \
                 or `--cap-add PERFMON`"
            ),
        }
    }
}

/// What the sampler has counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples handed out.
    pub samples: u64,
    /// Samples the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Threads sampled (opened) so far.
    pub threads: u64,
    /// Waits shorter than [`MIN_WAIT_NS`], not handed out: how many so far.
    pub short_waits: u64,
    /// Their time in all, ns.
    pub short_wait_ns: u64,
}

/// The shortest wait handed out (ns). Shorter ones are counted, not kept: on a web app under
/// load half of all waits were shorter than this and held 0.4 % of the time waited, and each
/// kept wait costs an unwinding and ~1 KB of trace.
pub const MIN_WAIT_NS: u64 = 100_000;

/// The default rate: samples per second per thread on a CPU (off the 1000 Hz timer tick, an
/// odd number, so the samples do not beat with timers of round periods).
pub const DEFAULT_RATE_HZ: u32 = 999;

#[cfg(target_os = "linux")]
pub use linux::Sampler;

/// The sampler where the platform has no `perf_event_open`: opening it fails.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub struct Sampler(());

#[cfg(not(target_os = "linux"))]
impl Sampler {
    /// Always [`Error::Unsupported`] off Linux.
    pub fn open(_pid: u32, _rate_hz: u32) -> Result<Sampler, Error> {
        Err(Error::Unsupported)
    }
    /// Never reached off Linux.
    pub fn follow_threads(&mut self) -> Result<usize, Error> {
        Err(Error::Unsupported)
    }
    /// Never reached off Linux.
    pub fn drain(&mut self, _out: &mut Vec<Sample>) -> Result<usize, Error> {
        Err(Error::Unsupported)
    }
    /// Never reached off Linux.
    pub fn rate_hz(&self) -> u32 {
        0
    }
    /// Never reached off Linux.
    pub fn repair_osr(&mut self, _s: &mut Sample, _osr_pair: impl Fn(u64, u64) -> bool) -> usize {
        0
    }
    /// Never reached off Linux.
    pub fn counts(&self) -> Counts {
        Counts::default()
    }
    /// Never reached off Linux.
    pub fn user_mode_only(&self) -> bool {
        false
    }
    /// Always [`Error::Unsupported`] off Linux.
    pub fn open_with(_pid: u32, _rate_hz: u32, _waits: bool) -> Result<Sampler, Error> {
        Err(Error::Unsupported)
    }
    /// Never reached off Linux.
    pub fn take_waits(&mut self, _out: &mut Vec<Wait>) -> usize {
        0
    }
    /// Never reached off Linux.
    pub fn samples_waits(&self) -> bool {
        false
    }
    /// Never reached off Linux.
    pub fn waits_refused(&self) -> Option<&str> {
        None
    }
    /// Never reached off Linux.
    pub fn blocked_now(&self, _out: &mut Vec<(u32, u64, Vec<u64>)>) {}
}
