//! What `clrspy report hangs` reads: lock waits (`Contention/Start`/`Stop`, with the lock, the
//! object locked on and the owner thread from .NET 8), other blocking waits
//! (`WaitHandleWait/Start`/`Stop`, .NET 9+), and the thread pool's evidence of starvation
//! (hill-climbing adjustments and the worker counts they set, its limits, its throughput
//! samples, work items queued and taken when recorded). At the trace's end, the waits still
//! open are the threads still blocked; the deadlock cycles among them are found by
//! [`HangModel::cycles`]. Memory stays bounded: open waits are one per thread, closed ones are
//! summed per stack.

use clr_events::runtime::{ids as rt, AdjustmentReason, ContentionStart, ThreadPoolAdjustment};
use clr_events::threading::{
    ids, ThreadPoolMinMax, ThreadPoolSample, ThreadPoolWork, WaitHandleWaitStart, WaitSource,
};
use clr_events::ViewError;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::model_entry::{boxed, ModelEntry};
use crate::stacks::StackId;
use crate::{Model, ModelEvent, Wanted};

/// What a wait waited in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WaitKind {
    /// A contended lock (`Contention/Start`).
    Lock,
    /// A wait handle, monitor wait or join (`WaitHandleWait/Start`).
    Handle,
}

/// A wait still open: the thread is blocked in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenWait {
    /// The waiting thread.
    pub thread: u64,
    /// When it started, ns since the trace started.
    pub start_ns: i64,
    /// Its stack (the start event's).
    pub stack: Option<StackId>,
    /// The lock (lock waits on .NET 8+; 0 when not reported).
    pub lock_id: u64,
    /// The object locked or waited on (0 when not reported).
    pub object_id: u64,
    /// The lock's owner thread (lock waits on .NET 8+; 0 when not reported).
    pub owner: u64,
    /// For a handle wait, what it waits in.
    pub source: Option<WaitSource>,
}

/// Closed and open waits of one stack.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WaitTotals {
    /// Waits.
    pub count: u64,
    /// Their time, ns (open ones until the trace's end).
    pub total_ns: f64,
    /// The longest, ns.
    pub max_ns: f64,
    /// Still open at the trace's end.
    pub open: u64,
}

impl WaitTotals {
    fn add(&mut self, ns: f64, open: bool) {
        self.count += 1;
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
        self.open += u64::from(open);
    }
}

/// The thread pool's evidence.
///
/// A thread is counted injected when the pool really added one: a
/// `ThreadPoolWorkerThread/Start` that raised the pool's worker count above the highest seen,
/// while the pool's last adjustment was for starvation or blocking. An adjustment only sets the
/// pool's goal: under sync-over-async the runtime repeats `CooperativeBlocking` adjustments
/// that lower and raise it by one many times a second with no thread started, so counting
/// them counted hundreds of threads that never were. A trace with adjustments and no worker
/// starts (the starts not recorded) counts the rises of the goal above its highest instead.
/// Either way the count is at most the rise from [`PoolEvidence::workers_before`] to
/// [`PoolEvidence::workers_max`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolEvidence {
    /// Adjustments by reason, as the runtime names it.
    pub adjustments: FxHashMap<String, u64>,
    /// Adjustments because work waited with no worker free (`Starvation`).
    pub starvation_adjustments: u64,
    /// Adjustments because workers blocked in waits the runtime knows of
    /// (`CooperativeBlocking`: `Task.Wait`, `.Result` on the pool).
    pub blocking_adjustments: u64,
    /// `ThreadPoolWorkerThread/Start` events: every worker the pool started.
    pub worker_starts: u64,
    /// Threads injected: worker starts that raised the count for starvation or blocking (or,
    /// with no worker starts in the trace, the goal's rises for them).
    pub injections: u64,
    /// True when [`PoolEvidence::injections`] come from the goal's rises (no worker starts).
    pub injections_from_goal: bool,
    /// The first and last injection, ns.
    pub injection_span_ns: Option<(i64, i64)>,
    /// The worker count before the first injection.
    pub workers_before: Option<u32>,
    /// The highest worker count set or seen.
    pub workers_max: u32,
    /// The last worker count known.
    pub(crate) workers_last: Option<u32>,
    /// The pool's limits (`ThreadPoolMinMaxThreads`), when the trace has them.
    pub min_max: Option<(u32, u32)>,
    /// Throughput samples (work items per second): how many, and the lowest and highest.
    pub throughput: Option<(u64, f64, f64)>,
    /// Work items queued (`ThreadPool/Enqueue`, when recorded).
    pub enqueued: u64,
    /// Work items taken by a worker (`ThreadPool/Dequeue`).
    pub dequeued: u64,
    /// The most work items queued and not yet taken at once.
    pub max_backlog: u64,
    /// Workers that went idle waiting for work (`ThreadPoolWorkerThread/Wait`).
    pub(crate) idle_waits: u64,
    /// The last adjustment was for starvation or blocking: a worker started now is injected.
    injecting: bool,
    /// The highest worker count the workers' own events reported (0: none seen yet).
    highest_active: u32,
    /// By the goal: the highest goal set, the injections and their span, the count before.
    goal_high: Option<u32>,
    goal_injections: u64,
    goal_span_ns: Option<(i64, i64)>,
    goal_before: Option<u32>,
    /// By the starts: the injections, their span and the count before the first.
    start_injections: u64,
    start_span_ns: Option<(i64, i64)>,
    start_before: Option<u32>,
}

impl PoolEvidence {
    fn on_count(&mut self, count: u32) {
        self.workers_max = self.workers_max.max(count);
        self.workers_last = Some(count);
    }

    fn on_adjustment(&mut self, ts_ns: i64, a: &ThreadPoolAdjustment) {
        *self.adjustments.entry(a.reason.to_string()).or_default() += 1;
        self.injecting = match a.reason {
            AdjustmentReason::Starvation => {
                self.starvation_adjustments += 1;
                true
            }
            AdjustmentReason::CooperativeBlocking => {
                self.blocking_adjustments += 1;
                true
            }
            _ => false,
        };
        let high = self.goal_high;
        if self.injecting {
            if let Some(h) = high.filter(|&h| a.new_worker_count > h) {
                self.goal_injections += u64::from(a.new_worker_count - h);
                self.goal_before.get_or_insert(h);
                let span = self.goal_span_ns.get_or_insert((ts_ns, ts_ns));
                span.1 = ts_ns;
            }
        }
        self.goal_high = Some(high.map_or(a.new_worker_count, |h| h.max(a.new_worker_count)));
        self.on_count(a.new_worker_count);
        self.settle();
    }

    /// A worker's own event (`id`: start, stop or wait) with the pool's worker count.
    fn on_worker(&mut self, ts_ns: i64, start: bool, active: u32) {
        if start {
            self.worker_starts += 1;
            // Before any worker event, the pool had the others: a start counts itself.
            let before = if self.highest_active == 0 {
                active.saturating_sub(1)
            } else {
                self.highest_active
            };
            if self.injecting && active > before {
                self.start_before.get_or_insert(before);
                let span = self.start_span_ns.get_or_insert((ts_ns, ts_ns));
                span.1 = ts_ns;
                self.start_injections += 1;
            }
        }
        self.highest_active = self.highest_active.max(active);
        self.on_count(active);
        self.settle();
    }

    /// The injections and their span from the starts, or from the goal when the trace has no
    /// worker starts.
    fn settle(&mut self) {
        if self.worker_starts > 0 {
            self.injections_from_goal = false;
            self.injections = self.start_injections;
            self.injection_span_ns = self.start_span_ns;
            self.workers_before = self.start_before;
        } else {
            self.injections_from_goal = self.goal_injections > 0;
            self.injections = self.goal_injections;
            self.injection_span_ns = self.goal_span_ns;
            self.workers_before = self.goal_before;
        }
    }

    fn on_work(&mut self, enqueue: bool) {
        if enqueue {
            self.enqueued += 1;
        } else {
            self.dequeued += 1;
        }
        self.max_backlog = self
            .max_backlog
            .max(self.enqueued.saturating_sub(self.dequeued));
    }
}

/// The hangs model.
#[derive(Clone, Debug, Default)]
pub struct HangModel {
    /// `Contention/Start` events read.
    pub lock_waits: u64,
    /// `Contention/Stop` events read.
    pub lock_waits_ended: u64,
    /// `WaitHandleWait/Start` events read.
    pub handle_waits: u64,
    /// `WaitHandleWait/Stop` events read.
    pub handle_waits_ended: u64,
    /// Waits by kind and stack, closed and (after the pass) still open.
    pub by_stack: FxHashMap<(WaitKind, Option<StackId>), WaitTotals>,
    /// Lock waits still open at the end, by thread (after the pass).
    pub open_locks: Vec<OpenWait>,
    /// Handle waits still open at the end, by thread (after the pass).
    pub open_handles: Vec<OpenWait>,
    /// The thread pool's evidence.
    pub pool: PoolEvidence,
    /// Threads on which a lock or handle wait started in the trace.
    pub waited_threads: FxHashSet<u64>,
    /// The trace's last event's time, ns (the end of open waits).
    pub end_ns: i64,
    locks: FxHashMap<u64, OpenWait>,
    handles: FxHashMap<u64, OpenWait>,
    closed: FxHashMap<(WaitKind, Option<StackId>), WaitTotals>,
}

/// One member of a deadlock cycle: a blocked thread, the lock it waits for, and the lock it
/// holds (the one the previous member waits for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CycleMember {
    /// The thread's wait.
    pub wait: OpenWait,
    /// The lock it holds that the previous member waits for.
    pub holds_lock: u64,
}

impl HangModel {
    fn close(&mut self, kind: WaitKind, thread: u64, ts_ns: i64) {
        let open = match kind {
            WaitKind::Lock => self.locks.remove(&thread),
            WaitKind::Handle => self.handles.remove(&thread),
        };
        if let Some(w) = open {
            let ns = (ts_ns - w.start_ns).max(0) as f64;
            self.closed.entry((kind, w.stack)).or_default().add(ns, false);
        }
    }

    /// The deadlocks among the lock waits still open at the end: each thread waits for a
    /// lock whose owner waits for a lock ... held by the first. Each cycle starts at its
    /// lowest thread id; cycles are ordered by it.
    pub fn cycles(&self) -> Vec<Vec<CycleMember>> {
        let waits: FxHashMap<u64, &OpenWait> =
            self.open_locks.iter().map(|w| (w.thread, w)).collect();
        let mut done: FxHashSet<u64> = FxHashSet::default();
        let mut out = Vec::new();
        let mut starts: Vec<u64> = waits.keys().copied().collect();
        starts.sort_unstable();
        for start in starts {
            // Follow thread → owner until a thread repeats or the chain leaves the waiters.
            let mut path: Vec<u64> = Vec::new();
            let mut t = start;
            let mut closed = false;
            while !done.contains(&t) {
                if path.contains(&t) {
                    closed = true;
                    break;
                }
                let Some(w) = waits.get(&t) else { break };
                path.push(t);
                // Before .NET 8 the owner is not reported (0): the chain ends there.
                if w.owner == 0 {
                    break;
                }
                t = w.owner;
            }
            // A cycle has two threads at least (a thread never waits for a lock it holds).
            let at = path.iter().position(|&p| p == t).filter(|_| closed);
            if let Some(at) = at.filter(|&at| path.len() - at >= 2) {
                let ring = &path[at..];
                let lowest = ring.iter().position(|&p| p == *ring.iter().min().unwrap_or(&t));
                let mut ring = ring.to_vec();
                ring.rotate_left(lowest.unwrap_or(0));
                let n = ring.len();
                let members = (0..n)
                    .filter_map(|i| {
                        let wait = **waits.get(&ring[i])?;
                        let prev = waits.get(&ring[(i + n - 1) % n])?;
                        Some(CycleMember {
                            wait,
                            holds_lock: prev.lock_id,
                        })
                    })
                    .collect();
                out.push(members);
            }
            done.extend(path);
        }
        out.sort_by_key(|c: &Vec<CycleMember>| c.first().map(|m| m.wait.thread));
        out
    }
}

impl Model for HangModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(rt::CONTENTION_START).with_stack(),
        Wanted::runtime(rt::CONTENTION_STOP),
        Wanted::runtime(ids::WAIT_HANDLE_WAIT_START).with_stack(),
        Wanted::runtime(ids::WAIT_HANDLE_WAIT_STOP),
        Wanted::runtime(rt::TP_ADJUSTMENT),
        Wanted::runtime(rt::TP_WORKER_START),
        Wanted::runtime(rt::TP_WORKER_STOP),
        Wanted::runtime(rt::TP_WORKER_WAIT),
        Wanted::runtime(ids::TP_ADJUSTMENT_SAMPLE),
        Wanted::runtime(ids::TP_MIN_MAX_THREADS),
        Wanted::runtime(ids::TP_ENQUEUE),
        Wanted::runtime(ids::TP_DEQUEUE),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        self.end_ns = self.end_ns.max(ev.ts_ns);
        let (p, v, ptr) = (ev.payload, ev.version, ev.pointer_size);
        match ev.id {
            rt::CONTENTION_START => {
                let s = ContentionStart::parse(p, v, ptr)?;
                self.lock_waits += 1;
                self.waited_threads.insert(ev.thread_id);
                // A start with one still open on the thread: the first never stopped.
                self.close(WaitKind::Lock, ev.thread_id, ev.ts_ns);
                self.locks.insert(
                    ev.thread_id,
                    OpenWait {
                        thread: ev.thread_id,
                        start_ns: ev.ts_ns,
                        stack: ev.stack,
                        lock_id: s.lock_id.unwrap_or(0),
                        object_id: s.associated_object_id.unwrap_or(0),
                        owner: s.owner_thread_id.unwrap_or(0),
                        source: None,
                    },
                );
            }
            rt::CONTENTION_STOP => {
                self.lock_waits_ended += 1;
                self.close(WaitKind::Lock, ev.thread_id, ev.ts_ns);
            }
            ids::WAIT_HANDLE_WAIT_START => {
                let s = WaitHandleWaitStart::parse(p, v, ptr)?;
                self.handle_waits += 1;
                self.waited_threads.insert(ev.thread_id);
                self.close(WaitKind::Handle, ev.thread_id, ev.ts_ns);
                if self.locks.contains_key(&ev.thread_id) {
                    // A contended lock's slow path waits on a handle too: one wait, the lock's.
                    return Ok(());
                }
                self.handles.insert(
                    ev.thread_id,
                    OpenWait {
                        thread: ev.thread_id,
                        start_ns: ev.ts_ns,
                        stack: ev.stack,
                        lock_id: 0,
                        object_id: s.associated_object_id,
                        owner: 0,
                        source: Some(s.source),
                    },
                );
            }
            ids::WAIT_HANDLE_WAIT_STOP => {
                self.handle_waits_ended += 1;
                self.close(WaitKind::Handle, ev.thread_id, ev.ts_ns);
            }
            rt::TP_ADJUSTMENT => {
                let a = ThreadPoolAdjustment::parse(p, v, ptr)?;
                self.pool.on_adjustment(ev.ts_ns, &a);
            }
            rt::TP_WORKER_START | rt::TP_WORKER_STOP | rt::TP_WORKER_WAIT => {
                let w = clr_events::runtime::ThreadPoolWorkerThread::parse(ev.id, p, v, ptr)?;
                self.pool.idle_waits += u64::from(ev.id == rt::TP_WORKER_WAIT);
                self.pool
                    .on_worker(ev.ts_ns, ev.id == rt::TP_WORKER_START, w.active);
            }
            ids::TP_ADJUSTMENT_SAMPLE => {
                let t = ThreadPoolSample::parse(p, v, ptr)?.throughput;
                let s = self.pool.throughput.get_or_insert((0, t, t));
                *s = (s.0 + 1, s.1.min(t), s.2.max(t));
            }
            ids::TP_MIN_MAX_THREADS => {
                let m = ThreadPoolMinMax::parse(p, v, ptr)?;
                self.pool.min_max = Some((m.min_workers, m.max_workers));
            }
            _ => {
                ThreadPoolWork::parse(ev.id, p, v, ptr)?;
                self.pool.on_work(ev.id == ids::TP_ENQUEUE);
            }
        }
        Ok(())
    }

    fn trace_end(&mut self, ns: i64) {
        self.end_ns = self.end_ns.max(ns);
    }

    fn finish(&mut self) {
        // Open waits last until the trace's end (a live view finishes again later: the
        // totals are built anew from the closed ones each time).
        let mut opened: Vec<(WaitKind, OpenWait)> = Vec::new();
        for (kind, m) in [(WaitKind::Lock, &self.locks), (WaitKind::Handle, &self.handles)] {
            opened.extend(m.values().map(|w| (kind, *w)));
        }
        opened.sort_by_key(|(k, w)| (*k, w.thread));
        let mut by_stack = self.closed.clone();
        for (kind, w) in &opened {
            let ns = (self.end_ns - w.start_ns).max(0) as f64;
            by_stack.entry((*kind, w.stack)).or_default().add(ns, true);
        }
        self.by_stack = by_stack;
        self.open_locks = opened.iter().filter(|(k, _)| *k == WaitKind::Lock).map(|x| x.1).collect();
        self.open_handles = opened.iter().filter(|(k, _)| *k == WaitKind::Handle).map(|x| x.1).collect();
    }
}

/// The registry's entry: blocked threads, deadlock cycles, long waits and thread-pool starvation.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<HangModel>(
    "hangs",
    boxed::<HangModel>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Provider;

    fn ev(id: u32, version: u8, ts_ns: i64, thread: u64, payload: &[u8]) -> ModelEvent<'_> {
        ModelEvent {
            provider: Provider::Known(clr_events::KnownProvider::Runtime),
            id,
            version,
            ts_ns,
            thread_id: thread,
            payload,
            pointer_size: 8,
            stack: None,
            context: crate::EventContext::default(),
        }
    }

    fn lock_start(lock: u64, owner: u64) -> Vec<u8> {
        let mut p = vec![0u8, 0, 0];
        p.extend(lock.to_le_bytes());
        p.extend((lock + 1).to_le_bytes());
        p.extend(owner.to_le_bytes());
        p
    }

    fn adjustment(count: u32, reason: u32) -> Vec<u8> {
        let mut p = 1.0f64.to_le_bytes().to_vec();
        p.extend(count.to_le_bytes());
        p.extend(reason.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        p
    }

    #[test]
    fn a_three_thread_cycle_and_a_chain_that_is_not_one() {
        let mut m = HangModel::default();
        // 30 → 10 → 20 → 30: a cycle; 40 waits for 10 (in the cycle) but is not in it; 50
        // waits for 60, which runs.
        for (t, lock, owner) in [(30, 0x300, 10), (10, 0x100, 20), (20, 0x200, 30), (40, 0x100, 10), (50, 0x500, 60)] {
            m.on_event(&ev(rt::CONTENTION_START, 2, 1_000, t, &lock_start(lock, owner)))
                .unwrap();
        }
        // Before .NET 8 (version 1) no lock and no owner: blocked, in no cycle; a thread
        // named as its own lock's owner is no cycle either.
        m.on_event(&ev(rt::CONTENTION_START, 1, 1_000, 80, &[0, 0, 0])).unwrap();
        m.on_event(&ev(rt::CONTENTION_START, 2, 1_000, 90, &lock_start(0x900, 90)))
            .unwrap();
        // A wait that ended is no longer blocked.
        m.on_event(&ev(rt::CONTENTION_START, 2, 2_000, 70, &lock_start(0x700, 10)))
            .unwrap();
        m.on_event(&ev(rt::CONTENTION_STOP, 0, 5_000, 70, &[])).unwrap();
        m.on_event(&ev(ids::TP_MIN_MAX_THREADS, 0, 9_000, 1, &[0; 10])).unwrap();
        m.finish();
        let c = m.cycles();
        assert_eq!(c.len(), 1);
        let threads: Vec<u64> = c[0].iter().map(|x| x.wait.thread).collect();
        assert_eq!(threads, [10, 20, 30]);
        let held: Vec<u64> = c[0].iter().map(|x| x.holds_lock).collect();
        // 10 holds what 30 waits for (0x300), 20 what 10 waits for, 30 what 20 waits for.
        assert_eq!(held, [0x300, 0x100, 0x200]);
        assert_eq!(m.open_locks.len(), 7);
        let closed = m.by_stack[&(WaitKind::Lock, None)];
        assert_eq!((closed.count, closed.open), (8, 7));
        // Open waits last to the last event (9 µs); the closed one 3 µs.
        assert_eq!(closed.total_ns, 7.0 * 8_000.0 + 3_000.0);
        // Finishing again (a live view) counts nothing twice.
        m.finish();
        assert_eq!(m.by_stack[&(WaitKind::Lock, None)].count, 8);
    }

    /// A deadlock formed early in a recording: its waits are the model's last events, but
    /// they last to the trace's end (another model's event), not to their own start.
    #[test]
    fn open_waits_last_to_the_traces_end() {
        let mut m = HangModel::default();
        m.on_event(&ev(rt::CONTENTION_START, 2, 1_000, 10, &lock_start(0x100, 20)))
            .unwrap();
        m.on_event(&ev(rt::CONTENTION_START, 2, 2_000, 20, &lock_start(0x200, 10)))
            .unwrap();
        m.trace_end(8_000_000);
        m.finish();
        let w = m.by_stack[&(WaitKind::Lock, None)];
        assert_eq!((w.count, w.open), (2, 2));
        assert_eq!(w.total_ns, (8_000_000.0 - 1_000.0) + (8_000_000.0 - 2_000.0));
    }

    #[test]
    fn injections_are_raises_for_starvation_or_blocking() {
        let mut m = HangModel::default();
        let mut feed = |ts: i64, count: u32, reason: u32| {
            m.on_event(&ev(rt::TP_ADJUSTMENT, 0, ts, 1, &adjustment(count, reason)))
                .unwrap();
        };
        feed(0, 2, 0); // warmup: sets the count
        feed(1_000_000_000, 3, 6); // starvation: +1
        feed(1_250_000_000, 4, 8); // cooperative blocking: +1
        feed(1_500_000_000, 4, 8); // no raise
        feed(2_000_000_000, 5, 3); // climbing: not an injection
        feed(3_000_000_000, 3, 8); // lowered
        let p = &m.pool;
        assert_eq!((p.starvation_adjustments, p.blocking_adjustments), (1, 3));
        assert_eq!(p.injections, 2);
        assert_eq!(p.injection_span_ns, Some((1_000_000_000, 1_250_000_000)));
        assert_eq!((p.workers_before, p.workers_max, p.workers_last), (Some(2), 5, Some(3)));
        assert_eq!(p.adjustments["Warmup"], 1);
        // Work items: the backlog is the most queued and not yet taken.
        for (id, n) in [(ids::TP_ENQUEUE, 3), (ids::TP_DEQUEUE, 2), (ids::TP_ENQUEUE, 1)] {
            for _ in 0..n {
                m.on_event(&ev(id, 0, 4_000_000_000, 1, &[0; 10])).unwrap();
            }
        }
        assert_eq!((m.pool.enqueued, m.pool.dequeued, m.pool.max_backlog), (4, 2, 3));
        // A payload cut short is an error, not a zero.
        assert!(m.on_event(&ev(rt::TP_ADJUSTMENT, 0, 0, 1, &[0; 5])).is_err());
    }

    fn workers(active: u32) -> Vec<u8> {
        let mut p = active.to_le_bytes().to_vec();
        p.extend(0u32.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        p
    }

    #[test]
    fn injections_are_worker_starts_that_raise_the_count_not_adjustments() {
        // As .NET 10 does under sync-over-async: each CooperativeBlocking raise of the goal is
        // followed by a worker start, and between them the goal goes down and up by one again
        // and again with no thread started.
        let mut m = HangModel::default();
        let mut at = 0;
        let mut feed = |m: &mut HangModel, id: u32, payload: Vec<u8>| {
            at += 1_000_000;
            m.on_event(&ev(id, 0, at, 1, &payload)).unwrap();
        };
        // Workers the pool started within its minimum, before any adjustment: not injected.
        feed(&mut m, rt::TP_WORKER_START, workers(2));
        feed(&mut m, rt::TP_WORKER_START, workers(3));
        for goal in 4..=8u32 {
            feed(&mut m, rt::TP_ADJUSTMENT, adjustment(goal, 8));
            feed(&mut m, rt::TP_WORKER_START, workers(goal));
            for _ in 0..50 {
                feed(&mut m, rt::TP_ADJUSTMENT, adjustment(goal - 1, 8));
                feed(&mut m, rt::TP_ADJUSTMENT, adjustment(goal, 8));
            }
        }
        // Idle workers report the count; a climbing adjustment's start is no injection.
        feed(&mut m, rt::TP_WORKER_WAIT, workers(8));
        feed(&mut m, rt::TP_ADJUSTMENT, adjustment(9, 3));
        feed(&mut m, rt::TP_WORKER_START, workers(9));
        // A worker that retired and was started again does not raise the count.
        feed(&mut m, rt::TP_WORKER_STOP, workers(8));
        feed(&mut m, rt::TP_ADJUSTMENT, adjustment(9, 6));
        feed(&mut m, rt::TP_WORKER_START, workers(9));
        let p = &m.pool;
        assert_eq!(p.blocking_adjustments, 5 + 5 * 100);
        assert_eq!((p.worker_starts, p.injections, p.injections_from_goal), (9, 5, false));
        assert_eq!((p.workers_before, p.workers_max), (Some(3), 9));
        assert!(p.injections <= u64::from(p.workers_max - p.workers_before.unwrap()));
        // The first injection is the start after the first raise (the 4th event), the last
        // the start after the fifth.
        let (first, last) = p.injection_span_ns.unwrap();
        assert_eq!(first, 4_000_000);
        assert_eq!(last, (4 + 4 * 102) * 1_000_000);
    }
}
