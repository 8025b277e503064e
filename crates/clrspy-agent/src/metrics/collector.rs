//! The collector behind `/metrics`: a scanner thread looks for .NET processes every
//! `rescan` (the discovery `/processes` uses) and gives each new one, up to `max_processes`,
//! a thread holding one counters session with a small buffer; the thread folds each
//! interval's rows into the process's latest values and removes them when the session ends
//! (the process exited, or the scanner no longer sees it). A process whose session could not
//! start is tried again after [`RETRY_AFTER`]. Nothing here runs on the async runtime.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrspy_analysis::counters::CounterUpdate;
use clrspy_live::counters::CountersSession;
use diagnostics_client::{find_endpoints, procfs, Endpoint};

use super::config::MetricsSettings;
use clrspy_export::prometheus::{self, Figure, MetricType, Series, Target};

/// How long before a process whose session failed is tried again.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long a lender waits after the collector's session of its process ended.
const LEND_SETTLE: Duration = Duration::from_millis(500);
/// How long a stopping session may take to end before its thread gives up waiting.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// One process being collected from.
struct Entry {
    target: Target,
    series: Series,
    stop: Arc<AtomicBool>,
    /// Set by the session's thread once its session is closed (or never opened).
    closed: Arc<AtomicBool>,
    /// Lent to a `/counters` stream ([`Collector::lend`]): no session of the collector's; the
    /// stream's rows feed the series.
    lent: bool,
}

/// What the threads share.
struct Shared {
    settings: MetricsSettings,
    table: Mutex<BTreeMap<u32, Entry>>,
    failed: Mutex<HashMap<u32, Instant>>,
    stopping: Mutex<bool>,
    wake: Condvar,
    visible: AtomicU64,
    unwatched: AtomicU64,
    open: AtomicU64,
    started: AtomicU64,
    dropped: AtomicU64,
    errors: AtomicU64,
    scrapes: AtomicU64,
    /// Requests answered, by route template and status code.
    requests: Mutex<BTreeMap<(String, u16), u64>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn stopping(&self) -> bool {
        *lock(&self.stopping)
    }
}

/// The collector; stops its sessions when [`Collector::shutdown`] is called or it is dropped.
pub(crate) struct Collector {
    shared: Arc<Shared>,
    scanner: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("sessions_open", &self.shared.open.load(Ordering::Relaxed))
            .finish()
    }
}

impl Collector {
    /// A collector that has not started (no scanner); [`Collector::start`] starts one.
    pub(crate) fn idle(settings: MetricsSettings) -> Collector {
        Collector {
            shared: Arc::new(Shared {
                settings,
                table: Mutex::new(BTreeMap::new()),
                failed: Mutex::new(HashMap::new()),
                stopping: Mutex::new(false),
                wake: Condvar::new(),
                visible: AtomicU64::new(0),
                unwatched: AtomicU64::new(0),
                open: AtomicU64::new(0),
                started: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                scrapes: AtomicU64::new(0),
                requests: Mutex::new(BTreeMap::new()),
            }),
            scanner: Mutex::new(None),
        }
    }

    /// Starts the scanner thread (nothing when the settings disable collection).
    pub(crate) fn start(settings: MetricsSettings) -> std::io::Result<Collector> {
        let c = Collector::idle(settings);
        if c.shared.settings.enabled {
            let shared = c.shared.clone();
            let h = std::thread::Builder::new()
                .name("clrspy-metrics-scan".into())
                .stack_size(256 * 1024)
                .spawn(move || scan_loop(&shared))?;
            *lock(&c.scanner) = Some(h);
        }
        Ok(c)
    }

    /// Stops every session and the scanner, waiting up to a few seconds for them to end.
    pub(crate) fn shutdown(&self) {
        *lock(&self.shared.stopping) = true;
        self.shared.wake.notify_all();
        for e in lock(&self.shared.table).values() {
            e.stop.store(true, Ordering::Relaxed);
        }
        if let Some(h) = lock(&self.scanner).take() {
            let _ = h.join();
        }
        let deadline = Instant::now() + STOP_GRACE;
        while self.shared.open.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Counts one answered request (`route`: the route's template, so the series stay few).
    pub(crate) fn count_request(&self, route: &str, code: u16) {
        let mut r = lock(&self.shared.requests);
        match r.get_mut(&(route.to_string(), code)) {
            Some(n) => *n += 1,
            None => {
                r.insert((route.to_string(), code), 1);
            }
        }
    }

    /// Lends the process's counters to a `/counters` stream: the runtime gives its meters to
    /// one session at a time, so the collector's session of `pid` is stopped (waiting until it
    /// ended, a few seconds at most) and, until the lease is dropped, the stream's rows feed
    /// `/metrics` instead ([`Lease::feed`]). None when the collector has no session of `pid`.
    /// Blocking.
    pub(crate) fn lend(&self, pid: u32) -> Option<Lease> {
        let s = &self.shared;
        // The entry stays, lent from now on: the scanner starts no session of its own for the
        // process while the collector's ends, and that session's thread leaves it be.
        let closed = {
            let mut table = lock(&s.table);
            let e = table.get_mut(&pid).filter(|e| !e.lent)?;
            e.stop.store(true, Ordering::Relaxed);
            e.lent = true;
            e.series = Series::bounded(s.settings.max_series);
            e.closed.clone()
        };
        let deadline = Instant::now() + 2 * STOP_GRACE;
        while !closed.load(Ordering::Relaxed) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // The runtime turns its meters off as the session's end reaches it: a moment more.
        std::thread::sleep(LEND_SETTLE);
        Some(Lease {
            shared: s.clone(),
            pid,
        })
    }

    /// The exposition text: every process's series and the agent's own figures.
    pub(crate) fn render(&self) -> String {
        let s = &self.shared;
        s.scrapes.fetch_add(1, Ordering::Relaxed);
        let gauge = |name, help, v: u64| Figure {
            name,
            kind: MetricType::Gauge,
            help,
            series: vec![(String::new(), v as f64)],
        };
        let counter = |name, help, v: u64| Figure {
            kind: MetricType::Counter,
            ..gauge(name, help, v)
        };
        let mut own = vec![
            gauge(
                "clrspy_agent_processes_visible",
                ".NET processes the agent sees.",
                s.visible.load(Ordering::Relaxed),
            ),
            gauge(
                "clrspy_agent_processes_unwatched",
                "Visible .NET processes not collected from (over max_processes, or their session failed).",
                s.unwatched.load(Ordering::Relaxed),
            ),
            gauge(
                "clrspy_agent_sessions_open",
                "Counters sessions open.",
                s.open.load(Ordering::Relaxed),
            ),
            counter(
                "clrspy_agent_sessions_started_total",
                "Counters sessions started.",
                s.started.load(Ordering::Relaxed),
            ),
            counter(
                "clrspy_agent_session_errors_total",
                "Counters sessions that could not start.",
                s.errors.load(Ordering::Relaxed),
            ),
            counter(
                "clrspy_agent_series_dropped_total",
                "Counter values dropped: a process over max_time_series, or a name held by another type.",
                s.dropped.load(Ordering::Relaxed),
            ),
            counter(
                "clrspy_agent_scrapes_total",
                "Times /metrics was rendered.",
                s.scrapes.load(Ordering::Relaxed),
            ),
        ];
        if let Some(rss) = procfs::resident_bytes(std::process::id()) {
            own.push(gauge(
                "clrspy_agent_resident_memory_bytes",
                "The agent's resident set size.",
                rss,
            ));
        }
        let requests: Vec<(String, f64)> = lock(&s.requests)
            .iter()
            .map(|((route, code), n)| {
                let route = prometheus::label_value(route);
                (format!("route=\"{route}\",code=\"{code}\""), *n as f64)
            })
            .collect();
        if !requests.is_empty() {
            own.push(Figure {
                name: "clrspy_agent_requests_total",
                kind: MetricType::Counter,
                help: "Requests answered, by route and status code.",
                series: requests,
            });
        }
        let table = lock(&s.table);
        prometheus::render(table.values().map(|e| (Some(&e.target), &e.series)), &own)
    }
}

/// A process's counters lent to a stream ([`Collector::lend`]); given back when dropped (the
/// collector starts its own session again at its next scan, which the drop asks for).
pub(crate) struct Lease {
    shared: Arc<Shared>,
    pid: u32,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("pid", &self.pid).finish()
    }
}

impl Lease {
    /// Folds a stream's rows into the process's series, as the collector's own session would.
    pub(crate) fn feed(&self, rows: &[clrspy_analysis::counters::CounterRow]) {
        if let Some(e) = lock(&self.shared.table)
            .get_mut(&self.pid)
            .filter(|e| e.lent)
        {
            let n = e.series.add(rows);
            self.shared.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut table = lock(&self.shared.table);
        if table.get(&self.pid).is_some_and(|e| e.lent) {
            table.remove(&self.pid);
        }
        drop(table);
        self.shared.wake.notify_all();
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if lock(&self.scanner).is_some() {
            self.shutdown();
        }
    }
}

/// Looks for processes every `rescan` until stopped.
fn scan_loop(shared: &Arc<Shared>) {
    loop {
        scan_once(shared);
        let guard = lock(&shared.stopping);
        if *guard {
            return;
        }
        let (guard, _) = shared
            .wake
            .wait_timeout(guard, shared.settings.rescan)
            .unwrap_or_else(|e| e.into_inner());
        if *guard {
            return;
        }
    }
}

/// One scan: sessions of processes gone are stopped, new processes get one.
fn scan_once(shared: &Arc<Shared>) {
    let endpoints = find_endpoints();
    shared
        .visible
        .store(endpoints.len() as u64, Ordering::Relaxed);
    let now = Instant::now();
    let mut failed = lock(&shared.failed);
    failed.retain(|pid, at| {
        now.duration_since(*at) < RETRY_AFTER && endpoints.iter().any(|e| e.pid == *pid)
    });
    let mut table = lock(&shared.table);
    for (pid, e) in table.iter() {
        if !endpoints.iter().any(|ep| ep.pid == *pid) {
            e.stop.store(true, Ordering::Relaxed);
        }
    }
    let own = std::process::id();
    for ep in endpoints {
        let pid = ep.pid;
        if pid == own || table.contains_key(&pid) || failed.contains_key(&pid) {
            continue;
        }
        if table.len() >= shared.settings.max_processes {
            break;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let closed = Arc::new(AtomicBool::new(false));
        table.insert(
            pid,
            Entry {
                target: Target {
                    pid,
                    ..Target::default()
                },
                series: Series::bounded(shared.settings.max_series),
                stop: stop.clone(),
                closed: closed.clone(),
                lent: false,
            },
        );
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("clrspy-metrics-{pid}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                watch(&sh, ep, &stop);
                closed.store(true, Ordering::Relaxed);
            });
        if spawned.is_err() {
            table.remove(&pid);
            failed.insert(pid, now);
            shared.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    let watched = table.len() as u64;
    shared.unwatched.store(
        shared
            .visible
            .load(Ordering::Relaxed)
            .saturating_sub(watched),
        Ordering::Relaxed,
    );
}

/// The process's name as `/processes` gives it: its entry assembly, else the kernel's name.
fn target_of(ep: &Endpoint) -> Target {
    // Asked through the cache `/processes` uses: one ask per process for both.
    let name = crate::proc_cache::global()
        .info(ep)
        .ok()
        .and_then(|p| p.entrypoint_assembly)
        .filter(|n| !n.is_empty())
        .or_else(|| procfs::comm(ep.pid))
        .unwrap_or_default();
    let container_id = diagnostics_client::container::of_process(ep.pid).and_then(|c| c.id);
    Target {
        pid: ep.pid,
        name,
        container_id,
    }
}

/// Removes the process's entry unless it was lent meanwhile (the lease owns it then).
fn remove_own(shared: &Shared, pid: u32) {
    let mut table = lock(&shared.table);
    if table.get(&pid).is_some_and(|e| !e.lent) {
        table.remove(&pid);
    }
}

/// One process's session, from start to end; its entry is removed when it ends.
fn watch(shared: &Shared, ep: Endpoint, stop: &AtomicBool) {
    let pid = ep.pid;
    let target = target_of(&ep);
    let session = match CountersSession::attach(ep, &shared.settings.options) {
        Ok(s) => s,
        Err(_) => {
            shared.errors.fetch_add(1, Ordering::Relaxed);
            lock(&shared.failed).insert(pid, Instant::now());
            remove_own(shared, pid);
            return;
        }
    };
    shared.open.fetch_add(1, Ordering::Relaxed);
    shared.started.fetch_add(1, Ordering::Relaxed);
    if let Some(e) = lock(&shared.table).get_mut(&pid).filter(|e| !e.lent) {
        e.target = target;
    }
    let mut stop_at: Option<Instant> = None;
    loop {
        if stop_at.is_none() && (stop.load(Ordering::Relaxed) || shared.stopping()) {
            session.stop();
            stop_at = Some(Instant::now());
        }
        if stop_at.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            break;
        }
        match session.next(Duration::from_millis(250)) {
            Ok(CounterUpdate::Rows(rows)) => {
                if let Some(e) = lock(&shared.table).get_mut(&pid).filter(|e| !e.lent) {
                    let n = e.series.add(&rows);
                    shared.dropped.fetch_add(n, Ordering::Relaxed);
                }
            }
            Ok(CounterUpdate::Note(_)) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    // The entry goes once the session is closed: a lender waits for that before it opens
    // its own (the runtime's meters serve one session at a time).
    if stop_at.is_none_or(|t| t.elapsed() <= STOP_GRACE) {
        let _ = session.join();
    }
    remove_own(shared, pid);
    shared.open.fetch_sub(1, Ordering::Relaxed);
}
