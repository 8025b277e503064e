//! The runtimes the agent can see, remembered between requests: what a runtime says about
//! itself (ProcessInfo) does not change for its process's life, so it is asked once per
//! process — a process being its pid with its start time (`/proc/PID/stat` field 22), so a
//! reused pid is a new entry. The diagnostic sockets are rescanned at most every
//! [`RESCAN`]; between scans each remembered process is checked alive (its start time read
//! again) on every call, so a process that ended leaves the answers at once and its entry is
//! dropped. Concurrent callers wanting a runtime not yet known share one ask. An ask that
//! failed is remembered for [`RETRY_FAILED`] only, then tried again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use diagnostics_client::{procfs, Endpoint, ProcessInfo, RuntimeListing};

/// The longest the diagnostic sockets' scan is reused: a runtime that started is listed at
/// most this late.
pub const RESCAN: Duration = Duration::from_millis(250);
/// How long a failed ask stands before the runtime is asked again.
pub const RETRY_FAILED: Duration = Duration::from_secs(1);
/// How long one runtime may take to say who it is.
const TIMEOUT: Duration = Duration::from_millis(1500);

/// What a runtime said, or why it did not answer (with when).
type Answer = Option<(Result<ProcessInfo, String>, Instant)>;

/// Finds the endpoints (the real one: [`diagnostics_client::find_endpoints`]).
type ScanFn = dyn Fn() -> Vec<Endpoint> + Send + Sync;
/// Asks one runtime (the real one: [`diagnostics_client::process_info`]).
type AskFn = dyn Fn(&Endpoint) -> Result<ProcessInfo, String> + Send + Sync;

/// One process seen.
struct Known {
    /// Its start time in clock ticks after boot (0 when it could not be read).
    start: u64,
    endpoint: Endpoint,
    /// Locked while the runtime is asked: others wanting it wait for that answer.
    answer: Arc<Mutex<Answer>>,
}

/// The last scan and the processes seen.
#[derive(Default)]
struct Seen {
    scanned: Option<Instant>,
    known: HashMap<u32, Known>,
}

/// The cache; one per agent ([`global`]), tests make their own.
pub struct ProcCache {
    seen: Mutex<Seen>,
    scan: Box<ScanFn>,
    ask: Box<AskFn>,
}

impl std::fmt::Debug for ProcCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcCache")
            .field("known", &lock(&self.seen).known.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The start time of `pid`, 0 when it cannot be read; None when the process is gone.
fn start_of(pid: u32) -> Option<u64> {
    if !procfs::alive(pid) {
        return None;
    }
    Some(procfs::start_ticks(pid).unwrap_or(0))
}

/// The agent's cache (scanning the temporary folders, asking over the diagnostic sockets).
pub fn global() -> &'static ProcCache {
    static CACHE: OnceLock<ProcCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        ProcCache::new(
            Box::new(diagnostics_client::find_endpoints),
            Box::new(|ep| diagnostics_client::process_info(ep, TIMEOUT).map_err(|e| e.to_string())),
        )
    })
}

impl ProcCache {
    /// A cache over `scan` (every endpoint) and `ask` (one runtime's ProcessInfo).
    pub fn new(scan: Box<ScanFn>, ask: Box<AskFn>) -> ProcCache {
        ProcCache {
            seen: Mutex::new(Seen::default()),
            scan,
            ask,
        }
    }

    /// Every live endpoint, by pid: the last scan when younger than [`RESCAN`] (each process
    /// checked still the same), else a new one. `fresh` forces a new scan.
    fn refresh(&self, fresh: bool) -> Vec<(Endpoint, Arc<Mutex<Answer>>)> {
        let mut seen = lock(&self.seen);
        let due = fresh || seen.scanned.is_none_or(|t| t.elapsed() >= RESCAN);
        if due {
            let found = (self.scan)();
            let mut known = std::mem::take(&mut seen.known);
            for ep in found {
                let Some(start) = start_of(ep.pid) else {
                    continue;
                };
                let entry = match known.remove(&ep.pid) {
                    Some(k) if k.start == start && k.endpoint == ep => k,
                    _ => Known {
                        start,
                        endpoint: ep.clone(),
                        answer: Arc::new(Mutex::new(None)),
                    },
                };
                seen.known.insert(ep.pid, entry);
            }
            seen.scanned = Some(Instant::now());
        } else {
            seen.known
                .retain(|pid, k| start_of(*pid).is_some_and(|s| s == k.start));
        }
        let mut out: Vec<(Endpoint, Arc<Mutex<Answer>>)> = seen
            .known
            .values()
            .map(|k| (k.endpoint.clone(), k.answer.clone()))
            .collect();
        out.sort_by_key(|(e, _)| e.pid);
        out
    }

    /// Every live endpoint, sorted by pid (scanned at most [`RESCAN`] ago).
    pub fn endpoints(&self) -> Vec<Endpoint> {
        self.refresh(false).into_iter().map(|(e, _)| e).collect()
    }

    /// The endpoint of `pid`; a pid not in the last scan is looked for in a new one (it may
    /// have just started).
    pub fn endpoint(&self, pid: u32) -> Option<Endpoint> {
        let find = |fresh| {
            self.refresh(fresh)
                .into_iter()
                .map(|(e, _)| e)
                .find(|e| e.pid == pid)
        };
        find(false).or_else(|| find(true))
    }

    /// True when every live runtime has been asked (a listing would ask none).
    pub fn all_known(&self) -> bool {
        self.refresh(false).iter().all(|(_, a)| {
            a.try_lock().is_ok_and(|g| match &*g {
                Some((Ok(_), _)) => true,
                Some((Err(_), at)) => at.elapsed() < RETRY_FAILED,
                None => false,
            })
        })
    }

    /// What the runtime at `ep` said about itself: remembered, else asked (once for all
    /// callers wanting it at the same time).
    pub fn info(&self, ep: &Endpoint) -> Result<ProcessInfo, String> {
        let slot = self
            .refresh(false)
            .into_iter()
            .find(|(e, _)| e == ep)
            .map(|(_, a)| a);
        match slot {
            Some(slot) => self.answer(ep, &slot),
            // Not (or no longer) in the scan: asked, not remembered.
            None => (self.ask)(ep),
        }
    }

    fn answer(&self, ep: &Endpoint, slot: &Mutex<Answer>) -> Result<ProcessInfo, String> {
        let mut a = lock(slot);
        match &*a {
            Some((Ok(info), _)) => return Ok(info.clone()),
            Some((Err(e), at)) if at.elapsed() < RETRY_FAILED => return Err(e.clone()),
            _ => {}
        }
        let got = (self.ask)(ep);
        *a = Some((got.clone(), Instant::now()));
        got
    }

    /// Every live runtime with what it says about itself, as
    /// [`diagnostics_client::list_runtimes`] gives them (by pid); the runtimes not yet known
    /// are asked in parallel.
    pub fn listing(&self) -> Vec<RuntimeListing> {
        let slots = self.refresh(false);
        std::thread::scope(|s| {
            let handles: Vec<_> = slots
                .iter()
                .map(|(ep, slot)| {
                    let known = slot
                        .try_lock()
                        .ok()
                        .and_then(|g| g.as_ref().and_then(|(r, _)| r.as_ref().ok().cloned()));
                    match known {
                        Some(info) => Err(Ok(info)),
                        None => Ok(s.spawn(move || self.answer(ep, slot))),
                    }
                })
                .collect();
            slots
                .iter()
                .zip(handles)
                .map(|((ep, _), h)| {
                    let info = match h {
                        Err(known) => known,
                        Ok(h) => h
                            .join()
                            .unwrap_or_else(|_| Err("the ask failed".to_string())),
                    };
                    row(ep.pid, info)
                })
                .collect()
        })
    }
}

/// One listing row: the name is the entry assembly, else the kernel's name; the command line
/// the runtime's, else the kernel's.
fn row(pid: u32, info: Result<ProcessInfo, String>) -> RuntimeListing {
    let entry = info
        .as_ref()
        .ok()
        .and_then(|p| p.entrypoint_assembly.clone())
        .filter(|n| !n.is_empty());
    let name = entry.or_else(|| procfs::comm(pid)).unwrap_or_default();
    let command_line = match &info {
        Ok(p) if !p.command_line.is_empty() => p.command_line.clone(),
        _ => procfs::cmdline(pid).map(|a| a.join(" ")).unwrap_or_default(),
    };
    RuntimeListing {
        pid,
        name,
        command_line,
        info,
    }
}

#[cfg(test)]
#[path = "proc_cache_tests.rs"]
mod tests;
