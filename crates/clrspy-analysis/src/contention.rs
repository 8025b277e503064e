//! Lock contention from `Contention/Start` (with the waiting stack, and from .NET 8 the lock
//! id and owning thread) and `Contention/Stop` (with the wait's duration): wait time by stack
//! and by lock.

use rustc_hash::FxHashMap;

use crate::event::EventCtx;
use crate::stacks::StackId;

/// One lock's totals.
#[derive(Clone, Debug, Default)]
pub struct LockStats {
    /// Contended acquisitions.
    pub count: u64,
    /// Total wait, ns.
    pub wait_ns: f64,
    /// Owning threads seen, with how often.
    pub owners: FxHashMap<u64, u64>,
}

/// The contention model.
#[derive(Debug, Default)]
pub struct ContentionModel {
    open: FxHashMap<u64, (i64, Option<StackId>, u64, u64)>,
    /// Wait per (thread, stack): (count, ns).
    pub by_stack: FxHashMap<(u64, Option<StackId>), (u64, f64)>,
    /// Per lock id (0 when the runtime does not say).
    pub by_lock: FxHashMap<u64, LockStats>,
    /// Contentions seen.
    pub count: u64,
    /// Total wait, ns.
    pub total_ns: f64,
}

impl ContentionModel {
    /// An empty model.
    pub fn new() -> ContentionModel {
        ContentionModel::default()
    }

    /// A `Contention/Start`.
    pub fn on_start(&mut self, ev: &EventCtx<'_>) {
        let lock = ev.fields.u64("LockID").unwrap_or(0);
        let owner = ev.fields.u64("LockOwnerThreadID").unwrap_or(0);
        self.open
            .insert(ev.thread_id, (ev.ts_ns, ev.stack, lock, owner));
    }

    /// A `Contention/Stop`.
    pub fn on_stop(&mut self, ev: &EventCtx<'_>) {
        let Some((start, stack, lock, owner)) = self.open.remove(&ev.thread_id) else {
            return;
        };
        let ns = ev
            .fields
            .f64("DurationNs")
            .filter(|d| d.is_finite() && *d >= 0.0)
            .unwrap_or_else(|| (ev.ts_ns - start).max(0) as f64);
        let s = self.by_stack.entry((ev.thread_id, stack)).or_default();
        s.0 += 1;
        s.1 += ns;
        let l = self.by_lock.entry(lock).or_default();
        l.count += 1;
        l.wait_ns += ns;
        if owner != 0 {
            *l.owners.entry(owner).or_default() += 1;
        }
        self.count += 1;
        self.total_ns += ns;
    }
}
