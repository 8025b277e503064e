//! Allocations from `GC/AllocationTick`: the runtime fires one each time about 100 KB were
//! allocated (per heap kind), naming the type of the object that crossed the threshold. Each
//! tick therefore stands for `AllocationAmount64` bytes: summed per type they estimate what
//! each type allocated, the way PerfView's GC Heap Alloc view does. Small, large and pinned
//! object heap allocations are kept apart.

use clr_events::runtime::{self, AllocationTick};
use clr_events::ViewError;
use rustc_hash::FxHashMap;

use crate::event::{Model, ModelEvent, Wanted};
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
#[derive(Clone, Debug, Default)]
pub struct AllocModel {
    type_names: Vec<String>,
    type_index: FxHashMap<String, u32>,
    type_by_utf16: FxHashMap<Box<[u8]>, u32>,
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
    pub fn on_tick(&mut self, tick: &AllocationTick<'_>, stack: Option<StackId>) {
        let bytes = tick.amount;
        let kind = match tick.kind {
            runtime::HeapKind::Loh => HeapKind::Large,
            runtime::HeapKind::Poh => HeapKind::Pinned,
            // Values the runtime does not write count with the small object heap.
            runtime::HeapKind::Soh | runtime::HeapKind::Other(_) => HeapKind::Small,
        };
        let t = match tick.type_name.filter(|n| !n.is_empty()) {
            // Known types are found by their UTF-16 bytes, without decoding them.
            Some(n) => match self.type_by_utf16.get(n.bytes()) {
                Some(&t) => t,
                None => {
                    let t = self.type_id(&n.to_string_lossy());
                    self.type_by_utf16.insert(n.bytes().into(), t);
                    t
                }
            },
            None => self.type_id("[unknown type]"),
        };
        let e = self.by_type.entry((t, kind)).or_default();
        e.count += 1;
        e.bytes += bytes;
        if let Some(size) = tick.object_size {
            e.sampled_object_bytes += size;
        }
        let s = self.by_stack.entry((t, kind, stack)).or_default();
        s.0 += 1;
        s.1 += bytes;
        self.ticks += 1;
        self.total_bytes += bytes;
    }

    fn type_id(&mut self, name: &str) -> u32 {
        match self.type_index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.type_names.len() as u32;
                self.type_names.push(name.to_string());
                self.type_index.insert(name.to_string(), i);
                i
            }
        }
    }

    /// A type's name.
    pub fn type_name(&self, t: u32) -> &str {
        self.type_names.get(t as usize).map_or("", |s| s.as_str())
    }
}

impl Model for AllocModel {
    const EVENTS: &'static [Wanted] =
        &[Wanted::runtime(runtime::ids::GC_ALLOCATION_TICK).with_stack()];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let tick = AllocationTick::parse(ev.payload, ev.version, ev.pointer_size)?;
        self.on_tick(&tick, ev.stack);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Provider;

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend([0, 0]);
        v
    }

    fn tick(amount: u64, kind: u32, name: &str) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend((amount as u32).to_le_bytes());
        p.extend(kind.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        p.extend(amount.to_le_bytes());
        p.extend(0x1234u64.to_le_bytes());
        p.extend(utf16z(name));
        p.extend(0u32.to_le_bytes());
        p.extend(0x5000u64.to_le_bytes());
        p.extend(24u64.to_le_bytes());
        p
    }

    fn ev(payload: &[u8], version: u8) -> ModelEvent<'_> {
        ModelEvent {
            provider: Provider::Known(clr_events::KnownProvider::Runtime),
            id: runtime::ids::GC_ALLOCATION_TICK,
            version,
            ts_ns: 0,
            thread_id: 1,
            payload,
            pointer_size: 8,
            stack: Some(StackId(3)),
        }
    }

    #[test]
    fn ticks_by_type_and_heap() {
        let mut m = AllocModel::new();
        let a = tick(100_000, 0, "System.String");
        let b = tick(200_000, 1, "System.Byte[]");
        let c = tick(100_000, 0, "");
        for p in [&a, &a, &b, &c] {
            m.on_event(&ev(p, 4)).unwrap();
        }
        assert_eq!((m.ticks, m.total_bytes), (4, 500_000));
        let s = m.type_index["System.String"];
        let e = &m.by_type[&(s, HeapKind::Small)];
        assert_eq!((e.count, e.bytes, e.sampled_object_bytes), (2, 200_000, 48));
        let l = m.type_index["System.Byte[]"];
        assert_eq!(m.by_type[&(l, HeapKind::Large)].bytes, 200_000);
        assert_eq!(
            m.type_name(m.type_index["[unknown type]"]),
            "[unknown type]"
        );
        assert_eq!(
            m.by_stack[&(s, HeapKind::Small, Some(StackId(3)))],
            (2, 200_000)
        );
        // A cut payload is an error, not a zero-byte tick.
        let e = m.on_event(&ev(&a[..20], 4)).unwrap_err();
        assert!(e.to_string().contains("GC/AllocationTick"), "{e}");
        assert_eq!(m.ticks, 4);
    }
}
