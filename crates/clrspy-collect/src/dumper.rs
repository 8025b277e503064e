//! Dumps taken while recording, on a worker thread of their own: event consumers (on the tap's
//! thread) ask through a [`DumpHandle`], which counts the asks against the plan's limit at once
//! and, when it has a [`DumpGate`] (a watcher's per-rule limits), asks the gate before
//! anything is queued; the worker writes one dump at a time (createdump stops the target while
//! it writes) and says what happened through a callback. The worker is the crate's one
//! [`Worker`] for slow actions. The exception trigger (first-chance
//! exceptions of the listed types) lives here too.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::dumpfile::{write_dump_file, DumpReport, DumpSpec};
use crate::tap::{Action, EventConsumer};
use crate::worker::{Worker, WorkerHandle};
use crate::Result;

/// Where the dumps of one rule go and how many it may write.
#[derive(Clone, Debug)]
pub struct DumpPlan {
    /// The directory (must exist).
    pub dir: PathBuf,
    /// The start of every file's name: `<stem>_<pid>_<n>.dmp[.gz|.zst]`.
    pub stem: String,
    /// What to write.
    pub spec: DumpSpec,
    /// At most this many dumps (asks beyond it are refused at once).
    pub max: u32,
}

/// One ask for a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpRequest {
    /// Why, in words ("first-chance System.InvalidCastException").
    pub reason: String,
    /// The process to dump, when the asker knows (else the dumper's default).
    pub pid: Option<u32>,
    /// When the event behind the ask happened, on the monotonic clock in nanoseconds (the
    /// runtime's timestamps on Linux), to say how late the dump started.
    pub event_ns: Option<u64>,
}

/// What the worker says as it goes.
#[derive(Debug)]
pub enum DumpNotice<'a> {
    /// Dump `n` (from 1) starts now.
    Started {
        /// Its number.
        n: u32,
        /// The ask.
        request: &'a DumpRequest,
        /// The file it goes to.
        path: &'a std::path::Path,
        /// From the event to the dump command (when the event's time is known).
        delay: Option<Duration>,
    },
    /// Dump `n` ended.
    Done(&'a DumpOutcome),
}

/// How one dump went.
#[derive(Debug)]
pub struct DumpOutcome {
    /// Its number (from 1).
    pub n: u32,
    /// The ask.
    pub request: DumpRequest,
    /// From the event to the dump command (when the event's time is known).
    pub delay: Option<Duration>,
    /// The file, or why there is none.
    pub result: Result<DumpReport>,
}

/// Where the worker reports (on its own thread).
pub type OnDump = Box<dyn FnMut(&DumpNotice<'_>) + Send>;

struct Job {
    n: u32,
    request: DumpRequest,
}

/// Decides whether a dump asked for may be taken, before it is queued: a watcher's limits
/// shared by the processes of one rule (`max_actions`, a cooldown, a full disk). A refused ask
/// is never started.
pub trait DumpGate: Send + Sync {
    /// Whether the dump asked for may be taken now; a yes counts it as taken. Called on the
    /// asker's thread, one ask at a time per handle, before anything is queued; the gate says
    /// why it refused (log, count) itself.
    fn admit(&self, request: &DumpRequest) -> bool;

    /// True once no further ask can be admitted (the asker may stop watching then).
    fn closed(&self) -> bool {
        false
    }
}

/// Asks the `Dumper` for dumps; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct DumpHandle {
    jobs: WorkerHandle<Job>,
    taken: Arc<AtomicU32>,
    max: u32,
    gate: Option<Arc<dyn DumpGate>>,
    /// One ask at a time (the gate's count and the plan's stay in step).
    asking: Arc<Mutex<()>>,
}

impl std::fmt::Debug for DumpHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpHandle")
            .field("taken", &self.taken.load(Ordering::SeqCst))
            .field("max", &self.max)
            .field("gated", &self.gate.is_some())
            .finish()
    }
}

impl DumpHandle {
    /// A handle that can never ask (no worker).
    fn refusing() -> DumpHandle {
        DumpHandle {
            jobs: WorkerHandle::refusing(),
            taken: Arc::new(AtomicU32::new(0)),
            max: 0,
            gate: None,
            asking: Arc::new(Mutex::new(())),
        }
    }

    /// The same handle, its asks admitted by `gate` first (after the plan's limit, before
    /// anything is queued); clones of the result share the gate.
    pub fn gated(mut self, gate: Arc<dyn DumpGate>) -> DumpHandle {
        self.gate = Some(gate);
        self
    }

    /// Asks for a dump; false when the plan's limit is reached or the gate refuses (nothing
    /// is queued then).
    pub fn request(&self, request: DumpRequest) -> bool {
        let _one = self.asking.lock().unwrap_or_else(|p| p.into_inner());
        if self.taken.load(Ordering::SeqCst) >= self.max {
            return false;
        }
        if let Some(g) = &self.gate {
            if !g.admit(&request) {
                return false;
            }
        }
        let taken = self
            .taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                (t < self.max).then(|| t + 1)
            });
        match taken {
            Ok(t) => self.jobs.submit(Job { n: t + 1, request }),
            Err(_) => false,
        }
    }

    /// True once the plan's limit is reached or the gate is closed.
    pub fn exhausted(&self) -> bool {
        self.taken.load(Ordering::SeqCst) >= self.max
            || self.gate.as_ref().is_some_and(|g| g.closed())
    }
}

/// The worker writing one rule's dumps.
pub(crate) struct Dumper {
    handle: Option<DumpHandle>,
    worker: Option<Worker<Job>>,
    outcomes: Arc<Mutex<Vec<DumpOutcome>>>,
    default_pid: Arc<AtomicU32>,
}

impl std::fmt::Debug for Dumper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dumper")
            .field("handle", &self.handle)
            .finish()
    }
}

/// Nanoseconds to a duration, when the event is not in the future (clock skew).
pub(crate) fn delay_since(event_ns: Option<u64>) -> Option<Duration> {
    let ev = event_ns?;
    let now = crate::procstat::monotonic_ns();
    (now >= ev && ev > 0).then(|| Duration::from_nanos(now - ev))
}

impl Dumper {
    /// Starts the worker; `pid` is the process dumped when an ask names none (0 or None: such
    /// asks fail until [`Dumper::set_pid`]).
    pub(crate) fn start(plan: DumpPlan, pid: Option<u32>, mut on_dump: OnDump) -> Dumper {
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let default_pid = Arc::new(AtomicU32::new(pid.unwrap_or(0)));
        let (out, dp) = (outcomes.clone(), default_pid.clone());
        let max = plan.max;
        // The plan's limit bounds the queue: every ask is counted before it is queued.
        let worker = Worker::start("clrspy-dumper", max as usize, move |job| {
            let o = one_dump(&plan, &dp, job, &mut on_dump);
            on_dump(&DumpNotice::Done(&o));
            if let Ok(mut v) = out.lock() {
                v.push(o);
            }
        });
        let handle = DumpHandle {
            jobs: worker.handle(),
            taken: Arc::new(AtomicU32::new(0)),
            max,
            gate: None,
            asking: Arc::new(Mutex::new(())),
        };
        Dumper {
            handle: Some(handle),
            worker: Some(worker),
            outcomes,
            default_pid,
        }
    }

    /// Sets the process dumped when an ask names none (a launched program's, once known).
    pub(crate) fn set_pid(&self, pid: u32) {
        self.default_pid.store(pid, Ordering::SeqCst);
    }

    /// A handle for event consumers.
    pub(crate) fn handle(&self) -> DumpHandle {
        self.handle.clone().unwrap_or_else(DumpHandle::refusing)
    }

    /// Waits for the dumps asked for so far, then returns how each went (asks after this are
    /// refused).
    pub(crate) fn finish(mut self) -> Vec<DumpOutcome> {
        if let Some(h) = self.handle.take() {
            // After an ask in progress, if any: it is queued before the end.
            let _one = h.asking.lock().unwrap_or_else(|p| p.into_inner());
            h.taken.store(u32::MAX, Ordering::SeqCst);
        }
        if let Some(w) = self.worker.take() {
            w.finish();
        }
        self.outcomes
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

/// Writes one dump for `job`.
fn one_dump(
    plan: &DumpPlan,
    default_pid: &AtomicU32,
    job: Job,
    on_dump: &mut OnDump,
) -> DumpOutcome {
    let default = default_pid.load(Ordering::SeqCst);
    let pid = match job.request.pid.filter(|p| *p != 0) {
        // A trace of a process in a container names it by its pid there.
        Some(p)
            if default != 0
                && p != default
                && diagnostics_client::procfs::namespace_pid(default) == Some(p) =>
        {
            default
        }
        Some(p) => p,
        None => default,
    };
    let name = format!(
        "{}_{pid}_{}.{}",
        plan.stem,
        job.n,
        plan.spec.compress.extension()
    );
    let path = plan.dir.join(name);
    let delay = delay_since(job.request.event_ns);
    on_dump(&DumpNotice::Started {
        n: job.n,
        request: &job.request,
        path: &path,
        delay,
    });
    let result =
        crate::endpoint_for_pid(pid).and_then(|ep| write_dump_file(&ep, pid, &path, &plan.spec));
    DumpOutcome {
        n: job.n,
        request: job.request,
        delay,
        result,
    }
}

/// True when the exception type `name` (`System.InvalidCastException`) matches `pattern`: a
/// name pattern over the full name (clrspy-values: `*` any run, `?` one character,
/// case-insensitive), or, for a pattern without a dot or a wildcard, the name without its
/// namespace.
pub(crate) fn exception_type_matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['.', '*', '?']) {
        let short = name.rsplit('.').next().unwrap_or(name);
        return short.eq_ignore_ascii_case(pattern) || name.eq_ignore_ascii_case(pattern);
    }
    clrspy_values::pattern_matches(pattern, name)
}

/// The runtime's keyword for exception events (`Exception/Start` and the others).
pub(crate) const EXCEPTION_KEYWORD: u64 = 0x8000;

/// `config` with the runtime's exception events on (keyword 0x8000, at least informational).
pub(crate) fn with_exception_events(
    config: &diagnostics_client::SessionConfig,
) -> diagnostics_client::SessionConfig {
    let mut config = config.clone();
    let runtime = clr_events::RUNTIME_PROVIDER;
    match config.providers.iter_mut().find(|p| p.name == runtime) {
        Some(p) => {
            p.keywords |= EXCEPTION_KEYWORD;
            p.level = p.level.max(4);
        }
        None => config.providers.push(diagnostics_client::Provider {
            name: runtime.into(),
            keywords: EXCEPTION_KEYWORD,
            level: 4,
            arguments: None,
        }),
    }
    config
}

/// When an event happened on the monotonic clock (ns): the runtime's timestamps on Linux are
/// that clock's readings, whatever the trace's tick rate.
pub(crate) fn event_monotonic_ns(ev: &nettrace::Event<'_>) -> Option<u64> {
    let ns = ev
        .clock
        .ns_since_start(ev.timestamp)
        .checked_sub(ev.clock.ns_since_start(0))?;
    u64::try_from(ns).ok()
}

/// The exception type of an `Exception/Start` event (version 1 and later), if `ev` is one.
pub(crate) fn thrown_type(ev: &nettrace::Event<'_>) -> Option<String> {
    if ev.provider() != clr_events::RUNTIME_PROVIDER
        || ev.event_id() != clr_events::runtime::ids::EXCEPTION_START
        || ev.version() < 1
    {
        return None;
    }
    let t =
        clr_events::runtime::ExceptionThrown::parse(ev.payload, ev.version(), ev.pointer_size())
            .ok()?;
    Some(t.exception_type?.to_string_lossy())
}

/// Asks for a dump at every first-chance exception whose type matches one of the patterns (see
/// `exception_type_matches`), while the handle's limit allows; the recording goes on.
#[derive(Debug)]
pub struct ExceptionTrigger {
    patterns: Vec<String>,
    dumps: DumpHandle,
    pid: Option<u32>,
}

impl ExceptionTrigger {
    /// A trigger for `patterns` asking `dumps` (for the process the trace names, else the
    /// dumper's).
    pub fn new(patterns: Vec<String>, dumps: DumpHandle) -> ExceptionTrigger {
        ExceptionTrigger {
            patterns,
            dumps,
            pid: None,
        }
    }

    /// The same for process `pid` whatever the trace says (one trigger per process of a tree,
    /// sharing one dumper and its limit).
    pub fn for_pid(patterns: Vec<String>, dumps: DumpHandle, pid: u32) -> ExceptionTrigger {
        ExceptionTrigger {
            patterns,
            dumps,
            pid: Some(pid),
        }
    }
}

impl EventConsumer for ExceptionTrigger {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if self.dumps.exhausted() {
            return Action::Continue;
        }
        let Some(t) = thrown_type(ev) else {
            return Action::Continue;
        };
        if self.patterns.iter().any(|p| exception_type_matches(p, &t)) {
            self.dumps.request(DumpRequest {
                reason: format!("first-chance {t}"),
                pid: self
                    .pid
                    .or_else(|| ev.process_id.and_then(|p| u32::try_from(p).ok())),
                event_ns: event_monotonic_ns(ev),
            });
        }
        Action::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_patterns() {
        let t = "System.InvalidCastException";
        assert!(exception_type_matches("*.InvalidCastException", t));
        assert!(exception_type_matches("System.InvalidCastException", t));
        assert!(exception_type_matches("InvalidCastException", t));
        assert!(exception_type_matches("System.*", t));
        assert!(exception_type_matches("*", t));
        assert!(exception_type_matches("System.Invalid?astException", t));
        assert!(!exception_type_matches("*.ArgumentException", t));
        assert!(!exception_type_matches("CastException", t));
        assert!(!exception_type_matches("System.InvalidCast", t));
        assert!(!exception_type_matches("*Cast", t));
        assert!(exception_type_matches("*Cast*", t));
        assert!(exception_type_matches("a*b*c", "aXbYbZc"));
        assert!(exception_type_matches("system.invalidcastexception", t));
        assert!(exception_type_matches("invalidcastexception", t));
        assert!(!exception_type_matches("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn the_limit_holds_and_finish_ends_the_worker() {
        let dir = tempfile::tempdir().unwrap();
        let plan = DumpPlan {
            dir: dir.path().to_path_buf(),
            stem: "t".into(),
            spec: DumpSpec::default(),
            max: 2,
        };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        // No such process: every dump fails, but each ask within the limit is served.
        let d = Dumper::start(
            plan,
            Some(u32::MAX - 1),
            Box::new(move |n| {
                if let DumpNotice::Started { n, path, .. } = n {
                    s.lock().unwrap().push((*n, path.to_path_buf()));
                }
            }),
        );
        let h = d.handle();
        let ask = || DumpRequest {
            reason: "x".into(),
            pid: None,
            event_ns: None,
        };
        assert!(h.request(ask()));
        assert!(h.request(ask()));
        assert!(!h.request(ask()));
        assert!(h.exhausted());
        let out = d.finish();
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|o| o.result.is_err()));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen[1].1.ends_with(format!("t_{}_2.dmp", u32::MAX - 1)));
        // The handle outlives the worker without blocking anything.
        assert!(!h.request(ask()));
    }

    /// Admits the first ask, refuses the next `refuse` (a cooldown), then closes.
    struct OneThenCool {
        asks: Mutex<Vec<String>>,
        admitted: AtomicU32,
    }

    impl DumpGate for OneThenCool {
        fn admit(&self, request: &DumpRequest) -> bool {
            self.asks.lock().unwrap().push(request.reason.clone());
            self.admitted
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |a| {
                    (a == 0).then_some(1)
                })
                .is_ok()
        }

        fn closed(&self) -> bool {
            self.asks.lock().unwrap().len() >= 5
        }
    }

    #[test]
    fn the_gate_is_asked_before_anything_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let plan = |max| DumpPlan {
            dir: dir.path().to_path_buf(),
            stem: "g".into(),
            spec: DumpSpec::default(),
            max,
        };
        let started = Arc::new(AtomicU32::new(0));
        let s = started.clone();
        let d = Dumper::start(
            plan(u32::MAX),
            Some(u32::MAX - 1),
            Box::new(move |n| {
                if let DumpNotice::Started { .. } = n {
                    s.fetch_add(1, Ordering::SeqCst);
                }
            }),
        );
        let gate = Arc::new(OneThenCool {
            asks: Mutex::new(Vec::new()),
            admitted: AtomicU32::new(0),
        });
        let h = d.handle().gated(gate.clone());
        let ask = |i: u32| DumpRequest {
            reason: format!("throw {i}"),
            pid: None,
            event_ns: None,
        };
        assert!(h.request(ask(1)));
        for i in 2..=4 {
            assert!(!h.request(ask(i)), "the cooldown refuses ask {i}");
            assert!(!h.exhausted());
        }
        // A clone shares the gate.
        assert!(!h.clone().request(ask(5)));
        assert!(h.exhausted(), "the gate closed");
        // The ungated handle of the same dumper knows nothing of the gate.
        assert!(!d.handle().exhausted());
        let out = d.finish();
        assert_eq!(out.len(), 1, "only the admitted ask was queued");
        assert_eq!(out[0].request.reason, "throw 1");
        assert_eq!(started.load(Ordering::SeqCst), 1);
        assert_eq!(gate.asks.lock().unwrap().len(), 5);

        // The plan's own limit comes first: past it the gate is not asked.
        let d = Dumper::start(plan(1), Some(u32::MAX - 1), Box::new(|_| {}));
        let counting = Arc::new(OneThenCool {
            asks: Mutex::new(Vec::new()),
            admitted: AtomicU32::new(0),
        });
        let h = d.handle().gated(counting.clone());
        assert!(h.request(ask(1)));
        assert!(!h.request(ask(2)));
        assert_eq!(counting.asks.lock().unwrap().len(), 1);
        assert_eq!(d.finish().len(), 1);
    }
}
