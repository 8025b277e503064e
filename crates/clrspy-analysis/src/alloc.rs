//! Allocations from `GC/AllocationTick`: the runtime fires one each time about 100 KB were
//! allocated (per heap kind), naming the type of the object that crossed the threshold. Each
//! tick therefore stands for `AllocationAmount64` bytes: summed per type they estimate what
//! each type allocated, the way PerfView's GC Heap Alloc view does. Small, large and pinned
//! object heap allocations are kept apart.

use clr_events::runtime::{self, AllocationTick, TypeLoadStop};
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
    pub(crate) sampled_object_bytes: u64,
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
    /// Full names of types whose tick named them without their declaring type
    /// ([`AllocModel::name_nested_types`]).
    full_names: FxHashMap<u32, String>,
    /// The first type id a tick gave each type.
    tick_type_ids: FxHashMap<u32, u64>,
    /// Full names of the types loaded while recording (`TypeLoad/Stop`), by type id.
    loaded: FxHashMap<u64, String>,
}

impl AllocModel {
    /// An empty model.
    pub fn new() -> AllocModel {
        AllocModel::default()
    }

    /// A `GC/AllocationTick`.
    pub(crate) fn on_tick(&mut self, tick: &AllocationTick<'_>, stack: Option<StackId>) {
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
        if let Some(id) = tick.type_id.filter(|&i| i != 0) {
            self.tick_type_ids.entry(t).or_insert(id);
        }
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

    /// A type's name: its full name when `AllocModel::name_nested_types` found one.
    pub fn type_name(&self, t: u32) -> &str {
        if let Some(n) = self.full_names.get(&t) {
            return n;
        }
        self.type_names.get(t as usize).map_or("", |s| s.as_str())
    }

    /// Gives nested types their declaring type. The runtime names a nested type in its ticks
    /// without it (`<GetEnumerator>d__6`, `Entry[System.String,System.Object][]`); the method
    /// events name the same types in full (`System.Collections.Generic.Dictionary`2+Entry`),
    /// as the declaring type of their methods (`declaring`). A tick's name takes the full
    /// name whose last nested part it is (the same generic arguments first, else the same
    /// generic definition), when exactly one declaring type has it.
    pub(crate) fn name_nested_types<'a>(&mut self, declaring: impl Iterator<Item = &'a str>) {
        // Nested part (as written, and its generic definition) -> the enclosing path.
        let mut exact: FxHashMap<&str, Option<&str>> = FxHashMap::default();
        let mut by_def: FxHashMap<(&str, usize), Option<&str>> = FxHashMap::default();
        fn note<'k, K: std::hash::Hash + Eq>(
            m: &mut FxHashMap<K, Option<&'k str>>,
            k: K,
            v: &'k str,
        ) {
            m.entry(k)
                .and_modify(|e| {
                    if *e != Some(v) {
                        *e = None;
                    }
                })
                .or_insert(Some(v));
        }
        for d in declaring {
            let Some(plus) = last_top_level_plus(d) else {
                continue;
            };
            let (outer, nested) = (&d[..plus], &d[plus + 1..]);
            note(&mut exact, nested, outer);
            note(
                &mut by_def,
                (generic_definition(nested), arity(nested)),
                outer,
            );
        }
        self.full_names.clear();
        for (i, name) in self.type_names.iter().enumerate() {
            // Names with a namespace (or clrspy's own) are whole already.
            if name.starts_with('[') || has_top_level_dot(name) {
                continue;
            }
            // The type's own load event names it in full.
            if let Some(full) = self
                .tick_type_ids
                .get(&(i as u32))
                .and_then(|id| self.loaded.get(id))
                .filter(|f| has_top_level_dot(f))
            {
                self.full_names.insert(i as u32, full.clone());
                continue;
            }
            let element = without_array_suffix(name);
            let outer = exact.get(element).copied().flatten().or_else(|| {
                by_def
                    .get(&(generic_definition(element), arity(element)))
                    .copied()
                    .flatten()
            });
            if let Some(outer) = outer {
                self.full_names.insert(i as u32, format!("{outer}+{name}"));
            }
        }
    }
}

/// A type load's name with its generic arguments in square brackets, as ticks write them
/// (`Dictionary`2+Entry<A,B>[]` is `Dictionary`2+Entry[A,B][]`); compiler-generated names
/// (`+<GetEnumerator>d__6`) keep their angle brackets.
fn square_brackets(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut generic: Vec<bool> = Vec::new();
    let mut prev = None;
    for c in s.chars() {
        match c {
            '<' => {
                let args = prev.is_some_and(|p: char| !matches!(p, '.' | '+' | '<' | '[' | ','));
                generic.push(args);
                out.push(if args { '[' } else { '<' });
            }
            '>' => out.push(if generic.pop().unwrap_or(false) {
                ']'
            } else {
                '>'
            }),
            _ => out.push(c),
        }
        prev = Some(c);
    }
    out
}

/// A type name without its array ranks: `Entry[A,B][]` is `Entry[A,B]`.
fn without_array_suffix(mut s: &str) -> &str {
    while let Some(open) = s.strip_suffix(']').and_then(|r| r.rfind('[')) {
        if s[open + 1..s.len() - 1].chars().all(|c| c == ',') {
            s = &s[..open];
        } else {
            break;
        }
    }
    s
}

/// How many generic arguments a name's first bracket group lists (0 without one).
fn arity(s: &str) -> usize {
    let Some(open) = s.find('[') else {
        return 0;
    };
    let mut depth = 0i32;
    let mut n = 1;
    for c in s[open..].chars() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => n += 1,
            _ => {}
        }
    }
    n
}

/// The index of the last `+` outside brackets (the start of the innermost nested type).
fn last_top_level_plus(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut last = None;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' => depth -= 1,
            '+' if depth == 0 => last = Some(i),
            _ => {}
        }
    }
    last
}

/// True when a type name has a namespace: a `.` outside brackets.
fn has_top_level_dot(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' => depth -= 1,
            '.' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// A type name without its generic arguments: `Entry[System.String,System.Object]` is `Entry`.
fn generic_definition(s: &str) -> &str {
    s.find('[').map_or(s, |i| &s[..i])
}

impl Model for AllocModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(runtime::ids::GC_ALLOCATION_TICK).with_stack(),
        Wanted::runtime(runtime::ids::TYPE_LOAD_STOP).always(),
        // A heap dump's type table names types loaded before the recording too.
        Wanted::runtime(runtime::ids::GC_BULK_TYPE).always(),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        if ev.id == runtime::ids::GC_BULK_TYPE {
            let b =
                clr_events::heapdump::GcBulkType::parse(ev.payload, ev.version, ev.pointer_size)?;
            for t in b.values {
                let t = t?;
                if t.type_id != 0 && !t.name.is_empty() {
                    self.loaded
                        .entry(t.type_id)
                        .or_insert_with(|| square_brackets(&t.name.to_string_lossy()));
                }
            }
            return Ok(());
        }
        if ev.id == runtime::ids::TYPE_LOAD_STOP {
            let t = TypeLoadStop::parse(ev.payload, ev.version, ev.pointer_size)?;
            if t.type_id != 0 && !t.type_name.is_empty() {
                self.loaded
                    .entry(t.type_id)
                    .or_insert_with(|| square_brackets(&t.type_name.to_string_lossy()));
            }
            return Ok(());
        }
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
            context: crate::EventContext::default(),
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

    #[test]
    fn nested_types_get_their_declaring_type() {
        let mut m = AllocModel::new();
        for n in [
            "Entry[System.String,System.Object][]",
            "<SelectIterator>d__251`2[App.Reading,System.Int32]",
            "OrderedIterator`2[System.Int32,System.Double]",
            "System.String",
            "Node",
        ] {
            m.on_event(&ev(&tick(100_000, 0, n), 4)).unwrap();
        }
        // Declaring types as .NET 10's method events wrote them (a trace of testapps/MsRazorShop).
        let declaring = [
            "System.Collections.Generic.Dictionary`2+Entry[System.__Canon,System.__Canon]",
            "System.Linq.Enumerable+<SelectIterator>d__251`2[System.__Canon,System.Int32]",
            "System.Linq.Enumerable+OrderedIterator`2[System.Int32,System.Double]",
            "System.Linq.Enumerable+OrderedIterator`2[System.Int32,System.Int32]",
            "System.String",
            "A.Tree+Node",
            "B.Graph+Node",
        ];
        m.name_nested_types(declaring.into_iter());
        let names: Vec<&str> = (0..5).map(|t| m.type_name(t)).collect();
        assert_eq!(
            names,
            [
                "System.Collections.Generic.Dictionary`2+Entry[System.String,System.Object][]",
                "System.Linq.Enumerable+<SelectIterator>d__251`2[App.Reading,System.Int32]",
                "System.Linq.Enumerable+OrderedIterator`2[System.Int32,System.Double]",
                "System.String",
                // Two declaring types have a `Node`: which one is not known.
                "Node",
            ]
        );
    }

    #[test]
    fn a_heap_dumps_type_table_names_the_ticks_type_in_full() {
        // A type loaded before the recording: no TypeLoad, but a heap dump's Type/BulkType.
        let mut m = AllocModel::new();
        let mut p = Vec::new();
        p.extend(1u32.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        p.extend(0x1234u64.to_le_bytes());
        p.extend(0u64.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.push(18);
        p.extend(utf16z(
            "System.Collections.Generic.List`1+<GetEnumerator>d__6",
        ));
        p.extend(0u32.to_le_bytes());
        let mut e = ev(&p, 0);
        e.id = runtime::ids::GC_BULK_TYPE;
        e.stack = None;
        m.on_event(&e).unwrap();
        m.on_event(&ev(&tick(100_000, 0, "<GetEnumerator>d__6"), 4))
            .unwrap();
        m.name_nested_types(std::iter::empty());
        assert_eq!(
            m.type_name(0),
            "System.Collections.Generic.List`1+<GetEnumerator>d__6"
        );
    }

    #[test]
    fn a_type_load_names_the_ticks_type_in_full() {
        let mut m = AllocModel::new();
        // TypeLoad/Stop for type id 0x1234 (the id `tick` writes), as .NET 10 wrote it.
        let mut load = Vec::new();
        load.extend(7u32.to_le_bytes());
        load.extend(0u16.to_le_bytes());
        load.extend(4u16.to_le_bytes());
        load.extend(0x1234u64.to_le_bytes());
        load.extend(utf16z(
            "System.Collections.Generic.Dictionary`2+Entry<System.String,System.Object>[]",
        ));
        let mut e = ev(&load, 0);
        e.id = runtime::ids::TYPE_LOAD_STOP;
        e.stack = None;
        m.on_event(&e).unwrap();
        m.on_event(&ev(
            &tick(100_000, 0, "Entry[System.String,System.Object][]"),
            4,
        ))
        .unwrap();
        m.name_nested_types(std::iter::empty());
        assert_eq!(
            m.type_name(0),
            "System.Collections.Generic.Dictionary`2+Entry[System.String,System.Object][]"
        );
        assert_eq!(
            square_brackets("System.Collections.Generic.List`1+<GetEnumerator>d__6<System.Int32>"),
            "System.Collections.Generic.List`1+<GetEnumerator>d__6[System.Int32]"
        );
    }
}
