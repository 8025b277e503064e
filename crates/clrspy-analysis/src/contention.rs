//! Lock contention from `Contention/Start` (with the waiting stack, and from .NET 8 the lock
//! id and owning thread) and `Contention/Stop` (with the wait's duration): wait time by stack
//! and by lock.

use clr_events::runtime::{ids, ContentionStart, ContentionStop};
use clr_events::ViewError;
use rustc_hash::FxHashMap;

use crate::event::{Model, ModelEvent, Wanted};
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
#[derive(Clone, Debug, Default)]
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

    /// A `Contention/Start` on `thread` at `ts_ns`.
    pub(crate) fn on_start(
        &mut self,
        ts_ns: i64,
        thread: u64,
        stack: Option<StackId>,
        start: &ContentionStart,
    ) {
        // Before .NET 8 the runtime names neither the lock nor its owner: lock 0, no owner.
        let lock = start.lock_id.unwrap_or(0);
        let owner = start.owner_thread_id.unwrap_or(0);
        self.open.insert(thread, (ts_ns, stack, lock, owner));
    }

    /// A `Contention/Stop` on `thread` at `ts_ns`.
    pub(crate) fn on_stop(&mut self, ts_ns: i64, thread: u64, stop: &ContentionStop) {
        let Some((start, stack, lock, owner)) = self.open.remove(&thread) else {
            return;
        };
        let ns = stop
            .duration_ns
            .filter(|d| d.is_finite() && *d >= 0.0)
            .unwrap_or_else(|| (ts_ns - start).max(0) as f64);
        let s = self.by_stack.entry((thread, stack)).or_default();
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

impl Model for ContentionModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::CONTENTION_START).with_stack(),
        Wanted::runtime(ids::CONTENTION_STOP),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        if ev.id == ids::CONTENTION_START {
            let s = ContentionStart::parse(ev.payload, ev.version, ev.pointer_size)?;
            self.on_start(ev.ts_ns, ev.thread_id, ev.stack, &s);
        } else {
            let s = ContentionStop::parse(ev.payload, ev.version, ev.pointer_size)?;
            self.on_stop(ev.ts_ns, ev.thread_id, &s);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Provider;

    fn ev(id: u32, version: u8, ts_ns: i64, payload: &[u8]) -> ModelEvent<'_> {
        ModelEvent {
            provider: Provider::Known(clr_events::KnownProvider::Runtime),
            id,
            version,
            ts_ns,
            thread_id: 9,
            payload,
            pointer_size: 8,
            stack: None,
            context: crate::EventContext::default(),
        }
    }

    #[test]
    fn waits_by_lock_with_and_without_durations() {
        let mut m = ContentionModel::new();
        let mut start = vec![0u8, 0, 0];
        start.extend(0xAAu64.to_le_bytes()); // LockID
        start.extend(0xBBu64.to_le_bytes()); // AssociatedObjectID
        start.extend(4u64.to_le_bytes()); // owner
        let mut stop = vec![0u8, 0, 0];
        stop.extend(2_500.0f64.to_le_bytes());
        m.on_event(&ev(ids::CONTENTION_START, 2, 1_000, &start))
            .unwrap();
        m.on_event(&ev(ids::CONTENTION_STOP, 1, 9_000, &stop))
            .unwrap();
        // Version 0 events: no lock, no duration (the time between the events counts).
        m.on_event(&ev(ids::CONTENTION_START, 0, 10_000, &[]))
            .unwrap();
        m.on_event(&ev(ids::CONTENTION_STOP, 0, 10_700, &[]))
            .unwrap();
        assert_eq!(m.count, 2);
        assert_eq!(m.total_ns, 3_200.0);
        assert_eq!(m.by_lock[&0xAA].owners[&4], 1);
        assert_eq!(m.by_lock[&0].wait_ns, 700.0);
        // A version 2 start cut inside LockID is an error, and opens nothing.
        assert!(m
            .on_event(&ev(ids::CONTENTION_START, 2, 11_000, &start[..6]))
            .is_err());
        m.on_event(&ev(ids::CONTENTION_STOP, 0, 12_000, &[]))
            .unwrap();
        assert_eq!(m.count, 2);
    }
}
