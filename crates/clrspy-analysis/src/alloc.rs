//! Allocations from `GC/AllocationTick`: the runtime fires one each time about 100 KB were
//! allocated (per heap kind), naming the type of the object that crossed the threshold. Each
//! tick therefore stands for `AllocationAmount64` bytes: summed per type they estimate what
//! each type allocated, the way PerfView's GC Heap Alloc view does. Small, large and pinned
//! object heap allocations are kept apart.

use rustc_hash::FxHashMap;

use crate::event::EventCtx;
use crate::stacks::StackId;

/// Which heap an allocation went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HeapKind {
    /// Small object heap.
    Small,
    /// Large object heap (85,000 bytes and more).
    Large,
    /// Pinned object heap.
    Pinned,
}

/// Per type and heap.
#[derive(Clone, Debug, Default)]
pub struct TypeAlloc {
    /// Ticks (samples).
    pub count: u64,
    /// Bytes the ticks stand for (the estimate of what was allocated).
    pub bytes: u64,
    /// Sizes of the sampled objects themselves (V4+ events).
    pub sampled_object_bytes: u64,
}

/// The allocation model.
#[derive(Debug, Default)]
pub struct AllocModel {
    type_names: Vec<String>,
    type_index: FxHashMap<String, u32>,
    /// Per (type, heap).
    pub by_type: FxHashMap<(u32, HeapKind), TypeAlloc>,
    /// Per (type, heap, stack): ticks and bytes.
    pub by_stack: FxHashMap<(u32, HeapKind, Option<StackId>), (u64, u64)>,
    /// Ticks seen.
    pub ticks: u64,
    /// Bytes all ticks stand for.
    pub total_bytes: u64,
}

impl AllocModel {
    /// An empty model.
    pub fn new() -> AllocModel {
        AllocModel::default()
    }

    /// A `GC/AllocationTick`.
    pub fn on_tick(&mut self, ev: &EventCtx<'_>) {
        let f = ev.fields;
        let bytes = f
            .u64("AllocationAmount64")
            .or_else(|| f.u64("AllocationAmount"))
            .unwrap_or(0);
        let kind = match f.u64("AllocationKind") {
            Some(1) => HeapKind::Large,
            Some(2) => HeapKind::Pinned,
            _ => HeapKind::Small,
        };
        let name = f
            .str("TypeName")
            .filter(|n| !n.is_empty())
            .unwrap_or("[unknown type]");
        let t = match self.type_index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.type_names.len() as u32;
                self.type_names.push(name.to_string());
                self.type_index.insert(name.to_string(), i);
                i
            }
        };
        let e = self.by_type.entry((t, kind)).or_default();
        e.count += 1;
        e.bytes += bytes;
        e.sampled_object_bytes += f.u64("ObjectSize").unwrap_or(0);
        let s = self.by_stack.entry((t, kind, ev.stack)).or_default();
        s.0 += 1;
        s.1 += bytes;
        self.ticks += 1;
        self.total_bytes += bytes;
    }

    /// A type's name.
    pub fn type_name(&self, t: u32) -> &str {
        self.type_names.get(t as usize).map_or("", |s| s.as_str())
    }
}
