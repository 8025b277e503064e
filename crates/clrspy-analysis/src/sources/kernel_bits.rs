//! The kernel sampler's samples and waits per thread, held for the requests model: the
//! recorder writes them up to a drain later than they happened (after the request they fell
//! in may have ended, in file order), so a finished request looks them up when it settles.
//! Each thread's samples (one ring) and waits (another) come in time order; lookups are
//! binary searches. Memory is bounded: at most [`MAX_PER_THREAD`] of each per thread, and
//! what every request still open or settling started after is dropped by [`KernelBits::prune`].

use rustc_hash::FxHashMap;

use crate::stacks::StackId;

/// Samples and waits kept per thread (a minute of one busy thread at 1 kHz).
pub(crate) const MAX_PER_THREAD: usize = 60_000;

/// One thread's kernel events.
#[derive(Clone, Debug, Default)]
struct ThreadBits {
    /// On-CPU samples: (time, stack), in time order.
    samples: Vec<(i64, Option<StackId>)>,
    /// Waits: (start, end, stack, preempted), in order of their ends (a thread's waits never
    /// overlap).
    waits: Vec<(i64, i64, Option<StackId>, bool)>,
}

/// A stretch of a request's thread seen by the kernel: `units` ms of it on `stack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bit {
    /// When it started inside the request, ns.
    pub(crate) ts_ns: i64,
    /// The stack.
    pub(crate) stack: Option<StackId>,
    /// True when the thread ran (an on-CPU sample, or a wait for a CPU: it meant to run);
    /// false when it was blocked.
    pub(crate) running: bool,
    /// How many ms (samples: one each).
    pub(crate) units: u64,
}

/// Every thread's kernel events, held until no request can want them.
#[derive(Clone, Debug, Default)]
pub(crate) struct KernelBits {
    threads: FxHashMap<u64, ThreadBits>,
    /// Events added since the last prune.
    since_prune: usize,
}

impl KernelBits {
    /// True when any kernel event was ever added.
    pub(crate) fn any(&self) -> bool {
        !self.threads.is_empty()
    }

    /// An on-CPU sample of `thread` at `ts_ns`.
    pub(crate) fn sample(&mut self, thread: u64, ts_ns: i64, stack: Option<StackId>) {
        let t = self.threads.entry(thread).or_default();
        if t.samples.len() >= MAX_PER_THREAD {
            t.samples.drain(..MAX_PER_THREAD / 2);
        }
        t.samples.push((ts_ns, stack));
        self.since_prune += 1;
    }

    /// A wait of `thread` that ended at `end_ns` after `duration_ns`.
    pub(crate) fn wait(
        &mut self,
        thread: u64,
        end_ns: i64,
        duration_ns: u64,
        stack: Option<StackId>,
        preempted: bool,
    ) {
        let start = end_ns.saturating_sub(i64::try_from(duration_ns).unwrap_or(i64::MAX));
        let t = self.threads.entry(thread).or_default();
        if t.waits.len() >= MAX_PER_THREAD {
            t.waits.drain(..MAX_PER_THREAD / 2);
        }
        t.waits.push((start, end_ns, stack, preempted));
        self.since_prune += 1;
    }

    /// True when enough was added since the last prune that one is due.
    pub(crate) fn prune_due(&self) -> bool {
        self.since_prune >= 4096
    }

    /// Drops what ended before `before_ns` (no request open or settling started earlier).
    pub(crate) fn prune(&mut self, before_ns: i64) {
        self.since_prune = 0;
        self.threads.retain(|_, t| {
            let s = t.samples.partition_point(|&(ts, _)| ts < before_ns);
            t.samples.drain(..s);
            let w = t.waits.partition_point(|w| w.1 < before_ns);
            t.waits.drain(..w);
            !t.samples.is_empty() || !t.waits.is_empty()
        });
    }

    /// What the kernel saw of `thread` from `start_ns` to `end_ns`, to `out`: each sample
    /// inside, and each wait's part inside (in whole ms, at least one).
    pub(crate) fn between(&self, thread: u64, start_ns: i64, end_ns: i64, out: &mut Vec<Bit>) {
        let Some(t) = self.threads.get(&thread) else {
            return;
        };
        let from = t.samples.partition_point(|&(ts, _)| ts < start_ns);
        for &(ts, stack) in t.samples[from..].iter().take_while(|s| s.0 <= end_ns) {
            out.push(Bit {
                ts_ns: ts,
                stack,
                running: true,
                units: 1,
            });
        }
        let from = t.waits.partition_point(|w| w.1 < start_ns);
        for &(a, b, stack, preempted) in t.waits[from..].iter().take_while(|w| w.0 <= end_ns) {
            let inside = b.min(end_ns) - a.max(start_ns);
            if inside <= 0 {
                continue;
            }
            out.push(Bit {
                ts_ns: a.max(start_ns),
                stack,
                running: preempted,
                units: ((inside + 500_000) / 1_000_000).max(1) as u64,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_span_gets_its_samples_and_the_parts_of_waits_inside_it() {
        let mut k = KernelBits::default();
        let ms = 1_000_000i64;
        for t in [1, 5, 9, 30] {
            k.sample(7, t * ms, None);
        }
        // Blocked 2..6 ms (4 ms, half inside from 4 ms), preempted 20..25, blocked 40..50.
        k.wait(7, 6 * ms, 4 * ms as u64, None, false);
        k.wait(7, 25 * ms, 5 * ms as u64, None, true);
        k.wait(7, 50 * ms, 10 * ms as u64, None, false);
        let mut out = Vec::new();
        k.between(7, 4 * ms, 26 * ms, &mut out);
        let got: Vec<(i64, bool, u64)> = out
            .iter()
            .map(|b| (b.ts_ns / ms, b.running, b.units))
            .collect();
        assert_eq!(
            got,
            vec![(5, true, 1), (9, true, 1), (4, false, 2), (20, true, 5)]
        );
        out.clear();
        k.between(8, 0, 100 * ms, &mut out);
        assert!(out.is_empty());
        k.prune(26 * ms);
        k.between(7, 0, 100 * ms, &mut out);
        let got: Vec<(i64, bool, u64)> = out
            .iter()
            .map(|b| (b.ts_ns / ms, b.running, b.units))
            .collect();
        assert_eq!(got, vec![(30, true, 1), (40, false, 10)]);
    }
}
