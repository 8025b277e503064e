//! The rows that several reports share: a method and its weight, a stack and its count, a
//! name and its count.

use rustc_hash::FxHashMap;
use serde::Serialize;

/// A method and its weight.
#[derive(Clone, Debug, Serialize)]
pub struct MethodWeight {
    /// Frame name.
    pub method: String,
    /// Samples (CPU or waiting share; fractional where measured), bytes for allocations, or
    /// events for contention.
    pub samples: f64,
    /// Share of the total, percent.
    pub percent: f64,
    /// The same as time, ms.
    pub ms: f64,
    /// For a group of native work (`[JIT compiler: libclrjit.so]`) at the leaf: the managed
    /// method that paid most of it, and its share, percent. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) called_from: Option<CalledFrom>,
}

/// The managed method that paid for a row of native work.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CalledFrom {
    /// The managed method nearest to the native work on its stacks.
    pub(crate) method: String,
    /// Its share of the row, percent.
    pub(crate) percent: f64,
}

/// A stack and what it did.
#[derive(Clone, Debug, Serialize)]
pub struct StackCount {
    /// Frames, leaf first.
    pub frames: Vec<String>,
    /// Events.
    pub count: u64,
    /// Bytes (allocations) or ms (contention), when they apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Each frame's source line (`file:line`), where its method's PDB gives one: parallel
    /// to `frames`; empty when no frame's is known.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<Option<String>>,
}

/// A name and a count.
#[derive(Clone, Debug, Serialize)]
pub struct NameCount {
    /// The name (a message, a method).
    pub name: String,
    /// How many.
    pub count: u64,
}

/// The `top` largest counts of a map, most first (ties by name).
pub(crate) fn sorted_counts(m: &FxHashMap<String, u64>, top: usize) -> Vec<NameCount> {
    let mut v: Vec<NameCount> = m
        .iter()
        .map(|(n, c)| NameCount {
            name: n.clone(),
            count: *c,
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    v.truncate(top);
    v
}
