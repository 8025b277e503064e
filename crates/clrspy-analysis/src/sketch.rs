//! Bounded statistics for models that see one item per request, at any request count:
//! [`Sketch`], durations' count, total, extremes and percentiles (exact up to
//! `Sketch::EXACT` values, then within 1 % from logarithmic buckets), and [`Slowest`], the
//! N largest items by a key. Neither grows with the number of items.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

use serde::{Serialize, Serializer};

/// Each bucket spans a factor of `GAMMA`: a value is reported within 1 % of itself.
const GAMMA: f64 = 1.02;

/// Durations (ns) and their percentiles in bounded memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sketch {
    count: u64,
    total_ns: i128,
    min_ns: i64,
    max_ns: i64,
    /// Every value while there are at most [`Sketch::EXACT`].
    exact: Vec<i64>,
    /// Past that, counts by bucket (bucket 0: under 1 µs).
    buckets: BTreeMap<u16, u64>,
}

impl Sketch {
    /// Values kept as they are before the sketch switches to buckets.
    pub(crate) const EXACT: usize = 1024;

    /// An empty sketch.
    pub fn new() -> Sketch {
        Sketch::default()
    }

    fn bucket(ns: i64) -> u16 {
        if ns < 1_000 {
            return 0;
        }
        let i = ((ns as f64 / 1_000.0).ln() / GAMMA.ln()).ceil() as i64 + 1;
        u16::try_from(i.clamp(1, i64::from(u16::MAX))).unwrap_or(u16::MAX)
    }

    /// The value a bucket stands for (the middle of its span, in ns).
    fn value_of(bucket: u16) -> f64 {
        if bucket == 0 {
            return 500.0;
        }
        let hi = GAMMA.powi(i32::from(bucket) - 1) * 1_000.0;
        2.0 * hi / (GAMMA + 1.0)
    }

    /// One more value (negative values count as 0).
    pub fn add(&mut self, ns: i64) {
        let ns = ns.max(0);
        if self.count == 0 {
            self.min_ns = ns;
            self.max_ns = ns;
        } else {
            self.min_ns = self.min_ns.min(ns);
            self.max_ns = self.max_ns.max(ns);
        }
        self.count += 1;
        self.total_ns += i128::from(ns);
        if self.buckets.is_empty() && self.exact.len() < Sketch::EXACT {
            self.exact.push(ns);
            return;
        }
        for v in std::mem::take(&mut self.exact) {
            *self.buckets.entry(Sketch::bucket(v)).or_default() += 1;
        }
        *self.buckets.entry(Sketch::bucket(ns)).or_default() += 1;
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Sketch) {
        if other.count == 0 {
            return;
        }
        let (min, max) = (other.min_ns, other.max_ns);
        let (count, total) = (self.count, self.total_ns);
        for &v in &other.exact {
            self.add(v);
        }
        if !other.buckets.is_empty() {
            for v in std::mem::take(&mut self.exact) {
                *self.buckets.entry(Sketch::bucket(v)).or_default() += 1;
            }
            for (b, n) in &other.buckets {
                *self.buckets.entry(*b).or_default() += n;
            }
        }
        self.count = count + other.count;
        self.total_ns = total + other.total_ns;
        self.min_ns = if count == 0 {
            min
        } else {
            self.min_ns.min(min)
        };
        self.max_ns = self.max_ns.max(max);
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their sum, ns.
    pub fn total_ns(&self) -> i128 {
        self.total_ns
    }

    /// The largest, ns (0 when empty).
    pub fn max_ns(&self) -> i64 {
        self.max_ns
    }

    /// The smallest, ns (0 when empty).
    #[cfg(test)]
    pub(crate) fn min_ns(&self) -> i64 {
        self.min_ns
    }

    /// Their mean, ns (0 when empty).
    pub(crate) fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.count as f64
        }
    }

    /// The `q` quantile (0..=1), ns: the smallest value with at least `q` of the values at or
    /// under it — exact while the values are kept, else within 1 % (and within the extremes).
    pub(crate) fn quantile_ns(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((self.count as f64 * q.clamp(0.0, 1.0)).ceil() as u64).clamp(1, self.count);
        if self.buckets.is_empty() {
            let mut v = self.exact.clone();
            v.sort_unstable();
            let i = usize::try_from(rank - 1).unwrap_or(0).min(v.len() - 1);
            return v[i] as f64;
        }
        let mut seen = 0;
        for (b, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Sketch::value_of(*b).clamp(self.min_ns as f64, self.max_ns as f64);
            }
        }
        self.max_ns as f64
    }

    /// The `q` quantile in ms.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        self.quantile_ns(q) / 1e6
    }

    /// The summary a report prints: count, total, mean, max and p50/p95/p99, in ms.
    pub fn summary(&self) -> SketchSummary {
        SketchSummary {
            count: self.count,
            total_ms: self.total_ns as f64 / 1e6,
            mean_ms: self.mean_ns() / 1e6,
            p50_ms: self.quantile_ms(0.50),
            p95_ms: self.quantile_ms(0.95),
            p99_ms: self.quantile_ms(0.99),
            max_ms: self.max_ns as f64 / 1e6,
        }
    }
}

/// A sketch's figures, in ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SketchSummary {
    /// How many.
    pub count: u64,
    /// Their sum.
    pub total_ms: f64,
    /// Their mean.
    pub(crate) mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The largest.
    pub max_ms: f64,
}

impl Serialize for Sketch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.summary().serialize(s)
    }
}

/// One kept item and its key; ties go to the earlier item.
#[derive(Clone, Debug)]
struct Entry<T> {
    key: i64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    /// Larger keys first, then earlier items.
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp(&o.key).then(o.seq.cmp(&self.seq))
    }
}

/// The `n` items with the largest keys (the slowest requests), in bounded memory.
#[derive(Clone, Debug)]
pub struct Slowest<T> {
    n: usize,
    seq: u64,
    heap: BinaryHeap<Reverse<Entry<T>>>,
}

impl<T> Slowest<T> {
    /// Keeps the `n` largest.
    pub fn new(n: usize) -> Slowest<T> {
        Slowest {
            n,
            seq: 0,
            heap: BinaryHeap::new(),
        }
    }

    /// True when an item with this key would be kept (to skip building it otherwise).
    pub(crate) fn would_keep(&self, key: i64) -> bool {
        if self.heap.len() < self.n {
            return true;
        }
        self.heap.peek().is_some_and(|Reverse(e)| key > e.key)
    }

    /// Offers an item.
    pub(crate) fn offer(&mut self, key: i64, item: T) {
        if !self.would_keep(key) {
            self.seq += 1;
            return;
        }
        self.heap.push(Reverse(Entry {
            key,
            seq: self.seq,
            item,
        }));
        self.seq += 1;
        if self.heap.len() > self.n {
            self.heap.pop();
        }
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when none is kept.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The kept items, largest key first (ties: the earlier first).
    pub fn sorted(&self) -> Vec<&T> {
        let mut v: Vec<&Entry<T>> = self.heap.iter().map(|Reverse(e)| e).collect();
        v.sort_by(|a, b| b.cmp(a));
        v.into_iter().map(|e| &e.item).collect()
    }

    /// Changes every kept item in place (to fill in what is learnt after it was offered);
    /// the keys stay as they were.
    pub fn update(&mut self, mut f: impl FnMut(&mut T)) {
        let mut v = std::mem::take(&mut self.heap).into_vec();
        v.iter_mut().for_each(|Reverse(e)| f(&mut e.item));
        self.heap = BinaryHeap::from(v);
    }
}

impl<T> Default for Slowest<T> {
    fn default() -> Self {
        Slowest::new(20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_within_one_percent() {
        let mut s = Sketch::new();
        for ms in 1..=100 {
            s.add(ms * 1_000_000);
        }
        assert_eq!(s.quantile_ms(0.5), 50.0);
        assert_eq!(s.quantile_ms(0.95), 95.0);
        assert_eq!(s.quantile_ms(0.99), 99.0);
        assert_eq!(s.max_ns(), 100_000_000);

        let mut big = Sketch::new();
        for i in 0..1_000_000i64 {
            big.add((i % 1000 + 1) * 1_000_000);
        }
        for (q, want) in [(0.5, 500.0), (0.95, 950.0), (0.99, 990.0)] {
            let got = big.quantile_ms(q);
            assert!((got - want).abs() / want < 0.011, "q{q}: {got} vs {want}");
        }
        assert!(big.buckets.len() < 400, "{}", big.buckets.len());
        assert_eq!(big.count(), 1_000_000);
        assert_eq!(big.max_ns(), 1_000_000_000);
        assert_eq!(big.min_ns(), 1_000_000);
    }

    #[test]
    fn merged_sketches_count_every_value() {
        let (mut a, mut b) = (Sketch::new(), Sketch::new());
        (1..=10).for_each(|i| a.add(i));
        (1..=5000).for_each(|i| b.add(i * 1000));
        a.merge(&b);
        assert_eq!(a.count(), 5010);
        assert_eq!(a.min_ns(), 1);
        assert_eq!(a.max_ns(), 5_000_000);
        let p50 = a.quantile_ns(0.5);
        assert!((p50 - 2_495_000.0).abs() / 2_495_000.0 < 0.011, "{p50}");
    }

    #[test]
    fn slowest_keeps_the_largest_in_order() {
        let mut s = Slowest::new(3);
        for (k, name) in [(5, "a"), (9, "b"), (1, "c"), (9, "d"), (7, "e")] {
            s.offer(k, name);
        }
        assert_eq!(s.sorted(), [&"b", &"d", &"e"]);
        assert!(!s.would_keep(7));
        assert!(s.would_keep(8));
    }
}
