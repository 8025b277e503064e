//! Paths from the roots to an object (`gcroot`): the strong GC handles (statics live in objects
//! a pinned handle holds) and every thread's stack references are the roots; the graph is
//! followed from them breadth-first, each object's references found as the GC finds them (the
//! pointer series stored before its method table), until the objects asked for are reached.
//! The first path found to each is the shortest from any root.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::dac::Dac;
use crate::elf::Core;
use crate::model::{hex, GcRoot, PathNode, RootPath};

/// Objects visited at most (a 2 GB heap has tens of millions; the parent of each is kept).
const MAX_VISITED: usize = 50_000_000;
/// Paths shown at most for `--type` (each to another instance).
pub(crate) const MAX_TARGETS: usize = 5;
/// Pointer series of one type read at most (a damaged method table).
const MAX_SERIES: i64 = 4096;

/// What the roots are.
#[derive(Clone, Debug)]
enum Root {
    Handle {
        handle: u64,
        kind: u32,
    },
    Stack {
        os_id: u32,
    },
    /// A word of a thread's stack memory or a register that points to the object: the
    /// runtime's own report of the stack's references leaves out some (a frame's callee-saved
    /// register holding a class's statics, on .NET 10), so the stack is also read as the
    /// conservative collectors read it.
    StackWord {
        os_id: u32,
        at: Option<u64>,
    },
}

impl Root {
    fn describe(&self) -> String {
        match self {
            Root::Handle { handle, kind } => format!("{} handle {handle:#x}", handle_kind(*kind)),
            Root::Stack { os_id } => format!("thread {os_id}'s stack"),
            Root::StackWord {
                os_id,
                at: Some(at),
            } => {
                format!("thread {os_id}'s stack, the word at {at:#x}")
            }
            Root::StackWord { os_id, at: None } => format!("thread {os_id}'s registers"),
        }
    }
}

/// Bytes of a thread's stack read, from its stack pointer up.
const STACK_BYTES: u64 = 8 << 20;

fn handle_kind(k: u32) -> &'static str {
    match k {
        2 => "strong",
        3 => "pinned",
        5 => "ref-counted",
        7 => "async pinned",
        8 => "sized-ref",
        _ => "strong",
    }
}

/// A type's layout for following references.
#[derive(Clone)]
pub(crate) struct Layout {
    base: u64,
    component: u64,
    /// Whether it has references at all.
    pointers: bool,
}

/// The heap's ranges, the types met, and the reader.
pub(crate) struct Graph<'a> {
    core: &'a Core,
    dac: &'a Dac,
    ranges: Vec<(u64, u64)>,
    layouts: HashMap<u64, Option<Layout>>,
    /// The pinned-object heap's objects, (start, size), in address order.
    pinned: Vec<(u64, u64)>,
}

impl<'a> Graph<'a> {
    /// A graph over the heap whose segments span `ranges`.
    pub(crate) fn new(
        core: &'a Core,
        dac: &'a Dac,
        mut ranges: Vec<(u64, u64)>,
        pinned: Vec<(u64, u64)>,
    ) -> Graph<'a> {
        ranges.sort_unstable();
        Graph {
            core,
            dac,
            ranges,
            layouts: HashMap::new(),
            pinned,
        }
    }

    /// The object a stack word points to: its start, or the pinned object it points into
    /// (statics are reached through a pointer into their array).
    fn target_of(&mut self, v: u64) -> Option<u64> {
        if self.method_table(v).is_some() {
            return Some(v);
        }
        let i = self.pinned.partition_point(|o| o.0 <= v);
        let (start, size) = *self.pinned.get(i.checked_sub(1)?)?;
        (v < start + size).then_some(start)
    }

    fn in_heap(&self, addr: u64) -> bool {
        addr & 7 == 0 && {
            let i = self.ranges.partition_point(|r| r.0 <= addr);
            i > 0 && addr < self.ranges[i - 1].1
        }
    }

    fn u64_at(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        (self.core.read_held(addr, &mut b) == 8).then(|| u64::from_le_bytes(b))
    }

    fn layout(&mut self, mt: u64) -> Option<Layout> {
        if let Some(l) = self.layouts.get(&mt) {
            return l.clone();
        }
        let l = self.dac.method_table(mt).and_then(|d| {
            let flags_base = self.u64_at(mt)?;
            let flags = flags_base as u32;
            Some(Layout {
                base: flags_base >> 32,
                component: if flags & 0x8000_0000 != 0 {
                    u64::from(flags & 0xffff)
                } else {
                    0
                },
                pointers: d.contains_pointers != 0,
            })
        });
        self.layouts.insert(mt, l.clone());
        l
    }

    /// The method table of the object at `obj`, when it is one.
    pub(crate) fn method_table(&mut self, obj: u64) -> Option<u64> {
        if !self.in_heap(obj) {
            return None;
        }
        let mt = self.u64_at(obj)? & !7;
        self.layout(mt)?;
        Some(mt)
    }

    /// The objects `obj` refers to.
    fn references(&mut self, obj: u64, out: &mut Vec<u64>) {
        out.clear();
        let Some(mt) = self.method_table(obj) else {
            return;
        };
        let Some(layout) = self.layout(mt) else {
            return;
        };
        if !layout.pointers {
            return;
        }
        let count = if layout.component != 0 {
            self.u64_at(obj + 8).map_or(0, |n| n & 0xffff_ffff)
        } else {
            0
        };
        let size = layout.base + count * layout.component;
        let Some(series) = self.u64_at(mt - 8).map(|n| n as i64) else {
            return;
        };
        let slot = |g: &Graph<'_>, at: u64, out: &mut Vec<u64>| {
            if let Some(p) = g.u64_at(at) {
                if p != 0 && g.in_heap(p) {
                    out.push(p);
                }
            }
        };
        if (1..=MAX_SERIES).contains(&series) {
            for k in 0..series as u64 {
                let cur = mt - 24 - 16 * k;
                let (Some(len), Some(start)) = (self.u64_at(cur), self.u64_at(cur + 8)) else {
                    return;
                };
                let bytes = (len as i64).saturating_add(size as i64).max(0) as u64;
                let mut at = obj + start;
                let end = at.saturating_add(bytes.min(size));
                while at < end && out.len() < 1 << 24 {
                    slot(self, at, out);
                    at += 8;
                }
            }
        } else if (-MAX_SERIES..0).contains(&series) {
            // An array of structs: per element, runs of `nptrs` references then `skip` bytes.
            let cur = mt - 24;
            let Some(start) = self.u64_at(cur + 8) else {
                return;
            };
            let items: Vec<(u64, u64)> = (0..-series)
                .filter_map(|i| {
                    let v = self.u64_at(cur - 8 * i as u64)?;
                    Some((v & 0xffff_ffff, v >> 32))
                })
                .collect();
            let mut at = obj + start;
            let end = obj + size - 8;
            while at < end && out.len() < 1 << 24 {
                let before = at;
                for &(nptrs, skip) in &items {
                    for _ in 0..nptrs {
                        if at >= end {
                            return;
                        }
                        slot(self, at, out);
                        at += 8;
                    }
                    at += skip;
                }
                if at == before {
                    return;
                }
            }
        }
    }
}

/// The roots: strong handles and the threads' stack references.
fn roots(g: &mut Graph<'_>, threads: &[u32]) -> Vec<(u64, Root)> {
    let mut out = Vec::new();
    for h in g.dac.handles() {
        if h.strong == 0 {
            continue;
        }
        if let Some(obj) = g.u64_at(h.handle).filter(|&o| o != 0) {
            out.push((
                obj,
                Root::Handle {
                    handle: h.handle,
                    kind: h.kind,
                },
            ));
        }
    }
    for &tid in threads {
        for r in g.dac.stack_refs(tid) {
            if r.object != 0 {
                out.push((r.object, Root::Stack { os_id: tid }));
            }
        }
    }
    let core = g.core;
    for t in &core.threads {
        let sp_index = match core.machine {
            crate::elf::Machine::X64 => 19,
            crate::elf::Machine::Arm64 => 31,
        };
        for &r in &t.regs {
            if let Some(o) = g.target_of(r) {
                out.push((
                    o,
                    Root::StackWord {
                        os_id: t.tid,
                        at: None,
                    },
                ));
            }
        }
        let Some(&sp) = t.regs.get(sp_index) else {
            continue;
        };
        let mut buf = vec![0u8; 64 << 10];
        let mut at = sp & !7;
        while at < sp.saturating_add(STACK_BYTES) {
            let n = core.read_held(at, &mut buf);
            for (i, w) in buf[..n - n % 8].chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                if let Some(o) = g.target_of(v) {
                    let word = at + 8 * i as u64;
                    out.push((
                        o,
                        Root::StackWord {
                            os_id: t.tid,
                            at: Some(word),
                        },
                    ));
                }
            }
            if n < buf.len() {
                break;
            }
            at += n as u64;
        }
    }
    out
}

/// Paths from the roots to each of `targets` (objects), breadth-first from every root at
/// once; `threads` are the OS ids whose stacks are roots.
pub(crate) fn paths(g: &mut Graph<'_>, threads: &[u32], targets: &[u64]) -> Vec<GcRoot> {
    let roots = roots(g, threads);
    let mut want: HashSet<u64> = targets.iter().copied().collect();
    // Each object reached: the object it was reached from (none for a root), and its root.
    let mut parent: HashMap<u64, (u64, u32)> = HashMap::new();
    let mut root_of: Vec<Root> = Vec::new();
    let mut queue = VecDeque::new();
    for (obj, root) in roots {
        if parent.contains_key(&obj) || g.method_table(obj).is_none() {
            continue;
        }
        parent.insert(obj, (0, root_of.len() as u32));
        root_of.push(root);
        queue.push_back(obj);
    }
    let mut refs = Vec::new();
    let mut truncated = false;
    while let Some(obj) = queue.pop_front() {
        want.remove(&obj);
        if want.is_empty() {
            break;
        }
        if parent.len() >= MAX_VISITED {
            truncated = true;
            break;
        }
        let root = parent.get(&obj).map_or(0, |p| p.1);
        g.references(obj, &mut refs);
        for &r in &refs {
            if !parent.contains_key(&r) && g.method_table(r).is_some() {
                parent.insert(r, (obj, root));
                queue.push_back(r);
            }
        }
    }
    targets
        .iter()
        .map(|&t| {
            let type_name = g
                .method_table(t)
                .and_then(|mt| g.dac.type_name(mt))
                .unwrap_or_else(|| "?".into());
            let mut chain = Vec::new();
            let mut at = t;
            let mut root = None;
            while let Some(&(from, r)) = parent.get(&at) {
                chain.push(at);
                if from == 0 {
                    root = root_of.get(r as usize).map(Root::describe);
                    break;
                }
                if chain.len() > 10_000 {
                    break;
                }
                at = from;
            }
            chain.reverse();
            let path = root.map(|root| RootPath {
                root,
                chain: chain
                    .iter()
                    .map(|&o| PathNode {
                        address: hex(o),
                        type_name: g
                            .method_table(o)
                            .and_then(|mt| g.dac.type_name(mt))
                            .unwrap_or_else(|| "?".into()),
                    })
                    .collect(),
            });
            GcRoot {
                target: hex(t),
                type_name,
                path,
                searched_all: !truncated,
            }
        })
        .collect()
}
