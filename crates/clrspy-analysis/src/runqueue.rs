//! Each thread's wall time split three ways — on a CPU, waiting for a CPU (runnable on a run
//! queue), blocked — from clrspy's thread readings (schedstat's first two fields), and the
//! CPU throttling of the target's cgroup over the window (clrspy's `CgroupCpu`).
//!
//! A thread's lifetime in the trace is the reading intervals it existed in: from the tick
//! before its first reading (the first tick for threads already there) to the tick that saw
//! it gone (the last tick for threads still there). Over that time its CPU and run-queue time
//! are the differences of its readings; blocked (sleeping, waiting on I/O or a lock, or
//! stopped) is the rest.

use std::collections::VecDeque;

use clr_events::clrspy::CpuBandwidth;
use rustc_hash::FxHashMap;

/// How much more CPU and run-queue time than the wall time since the interval began a
/// thread's first reading may hold and still be a thread born in the interval: the reading
/// is taken a little before the tick that stamps it.
const BORN_SLACK_NS: u64 = 2_000_000;

/// One reading of a thread: (tick time, CPU ns so far, run-queue ns so far).
#[derive(Clone, Copy, Debug)]
struct Reading {
    ts: i64,
    cpu: u64,
    runq: u64,
}

/// A thread's readings, its first reading's time and when it was seen gone.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadReadings {
    readings: VecDeque<Reading>,
    born: Option<i64>,
    gone: Option<i64>,
}

impl ThreadReadings {
    /// A reading at `ts`; `gone`: the thread has ended (its values are its last ones).
    pub(crate) fn push(&mut self, ts: i64, cpu: u64, runq: Option<u64>, gone: bool) {
        self.born.get_or_insert(ts);
        if gone {
            self.gone.get_or_insert(ts);
        }
        if self.readings.back().is_none_or(|b| b.ts <= ts) {
            // Without a run-queue value the last one stands (readings of old traces have
            // none: theirs stays 0).
            let runq = runq.unwrap_or_else(|| self.readings.back().map_or(0, |b| b.runq));
            self.readings.push_back(Reading { ts, cpu, runq });
        }
    }

    /// The last reading at or before `t`.
    fn at(&self, t: i64) -> Option<&Reading> {
        let i = self.readings.partition_point(|r| r.ts <= t);
        i.checked_sub(1).and_then(|k| self.readings.get(k))
    }

    /// The reading the interval (a, b] starts from: the last at or before `a`; without one,
    /// the thread's first reading when it cannot be a thread born after `a` (it holds more
    /// CPU and run-queue time than the wall time since `a`: a thread that ran before the
    /// trace's readings begin, as in a ring's kept window), whose totals are then counted
    /// from; else none (totals count from 0: the thread was born in the interval).
    fn start(&self, a: i64, b: i64) -> Option<&Reading> {
        if let Some(r) = self.at(a) {
            return Some(r);
        }
        let f = self.readings.front().filter(|f| f.ts <= b)?;
        let wall = u64::try_from(f.ts.saturating_sub(a)).unwrap_or(0);
        (f.cpu.saturating_add(f.runq) > wall.saturating_add(BORN_SLACK_NS)).then_some(f)
    }

    /// CPU used over (a, b], ns (from 0 for a thread born in it).
    pub(crate) fn used(&self, a: i64, b: i64) -> u64 {
        let end = self.at(b).map_or(0, |r| r.cpu);
        end.saturating_sub(self.start(a, b).map_or(0, |r| r.cpu))
    }

    /// Time spent waiting for a CPU over (a, b], ns.
    pub(crate) fn queued(&self, a: i64, b: i64) -> u64 {
        let end = self.at(b).map_or(0, |r| r.runq);
        end.saturating_sub(self.start(a, b).map_or(0, |r| r.runq))
    }

    /// True when the last reading is later than `t`.
    pub(crate) fn read_after(&self, t: i64) -> bool {
        self.readings.back().is_some_and(|b| b.ts > t)
    }

    /// True when the thread existed in the interval (a, b].
    pub(crate) fn alive_in(&self, a: i64, b: i64) -> bool {
        self.born.is_some_and(|t| t <= b) && self.gone.is_none_or(|g| g > a)
    }

    /// Forgets readings before `t`, keeping the last one at or before it.
    pub(crate) fn trim(&mut self, t: i64) {
        while self.readings.len() > 1 && self.readings.get(1).is_some_and(|x| x.ts <= t) {
            self.readings.pop_front();
        }
    }
}

/// A thread's wall time over the window, split three ways, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadTime {
    /// Its lifetime in the window (see the module note).
    pub lifetime_ns: f64,
    /// On a CPU.
    pub cpu_ns: f64,
    /// Runnable, waiting for a CPU (0 when the readings have no run-queue time).
    pub runqueue_ns: f64,
}

impl ThreadTime {
    /// Neither on a CPU nor waiting for one: sleeping, waiting on I/O or a lock.
    pub fn blocked_ns(&self) -> f64 {
        (self.lifetime_ns - self.cpu_ns - self.runqueue_ns).max(0.0)
    }

    /// Adds one reading interval of `dt` ns.
    pub(crate) fn add(&mut self, dt: f64, cpu: f64, runq: f64) {
        self.lifetime_ns += dt;
        self.cpu_ns += cpu;
        self.runqueue_ns += runq;
    }
}

/// The CPU throttling of the target's cgroup over the window: the differences of its first
/// and last readings there.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Throttling {
    /// The group's directory, as the recorder saw it.
    pub cgroup: String,
    /// 1 or 2.
    pub cgroup_version: u16,
    /// Enforcement periods that elapsed with the group runnable.
    pub periods: u64,
    /// Of those, periods in which the group used up its quota and was held off the CPU.
    pub throttled_periods: u64,
    /// Time the group was held off the CPU by throttling, ns.
    pub throttled_ns: u64,
    /// The quota per period, µs; `None` when the group has no limit.
    pub quota_us: Option<u64>,
    /// The period, µs.
    pub period_us: u64,
}

/// The cgroup readings, in time order, with the group they came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct CgroupReadings {
    readings: Vec<(i64, CpuBandwidth)>,
    path: String,
}

/// At most this many cgroup readings are kept (hours of recording; later ones are dropped).
const MAX_CGROUP_READINGS: usize = 1 << 20;

impl CgroupReadings {
    /// A reading at `ts` (readings are stored only when they change).
    pub(crate) fn push(&mut self, ts: i64, b: CpuBandwidth, path: String) {
        // A different group (the target moved) starts again.
        if self.path != path {
            self.readings.clear();
            self.path = path;
        }
        if self.readings.len() < MAX_CGROUP_READINGS
            && self.readings.last().is_none_or(|l| l.0 <= ts)
        {
            self.readings.push((ts, b));
        }
    }

    /// The throttling over the window `[from, to)`: from the last reading at or before its
    /// start (else the first) to the last one before its end (the counters are stored when
    /// they change, so the last reading stands until the next); `None` without readings
    /// before its end.
    pub(crate) fn throttling(&self, from: Option<i64>, to: Option<i64>) -> Option<Throttling> {
        let before = |t: Option<i64>, strict: bool| {
            let n = match t {
                None => self.readings.len(),
                Some(t) => self
                    .readings
                    .partition_point(|r| if strict { r.0 < t } else { r.0 <= t }),
            };
            n.checked_sub(1).and_then(|k| self.readings.get(k))
        };
        let b = before(to, true)?.1;
        let a = match from {
            Some(_) => before(from, false).or(self.readings.first())?.1,
            None => self.readings.first()?.1,
        };
        Some(Throttling {
            cgroup: self.path.clone(),
            cgroup_version: b.version,
            periods: b.periods.saturating_sub(a.periods),
            throttled_periods: b.throttled_periods.saturating_sub(a.throttled_periods),
            throttled_ns: b.throttled_ns.saturating_sub(a.throttled_ns),
            quota_us: (b.quota_us != u64::MAX).then_some(b.quota_us),
            period_us: b.period_us,
        })
    }
}

/// Every thread's [`ThreadTime`], built interval by interval.
#[derive(Clone, Debug, Default)]
pub(crate) struct WallTimes {
    pub(crate) per: FxHashMap<u64, ThreadTime>,
    /// Some reading had a run-queue time.
    pub(crate) has_runqueue: bool,
}

impl WallTimes {
    /// Adds the reading interval (a, b] for every thread that existed in it.
    pub(crate) fn interval(&mut self, a: i64, b: i64, readings: &FxHashMap<u64, ThreadReadings>) {
        let dt = (b - a) as f64;
        for (&t, r) in readings {
            if !r.alive_in(a, b) {
                continue;
            }
            let cpu = r.used(a, b) as f64;
            let runq = r.queued(a, b) as f64;
            self.per.entry(t).or_default().add(dt, cpu, runq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetime_is_the_intervals_a_thread_lived_in() {
        let mut rs: FxHashMap<u64, ThreadReadings> = FxHashMap::default();
        let ms = 1_000_000i64;
        // Thread 1 from the start: 10 ms on CPU, 6 ms queued, 4 ms blocked per 20 ms.
        // Thread 2 first read at 40 ms, gone at 60 ms.
        for k in 0..=4i64 {
            let n = k as u64;
            rs.entry(1)
                .or_default()
                .push(k * 20 * ms, n * 10_000_000, Some(n * 6_000_000), false);
        }
        rs.entry(2)
            .or_default()
            .push(40 * ms, 3_000_000, None, false);
        rs.entry(2)
            .or_default()
            .push(60 * ms, 5_000_000, None, true);
        let mut w = WallTimes::default();
        for k in 0..4i64 {
            w.interval(k * 20 * ms, (k + 1) * 20 * ms, &rs);
        }
        let t1 = w.per[&1];
        assert_eq!(
            (t1.lifetime_ns, t1.cpu_ns, t1.runqueue_ns),
            (80e6, 40e6, 24e6)
        );
        assert_eq!(t1.blocked_ns(), 16e6);
        // Born in (20, 40], gone in (40, 60]: two intervals, all its CPU.
        let t2 = w.per[&2];
        assert_eq!(
            (t2.lifetime_ns, t2.cpu_ns, t2.runqueue_ns),
            (40e6, 5e6, 0.0)
        );
    }

    #[test]
    fn a_first_reading_older_than_the_window_is_a_baseline() {
        // A ring's kept window: thread 1 ran 30 s before the readings kept begin; its first
        // kept reading (at 40 ms, 30 s of CPU) cannot be a thread born since 20 ms, so its
        // totals count from there. Thread 2, first read with 3 ms of CPU, was born in the
        // interval: all of it counts.
        let mut rs: FxHashMap<u64, ThreadReadings> = FxHashMap::default();
        let ms = 1_000_000i64;
        rs.entry(1)
            .or_default()
            .push(40 * ms, 30_000_000_000, Some(9_000_000_000), false);
        rs.entry(1)
            .or_default()
            .push(60 * ms, 30_005_000_000, Some(9_001_000_000), false);
        rs.entry(2)
            .or_default()
            .push(40 * ms, 3_000_000, Some(1_000_000), false);
        let mut w = WallTimes::default();
        for k in 1..3i64 {
            w.interval(k * 20 * ms, (k + 1) * 20 * ms, &rs);
        }
        let t1 = w.per[&1];
        assert_eq!((t1.cpu_ns, t1.runqueue_ns), (5e6, 1e6));
        assert!(t1.cpu_ns + t1.runqueue_ns <= t1.lifetime_ns);
        let t2 = w.per[&2];
        assert_eq!((t2.cpu_ns, t2.runqueue_ns), (3e6, 1e6));
    }

    #[test]
    fn throttling_is_the_difference_of_the_first_and_last_reading() {
        let mut c = CgroupReadings::default();
        assert_eq!(c.throttling(None, None), None);
        let b = |p, t, ns| CpuBandwidth {
            version: 1,
            periods: p,
            throttled_periods: t,
            throttled_ns: ns,
            quota_us: 50_000,
            period_us: 100_000,
        };
        c.push(0, b(10, 2, 100), "/g".into());
        c.push(50, b(60, 20, 2_000_000_100), "/g".into());
        c.push(100, b(110, 33, 4_200_000_100), "/g".into());
        let t = c.throttling(None, None).unwrap();
        assert_eq!(
            (t.periods, t.throttled_periods, t.throttled_ns, t.quota_us),
            (100, 31, 4_200_000_000, Some(50_000))
        );
        // A window: from the reading standing at its start to the last one before its end.
        let t = c.throttling(Some(60), Some(100)).unwrap();
        assert_eq!((t.periods, t.throttled_periods), (0, 0));
        let t = c.throttling(Some(50), Some(101)).unwrap();
        assert_eq!((t.periods, t.throttled_periods), (50, 13));
        assert_eq!(c.throttling(None, Some(0)), None);
    }
}
