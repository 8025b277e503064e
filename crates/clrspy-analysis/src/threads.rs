//! Threads and the thread pool: worker counts over time (from the pool's start/stop and
//! adjustment events), hill-climbing adjustments and starvation, thread names (from
//! clrspy's thread readings) and what the runtime says of each thread: the pool's worker
//! events written on it, the thread that created it (`Thread/Creating` and `/Running`), what
//! its stacks start in ([`ThreadModel::learn_stack`], after the pass); from these,
//! [`ThreadModel::facts`] and its name to show ([`crate::thread_names`]). The per-thread
//! running/waiting split comes from the samples (see
//! [`crate::profile::StackProfile::threads`]).

use rustc_hash::{FxHashMap, FxHashSet};

use clr_events::runtime::{ids, AdjustmentReason, ThreadPoolAdjustment, ThreadPoolWorkerThread};
use clr_events::threading::{ids as threading_ids, ThreadStartWork};
use clr_events::{clrspy, ViewError};

use crate::event::{Model, ModelEvent, Provider, Wanted};
use crate::thread_names::{clean_name, StartedBy, ThreadFacts, POOL_WORKER_NAME};

/// Points kept for the worker-count timeline (older points are thinned).
const MAX_POINTS: usize = 2000;

/// One point of the worker count.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct WorkerPoint {
    /// ms since the trace started.
    pub ms: f64,
    /// Active worker threads.
    pub workers: u64,
}

/// The threads model.
#[derive(Clone, Debug, Default)]
pub struct ThreadModel {
    /// Worker counts over time.
    pub timeline: Vec<WorkerPoint>,
    /// Hill-climbing adjustments by reason.
    pub adjustments: FxHashMap<String, u64>,
    /// Adjustments made because the pool was starved.
    pub starvation: u64,
    /// Highest worker count seen.
    pub max_workers: u64,
    /// Thread names by OS thread id.
    pub names: FxHashMap<u64, String>,
    /// Threads the runtime created during the trace (`Thread/Creating`, or
    /// `AppDomainResourceManagement/ThreadCreated` where the trace has more of those).
    pub created: u64,
    creating_events: u64,
    created_events: u64,
    /// Threads the pool's worker events (`ThreadPoolWorkerThread/Start`, `/Stop`, `/Wait`)
    /// were written on: pool workers, as the runtime says.
    pub(crate) pool_workers: FxHashSet<u64>,
    /// A thread created in the trace → the thread that created it.
    pub(crate) creators: FxHashMap<u64, u64>,
    /// What each thread's stacks say started it ([`ThreadModel::learn_stack`]).
    pub(crate) started: FxHashMap<u64, StartedBy>,
    /// The runtime's thread object of each `Thread/Creating` → the creating thread, until the
    /// new thread's `Thread/Running` names it.
    creating: FxHashMap<u64, u64>,
}

impl ThreadModel {
    /// An empty model.
    pub fn new() -> ThreadModel {
        ThreadModel::default()
    }

    fn point(&mut self, ms: f64, workers: u64) {
        self.max_workers = self.max_workers.max(workers);
        if self.timeline.last().is_some_and(|p| p.workers == workers) {
            return;
        }
        if self.timeline.len() >= MAX_POINTS {
            // Keep every other point: the shape stays, memory does not grow.
            let mut i = 0;
            self.timeline.retain(|_| {
                i += 1;
                i % 2 == 0
            });
        }
        self.timeline.push(WorkerPoint { ms, workers });
    }

    /// A thread pool worker count at `ms`.
    pub(crate) fn on_workers(&mut self, ms: f64, w: &ThreadPoolWorkerThread) {
        self.point(ms, u64::from(w.active));
    }

    /// A hill-climbing adjustment at `ms`.
    pub(crate) fn on_adjustment(&mut self, ms: f64, a: &ThreadPoolAdjustment) {
        if a.reason == AdjustmentReason::Starvation {
            self.starvation += 1;
        }
        *self.adjustments.entry(a.reason.to_string()).or_default() += 1;
        self.point(ms, u64::from(a.new_worker_count));
    }

    /// A thread's name (from clrspy's readings), cleaned ([`clean_name`]).
    pub fn name(&mut self, thread: u64, name: &str) {
        let name = clean_name(name);
        if !name.is_empty() {
            self.names.insert(thread, name);
        }
    }

    /// Takes what a stack of `thread` (frames innermost first) says started it, unless its
    /// stacks said it already (the pool's loop wins: a pool worker's stacks all show it).
    pub(crate) fn learn_stack(&mut self, thread: u64, frames: &[String]) {
        if self.started.get(&thread) == Some(&StartedBy::Pool) {
            return;
        }
        if let Some(s) = crate::thread_names::started_by(frames) {
            if s == StartedBy::Pool || !self.started.contains_key(&thread) {
                self.started.insert(thread, s);
            }
        }
    }

    /// True when more stacks of `thread` can tell nothing new: one said the pool started it,
    /// or the pool's events were written on it.
    pub(crate) fn knows_start(&self, thread: u64) -> bool {
        self.is_pool_worker(thread)
    }

    /// What is known of `thread` to name it by; `main` is the process's main thread (its
    /// name is inherited by the threads it starts).
    pub fn facts(&self, thread: u64, main: Option<u64>) -> ThreadFacts {
        let mut inheritable = Vec::new();
        if let Some(m) = main.filter(|&m| m != thread) {
            inheritable.extend(self.names.get(&m).cloned());
        }
        let creator = self.creators.get(&thread).map(|&c| {
            let f = ThreadFacts {
                name: self.names.get(&c).cloned(),
                pool_events: self.pool_workers.contains(&c),
                started: self.started.get(&c).cloned(),
                ..ThreadFacts::default()
            };
            inheritable.extend(self.names.get(&c).cloned());
            match f.display() {
                Some(n) => format!("thread {c} ({n})"),
                None => format!("thread {c}"),
            }
        });
        ThreadFacts {
            name: self.names.get(&thread).cloned(),
            pool_events: self.pool_workers.contains(&thread),
            started: self.started.get(&thread).cloned(),
            creator,
            inheritable,
        }
    }

    /// True when the runtime says `thread` is a thread-pool worker.
    pub fn is_pool_worker(&self, thread: u64) -> bool {
        self.pool_workers.contains(&thread) || self.started.get(&thread) == Some(&StartedBy::Pool)
    }
}

/// What a thread does for the process, from its name (the runtime names its own threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadRole {
    /// A thread that runs managed code (the sampler saw it).
    Managed,
    /// The tiered JIT's background compiler (`.NET Tiered Com`).
    Jit,
    /// A GC thread (`.NET Server GC`, `.NET BGC`, `.NET GC`).
    Gc,
    /// EventPipe's threads (`.NET EventPipe`, the sample profiler): the recording's own cost.
    EventPipe,
    /// The finalizer (`.NET Finalizer`).
    Finalizer,
    /// The timer thread (`.NET Timer`).
    Timer,
    /// The thread pool's gate thread (`.NET TP Gate`).
    PoolGate,
    /// The runtime's signal handler (`.NET SigHandler`).
    SignalHandler,
    /// Any other thread the sampler never saw: native code.
    Native,
    /// A thread a trace without any samples cannot place: its name is not the runtime's, so
    /// it may run managed code or native (only a trace with samples tells).
    Unknown,
}

impl ThreadRole {
    /// The role of a thread named `name` (`sampled`: the sampler saw it run managed code).
    pub fn of(name: Option<&str>, sampled: bool) -> ThreadRole {
        let n = name.unwrap_or("");
        if n.starts_with(".NET Tiered Com") {
            ThreadRole::Jit
        } else if n.starts_with(".NET Server GC")
            || n.starts_with(".NET BGC")
            || n.starts_with(".NET GC")
            || n == "gc"
        {
            ThreadRole::Gc
        } else if n.starts_with(".NET EventPipe") || n.starts_with(".NET Sample") {
            ThreadRole::EventPipe
        } else if n.starts_with(".NET Finalizer") {
            ThreadRole::Finalizer
        } else if n.starts_with(".NET Timer") {
            ThreadRole::Timer
        } else if n.starts_with(".NET TP Gate") {
            ThreadRole::PoolGate
        } else if n.starts_with(".NET SigHandler") {
            ThreadRole::SignalHandler
        } else if sampled
            || n.starts_with(POOL_WORKER_NAME)
            || n.starts_with(".NET Long Running")
            || n.starts_with(".NET Sockets")
        {
            // The thread pool's workers, long-running tasks and the sockets' event loop run
            // managed code, sampled or not.
            ThreadRole::Managed
        } else {
            ThreadRole::Native
        }
    }

    /// Its name in reports ("tiered JIT", "GC", ...).
    pub fn label(self) -> &'static str {
        match self {
            ThreadRole::Managed => "managed",
            ThreadRole::Jit => "tiered JIT",
            ThreadRole::Gc => "GC",
            ThreadRole::EventPipe => "EventPipe",
            ThreadRole::Finalizer => "finalizer",
            ThreadRole::Timer => "timer",
            ThreadRole::PoolGate => "thread-pool gate",
            ThreadRole::SignalHandler => "signal handler",
            ThreadRole::Native => "native",
            ThreadRole::Unknown => "unknown (no samples)",
        }
    }

    /// The frame group its unsampled CPU shows under (`[runtime: tiered JIT]`).
    pub fn frame(self) -> String {
        format!("[runtime: {}]", self.label())
    }

    /// True for the runtime's native workers (JIT, GC, EventPipe): their CPU is native work
    /// even when the sampler catches them in managed code now and then.
    pub fn is_native_work(self) -> bool {
        matches!(
            self,
            ThreadRole::Jit | ThreadRole::Gc | ThreadRole::EventPipe
        )
    }

    /// True for the runtime's own threads (everything but managed and unknown ones).
    pub fn is_runtime(self) -> bool {
        !matches!(self, ThreadRole::Managed | ThreadRole::Unknown)
    }

    /// True for the recording's own cost on the target.
    pub fn is_overhead(self) -> bool {
        self == ThreadRole::EventPipe
    }

    /// True for the runtime's plumbing, named `name`: threads that wait by design and never
    /// for the app (the tiered JIT, GC, EventPipe and signal-handler threads, the runtime's
    /// synchronization manager and debugger threads). Their blocked time says nothing of
    /// the app's: the kernel sampler's waits of them are left out of the stack reports (the
    /// runtime's sampler never saw them at all). The finalizer, timer and thread-pool gate
    /// run the app's code, and stay.
    pub fn waits_by_design(name: &str) -> bool {
        matches!(
            ThreadRole::of(Some(name), false),
            ThreadRole::Jit | ThreadRole::Gc | ThreadRole::EventPipe | ThreadRole::SignalHandler
        ) || [".NET SynchManag", ".NET DebugPipe", ".NET Debugger"]
            .iter()
            .any(|p| name.starts_with(p))
    }
}

impl Model for ThreadModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::TP_WORKER_START),
        Wanted::runtime(ids::TP_WORKER_STOP),
        Wanted::runtime(ids::TP_WORKER_WAIT),
        Wanted::runtime(ids::TP_ADJUSTMENT),
        Wanted::runtime(ids::THREAD_CREATED),
        Wanted::runtime(ids::THREAD_CREATING),
        Wanted::runtime(threading_ids::THREAD_RUNNING),
        Wanted::clrspy(clrspy::ids::THREAD_NAME),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let (p, v, ptr) = (ev.payload, ev.version, ev.pointer_size);
        let ms = ev.ts_ns as f64 / 1e6;
        match (ev.provider, ev.id) {
            (Provider::Clrspy, _) => {
                let n = clrspy::ThreadName::parse(p)?;
                self.name(u64::from(n.thread_id), &n.name.to_string_lossy());
            }
            (_, ids::TP_WORKER_START | ids::TP_WORKER_STOP | ids::TP_WORKER_WAIT) => {
                self.on_workers(ms, &ThreadPoolWorkerThread::parse(ev.id, p, v, ptr)?);
                // The runtime writes them on the worker itself.
                self.pool_workers.insert(ev.thread_id);
            }
            (_, ids::TP_ADJUSTMENT) => {
                self.on_adjustment(ms, &ThreadPoolAdjustment::parse(p, v, ptr)?)
            }
            // Written on the creating thread, with the new thread's runtime object.
            (_, ids::THREAD_CREATING) => {
                self.creating_events += 1;
                self.created = self.creating_events.max(self.created_events);
                let w = ThreadStartWork::parse(ev.id, p, v, ptr)?;
                self.creating.insert(w.id, ev.thread_id);
            }
            // Written on the new thread as it starts, with the same object.
            (_, threading_ids::THREAD_RUNNING) => {
                let w = ThreadStartWork::parse(ev.id, p, v, ptr)?;
                if let Some(c) = self.creating.remove(&w.id) {
                    self.creators.insert(ev.thread_id, c);
                }
            }
            // Only counted: its fields are not read. The runtime writes it for the same
            // threads as `Thread/Creating` when both keywords are on: a thread counts once.
            (_, ids::THREAD_CREATED) => {
                self.created_events += 1;
                self.created = self.creating_events.max(self.created_events);
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(provider: Provider, id: u32, ms: i64, payload: &[u8]) -> ModelEvent<'_> {
        ModelEvent {
            provider,
            id,
            version: 0,
            ts_ns: ms * 1_000_000,
            thread_id: 3,
            payload,
            pointer_size: 8,
            stack: None,
            context: crate::EventContext::default(),
        }
    }

    #[test]
    fn roles_from_names_and_samples() {
        assert_eq!(
            ThreadRole::of(Some(".NET TP Worker"), false),
            ThreadRole::Managed
        );
        assert_eq!(
            ThreadRole::of(Some(".NET Sockets"), false),
            ThreadRole::Managed
        );
        assert_eq!(
            ThreadRole::of(Some(".NET Long Running Task"), false),
            ThreadRole::Managed
        );
        assert_eq!(ThreadRole::of(Some("app"), true), ThreadRole::Managed);
        assert_eq!(ThreadRole::of(Some("app"), false), ThreadRole::Native);
        assert_eq!(
            ThreadRole::of(Some(".NET Tiered Compilation Worker"), true),
            ThreadRole::Jit
        );
        assert!(!ThreadRole::Unknown.is_runtime() && ThreadRole::Native.is_runtime());
    }

    #[test]
    fn pool_counts_adjustments_and_names() {
        let rt = Provider::Known(clr_events::KnownProvider::Runtime);
        let mut m = ThreadModel::new();
        let mut w = Vec::new();
        w.extend(4u32.to_le_bytes());
        w.extend(0u32.to_le_bytes());
        w.extend(0u16.to_le_bytes());
        m.on_event(&ev(rt, ids::TP_WORKER_START, 1, &w)).unwrap();
        let mut a = Vec::new();
        a.extend(1.5f64.to_le_bytes());
        a.extend(9u32.to_le_bytes());
        a.extend(6u32.to_le_bytes());
        a.extend(0u16.to_le_bytes());
        m.on_event(&ev(rt, ids::TP_ADJUSTMENT, 2, &a)).unwrap();
        let mut t = 0x7f00_2000u64.to_le_bytes().to_vec();
        t.extend(0u16.to_le_bytes());
        m.on_event(&ev(rt, ids::THREAD_CREATING, 3, &t)).unwrap();
        let mut n = Vec::new();
        clrspy::ThreadName::encode(77, "worker-1", &mut n);
        m.on_event(&ev(Provider::Clrspy, clrspy::ids::THREAD_NAME, 4, &n))
            .unwrap();
        assert_eq!((m.max_workers, m.starvation, m.created), (9, 1, 1));
        // The same thread's `ThreadCreated` (another keyword) does not count it again.
        m.on_event(&ev(rt, ids::THREAD_CREATED, 3, &[0; 16]))
            .unwrap();
        assert_eq!(m.created, 1);
        assert_eq!(m.adjustments["Starvation"], 1);
        assert_eq!(m.names[&77], "worker-1");
        assert_eq!(m.timeline.len(), 2);
        assert!(m.on_event(&ev(rt, ids::TP_ADJUSTMENT, 5, &a[..9])).is_err());
        assert_eq!(m.adjustments.len(), 1);
    }

    #[test]
    fn a_thread_is_named_by_what_the_runtime_says_not_by_an_inherited_name() {
        let rt = Provider::Known(clr_events::KnownProvider::Runtime);
        let on = |thread: u64, e: ModelEvent<'static>| ModelEvent {
            thread_id: thread,
            ..e
        };
        let mut m = ThreadModel::new();
        static WORKER: [u8; 10] = [3, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        static OBJECT: [u8; 10] = [0, 0x20, 0, 0x7f, 0, 0, 0, 0, 0, 0];
        // A pool worker (its own events say so) creates thread 90, which inherits its name.
        m.on_event(&on(3, ev(rt, ids::TP_WORKER_START, 1, &WORKER)))
            .unwrap();
        m.on_event(&on(3, ev(rt, ids::THREAD_CREATING, 2, &OBJECT)))
            .unwrap();
        m.on_event(&on(90, ev(rt, threading_ids::THREAD_RUNNING, 3, &OBJECT)))
            .unwrap();
        for (t, n) in [
            (3, ".NET TP Worker"),
            (90, ".NET TP Worker"),
            (91, "Console logger "),
        ] {
            m.name(t, n);
        }
        assert_eq!(m.creators[&90], 3);
        assert!(m.is_pool_worker(3) && !m.is_pool_worker(90));
        assert_eq!(
            m.facts(90, None).display().as_deref(),
            Some("thread started by thread 3 (.NET TP Worker)")
        );
        assert_eq!(
            m.facts(3, None).display().as_deref(),
            Some(".NET TP Worker")
        );
        // Trimmed, and whole again.
        assert_eq!(m.names[&91], "Console logger queue processing thread");
        // Created before the trace: its stack says what started it.
        m.name(92, ".NET TP Worker");
        let frames: Vec<String> = [
            "App.Locks+<>c__DisplayClass4_0.<FormDeadlock>b__0",
            "System.Threading.Thread+StartHelper.Callback",
        ]
        .iter()
        .map(|f| f.to_string())
        .collect();
        m.learn_stack(92, &frames);
        assert_eq!(
            m.facts(92, None).display().as_deref(),
            Some("thread started by App.Locks.FormDeadlock")
        );
        // A worker's stack makes it one; nothing overrides that.
        m.learn_stack(
            93,
            &["System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart".into()],
        );
        m.learn_stack(93, &frames);
        assert!(m.is_pool_worker(93));
    }
}
