//! The `hangs` report's objects and their builder: the cycles among the lock waits still open
//! at the end, the other blocked threads, the pool's evidence of starvation with the workers
//! blocked in sync-over-async, long waits by the method that waited, and a hang in progress.

use clrspy_analysis::cpu::is_lock_acquisition;
use clrspy_analysis::task_waits;
use clrspy_analysis::sources::hangs::{HangModel, OpenWait, WaitKind};
use clrspy_analysis::{Analysis, StackFilter};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::super::needs::{Needs, CONTENTION};
use super::super::stack::inlining_note;
use super::super::view::ReportOptions;
use super::groups::{self, BlockedGroup, Member};
use crate::units::round1;


/// The runtime's `Threading` keyword (the pool's adjustments and worker counts).
const THREADING: u64 = 0x1_0000;
/// The runtime's `WaitHandle` keyword (.NET 9+).
const WAIT_HANDLE: u64 = 0x400_0000_0000;

/// What the report needs recorded: lock waits, wait handles and the pool at verbose level
/// (lock waits are verbose before .NET 8), and thread-time samples.
pub(super) const NEEDS: Needs = Needs::runtime(CONTENTION | THREADING | WAIT_HANDLE, 5)
    .with_samples()
    .with_profile("hangs");


/// Injections that make starvation: the pool had to add threads again and again (one or two
/// are a pool's normal growth under a burst).
const STARVED_INJECTIONS: u64 = 3;

/// One thread of a deadlock cycle.
#[derive(Clone, Debug, Serialize)]
pub struct CycleMember {
    /// The OS thread id.
    pub thread_id: u64,
    /// What to call it: its own name (clrspy's recordings have them), or what started it
    /// when its name is its creator's or it has none (`thread started by thread 407 (.NET TP
    /// Worker)`); `.NET TP Worker` only for a pool worker, as the runtime says.
    pub thread_name: Option<String>,
    /// The lock it waits for (the runtime's lock id, hex).
    pub(crate) waits_for_lock: String,
    /// The lock it holds that the previous member waits for.
    pub holds_lock: String,
    /// The object locked on (hex; the lock's `AssociatedObjectID`).
    pub(crate) lock_object: String,
    /// Since when it waits, ms since the trace started.
    pub(crate) since_ms: f64,
    /// How long it had waited at the trace's end, ms.
    pub(crate) waiting_ms: f64,
    /// Its stack when it began waiting, leaf first.
    pub stack: Vec<String>,
}

/// A thread still blocked at the trace's end, not in a deadlock.
#[derive(Clone, Debug, Serialize)]
pub struct BlockedThread {
    /// The OS thread id.
    pub thread_id: u64,
    /// What to call it (as [`CycleMember::thread_name`]).
    pub thread_name: Option<String>,
    /// `lock` (a contended lock) or `wait` (a wait handle, a monitor wait, a join).
    pub kind: &'static str,
    /// How long it had waited at the end, ms.
    pub(crate) waiting_ms: f64,
    /// The lock (hex), for a lock wait on .NET 8+ (null before: the runtime does not say).
    pub lock: Option<String>,
    /// The lock's owner thread, for a lock wait (.NET 8+).
    pub owner_thread_id: Option<u64>,
    /// What the wait is in (`Unknown`, `MonitorWait`), for a handle wait.
    pub source: Option<String>,
    /// Its stack when it began waiting, leaf first.
    pub stack: Vec<String>,
}

/// Waits of one stack.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WaitStack {
    /// `lock` or `wait`.
    pub(crate) kind: &'static str,
    /// Waits.
    pub(crate) count: u64,
    /// Their total, ms (open ones until the trace's end).
    pub(crate) total_ms: f64,
    /// The longest, ms.
    pub(crate) max_ms: f64,
    /// Still open at the end.
    pub(crate) open: u64,
    /// The stack, leaf first.
    pub(crate) stack: Vec<String>,
}

/// Workers blocked in sync-over-async at one call site.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SyncOverAsync {
    /// The method that blocked (the first frame outside the runtime's task and threading
    /// code), or the blocking frame.
    pub(crate) method: String,
    /// The blocking call (`Task.Wait`, `.Result`, `GetResult`).
    pub(crate) blocked_in: String,
    /// Waits seen there (wait events on pool workers).
    pub(crate) waits: u64,
    /// Their time, ms (wait events), or the sampled blocked time where no wait events.
    pub(crate) wait_ms: f64,
}

/// Thread-pool starvation and its evidence.
#[derive(Clone, Debug, Serialize)]
pub struct Starvation {
    /// True when the pool injected threads 3 times or more because work waited or workers
    /// blocked.
    pub detected: bool,
    /// `ThreadPoolWorkerThreadAdjustment/Adjustment` events with reason `Starvation`.
    pub starvation_adjustments: u64,
    /// With reason `CooperativeBlocking` (workers blocked in `Task.Wait`/`.Result`).
    pub blocking_adjustments: u64,
    /// `ThreadPoolWorkerThread/Start` events: every worker the pool started in the trace.
    pub worker_starts: u64,
    /// Threads injected: worker starts that raised the pool's worker count while its last
    /// adjustment was for starvation or blocking (with no worker starts in the trace: the
    /// rises of its goal for them). At most `workers_max - workers_before`.
    pub injections: u64,
    /// `worker starts`, or `adjustments` when the trace had no worker starts to count.
    pub(crate) injections_from: &'static str,
    /// Threads injected per second between the first and last injection.
    pub(crate) injections_per_s: Option<f64>,
    /// The first and last injection, ms since the trace started.
    pub(crate) first_injection_ms: Option<f64>,
    /// The last.
    pub(crate) last_injection_ms: Option<f64>,
    /// Workers before the first injection.
    pub workers_before: Option<u32>,
    /// The highest worker count.
    pub workers_max: u32,
    /// The pool's configured minimum of workers, when the trace says.
    pub min_workers: Option<u32>,
    /// Every adjustment by reason.
    pub adjustments: FxHashMap<String, u64>,
    /// Work items queued and taken (when `ThreadPool/Enqueue`/`Dequeue` were recorded), and
    /// the most queued at once.
    pub enqueued: u64,
    /// Taken.
    pub dequeued: u64,
    /// The most queued and not yet taken.
    pub max_backlog: u64,
    /// Lowest and highest throughput measured (work items per second).
    pub throughput: Option<(f64, f64)>,
    /// Pool workers blocked in sync-over-async, by call site, most time first (top N).
    pub(crate) sync_over_async: Vec<SyncOverAsync>,
    /// How many call sites, before the cut to top N.
    pub(crate) sync_over_async_total: usize,
    /// Why a blocking method shown is a generated `dynamicClass.lambda_method…` and not the
    /// app's action the JIT inlined into it (as the stack report's note).
    pub(crate) sync_over_async_note: Option<String>,
}

/// A thread blocked the whole trace with no wait starting in it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StuckThread {
    /// The OS thread id.
    pub(crate) thread_id: u64,
    /// What to call it (as [`CycleMember::thread_name`]).
    pub(crate) thread_name: Option<String>,
    /// The lock call it is blocked in.
    pub(crate) blocked_in: String,
    /// The method that called it.
    pub(crate) method: String,
}

/// A hang already in progress when the recording began.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct InProgress {
    /// The threads, by id.
    pub(crate) threads: Vec<StuckThread>,
    /// The same threads grouped by the call they are blocked in and the method that made it,
    /// most threads first.
    pub(crate) groups: Vec<BlockedGroup>,
    /// What to do.
    pub(crate) hint: String,
    /// The commands the hint names: the live stacks, then a dump.
    pub(crate) commands: Vec<String>,
}

/// The hangs report.
#[derive(Clone, Debug, Serialize)]
pub struct HangsReport {
    /// Deadlock cycles, each a list of its threads.
    pub deadlocks: Vec<Vec<CycleMember>>,
    /// Threads still blocked at the end outside any cycle, longest first (top N).
    pub blocked: Vec<BlockedThread>,
    /// How many threads were still blocked outside any cycle, before the cut to top N.
    pub(crate) blocked_total: usize,
    /// All of them grouped by where they wait (kind, call, method, lock), most threads first.
    pub(crate) blocked_groups: Vec<BlockedGroup>,
    /// Thread-pool starvation.
    pub starvation: Starvation,
    /// Waits by the method that waited, most time first (top N).
    pub(crate) long_waits: Vec<WaitStack>,
    /// How many methods waited, before the cut to top N.
    pub(crate) long_waits_total: usize,
    /// A hang already in progress, when the trace shows one.
    pub(crate) in_progress: Option<InProgress>,
    /// Events read: `Contention/Start`, `/Stop`, `WaitHandleWait/Start`, `/Stop`.
    pub lock_waits: u64,
    /// `Contention/Stop`.
    pub lock_waits_ended: u64,
    /// `WaitHandleWait/Start`.
    pub handle_waits: u64,
    /// `WaitHandleWait/Stop`.
    pub handle_waits_ended: u64,
    /// Set when the trace has none of this: what to record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// Groups the text shows of each list (`--top`).
    #[serde(skip)]
    pub shown: usize,
}

fn hex(v: u64) -> String {
    format!("0x{v:x}")
}

fn ms(ns: f64) -> f64 {
    round1(ns / 1e6)
}

fn kind_name(k: WaitKind) -> &'static str {
    match k {
        WaitKind::Lock => "lock",
        WaitKind::Handle => "wait",
    }
}

/// A frame of the runtime's locking, waiting or task code (not who waited).
pub(super) fn is_wait_internal(frame: &str) -> bool {
    task_waits::is_wait_internal(frame)
}

/// A stack of the runtime's own threads that wait by design: the timer thread, the pool's
/// gate thread, an idle worker.
fn waits_by_design(frames: &[String]) -> bool {
    frames.iter().any(|f| {
        f.starts_with("System.Threading.TimerQueue.TimerThread")
            || f.starts_with("System.Threading.PortableThreadPool+GateThread")
            || f.starts_with("System.Threading.LowLevelLifoSemaphore")
    })
}

/// A frame of a thread-pool worker's dispatch loop.
fn is_pool_dispatch(frame: &str) -> bool {
    frame.contains("PortableThreadPool+WorkerThread")
        || frame.contains("ThreadPoolWorkQueue.Dispatch")
        || frame.contains("WindowsThreadPool")
}

/// The first frame (leaf first) outside the waiting code, else the leaf.
pub(super) fn waiter(frames: &[String]) -> String {
    frames
        .iter()
        .find(|f| !is_wait_internal(f))
        .or_else(|| frames.first())
        .cloned()
        .unwrap_or_else(|| "[no stack]".into())
}

/// Builds the hangs report.
pub fn build(a: &Analysis, o: &ReportOptions) -> HangsReport {
    let empty = HangModel::default();
    let m = a.model::<HangModel>().unwrap_or(&empty);
    let name = |t: u64| a.thread_name(t);
    let cycles = m.cycles();
    let in_cycle: Vec<u64> = cycles.iter().flatten().map(|c| c.wait.thread).collect();
    let deadlocks = cycles
        .iter()
        .map(|c| {
            c.iter()
                .map(|c| CycleMember {
                    thread_id: c.wait.thread,
                    thread_name: name(c.wait.thread),
                    waits_for_lock: hex(c.wait.lock_id),
                    holds_lock: hex(c.holds_lock),
                    lock_object: hex(c.wait.object_id),
                    since_ms: ms(c.wait.start_ns as f64),
                    waiting_ms: ms((m.end_ns - c.wait.start_ns).max(0) as f64),
                    stack: a.frames(c.wait.stack),
                })
                .collect()
        })
        .collect();
    let mut blocked = blocked(a, m, &in_cycle);
    let blocked_total = blocked.len();
    let blocked_groups = group_blocked(&blocked);
    blocked.truncate(o.top);
    let mut long_waits = long_waits(a, m);
    let long_waits_total = long_waits.len();
    long_waits.truncate(o.top);
    let starvation = starvation(a, m, o.top);
    let in_progress = if in_cycle.is_empty() {
        in_progress(a, m)
    } else {
        None
    };
    let nothing = m.lock_waits == 0
        && m.handle_waits == 0
        && m.pool.adjustments.is_empty()
        && in_progress.is_none();
    HangsReport {
        deadlocks,
        blocked,
        blocked_total,
        blocked_groups,
        starvation,
        long_waits,
        long_waits_total,
        in_progress,
        lock_waits: m.lock_waits,
        lock_waits_ended: m.lock_waits_ended,
        handle_waits: m.handle_waits,
        handle_waits_ended: m.handle_waits_ended,
        missing: (nothing && !o.narrowed)
            .then(|| NEEDS.missing_line("lock waits, wait handles or thread-pool adjustments")),
        shown: o.top,
    }
}

/// Waits by kind and the method that waited (the first frame outside the waiting code),
/// with the stack that waited longest there; the runtime's own waits by design left out.
fn long_waits(a: &Analysis, m: &HangModel) -> Vec<WaitStack> {
    let mut by: FxHashMap<(WaitKind, String), (WaitStack, f64)> = FxHashMap::default();
    for ((k, s), t) in &m.by_stack {
        let stack = a.frames(*s);
        if waits_by_design(&stack) {
            continue;
        }
        let e = by.entry((*k, waiter(&stack))).or_insert_with(|| {
            let w = WaitStack {
                kind: kind_name(*k),
                count: 0,
                total_ms: 0.0,
                max_ms: 0.0,
                open: 0,
                stack: Vec::new(),
            };
            (w, -1.0)
        });
        e.0.count += t.count;
        e.0.total_ms += t.total_ns / 1e6;
        e.0.max_ms = e.0.max_ms.max(ms(t.max_ns));
        e.0.open += t.open;
        if t.total_ns > e.1 || (t.total_ns == e.1 && stack < e.0.stack) {
            e.0.stack = stack;
            e.1 = t.total_ns;
        }
    }
    let mut v: Vec<WaitStack> = by
        .into_values()
        .map(|(mut w, _)| {
            w.total_ms = round1(w.total_ms);
            w
        })
        .collect();
    v.sort_by(|x, y| {
        y.total_ms
            .total_cmp(&x.total_ms)
            .then_with(|| x.kind.cmp(y.kind))
            .then_with(|| x.stack.cmp(&y.stack))
    });
    v
}

/// The threads blocked at the end outside the cycles: lock waits, then handle waits of
/// threads not waiting for a lock (a lock's slow path waits on a handle too), longest first.
fn blocked(a: &Analysis, m: &HangModel, in_cycle: &[u64]) -> Vec<BlockedThread> {
    let lock_threads: Vec<u64> = m.open_locks.iter().map(|w| w.thread).collect();
    let end = m.end_ns;
    let row = |w: &OpenWait, kind: WaitKind| BlockedThread {
        thread_id: w.thread,
        thread_name: a.thread_name(w.thread),
        kind: kind_name(kind),
        waiting_ms: ms((end - w.start_ns).max(0) as f64),
        lock: (kind == WaitKind::Lock && w.lock_id != 0).then(|| hex(w.lock_id)),
        owner_thread_id: (w.owner != 0).then_some(w.owner),
        source: w.source.map(|s| s.to_string()),
        stack: a.frames(w.stack),
    };
    let mut v: Vec<BlockedThread> = m
        .open_locks
        .iter()
        .filter(|w| !in_cycle.contains(&w.thread))
        .map(|w| row(w, WaitKind::Lock))
        .chain(
            m.open_handles
                .iter()
                .filter(|w| !lock_threads.contains(&w.thread))
                .map(|w| row(w, WaitKind::Handle)),
        )
        .filter(|b| !waits_by_design(&b.stack))
        .collect();
    v.sort_by(|x, y| {
        y.waiting_ms
            .total_cmp(&x.waiting_ms)
            .then(x.thread_id.cmp(&y.thread_id))
    });
    v
}

/// The blocked threads grouped by where they wait.
fn group_blocked(blocked: &[BlockedThread]) -> Vec<BlockedGroup> {
    let calls: Vec<(String, String)> = blocked
        .iter()
        .map(|b| (groups::blocked_in(&b.stack, is_wait_internal), waiter(&b.stack)))
        .collect();
    let members: Vec<Member<'_>> = blocked
        .iter()
        .zip(&calls)
        .map(|(b, (call, method))| Member {
            kind: b.kind,
            thread_id: b.thread_id,
            name: b.thread_name.as_deref(),
            blocked_in: call,
            method,
            lock: b.lock.as_deref(),
            owner_thread_id: b.owner_thread_id,
            source: b.source.as_deref(),
            waiting_ms: Some(b.waiting_ms),
        })
        .collect();
    groups::group(&members)
}

/// The pool's evidence, with the workers blocked in sync-over-async: from wait events on
/// pool workers, else from the samples' blocked time.
fn starvation(a: &Analysis, m: &HangModel, top: usize) -> Starvation {
    let p = &m.pool;
    let mut sites: FxHashMap<(String, String), (u64, f64)> = FxHashMap::default();
    for ((_, stack), t) in &m.by_stack {
        let frames = a.frames(*stack);
        if let Some(key) = sync_over_async(&frames) {
            let e = sites.entry(key).or_default();
            e.0 += t.count;
            e.1 += t.total_ns / 1e6;
        }
    }
    // Without wait handle events (before .NET 9, or not recorded) the samples say where
    // workers blocked; the few lock waits inside a task's wait would say little.
    if m.handle_waits == 0 && a.cpu.span_ns().is_some() {
        sites.clear();
        let profile = a.profile(&StackFilter::default());
        let ms_per = a.sampling_interval_ns as f64 / 1e6;
        for r in profile.rows.iter().filter(|r| r.wait > r.runq) {
            let frames: Vec<String> = r
                .frames
                .iter()
                .map(|&f| a.symbols.frame(f).name.clone())
                .collect();
            if let Some(key) = sync_over_async(&frames) {
                sites.entry(key).or_default().1 += (r.wait - r.runq) * ms_per;
            }
        }
    }
    let mut sync: Vec<SyncOverAsync> = sites
        .into_iter()
        .map(|((method, blocked_in), (waits, wait_ms))| SyncOverAsync {
            method,
            blocked_in,
            waits,
            wait_ms: round1(wait_ms),
        })
        .collect();
    sync.sort_by(|x, y| {
        y.wait_ms
            .total_cmp(&x.wait_ms)
            .then_with(|| x.method.cmp(&y.method))
    });
    let sync_over_async_total = sync.len();
    sync.truncate(top);
    let sync_over_async_note = inlining_note(
        sync.iter()
            .map(|w| w.method.as_str())
            .filter(|m| a.symbols.is_unlabelled_lambda(m)),
        a.symbols.inlining_followed(),
    );
    let span = p.injection_span_ns;
    Starvation {
        detected: p.injections >= STARVED_INJECTIONS,
        starvation_adjustments: p.starvation_adjustments,
        blocking_adjustments: p.blocking_adjustments,
        worker_starts: p.worker_starts,
        injections: p.injections,
        injections_from: if p.injections_from_goal {
            "adjustments"
        } else {
            "worker starts"
        },
        injections_per_s: span
            .filter(|(f, l)| l > f && p.injections > 1)
            .map(|(f, l)| round1((p.injections - 1) as f64 / ((l - f) as f64 / 1e9))),
        first_injection_ms: span.map(|s| ms(s.0 as f64)),
        last_injection_ms: span.map(|s| ms(s.1 as f64)),
        workers_before: p.workers_before,
        workers_max: p.workers_max,
        min_workers: p.min_max.map(|m| m.0),
        adjustments: p.adjustments.clone(),
        enqueued: p.enqueued,
        dequeued: p.dequeued,
        max_backlog: p.max_backlog,
        throughput: p.throughput.map(|t| (round1(t.1), round1(t.2))),
        sync_over_async: sync,
        sync_over_async_total,
        sync_over_async_note,
    }
}

/// For a pool worker's stack blocked on a task: (the method that blocked, the blocking
/// call).
fn sync_over_async(frames: &[String]) -> Option<(String, String)> {
    if !frames.iter().any(|f| is_pool_dispatch(f)) {
        return None;
    }
    let w = task_waits::task_wait(frames)?;
    Some((w.method, w.frame))
}

/// Share of a thread's time in the window it must spend blocked in the lock, and share of
/// its waiting in the lock, for a hang already in progress.
const STUCK_SHARE: f64 = 0.8;

/// Threads the samples show blocked in a lock for (nearly) the whole trace when no wait
/// started on them in it: the hang began before the recording.
fn in_progress(a: &Analysis, m: &HangModel) -> Option<InProgress> {
    a.cpu.span_ns()?;
    let window = a.window_ns() as f64;
    if window <= 0.0 {
        return None;
    }
    let profile = a.profile(&StackFilter::default());
    let never_ran = profile.never_ran_threads(&a.symbols);
    let units_ns = a.sampling_interval_ns as f64;
    // Per thread: its waiting, its waiting in a lock acquisition, and the lock's frames.
    let mut per: FxHashMap<u64, (f64, f64, Option<Vec<String>>)> = FxHashMap::default();
    for r in &profile.rows {
        if !never_ran.contains(&r.thread) || m.waited_threads.contains(&r.thread) {
            continue;
        }
        let e = per.entry(r.thread).or_default();
        e.0 += r.wait;
        let frames: Vec<String> = r
            .frames
            .iter()
            .map(|&f| a.symbols.frame(f).name.clone())
            .collect();
        if let Some(at) = frames.iter().rposition(|f| is_lock_acquisition(f)) {
            e.1 += r.wait;
            e.2.get_or_insert_with(|| frames[at..].to_vec());
        }
    }
    let mut threads: Vec<StuckThread> = per
        .into_iter()
        .filter(|(_, (wait, in_lock, _))| {
            *in_lock >= STUCK_SHARE * wait && in_lock * units_ns >= STUCK_SHARE * window
        })
        .filter_map(|(t, (_, _, frames))| {
            let frames = frames?;
            Some(StuckThread {
                thread_id: t,
                thread_name: a.thread_name(t),
                blocked_in: frames.first()?.clone(),
                method: waiter(&frames),
            })
        })
        .collect();
    if threads.is_empty() {
        return None;
    }
    threads.sort_by_key(|t| t.thread_id);
    let members: Vec<Member<'_>> = threads
        .iter()
        .map(|t| Member {
            kind: "lock",
            thread_id: t.thread_id,
            name: t.thread_name.as_deref(),
            blocked_in: &t.blocked_in,
            method: &t.method,
            lock: None,
            owner_thread_id: None,
            source: None,
            waiting_ms: None,
        })
        .collect();
    let groups = groups::group(&members);
    let pid = a
        .process_id
        .map_or_else(|| "PID".to_string(), |p| p.to_string());
    Some(InProgress {
        threads,
        groups,
        commands: vec![
            format!("clrspy report hangs -p {pid}"),
            format!("clrspy dump -p {pid}"),
        ],
        hint: format!(
            "a trace sees only the waits that start inside it: `clrspy report hangs -p {pid}` reads who holds what now from a dump (the runtime's monitors and their owners) and names the deadlock; `clrspy dump -p {pid}` keeps the evidence"
        ),
    })
}
