//! What the model files of [`crate::sources`] share: pairing starts with their ends
//! ([`Pairs`]), reading a decoded payload's fields by name ([`text`], [`number`]), and
//! duration statistics ([`Durations`]).

use std::hash::Hash;

use nettrace::{DecodedPayload, Value};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Starts and ends of things (requests, connections) tied by a key, whichever comes first:
/// a trace's events are in the order of the runtime's per-thread buffers, so an end written
/// on another thread can come before its start, and keys (activity ids) are reused once their
/// activity stopped. An end pairs with the latest start of its key at or before it; a start
/// with the earliest end of its key at or after it.
#[derive(Clone, Debug)]
pub(crate) struct Pairs<K, S, E> {
    starts: FxHashMap<K, Vec<(i64, S)>>,
    ends: FxHashMap<K, Vec<(i64, E)>>,
}

impl<K, S, E> Default for Pairs<K, S, E> {
    fn default() -> Self {
        Pairs {
            starts: FxHashMap::default(),
            ends: FxHashMap::default(),
        }
    }
}

/// A start and its end: (start time, start's data, end time, end's data).
pub(crate) type Pair<S, E> = (i64, S, i64, E);

/// Takes from `v` the entry `pick` chooses (by index), dropping the key when it empties.
fn take<K: Hash + Eq, T>(
    map: &mut FxHashMap<K, Vec<(i64, T)>>,
    key: &K,
    pick: impl Fn(&[(i64, T)]) -> Option<usize>,
) -> Option<(i64, T)> {
    let v = map.get_mut(key)?;
    let i = pick(v)?;
    let got = v.swap_remove(i);
    if v.is_empty() {
        map.remove(key);
    }
    Some(got)
}

impl<K: Hash + Eq + Clone, S, E> Pairs<K, S, E> {
    /// A start; the pair when its end came first.
    pub(crate) fn start(&mut self, key: K, ts: i64, data: S) -> Option<Pair<S, E>> {
        let end = take(&mut self.ends, &key, |v| {
            (0..v.len())
                .filter(|&i| v[i].0 >= ts)
                .min_by_key(|&i| v[i].0)
        });
        match end {
            Some((end, e)) => Some((ts, data, end, e)),
            None => {
                self.starts.entry(key).or_default().push((ts, data));
                None
            }
        }
    }

    /// An end; the pair when its start came first.
    pub(crate) fn end(&mut self, key: K, ts: i64, data: E) -> Option<Pair<S, E>> {
        let start = take(&mut self.starts, &key, |v| {
            (0..v.len())
                .filter(|&i| v[i].0 <= ts)
                .max_by_key(|&i| v[i].0)
        });
        match start {
            Some((start, s)) => Some((start, s, ts, data)),
            None => {
                self.ends.entry(key).or_default().push((ts, data));
                None
            }
        }
    }

    /// Starts without an end (still going at the end of the trace).
    pub(crate) fn open(&self) -> u64 {
        self.starts.values().map(|v| v.len() as u64).sum()
    }

    /// Ends without a start (started before the trace).
    pub(crate) fn orphan_ends(&self) -> u64 {
        self.ends.values().map(|v| v.len() as u64).sum()
    }
}

/// The value of field `name` of a decoded payload.
pub(crate) fn field<'d>(d: &'d DecodedPayload, name: &str) -> Option<&'d Value> {
    d.fields.iter().find(|f| f.name == name).map(|f| &f.value)
}

/// A text field (empty when absent or not text).
pub(crate) fn text(d: &DecodedPayload, name: &str) -> String {
    match field(d, name) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.as_i64().map(|n| n.to_string()).unwrap_or_default(),
        None => String::new(),
    }
}

/// A number field (numbers written as text, as the metrics events do, are read too).
pub(crate) fn number(d: &DecodedPayload, name: &str) -> Option<f64> {
    match field(d, name)? {
        Value::String(s) => s.trim().parse().ok(),
        v => v.as_f64(),
    }
}

/// How long things took: count, total, the slowest, and percentiles.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Durations {
    /// How many finished.
    pub(crate) count: u64,
    /// Their total, ms.
    pub(crate) total_ms: f64,
    /// The slowest, ms.
    pub(crate) max_ms: f64,
    /// Median, ms (after the pass).
    pub(crate) p50_ms: f64,
    /// 95th percentile, ms (after the pass).
    pub(crate) p95_ms: f64,
    /// Each one, µs (for the percentiles).
    #[serde(skip)]
    each_us: Vec<u32>,
}

impl Durations {
    /// One more, `ns` long.
    pub(crate) fn add(&mut self, ns: i64) {
        let ms = ns.max(0) as f64 / 1e6;
        self.count += 1;
        self.total_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        self.each_us
            .push(u32::try_from(ns.max(0) / 1000).unwrap_or(u32::MAX));
    }

    /// Works out the percentiles.
    pub(crate) fn finish(&mut self) {
        let mut v = self.each_us.clone();
        v.sort_unstable();
        let at = |q: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
            f64::from(v[i]) / 1000.0
        };
        self.p50_ms = at(0.5);
        self.p95_ms = at(0.95);
    }
}
