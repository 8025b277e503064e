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
pub(crate) const RESCAN: Duration = Duration::from_millis(250);
/// How long a failed ask stands before the runtime is asked again.
pub(crate) const RETRY_FAILED: Duration = Duration::from_secs(1);
/// How long one runtime may take to say who it is.
const TIMEOUT: Duration = Duration::from_millis(1500);

/// What a runtime said, or why it did not answer (with when).
type Answer = Option<(Result<ProcessInfo, String>, Instant)>;

/// Finds the endpoints (the real one: [`diagnostics_client::find_endpoints`]).
type ScanFn = dyn Fn() -> Vec<Endpoint> + Send + Sync;
/// Asks one runtime (the real one: [`diagnostics_client::process_info`]).
type AskFn = dyn Fn(&Endpoint) -> Result<ProcessInfo, String> + Send + Sync;

/// What one process's runtime said; `asking` is held while it is asked, so that others
/// wanting it wait for that answer, while `answer` is only ever held for a moment.
#[derive(Default)]
struct Slot {
    asking: Mutex<()>,
    answer: Mutex<Answer>,
}

impl Slot {
    /// The answer when it stands: a runtime's own, or a failure younger than [`RETRY_FAILED`].
    fn standing(&self) -> Option<Result<ProcessInfo, String>> {
        match &*lock(&self.answer) {
            Some((Ok(info), _)) => Some(Ok(info.clone())),
            Some((Err(e), at)) if at.elapsed() < RETRY_FAILED => Some(Err(e.clone())),
            _ => None,
        }
    }
}

/// One process seen.
struct Known {
    /// Its start time in clock ticks after boot (0 when it could not be read).
    start: u64,
    endpoint: Endpoint,
    slot: Arc<Slot>,
}

/// The last scan and the processes seen.
#[derive(Default)]
struct Seen {
    scanned: Option<Instant>,
    known: HashMap<u32, Known>,
}

/// When a call may scan the sockets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rescan {
    /// Never: a call that would need one gets None.
    Never,
    /// When the last is older than [`RESCAN`].
    IfDue,
    /// Now.
    Force,
}

/// The cache; one per agent ([`global`]), tests make their own.
pub(crate) struct ProcCache {
    seen: Mutex<Seen>,
    /// Held while the sockets are scanned: one scan at a time, readers not held up.
    scanning: Mutex<()>,
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
pub(crate) fn global() -> &'static ProcCache {
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
    pub(crate) fn new(scan: Box<ScanFn>, ask: Box<AskFn>) -> ProcCache {
        ProcCache {
            seen: Mutex::new(Seen::default()),
            scanning: Mutex::new(()),
            scan,
            ask,
        }
    }

    /// Scans the sockets (unless another call finished a scan while this one waited for it)
    /// and keeps what is known of the processes found again.
    fn scan_now(&self, wait: bool) {
        let asked = Instant::now();
        let _one = match self.scanning.try_lock() {
            Ok(g) => g,
            // Another call is scanning: the last scan serves meanwhile, when there is one.
            Err(_) if !wait && lock(&self.seen).scanned.is_some() => return,
            Err(_) => lock(&self.scanning),
        };
        if lock(&self.seen).scanned.is_some_and(|t| t >= asked) {
            return;
        }
        let found: Vec<(Endpoint, u64)> = (self.scan)()
            .into_iter()
            .filter_map(|ep| start_of(ep.pid).map(|s| (ep, s)))
            .collect();
        let mut seen = lock(&self.seen);
        let mut known = std::mem::take(&mut seen.known);
        for (ep, start) in found {
            let entry = match known.remove(&ep.pid) {
                Some(k) if k.start == start && k.endpoint == ep => k,
                _ => Known {
                    start,
                    endpoint: ep.clone(),
                    slot: Arc::new(Slot::default()),
                },
            };
            seen.known.insert(ep.pid, entry);
        }
        seen.scanned = Some(Instant::now());
    }

    /// Every live endpoint with its slot, by pid, from a scan younger than [`RESCAN`] (each
    /// process checked still the same one) or, as `rescan` allows, a new one; None when a scan
    /// is due and `rescan` is [`Rescan::Never`].
    fn slots(&self, rescan: Rescan) -> Option<Vec<(Endpoint, Arc<Slot>)>> {
        let scanned = lock(&self.seen).scanned;
        let due = scanned.is_none_or(|t| t.elapsed() >= RESCAN);
        match rescan {
            // Unless another call is scanning: then the last scan, if any, serves meanwhile.
            Rescan::Never if due && (scanned.is_none() || self.scanning.try_lock().is_ok()) => {
                return None
            }
            Rescan::IfDue if due => self.scan_now(false),
            Rescan::Force => self.scan_now(true),
            _ => {}
        }
        let all: Vec<(u64, Endpoint, Arc<Slot>)> = lock(&self.seen)
            .known
            .values()
            .map(|k| (k.start, k.endpoint.clone(), k.slot.clone()))
            .collect();
        let (live, gone): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|(start, ep, _)| start_of(ep.pid) == Some(*start));
        if !gone.is_empty() {
            let mut seen = lock(&self.seen);
            for (start, ep, _) in gone {
                if seen.known.get(&ep.pid).is_some_and(|k| k.start == start) {
                    seen.known.remove(&ep.pid);
                }
            }
        }
        let mut out: Vec<(Endpoint, Arc<Slot>)> =
            live.into_iter().map(|(_, e, s)| (e, s)).collect();
        out.sort_by_key(|(e, _)| e.pid);
        Some(out)
    }

    /// Every live endpoint, sorted by pid (scanned at most [`RESCAN`] ago).
    #[cfg(test)]
    pub(crate) fn endpoints(&self) -> Vec<Endpoint> {
        self.slots(Rescan::IfDue)
            .unwrap_or_default()
            .into_iter()
            .map(|(e, _)| e)
            .collect()
    }

    /// The endpoint of `pid`; a pid not in the last scan is looked for in a new one (it may
    /// have just started).
    pub(crate) fn endpoint(&self, pid: u32) -> Option<Endpoint> {
        let find = |rescan| {
            self.slots(rescan)
                .unwrap_or_default()
                .into_iter()
                .map(|(e, _)| e)
                .find(|e| e.pid == pid)
        };
        find(Rescan::IfDue).or_else(|| find(Rescan::Force))
    }

    /// True when every live runtime has been asked (a listing would ask none).
    #[cfg(test)]
    pub(crate) fn all_known(&self) -> bool {
        self.slots(Rescan::IfDue)
            .unwrap_or_default()
            .iter()
            .all(|(_, s)| s.standing().is_some())
    }

    /// True when a listing now would start an ask of its own: some runtime has no standing
    /// answer and nobody is asking it (a listing waiting for another's ask starts none).
    pub(crate) fn needs_ask(&self) -> bool {
        self.slots(Rescan::IfDue)
            .unwrap_or_default()
            .iter()
            .any(|(_, s)| s.standing().is_none() && s.asking.try_lock().is_ok())
    }

    /// What the runtime at `ep` said about itself: remembered, else asked (once for all
    /// callers wanting it at the same time).
    pub(crate) fn info(&self, ep: &Endpoint) -> Result<ProcessInfo, String> {
        let slot = self
            .slots(Rescan::IfDue)
            .unwrap_or_default()
            .into_iter()
            .find(|(e, _)| e == ep)
            .map(|(_, s)| s);
        match slot {
            Some(slot) => self.answer(ep, &slot),
            // Not (or no longer) in the scan: asked, not remembered.
            None => (self.ask)(ep),
        }
    }

    fn answer(&self, ep: &Endpoint, slot: &Slot) -> Result<ProcessInfo, String> {
        if let Some(a) = slot.standing() {
            return a;
        }
        let _asking = lock(&slot.asking);
        // Another caller may have asked while this one waited.
        if let Some(a) = slot.standing() {
            return a;
        }
        let got = (self.ask)(ep);
        *lock(&slot.answer) = Some((got.clone(), Instant::now()));
        got
    }

    /// The listing without blocking work: None when a scan is due or some runtime is still to
    /// be asked (then [`ProcCache::listing`], on a blocking thread). Reads only `/proc`.
    pub(crate) fn known_listing(&self) -> Option<Vec<RuntimeListing>> {
        self.slots(Rescan::Never)?
            .into_iter()
            .map(|(ep, s)| s.standing().map(|info| RuntimeListing::new(ep.pid, info)))
            .collect()
    }

    /// Every live runtime with what it says about itself, as
    /// [`diagnostics_client::list_runtimes`] gives them (by pid); the runtimes not yet known
    /// are asked in parallel.
    pub(crate) fn listing(&self) -> Vec<RuntimeListing> {
        let slots = self.slots(Rescan::IfDue).unwrap_or_default();
        std::thread::scope(|s| {
            let asks: Vec<_> = slots
                .iter()
                .map(|(ep, slot)| {
                    let known = slot.standing();
                    let ask = known
                        .is_none()
                        .then(|| s.spawn(move || self.answer(ep, slot)));
                    (known, ask)
                })
                .collect();
            slots
                .iter()
                .zip(asks)
                .map(|((ep, _), (known, ask))| {
                    let info = match (known, ask) {
                        (Some(known), _) => known,
                        (None, Some(h)) => h
                            .join()
                            .unwrap_or_else(|_| Err("the ask failed".to_string())),
                        (None, None) => Err("the ask failed".to_string()),
                    };
                    RuntimeListing::new(ep.pid, info)
                })
                .collect()
        })
    }
}

#[cfg(test)]
#[path = "proc_cache_tests.rs"]
mod tests;
