//! The CPU estimate of samples no thread CPU reading measured (traces from dotnet-trace,
//! dotnet-monitor, Visual Studio, the runtime's own environment settings): each sample weighs
//! the sampler's real period, measured from the trace, and no sampling round counts more
//! threads on a CPU than the trace has CPUs.
//!
//! The runtime's sampler visits every managed thread once per round, then sleeps for its
//! nominal interval; under load a round takes far longer than that (it suspends the runtime),
//! so the nominal interval is not what a sample stands for. A round is a run of samples in
//! which no thread comes twice (and no gap longer than `ROUND_BREAK_NS`); it stands for the
//! time until the next round starts.
//!
//! Whether a stack runs or waits is known only at the end of the pass (method names come
//! with the rundown), so while the trace streams the estimate keeps, per group of consecutive
//! rounds, the samples of each (stack, kind) and the wall time the rounds cover. A group is
//! one round while the groups hold fewer than `MAX_ENTRIES` entries; beyond that, neighbours
//! merge and the groups grow to 2, 4, ... rounds (memory stays bounded; the CPU limit then
//! holds over each group rather than each round). [`Estimate::resolve`] then sorts each
//! (stack, kind) into running or waiting, and where a group's running samples exceed its
//! rounds × CPUs, counts only that many as CPU: the rest were ready to run, waiting for a CPU.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::stacks::StackId;

/// A sample's stack and kind (true: managed code).
pub(crate) type Key = (Option<StackId>, bool);

/// A pause longer than this between two samples ends a round (and is not sampled time: the
/// round before it stands for the typical period instead).
pub(crate) const ROUND_BREAK_NS: i64 = 200_000_000;

/// Entries (one per (stack, kind) per group) kept before neighbouring groups merge.
pub(crate) const MAX_ENTRIES: usize = 1 << 20;

#[derive(Clone, Debug, Default)]
struct Group {
    rounds: u32,
    /// Wall time the timed rounds stand for, ns.
    wall_ns: i64,
    /// Rounds that ended in a pause (or the trace's end): each stands for the typical period.
    untimed: u32,
    counts: Vec<(Key, u32)>,
}

impl Group {
    fn merge(&mut self, other: Group) {
        self.rounds += other.rounds;
        self.wall_ns += other.wall_ns;
        self.untimed += other.untimed;
        let mut at: FxHashMap<Key, usize> = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, e)| (e.0, i))
            .collect();
        for (k, n) in other.counts {
            match at.get(&k).and_then(|&i| self.counts.get_mut(i)) {
                Some(e) => e.1 += n,
                None => {
                    at.insert(k, self.counts.len());
                    self.counts.push((k, n));
                }
            }
        }
    }
}

/// What one (stack, kind) stands for after [`Estimate::resolve`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KeyTime {
    /// Its samples.
    pub samples: u64,
    /// The wall time they stand for, ns.
    pub ns: f64,
    /// The part of it on a CPU, ns (0 for a waiting stack).
    pub cpu_ns: f64,
}

impl KeyTime {
    /// Wall time per sample, ns.
    pub(crate) fn per_sample_ns(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.ns / self.samples as f64
        }
    }

    /// The share of its time on a CPU (0..=1).
    pub(crate) fn cpu_share(&self) -> f64 {
        if self.ns > 0.0 {
            (self.cpu_ns / self.ns).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Rounds, their periods and the samples in them (see the module note).
#[derive(Clone, Debug)]
pub struct Estimate {
    nominal_ns: i64,
    per_group: u32,
    groups: Vec<Group>,
    entries: usize,
    /// Entries past which groups merge (grows when merging cannot shrink them: stacks that
    /// never repeat).
    limit: usize,
    current: Group,
    current_index: FxHashMap<Key, usize>,
    /// Threads seen in the current round.
    in_round: FxHashSet<u64>,
    round_start: Option<i64>,
    last_ts: i64,
    /// Rounds whose period was measured, and the time they cover.
    timed_rounds: u64,
    timed_ns: i64,
    /// Rounds that ended in a pause (their period is the typical one, given at the end).
    untimed_rounds: u64,
    samples: u64,
}

impl Estimate {
    /// An empty estimate; `nominal_ns` is the trace's nominal sampling interval.
    pub fn new(nominal_ns: u64) -> Estimate {
        Estimate {
            nominal_ns: i64::try_from(nominal_ns.max(1)).unwrap_or(i64::MAX),
            per_group: 1,
            groups: Vec::new(),
            entries: 0,
            limit: MAX_ENTRIES,
            current: Group::default(),
            current_index: FxHashMap::default(),
            in_round: FxHashSet::default(),
            round_start: None,
            last_ts: 0,
            timed_rounds: 0,
            timed_ns: 0,
            untimed_rounds: 0,
            samples: 0,
        }
    }

    /// A sample of `thread` at `ts` (ns) in `key`.
    pub fn sample(&mut self, ts: i64, thread: u64, key: Key) {
        self.samples += 1;
        let new_round = match self.round_start {
            None => true,
            Some(_) => self.in_round.contains(&thread) || ts - self.last_ts > ROUND_BREAK_NS,
        };
        if new_round {
            self.start_round(ts);
        }
        self.in_round.insert(thread);
        self.last_ts = self.last_ts.max(ts);
        let i = match self.current_index.get(&key) {
            Some(&i) => i,
            None => {
                self.current.counts.push((key, 0));
                self.entries += 1;
                let i = self.current.counts.len() - 1;
                self.current_index.insert(key, i);
                i
            }
        };
        if let Some(e) = self.current.counts.get_mut(i) {
            e.1 += 1;
        }
    }

    /// Ends the current round at `ts` (the next one's start) and starts one there.
    fn start_round(&mut self, ts: i64) {
        if let Some(start) = self.round_start {
            let period = ts - start;
            if period > 0 && period <= ROUND_BREAK_NS {
                self.current.wall_ns += period;
                self.timed_rounds += 1;
                self.timed_ns += period;
            } else {
                self.untimed_rounds += 1;
                self.current.untimed += 1;
            }
            if self.current.rounds >= self.per_group {
                self.close_group();
            }
        }
        self.current.rounds += 1;
        self.in_round.clear();
        self.round_start = Some(ts);
    }

    fn close_group(&mut self) {
        let g = std::mem::take(&mut self.current);
        self.current_index.clear();
        self.groups.push(g);
        if self.entries > self.limit {
            self.merge_groups();
        }
    }

    /// Halves the number of groups by merging neighbours; the next merge waits until the
    /// entries have doubled (so stacks that never repeat cost no more than once each).
    fn merge_groups(&mut self) {
        let old = std::mem::take(&mut self.groups);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.merge(b);
            }
            self.groups.push(a);
        }
        self.per_group = self.per_group.saturating_mul(2);
        self.entries =
            self.groups.iter().map(|g| g.counts.len()).sum::<usize>() + self.current.counts.len();
        self.limit = MAX_ENTRIES.max(self.entries.saturating_mul(2));
    }

    /// The sampler's real period: the mean time between the starts of its rounds (pauses
    /// over [`ROUND_BREAK_NS`] left out), ns; `None` before two rounds.
    pub(crate) fn period_ns(&self) -> Option<u64> {
        (self.timed_rounds > 0).then(|| (self.timed_ns / self.timed_rounds as i64).max(1) as u64)
    }

    /// Sampling rounds seen.
    pub fn rounds(&self) -> u64 {
        self.timed_rounds + self.untimed_rounds + u64::from(self.round_start.is_some())
    }

    /// Samples seen.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Rounds per group at the end (1: the CPU limit held round by round).
    pub fn rounds_per_group(&self) -> u32 {
        self.per_group
    }

    /// The time each (stack, kind) stands for, and its CPU: `running` sorts a key into
    /// running (true) or waiting; `cpus` limits the threads counted on a CPU per round
    /// (`None`: no limit known).
    pub fn resolve(
        &self,
        cpus: Option<u32>,
        mut running: impl FnMut(Key) -> bool,
    ) -> FxHashMap<Key, KeyTime> {
        let typical = self
            .period_ns()
            .map_or(self.nominal_ns as f64, |p| p as f64);
        let mut class: FxHashMap<Key, bool> = FxHashMap::default();
        let mut out: FxHashMap<Key, KeyTime> = FxHashMap::default();
        // The last round (and any before a pause) stands for the typical period.
        let last = Group {
            untimed: self.current.untimed + 1,
            ..self.current.clone()
        };
        for g in self.groups.iter().chain(std::iter::once(&last)) {
            if g.rounds == 0 || g.counts.is_empty() {
                continue;
            }
            let wall = g.wall_ns as f64 + f64::from(g.untimed) * typical;
            let period = (wall / f64::from(g.rounds)).max(0.0);
            let mut on_cpu = 0u64;
            for &(k, n) in &g.counts {
                if *class.entry(k).or_insert_with(|| running(k)) {
                    on_cpu += u64::from(n);
                }
            }
            let limit = cpus.map_or(f64::INFINITY, |c| f64::from(c) * f64::from(g.rounds));
            let share = if on_cpu as f64 > limit {
                limit / on_cpu as f64
            } else {
                1.0
            };
            for &(k, n) in &g.counts {
                let t = out.entry(k).or_default();
                let ns = f64::from(n) * period;
                t.samples += u64::from(n);
                t.ns += ns;
                if class.get(&k).copied().unwrap_or(false) {
                    t.cpu_ns += ns * share;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn rounds_and_their_period_come_from_the_samples() {
        let mut e = Estimate::new(1_000_000);
        let k = (Some(StackId(1)), true);
        // Three threads, a round every 2.5 ms for 1 s.
        for r in 0..400 {
            for t in 1..=3 {
                e.sample(r * 5 * MS / 2 + t, t as u64, k);
            }
        }
        assert_eq!(e.rounds(), 400);
        assert_eq!(e.period_ns(), Some(2_500_000));
        let t = e.resolve(None, |_| true)[&k];
        assert_eq!(t.samples, 1200);
        // Each thread stands for the whole second, at the real period, not the nominal one.
        assert!((t.ns - 3.0 * 1e9).abs() < 1e-3 * 3e9, "{t:?}");
    }

    #[test]
    fn no_round_counts_more_threads_on_cpu_than_cpus() {
        let mut e = Estimate::new(1_000_000);
        let run = (Some(StackId(1)), true);
        let wait = (Some(StackId(2)), true);
        // Six running threads and one waiting one, on two CPUs.
        for r in 0..1000 {
            for t in 1..=6 {
                e.sample(r * 2 * MS + t, t as u64, run);
            }
            e.sample(r * 2 * MS + 7, 7, wait);
        }
        let m = e.resolve(Some(2), |k| k == run);
        let wall = 1000.0 * 2e6;
        assert!((m[&run].cpu_ns - 2.0 * wall).abs() < 0.01 * wall, "{m:?}");
        assert!((m[&run].ns - 6.0 * wall).abs() < 0.01 * wall);
        assert_eq!(m[&wait].cpu_ns, 0.0);
        // Without a CPU count, all six count.
        let m = e.resolve(None, |k| k == run);
        assert!((m[&run].cpu_ns - 6.0 * wall).abs() < 0.01 * wall);
    }

    #[test]
    fn groups_merge_when_entries_overflow_and_the_limit_still_holds() {
        let mut e = Estimate::new(1_000_000);
        // 4,000 stacks, each seen again only 1,000 rounds later: entries grow with the
        // samples until groups merge.
        let rounds = 400_000i64;
        for r in 0..rounds {
            for t in 0..4u64 {
                let k = (Some(StackId((r % 1000) as u32 * 4 + t as u32)), true);
                e.sample(r * MS + t as i64, t, k);
            }
        }
        assert!(e.rounds_per_group() > 1);
        assert!(e.entries <= 2 * MAX_ENTRIES, "{}", e.entries);
        let m = e.resolve(Some(1), |_| true);
        let cpu: f64 = m.values().map(|t| t.cpu_ns).sum();
        let wall = rounds as f64 * 1e6;
        assert!(cpu <= wall * 1.001, "{cpu} > {wall}");
        assert!(cpu >= wall * 0.99);
    }

    #[test]
    fn a_pause_is_not_sampled_time() {
        let mut e = Estimate::new(1_000_000);
        let k = (Some(StackId(1)), true);
        for r in 0..100 {
            e.sample(r * MS, 1, k);
        }
        // A 5 s pause (the sampler stopped), then 100 more rounds.
        for r in 0..100 {
            e.sample(5_000 * MS + r * MS, 1, k);
        }
        let t = e.resolve(None, |_| true)[&k];
        assert!((t.ns - 200.0 * 1e6).abs() < 2e6, "{t:?}");
    }
}
