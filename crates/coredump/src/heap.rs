//! The managed heap by type, as `dumpheap -stat` counts it: every object of every segment or
//! region of every generation (reachable or not, free space as `Free`), the gaps the threads'
//! allocation contexts leave skipped. Objects are read straight from the core through a window
//! of a megabyte; each type's sizes and name come from the library once.

use std::collections::{HashMap, HashSet};

use crate::dac::structs::ThreadData;
use crate::dac::Dac;
use crate::elf::Core;
use crate::model::{hex, HeapStats, TypeStat};

/// The smallest object (method table, header, one field).
const MIN_OBJECT: u64 = 24;
const WINDOW: usize = 1 << 20;
/// Segments or regions followed at most per generation (a loop in a damaged list).
const MAX_SEGMENTS: usize = 1_000_000;
/// An object larger than this is a misread.
const MAX_OBJECT: u64 = 1 << 40;

/// A forward reader over the core's memory.
struct Window<'a> {
    core: &'a Core,
    base: u64,
    buf: Vec<u8>,
    len: usize,
}

impl Window<'_> {
    fn u64_at(&mut self, addr: u64) -> Option<u64> {
        self.bytes(addr, 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn u32_at(&mut self, addr: u64) -> Option<u32> {
        self.bytes(addr, 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }

    fn bytes(&mut self, addr: u64, n: usize) -> Option<&[u8]> {
        let inside = addr >= self.base && addr + n as u64 <= self.base + self.len as u64;
        if !inside {
            self.base = addr;
            self.len = self.core.read_held(addr, &mut self.buf);
            if self.len < n {
                return None;
            }
        }
        let at = (addr - self.base) as usize;
        self.buf.get(at..at + n)
    }
}

struct TypeInfo {
    base: u64,
    component: u64,
    count: u64,
    bytes: u64,
}

/// What a walk found.
pub(crate) struct Walked {
    pub(crate) stats: HeapStats,
    /// Every segment's or region's objects, `[start, end)`.
    pub(crate) ranges: Vec<(u64, u64)>,
    /// The first objects of each kind `Pick` chose, by the kind's index.
    pub(crate) found: Vec<Vec<u64>>,
    /// Every object of the pinned-object heap, (start, size), in address order: a pointer
    /// into one (a class's statics) is resolved to it.
    pub(crate) pinned: Vec<(u64, u64)>,
}

/// Which objects a walk collects: `accept` gives a type's kind by its name (None: not
/// collected), `max` how many of each kind at most.
pub(crate) struct Pick<'p> {
    pub(crate) accept: &'p dyn Fn(&str) -> Option<usize>,
    pub(crate) max: Vec<usize>,
}

/// Objects found so far and each type's kind.
struct Found<'p> {
    pick: Pick<'p>,
    types: HashMap<u64, Option<usize>>,
    objects: Vec<Vec<u64>>,
    /// The range being walked is of the pinned-object heap.
    pinned: bool,
    /// Every object of the pinned-object heap: (start, size).
    pinned_objects: Vec<(u64, u64)>,
}

/// The pinned-object heap's index in the generation table.
const PINNED_GENERATION: usize = 4;
/// Objects of the pinned-object heap kept for interior pointers, at most.
const MAX_PINNED: usize = 4_000_000;

/// Walks every heap; what could not be read goes to `warnings`.
pub(crate) fn walk(
    core: &Core,
    dac: &Dac,
    threads: &[(u64, ThreadData)],
    pick: Pick<'_>,
    warnings: &mut Vec<String>,
) -> Walked {
    let mut stats = HeapStats::default();
    let mut ranges = Vec::new();
    let kinds = pick.max.len();
    let mut found = Found {
        pick,
        types: HashMap::new(),
        objects: vec![Vec::new(); kinds],
        pinned: false,
        pinned_objects: Vec::new(),
    };
    let server = dac.gc_heap_data().is_some_and(|d| d.server_mode != 0);
    let heaps = dac.gc_heaps();
    if heaps.is_empty() {
        warnings.push("the GC's heaps could not be read: no heap statistics".into());
        return Walked {
            stats,
            ranges,
            found: vec![Vec::new(); kinds],
            pinned: Vec::new(),
        };
    }
    let mut contexts: HashMap<u64, u64> = threads
        .iter()
        .filter(|(_, t)| t.alloc_context_ptr != 0)
        .map(|(_, t)| (t.alloc_context_ptr, t.alloc_context_limit))
        .collect();
    if let Some((p, l)) = dac.global_alloc_context() {
        contexts.insert(p, l);
    }
    let mut types: HashMap<u64, Option<TypeInfo>> = HashMap::new();
    let mut window = Window {
        core,
        base: 0,
        buf: vec![0u8; WINDOW],
        len: 0,
    };
    let mut seen = HashSet::new();
    for heap in &heaps {
        let gens = dac.generations(heap, server);
        for g in &gens {
            if g.alloc_context_ptr != 0 {
                contexts.insert(g.alloc_context_ptr, g.alloc_context_limit);
            }
        }
        for (gen, g) in gens.iter().enumerate() {
            // Generation 4 is the pinned-object heap: the runtime keeps statics there.
            found.pinned = gen == PINNED_GENERATION;
            let mut seg = g.start_segment;
            let mut n = 0;
            while seg != 0 && n < MAX_SEGMENTS && seen.insert(seg) {
                n += 1;
                let Some(s) = dac.segment(seg) else {
                    warnings.push(format!("heap segment {seg:#x} could not be read"));
                    break;
                };
                let end = if s.high_alloc_mark != 0 {
                    s.high_alloc_mark
                } else if seg == heap.ephemeral_heap_segment {
                    heap.alloc_allocated
                } else {
                    s.allocated
                };
                stats.segments += 1;
                ranges.push((s.mem, end));
                let range = (s.mem, end);
                walk_range(
                    dac,
                    &mut window,
                    range,
                    &contexts,
                    &mut types,
                    &mut stats,
                    &mut found,
                );
                seg = s.next;
            }
        }
    }
    let mut list: Vec<TypeStat> = types
        .into_iter()
        .filter_map(|(mt, info)| {
            let info = info?;
            (info.count > 0).then(|| TypeStat {
                method_table: hex(mt),
                name: dac.type_name(mt).unwrap_or_else(|| "?".into()),
                count: info.count,
                bytes: info.bytes,
            })
        })
        .collect();
    list.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    stats.types = list;
    if stats.objects < 100 {
        warnings.push(format!(
            "this dump holds almost none of the managed heap ({} objects read): mini and triage dumps leave it out; a heap or full dump holds it (clrspy dump -p PID --type heap)",
            stats.objects
        ));
    }
    if stats.gaps > 0 {
        warnings.push(format!(
            "{} heap range(s) could not be walked to their end (memory not in the dump, or inconsistent): the heap's figures are a lower bound",
            stats.gaps
        ));
    }
    found.pinned_objects.sort_unstable();
    Walked {
        stats,
        ranges,
        found: found.objects,
        pinned: found.pinned_objects,
    }
}

/// A type's sizes, read from its method table as the GC reads them (`m_dwFlags`: the
/// component size in its low half when its top bit is set; `m_BaseSize`), once the library
/// confirms it is a method table.
fn type_info(core: &Core, dac: &Dac, mt: u64) -> Option<TypeInfo> {
    dac.method_table(mt)?;
    let mut b = [0u8; 8];
    if core.read_virtual(mt, &mut b) != 8 {
        return None;
    }
    let flags = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let base = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let component = if flags & 0x8000_0000 != 0 {
        flags & 0xffff
    } else {
        0
    };
    Some(TypeInfo {
        base: u64::from(base),
        component: u64::from(component),
        count: 0,
        bytes: 0,
    })
}

fn walk_range(
    dac: &Dac,
    w: &mut Window<'_>,
    (start, end): (u64, u64),
    contexts: &HashMap<u64, u64>,
    types: &mut HashMap<u64, Option<TypeInfo>>,
    stats: &mut HeapStats,
    found: &mut Found<'_>,
) {
    let mut at = start;
    while at < end {
        if let Some(&limit) = contexts.get(&at) {
            // The unused part of an allocation context, and the room kept after it.
            at = limit.max(at) + MIN_OBJECT;
            continue;
        }
        let Some(mt) = w.u64_at(at).map(|m| m & !7) else {
            stats.gaps += 1;
            return;
        };
        if mt == 0 {
            stats.gaps += 1;
            return;
        }
        let info = types
            .entry(mt)
            .or_insert_with(|| type_info(w.core, dac, mt));
        let Some(info) = info else {
            stats.gaps += 1;
            return;
        };
        let mut size = info.base;
        if info.component != 0 {
            let Some(n) = w.u32_at(at + 8) else {
                stats.gaps += 1;
                return;
            };
            size += u64::from(n) * info.component;
        }
        // Counted as `dumpheap` counts it (never below the smallest object: the empty string is
        // 22 bytes of fields in 24); the next object starts at the aligned end.
        let size = size.max(MIN_OBJECT);
        let step = (size + 7) & !7;
        if !(MIN_OBJECT..=MAX_OBJECT).contains(&step) || at + step > end {
            stats.gaps += 1;
            return;
        }
        info.count += 1;
        info.bytes += size;
        stats.objects += 1;
        stats.bytes += size;
        if found.pinned && found.pinned_objects.len() < MAX_PINNED {
            found.pinned_objects.push((at, step));
        }
        let p = &found.pick;
        let kind = *found
            .types
            .entry(mt)
            .or_insert_with(|| dac.type_name(mt).and_then(|n| (p.accept)(&n)));
        if let Some(k) = kind {
            if found
                .objects
                .get(k)
                .is_some_and(|o| o.len() < p.max.get(k).copied().unwrap_or(0))
            {
                found.objects[k].push(at);
            }
        }
        at += step;
    }
}
