//! Lock contention from `Contention/Start` (with the waiting stack, and from .NET 8 the lock
//! id and owning thread) and `Contention/Stop` (with the wait's duration): wait time by stack
//! and by lock, and what each lock's owner was doing while others waited for it (the holder's
//! stacks: its samples and waits in the times the waits say it held the lock).

use clr_events::runtime::{ids, ContentionStart, ContentionStop};
use clr_events::{clrspy, KnownProvider, ViewError};
use rustc_hash::FxHashMap;

use crate::event::{Model, ModelEvent, Provider, Wanted};
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
    /// Its waits by the waiting stack: (count, ns).
    pub waited: FxHashMap<Option<StackId>, (u64, f64)>,
    /// What its owners were doing while others waited for it: ns per stack (their samples,
    /// each worth the sampling interval, and the part of their waits that overlapped).
    pub held: FxHashMap<Option<StackId>, f64>,
}

/// Entries kept of each list the holders' stacks are joined from (the waits on named locks,
/// the samples and waits of the threads involved): 512Ki each, ~20 MB each at most.
const HOLDER_CAP: usize = 1 << 19;

/// One sample or wait of a thread that waited for a named lock or was named as its owner.
#[derive(Clone, Copy, Debug)]
struct OwnerTime {
    thread: u64,
    /// When it ended (a sample's time; a wait's end).
    ts_ns: i64,
    stack: Option<StackId>,
    ns: f64,
    /// A sample (at `ts_ns`), not a wait (ending there).
    point: bool,
}

/// The contention model.
#[derive(Clone, Debug, Default)]
pub struct ContentionModel {
    open: FxHashMap<u64, (i64, Option<StackId>, u64, u64)>,
    /// The waits on named locks: (lock, the thread that waited and then held it, start, stop,
    /// the owner the start named or 0).
    waits: Vec<(u64, u64, i64, i64, u64)>,
    /// Threads that waited on a named lock or were named as an owner so far (and so may have
    /// held one while others waited), and their samples and waits since (in file order: the
    /// events of different threads come interleaved, so these are joined at the end).
    owners_seen: rustc_hash::FxHashSet<u64>,
    owner_times: Vec<OwnerTime>,
    /// The latest event time seen.
    last_ns: i64,
    /// The trace's sampling interval: what one sample of a holder is worth.
    interval_ns: u64,
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
    /// An empty model; `interval_ns` is the trace's sampling interval.
    pub fn new(interval_ns: u64) -> ContentionModel {
        ContentionModel {
            interval_ns: interval_ns.max(1),
            ..ContentionModel::default()
        }
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
        // A start without its stop (lost) is replaced.
        self.open.insert(thread, (ts_ns, stack, lock, owner));
        if lock != 0 {
            self.owners_seen.insert(thread);
            if owner != 0 {
                self.owners_seen.insert(owner);
            }
        }
    }

    /// `ns` of `thread`'s time at `stack`, ending at `ts_ns`: kept when the thread was named
    /// as an owner, to be joined with the times it held a lock others waited for.
    fn owner_time(
        &mut self,
        ts_ns: i64,
        thread: u64,
        stack: Option<StackId>,
        ns: f64,
        point: bool,
    ) {
        if self.owner_times.len() < HOLDER_CAP && self.owners_seen.contains(&thread) {
            self.owner_times.push(OwnerTime {
                thread,
                ts_ns,
                stack,
                ns,
                point,
            });
        }
    }

    /// Joins the owners' samples and waits with the times they held a lock others waited
    /// for. Each lock's waits in time order say who held it: a wait's start names the owner
    /// then, and a waiter that stops waiting holds the lock from then; between two such
    /// moments, while any thread waited, that owner held it. Computed afresh at each call
    /// (the model's `finish` may be called again after more events).
    fn join_holders(&mut self) {
        for l in self.by_lock.values_mut() {
            l.held.clear();
        }
        // Per lock, in time order: waits starting (naming the owner then) and stopping (the
        // waiter holds it from then); between two, the owner held it while others waited
        // when any did.
        let mut by_lock: FxHashMap<u64, Vec<(i64, u8, u64)>> = FxHashMap::default();
        for &(lock, thread, start, stop, owner) in &self.waits {
            let v = by_lock.entry(lock).or_default();
            v.push((start, 1, owner));
            v.push((stop, 0, thread));
        }
        // Waits still open: waiting to the last event seen.
        for (&thread, &(start, _, lock, owner)) in &self.open {
            if lock != 0 {
                let v = by_lock.entry(lock).or_default();
                v.push((start, 1, owner));
                v.push((self.last_ns.max(start), 0, thread));
            }
        }
        let mut held: FxHashMap<u64, Vec<(i64, i64, u64)>> = FxHashMap::default();
        for (lock, mut v) in by_lock {
            // Stops before starts at the same time: a waiter that got it names no one.
            v.sort_unstable();
            let (mut owner, mut waiting, mut since) = (0u64, 0u32, i64::MIN);
            for (t, kind, who) in v {
                if owner != 0 && waiting > 0 && t > since {
                    held.entry(owner).or_default().push((since, t, lock));
                }
                if kind == 1 {
                    waiting += 1;
                    if who != 0 {
                        owner = who;
                    }
                } else {
                    waiting = waiting.saturating_sub(1);
                    owner = who;
                }
                since = t;
            }
        }
        for v in held.values_mut() {
            v.sort_unstable();
            let mut merged: Vec<(i64, i64, u64)> = Vec::with_capacity(v.len());
            for &(s, e, l) in v.iter() {
                match merged.last_mut() {
                    Some(m) if m.2 == l && s <= m.1 => m.1 = m.1.max(e),
                    _ => merged.push((s, e, l)),
                }
            }
            *v = merged;
        }
        for t in &self.owner_times {
            let Some(v) = held.get(&t.thread) else {
                continue;
            };
            // A sample counts where it fell, worth its interval; a wait (`point` false), the
            // part of it from `ts - ns` to `ts` inside a holding.
            let from = if t.point {
                t.ts_ns
            } else {
                t.ts_ns - t.ns as i64
            };
            let i = v.partition_point(|h| h.1 < from);
            for &(s, e, lock) in &v[i..] {
                if s > t.ts_ns {
                    break;
                }
                let ns = if t.point {
                    t.ns
                } else {
                    (t.ts_ns.min(e) - from.max(s)).max(0) as f64
                };
                if ns > 0.0 {
                    *self
                        .by_lock
                        .entry(lock)
                        .or_default()
                        .held
                        .entry(t.stack)
                        .or_default() += ns;
                }
                if t.point {
                    break;
                }
            }
        }
    }

    /// A `Contention/Stop` on `thread` at `ts_ns`.
    pub(crate) fn on_stop(&mut self, ts_ns: i64, thread: u64, stop: &ContentionStop) {
        let Some((start, stack, lock, owner)) = self.open.remove(&thread) else {
            return;
        };
        if lock != 0 && self.waits.len() < HOLDER_CAP {
            self.waits
                .push((lock, thread, start, ts_ns.max(start), owner));
        }
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
        let w = l.waited.entry(stack).or_default();
        w.0 += 1;
        w.1 += ns;
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
        // The holders' samples (the runtime's, or the kernel's written as the runtime's) and
        // waits: what an owner did while others waited.
        Wanted {
            provider: Provider::Known(KnownProvider::SampleProfiler),
            id: 0,
            stack: true,
            windowed: false,
            event: None,
        },
        Wanted {
            provider: Provider::Known(KnownProvider::SampleProfiler),
            id: 1,
            stack: true,
            windowed: false,
            event: None,
        },
        Wanted::clrspy(clrspy::ids::KERNEL_SAMPLE).with_stack(),
        Wanted::clrspy(clrspy::ids::KERNEL_WAIT).with_stack(),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        self.last_ns = self.last_ns.max(ev.ts_ns);
        match (ev.provider, ev.id) {
            (Provider::Known(KnownProvider::SampleProfiler), _) => {
                let ns = self.interval_ns as f64;
                self.owner_time(ev.ts_ns, ev.thread_id, ev.stack, ns, true);
            }
            (Provider::Clrspy, clrspy::ids::KERNEL_SAMPLE) => {
                if self.owners_seen.is_empty() || clrspy::KernelSample::is_blocked_mark(ev.payload)
                {
                    return Ok(());
                }
                let thread = clrspy::KernelSample::thread_of(ev.payload, ev.thread_id)?;
                let ns = self.interval_ns as f64;
                self.owner_time(ev.ts_ns, u64::from(thread), ev.stack, ns, true);
            }
            (Provider::Clrspy, clrspy::ids::KERNEL_WAIT) => {
                if self.owners_seen.is_empty() {
                    return Ok(());
                }
                let k = clrspy::KernelWait::parse(ev.payload)?;
                let thread = u64::from(k.sample.thread_id);
                self.owner_time(ev.ts_ns, thread, ev.stack, k.duration_ns as f64, false);
            }
            (_, ids::CONTENTION_START) => {
                let s = ContentionStart::parse(ev.payload, ev.version, ev.pointer_size)?;
                self.on_start(ev.ts_ns, ev.thread_id, ev.stack, &s);
            }
            (_, ids::CONTENTION_STOP) => {
                let s = ContentionStop::parse(ev.payload, ev.version, ev.pointer_size)?;
                self.on_stop(ev.ts_ns, ev.thread_id, &s);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.join_holders();
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
        let mut m = ContentionModel::new(1_000_000);
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

    #[test]
    fn the_owners_samples_and_waits_while_others_wait_are_the_holders() {
        let mut m = ContentionModel::new(1_000_000);
        let mut start = vec![0u8, 0, 0];
        start.extend(0xAAu64.to_le_bytes());
        start.extend(0xBBu64.to_le_bytes());
        start.extend(4u64.to_le_bytes()); // owner: thread 4
        let stop = {
            let mut s = vec![0u8, 0, 0];
            s.extend(5_000_000.0f64.to_le_bytes());
            s
        };
        let sample = |m: &mut ContentionModel, ts: i64, thread: u64, stack: u32| {
            let mut e = ev(0, 0, ts, &[]);
            e.provider = Provider::Known(KnownProvider::SampleProfiler);
            e.thread_id = thread;
            e.stack = Some(StackId(stack));
            m.on_event(&e).unwrap();
        };
        // Before anyone waits: not holding.
        sample(&mut m, 500, 4, 1);
        m.on_event(&ev(ids::CONTENTION_START, 2, 1_000, &start))
            .unwrap();
        // The owner, twice; another thread, once.
        sample(&mut m, 2_000_000, 4, 2);
        sample(&mut m, 3_000_000, 4, 2);
        sample(&mut m, 3_000_000, 7, 3);
        m.on_event(&ev(ids::CONTENTION_STOP, 1, 5_000_000, &stop))
            .unwrap();
        // Released: not holding any more.
        sample(&mut m, 6_000_000, 4, 1);
        m.finish();
        let held = &m.by_lock[&0xAA].held;
        assert_eq!(held.len(), 1, "{held:?}");
        assert_eq!(held[&Some(StackId(2))], 2_000_000.0);

        // A convoy: 9 and 10 wait for 4's lock; 9 gets it while 10 still waits, so 9 is the
        // holder then, and 4 is not.
        let mut m = ContentionModel::new(1_000_000);
        m.on_event(&ev(ids::CONTENTION_START, 2, 1_000, &start))
            .unwrap();
        let mut ten = ev(ids::CONTENTION_START, 2, 2_000, &start);
        ten.thread_id = 10;
        m.on_event(&ten).unwrap();
        m.on_event(&ev(ids::CONTENTION_STOP, 1, 3_000_000, &stop))
            .unwrap();
        sample(&mut m, 4_000_000, 4, 1);
        sample(&mut m, 4_000_000, 9, 5);
        m.finish();
        let held = &m.by_lock[&0xAA].held;
        assert_eq!(held.len(), 1, "{held:?}");
        assert_eq!(held[&Some(StackId(5))], 1_000_000.0);
    }
}
