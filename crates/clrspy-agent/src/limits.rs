//! Limits on concurrent work, one place for every route: each kind of request has a semaphore
//! (full: 429 with `Retry-After`), a process is worked on by one session of a kind at a time,
//! and blocking work holds its permits until it really ends — a request that times out does
//! not free them early. Short blocking work (diagnostics IPC, stack sessions, a folder
//! measured) runs on tokio's blocking threads ([`blocking`]); work that lasts minutes to an
//! hour (recordings, streams, dump jobs) on a named thread of its own ([`on_thread`],
//! [`spawn_thread`]), so it never holds one of the blocking pool's few threads that long.
//! The permits bound how many such threads there are.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::ConcurrencyConfig;
use crate::error::ApiError;

/// A kind of work with its own limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Listing processes, or one process's details.
    Processes,
    /// A stack snapshot.
    Stacks,
    /// A CPU profile pull (`/debug/pprof/profile`; shares the `profiles` limit).
    Profile,
    /// An allocation profile pull (`/debug/pprof/allocs`; shares the `profiles` limit).
    Allocs,
    /// Reports recorded and analysed (`/reports`; shares the `profiles` limit).
    Reports,
    /// A process dump (`/dump`).
    Dump,
    /// A heap snapshot (`/gcdump`).
    Gcdump,
    /// A streamed trace (`/trace`; the `traces` limit).
    Trace,
    /// Live counters (`/counters`; shares the `streams` limit).
    Counters,
    /// Live logs (`/logs`; shares the `streams` limit).
    Logs,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Processes => "process listings",
            Kind::Stacks => "stack snapshots",
            Kind::Profile => "CPU profiles",
            Kind::Allocs => "allocation profiles",
            Kind::Reports => "report recordings",
            Kind::Dump => "dumps",
            Kind::Gcdump => "heap snapshots",
            Kind::Trace => "streamed traces",
            Kind::Counters => "counter streams",
            Kind::Logs => "log streams",
        }
    }
}

/// The semaphores and the processes being worked on.
#[derive(Debug)]
pub(crate) struct Limits {
    processes: Arc<Semaphore>,
    stacks: Arc<Semaphore>,
    profiles: Arc<Semaphore>,
    dumps: Arc<Semaphore>,
    gcdumps: Arc<Semaphore>,
    traces: Arc<Semaphore>,
    streams: Arc<Semaphore>,
    busy: Mutex<HashSet<(Kind, u32)>>,
}

/// A process held by one request of a kind; released when dropped.
#[derive(Debug)]
pub(crate) struct PidGuard {
    limits: Arc<Limits>,
    key: (Kind, u32),
}

impl Drop for PidGuard {
    fn drop(&mut self) {
        let mut busy = self.limits.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.remove(&self.key);
    }
}

/// What a piece of blocking work holds while it runs.
#[derive(Debug)]
pub(crate) struct Admission {
    _permit: OwnedSemaphorePermit,
    _pid: Option<PidGuard>,
}

impl Limits {
    /// From the config (a limit of 0 is taken as 1).
    pub(crate) fn new(c: &ConcurrencyConfig) -> Limits {
        Limits {
            processes: Arc::new(Semaphore::new(c.processes.max(1))),
            stacks: Arc::new(Semaphore::new(c.stacks.max(1))),
            profiles: Arc::new(Semaphore::new(c.profiles.max(1))),
            dumps: Arc::new(Semaphore::new(c.dumps.max(1))),
            gcdumps: Arc::new(Semaphore::new(c.gcdumps.max(1))),
            traces: Arc::new(Semaphore::new(c.traces.max(1))),
            streams: Arc::new(Semaphore::new(c.streams.max(1))),
            busy: Mutex::new(HashSet::new()),
        }
    }

    fn semaphore(&self, kind: Kind) -> &Arc<Semaphore> {
        match kind {
            Kind::Processes => &self.processes,
            Kind::Stacks => &self.stacks,
            Kind::Profile | Kind::Allocs | Kind::Reports => &self.profiles,
            Kind::Dump => &self.dumps,
            Kind::Gcdump => &self.gcdumps,
            Kind::Trace => &self.traces,
            Kind::Counters | Kind::Logs => &self.streams,
        }
    }

    /// A permit for one request of `kind` (and, with `pid`, that process for this kind), or a
    /// 429 when the kind is full or the process is already being worked on.
    pub(crate) fn admit(
        self: &Arc<Self>,
        kind: Kind,
        pid: Option<u32>,
    ) -> Result<Admission, ApiError> {
        let permit = self
            .semaphore(kind)
            .clone()
            .try_acquire_owned()
            .map_err(|_| {
                ApiError::busy(format!("too many {} at once; retry later", kind.label()), 1)
            })?;
        let pid = match pid {
            None => None,
            Some(p) => {
                let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
                if !busy.insert((kind, p)) {
                    return Err(ApiError::busy(
                        format!("pid {p} already has one of its {} under way", kind.label()),
                        1,
                    ));
                }
                Some(PidGuard {
                    limits: self.clone(),
                    key: (kind, p),
                })
            }
        };
        Ok(Admission {
            _permit: permit,
            _pid: pid,
        })
    }
}

/// Runs `f` on a blocking thread, holding `admission` until it returns.
pub(crate) async fn blocking<T, F>(admission: Admission, f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let out = f();
        drop(admission);
        out
    })
    .await
    .map_err(|e| ApiError::internal(format!("the work failed: {e}")))
}

/// Runs `f` on a thread of its own named `name` (at most 15 bytes show), holding `admission`
/// until it returns; the answer comes back through a channel.
pub(crate) async fn on_thread<T, F>(name: &str, admission: Admission, f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    spawn_thread(name, move || {
        let out = f();
        drop(admission);
        let _ = tx.send(out);
    })?;
    rx.await
        .map_err(|_| ApiError::internal("the work's thread ended without an answer"))
}

/// Starts `f` on a thread of its own named `name`, not waiting for it (a stream hands its
/// answer over by a channel of its own).
pub(crate) fn spawn_thread<F>(name: &str, f: F) -> Result<(), ApiError>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(drop)
        .map_err(|e| ApiError::internal(format!("starting a thread: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_kinds_and_busy_pids_are_429() {
        let l = Arc::new(Limits::new(&ConcurrencyConfig {
            processes: 1,
            stacks: 2,
            profiles: 1,
            ..ConcurrencyConfig::default()
        }));
        let a = l.admit(Kind::Processes, None).unwrap();
        let e = l.admit(Kind::Processes, None).unwrap_err();
        assert_eq!((e.status.as_u16(), e.retry_after), (429, Some(1)));
        drop(a);
        assert!(l.admit(Kind::Processes, None).is_ok());
        let s = l.admit(Kind::Stacks, Some(7)).unwrap();
        // The same pid twice: refused though the kind has room.
        assert_eq!(l.admit(Kind::Stacks, Some(7)).unwrap_err().status, 429);
        let t = l.admit(Kind::Stacks, Some(8)).unwrap();
        drop(s);
        assert!(l.busy.lock().unwrap().len() == 1);
        drop(t);
        assert!(l.admit(Kind::Stacks, Some(7)).is_ok());
        assert!(l.busy.lock().unwrap().is_empty());
        // CPU and allocation pulls share one limit.
        let p = l.admit(Kind::Profile, Some(7)).unwrap();
        assert_eq!(l.admit(Kind::Allocs, Some(8)).unwrap_err().status, 429);
        drop(p);
        assert!(l.admit(Kind::Allocs, Some(7)).is_ok());
        // Dumps and heap snapshots: one of each at once by default.
        let d = l.admit(Kind::Dump, Some(7)).unwrap();
        assert_eq!(l.admit(Kind::Dump, Some(8)).unwrap_err().status, 429);
        let g = l.admit(Kind::Gcdump, Some(7)).unwrap();
        drop((d, g));
        assert!(l.admit(Kind::Dump, Some(8)).is_ok());
    }

    #[tokio::test]
    async fn long_work_runs_on_a_named_thread_of_its_own_holding_its_permit() {
        let l = Arc::new(Limits::new(&ConcurrencyConfig {
            traces: 1,
            ..ConcurrencyConfig::default()
        }));
        let a = l.admit(Kind::Trace, Some(7)).unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let l2 = l.clone();
        let work = tokio::spawn(on_thread("agent-test", a, move || {
            let _ = wait.recv();
            (
                std::thread::current().name().map(str::to_string),
                l2.admit(Kind::Trace, Some(8)).is_err(),
            )
        }));
        go.send(()).unwrap();
        let (name, full) = work.await.unwrap().unwrap();
        assert_eq!(name.as_deref(), Some("agent-test"));
        assert!(full, "the permit is held while the work runs");
        assert!(l.admit(Kind::Trace, Some(8)).is_ok(), "and freed after");
    }
}
