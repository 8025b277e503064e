//! Two snapshots compared per type: counts and bytes in each, the deltas, sorted by growth.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::HeapModel;

/// One type in both snapshots.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeDelta {
    /// The type.
    #[serde(rename = "type")]
    pub name: String,
    /// Objects in the old snapshot.
    pub count_old: u64,
    /// Objects in the new one.
    pub count_new: u64,
    /// `count_new - count_old`.
    pub count_delta: i64,
    /// Bytes in the old snapshot.
    pub bytes_old: u64,
    /// Bytes in the new one.
    pub bytes_new: u64,
    /// `bytes_new - bytes_old`.
    pub bytes_delta: i64,
}

/// Per type, old against new, by bytes grown (then objects grown), largest first.
pub fn diff(old: &HeapModel, new: &HeapModel) -> Vec<TypeDelta> {
    let mut m: FxHashMap<&str, TypeDelta> = FxHashMap::default();
    let blank = |name: &str| TypeDelta {
        name: name.to_string(),
        count_old: 0,
        count_new: 0,
        count_delta: 0,
        bytes_old: 0,
        bytes_new: 0,
        bytes_delta: 0,
    };
    for t in old.types() {
        let e = m.entry(&t.name).or_insert_with(|| blank(&t.name));
        e.count_old += t.count;
        e.bytes_old += t.bytes;
    }
    for t in new.types() {
        let e = m.entry(&t.name).or_insert_with(|| blank(&t.name));
        e.count_new += t.count;
        e.bytes_new += t.bytes;
    }
    let mut v: Vec<TypeDelta> = m
        .into_values()
        .map(|mut d| {
            d.count_delta = d.count_new as i64 - d.count_old as i64;
            d.bytes_delta = d.bytes_new as i64 - d.bytes_old as i64;
            d
        })
        .collect();
    v.sort_by(|a, b| {
        b.bytes_delta
            .cmp(&a.bytes_delta)
            .then(b.count_delta.cmp(&a.count_delta))
            .then(a.name.cmp(&b.name))
    });
    v
}
