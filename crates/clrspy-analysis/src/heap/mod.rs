//! The heap model: what a heap snapshot ([`gcdump::Graph`]) holds — types by count and
//! shallow bytes, retained bytes per object and per type from the dominator tree, roots by
//! kind with what they retain, and the shortest paths from the roots to a type's objects.
//! Built from a `.gcdump` or from a trace's heap dump events ([`from_trace`]); kept apart
//! from [`crate::Analysis`] (whose snapshots clone) because a graph runs to gigabytes.
//!
//! ```
//! use clrspy_analysis::heap::HeapModel;
//! let mut b = gcdump::GraphBuilder::new();
//! let roots = b.add_type("[.NET Roots]", "");
//! let st = b.add_type("[static var Cache.Items]", "");
//! let list = b.add_type("System.Collections.Generic.List<Order>", "");
//! let order = b.add_type("Order", "");
//! b.add_node(roots, 0, 0, &[1]);
//! b.add_node(st, 0, 0, &[2]);
//! b.add_node(list, 32, 0x10, &[3, 4]);
//! b.add_node(order, 24, 0x40, &[]);
//! b.add_node(order, 24, 0x58, &[]);
//! b.set_root(0);
//! let m = HeapModel::new(b.finish()?);
//! assert_eq!(m.objects(), 3);
//! let t = m.types().iter().find(|t| t.name == "Order").unwrap();
//! assert_eq!((t.count, t.bytes, t.retained_bytes), (2, 48, 48));
//! assert_eq!(m.roots()[0].retained_bytes, 80);
//! # Ok::<(), gcdump::Error>(())
//! ```

pub mod diff;
pub(crate) mod dominators;
pub mod from_trace;
pub mod growth;
pub mod retention;
mod statics;

#[cfg(test)]
mod from_trace_tests;
#[cfg(test)]
mod tests;

use gcdump::{Graph, NodeIndex};
use rustc_hash::FxHashMap;
use serde::Serialize;

use dominators::NONE;

/// What kind of root holds objects (from the root pseudo-nodes' names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    /// A stack slot (`[local vars]`).
    Stack,
    /// A strong GC handle.
    StrongHandle,
    /// A pinning GC handle.
    PinningHandle,
    /// A weak GC handle (only when a collector kept them).
    WeakHandle,
    /// The finalizer queue.
    Finalizer,
    /// A static field.
    Static,
    /// A thread-static field.
    ThreadStatic,
    /// A dependent handle (`ConditionalWeakTable`).
    DependentHandle,
    /// COM/WinRT objects.
    Com,
    /// Anything else.
    Other,
}

impl RootKind {
    /// The kind a root pseudo-node's name stands for (None: not a root group name).
    pub(crate) fn from_pseudo_name(name: &str) -> Option<RootKind> {
        let n = name.to_ascii_lowercase();
        let k = if n.starts_with("[static var") {
            RootKind::Static
        } else if n.starts_with("[thread static var") {
            RootKind::ThreadStatic
        } else if n.starts_with("[local var") || n.contains("stack") {
            RootKind::Stack
        } else if n.starts_with("[pinning handle") || n.starts_with("[pinned handle") {
            RootKind::PinningHandle
        } else if n.starts_with("[strong handle") {
            RootKind::StrongHandle
        } else if n.starts_with("[weak handle") {
            RootKind::WeakHandle
        } else if n.starts_with("[finaliz") {
            RootKind::Finalizer
        } else if n.starts_with("[dependent handle") {
            RootKind::DependentHandle
        } else if n.starts_with("[com/winrt") || n.starts_with("[rcw") {
            RootKind::Com
        } else if n.starts_with("[other handle") {
            RootKind::Other
        } else {
            return None;
        };
        Some(k)
    }
}

/// One type's totals.
#[derive(Clone, Debug, Serialize)]
pub struct TypeStats {
    /// The type's name (size-bucket suffixes such as ` (Bytes > 10K)` removed).
    #[serde(rename = "type")]
    pub name: String,
    /// Objects of the type.
    pub count: u64,
    /// Their own bytes.
    pub bytes: u64,
    /// Bytes only they keep alive: the retained sizes of the type's objects that no other
    /// object of the type dominates.
    pub retained_bytes: u64,
}

/// One root (a root pseudo-node that holds objects directly) and what it retains.
#[derive(Clone, Debug, Serialize)]
pub struct RootStats {
    /// Its kind.
    pub kind: RootKind,
    /// Its name, e.g. `[static var Leak.Program.Orders]` or `[strong Handles]`.
    pub name: String,
    /// Objects it holds directly.
    pub objects: u64,
    /// Bytes it alone keeps alive (dominator tree): an object two roots reach is retained by
    /// neither — the runtime's statics are also reachable through its own handles, so a
    /// static's `retained_bytes` is often small; see `held_bytes`.
    pub retained_bytes: u64,
    /// Bytes it holds when every object is given to one root, the first to reach it with
    /// roots taken in the order statics, thread statics, stack, strong, pinning, dependent
    /// and other handles, finalizer queue (as PerfView attributes objects).
    pub held_bytes: u64,
}

/// A path from a root to objects of one type, with how many of them it leads to.
#[derive(Clone, Debug, Serialize)]
pub struct RootPath {
    /// The steps, root first (`[static var Cache.Items]`, `List<Order>`, `Order[]`, `Order`);
    /// a run of one type is one step with ` ×N`.
    pub steps: Vec<String>,
    /// Objects of the type whose shortest path has these steps.
    pub objects: u64,
    /// Their shallow bytes.
    pub bytes: u64,
}

/// The order in which roots claim the objects they reach.
pub(crate) fn priority(k: RootKind) -> u8 {
    match k {
        RootKind::Static => 0,
        RootKind::ThreadStatic => 1,
        RootKind::Stack => 2,
        RootKind::StrongHandle => 3,
        RootKind::PinningHandle => 4,
        RootKind::DependentHandle => 5,
        RootKind::Com => 6,
        RootKind::Other => 7,
        RootKind::WeakHandle => 8,
        RootKind::Finalizer => 9,
    }
}

/// The analysed heap graph.
pub struct HeapModel {
    graph: Graph,
    idom: Vec<u32>,
    retained: Vec<u64>,
    /// Logical type per graph type (size buckets merged).
    logical: Vec<u32>,
    logical_names: Vec<String>,
    pseudo: Vec<bool>,
    types: Vec<TypeStats>,
    roots: Vec<RootStats>,
    objects: u64,
    bytes: u64,
    unreachable: u64,
}

/// A type name without the per-size bucket suffix PerfView and dotnet-gcdump add.
pub(crate) fn logical_type_name(name: &str) -> &str {
    match name.rfind(" (Bytes > ") {
        Some(i) if name.ends_with(')') => &name[..i],
        _ => name,
    }
}

impl HeapModel {
    /// Analyses `graph`: dominators, retained sizes, per-type and per-root totals.
    pub fn new(graph: Graph) -> HeapModel {
        let n = graph.node_count();
        // Pseudo-nodes: root groups, named in brackets, with no size.
        let pseudo_type: Vec<bool> = graph
            .types()
            .iter()
            .map(|t| t.name.starts_with('[') && !t.name.starts_with("[RCW"))
            .collect();
        let pseudo: Vec<bool> = (0..n as u32)
            .map(|i| graph.node_size(i) == 0 && pseudo_type[graph.node_type(i) as usize])
            .collect();
        let mut by_name: FxHashMap<&str, u32> = FxHashMap::default();
        let mut logical_names = Vec::new();
        let logical: Vec<u32> = graph
            .types()
            .iter()
            .map(|t| {
                let name = logical_type_name(&t.name);
                *by_name.entry(name).or_insert_with(|| {
                    logical_names.push(name.to_string());
                    (logical_names.len() - 1) as u32
                })
            })
            .collect();
        drop(by_name);
        let (off, edges) = graph.adjacency();
        let idom = dominators::immediate_dominators(off, edges, graph.root());
        let retained = retained_sizes(&graph, &idom);
        let mut m = HeapModel {
            graph,
            idom,
            retained,
            logical,
            logical_names,
            pseudo,
            types: Vec::new(),
            roots: Vec::new(),
            objects: 0,
            bytes: 0,
            unreachable: 0,
        };
        m.types = m.type_stats();
        m.roots = m.root_stats();
        m
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
    /// Objects (nodes that are not root pseudo-nodes), reachable or not.
    pub fn objects(&self) -> u64 {
        self.objects
    }
    /// Their bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Objects no root reaches (the collector walked them; they are garbage).
    pub fn unreachable_objects(&self) -> u64 {
        self.unreachable
    }
    /// Types, by retained bytes (largest first).
    pub fn types(&self) -> &[TypeStats] {
        &self.types
    }
    /// Roots, by held bytes (largest first).
    pub fn roots(&self) -> &[RootStats] {
        &self.roots
    }
    /// The bytes node `n` alone keeps alive (0 for unreachable nodes).
    pub fn retained(&self, n: NodeIndex) -> u64 {
        self.retained.get(n as usize).copied().unwrap_or(0)
    }
    /// Node `n`'s immediate dominator (None for the root and unreachable nodes).
    pub(crate) fn immediate_dominator(&self, n: NodeIndex) -> Option<NodeIndex> {
        self.idom.get(n as usize).copied().filter(|&d| d != NONE)
    }
    /// True when node `n` is a root pseudo-node, not an object.
    pub(crate) fn is_pseudo(&self, n: NodeIndex) -> bool {
        self.pseudo.get(n as usize).copied().unwrap_or(false)
    }
    fn type_stats(&mut self) -> Vec<TypeStats> {
        let g = &self.graph;
        let nl = self.logical_names.len();
        let (mut count, mut bytes) = (vec![0u64; nl], vec![0u64; nl]);
        for i in 0..g.node_count() {
            if self.pseudo[i] {
                continue;
            }
            let l = self.logical[g.node_types()[i] as usize] as usize;
            count[l] += 1;
            bytes[l] += u64::from(g.node_sizes()[i]);
            self.objects += 1;
            self.bytes += u64::from(g.node_sizes()[i]);
            if self.idom[i] == NONE && i as u32 != g.root() {
                self.unreachable += 1;
            }
        }
        let retained = self.type_retained();
        let mut v: Vec<TypeStats> = (0..nl)
            .filter(|&l| count[l] > 0)
            .map(|l| TypeStats {
                name: self.logical_names[l].clone(),
                count: count[l],
                bytes: bytes[l],
                retained_bytes: retained[l],
            })
            .collect();
        v.sort_by(|a, b| {
            b.retained_bytes
                .cmp(&a.retained_bytes)
                .then(b.bytes.cmp(&a.bytes))
                .then(a.name.cmp(&b.name))
        });
        v
    }

    /// Per logical type, the retained bytes of its objects that no other object of the type
    /// dominates: a walk of the dominator tree keeping how many of each type are above.
    fn type_retained(&self) -> Vec<u64> {
        let n = self.graph.node_count();
        let mut out = vec![0u64; self.logical_names.len()];
        // Dominator-tree children as adjacency.
        let mut start = vec![0u32; n + 1];
        for &d in &self.idom {
            if d != NONE {
                start[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut kids = vec![0u32; start[n] as usize];
        for (v, &d) in self.idom.iter().enumerate() {
            if d != NONE {
                kids[fill[d as usize] as usize] = v as u32;
                fill[d as usize] += 1;
            }
        }
        drop(fill);
        let mut above = vec![0u32; self.logical_names.len()];
        let root = self.graph.root();
        if root as usize >= n {
            return out;
        }
        // (node, entered?) — on the way down count the type, on the way up uncount it.
        let mut stack: Vec<(u32, bool)> = vec![(root, false)];
        while let Some((v, done)) = stack.pop() {
            let l = self.logical[self.graph.node_type(v) as usize] as usize;
            let counted = !self.pseudo[v as usize];
            if done {
                if counted {
                    above[l] -= 1;
                }
                continue;
            }
            if counted {
                if above[l] == 0 {
                    out[l] += self.retained[v as usize];
                }
                above[l] += 1;
            }
            stack.push((v, true));
            for &k in &kids[start[v as usize] as usize..start[v as usize + 1] as usize] {
                stack.push((k, false));
            }
        }
        out
    }

    /// The root pseudo-nodes that hold objects directly, in the order they claim the objects
    /// they reach: by their kind's priority (statics first), then name.
    fn claim_order(&self) -> Vec<u32> {
        let g = &self.graph;
        let mut v: Vec<(u8, &str, u32)> = (0..g.node_count() as u32)
            .filter(|&i| {
                self.pseudo[i as usize] && g.children(i).iter().any(|&c| !self.pseudo[c as usize])
            })
            .map(|i| {
                let name = g.type_name(g.node_type(i));
                let kind = RootKind::from_pseudo_name(name)
                    .or_else(|| self.group_kind(i))
                    .unwrap_or(RootKind::Other);
                (priority(kind), name, i)
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, _, i)| i).collect()
    }

    /// Root pseudo-nodes that hold objects directly.
    fn root_stats(&self) -> Vec<RootStats> {
        let g = &self.graph;
        let mut v = Vec::new();
        for i in 0..g.node_count() as u32 {
            if !self.pseudo[i as usize] {
                continue;
            }
            let held = g
                .children(i)
                .iter()
                .filter(|&&c| !self.pseudo[c as usize])
                .count() as u64;
            if held == 0 {
                continue;
            }
            let name = g.type_name(g.node_type(i)).to_string();
            let kind = RootKind::from_pseudo_name(&name)
                .or_else(|| self.group_kind(i))
                .unwrap_or(RootKind::Other);
            v.push((
                i,
                RootStats {
                    kind,
                    name,
                    objects: held,
                    retained_bytes: self.retained[i as usize],
                    held_bytes: 0,
                },
            ));
        }
        // Each object to the first root that reaches it, roots in priority order.
        v.sort_by(|a, b| {
            priority(a.1.kind)
                .cmp(&priority(b.1.kind))
                .then(a.1.name.cmp(&b.1.name))
        });
        let mut seen = vec![false; g.node_count()];
        let mut queue: Vec<u32> = Vec::new();
        for (node, r) in &mut v {
            queue.clear();
            for &c in g.children(*node) {
                if !self.pseudo[c as usize] && !seen[c as usize] {
                    seen[c as usize] = true;
                    queue.push(c);
                }
            }
            let mut held = 0u64;
            while let Some(x) = queue.pop() {
                held += u64::from(g.node_size(x));
                for &c in g.children(x) {
                    if !seen[c as usize] && !self.pseudo[c as usize] {
                        seen[c as usize] = true;
                        queue.push(c);
                    }
                }
            }
            r.held_bytes = held;
        }
        let mut v: Vec<RootStats> = v.into_iter().map(|(_, r)| r).collect();
        v.sort_by(|a, b| {
            b.held_bytes
                .cmp(&a.held_bytes)
                .then(b.retained_bytes.cmp(&a.retained_bytes))
                .then(a.name.cmp(&b.name))
        });
        v
    }

    /// The kind named by the nearest dominating pseudo-node with a kind name.
    fn group_kind(&self, mut n: u32) -> Option<RootKind> {
        for _ in 0..64 {
            let d = self.immediate_dominator(n)?;
            if let Some(k) =
                RootKind::from_pseudo_name(self.graph.type_name(self.graph.node_type(d)))
            {
                return Some(k);
            }
            n = d;
        }
        None
    }

    /// The shortest paths (breadth-first from the root) to the objects of `type_name`
    /// (logical name, exact match), grouped by their steps, most objects first. One pass:
    /// each node's path is interned as it is reached (a trie of steps, runs of one type
    /// folded), so the cost does not grow with the paths' length.
    pub fn paths_to_type(&self, type_name: &str, max_paths: usize) -> Vec<RootPath> {
        self.paths_to_types(&[type_name], max_paths)
            .pop()
            .unwrap_or_default()
    }

    /// [`paths_to_type`](Self::paths_to_type) of several types in the same one pass: their
    /// paths in the order of `type_names`.
    pub fn paths_to_types(&self, type_names: &[&str], max_paths: usize) -> Vec<Vec<RootPath>> {
        let mut out = vec![Vec::new(); type_names.len()];
        let g = &self.graph;
        let n = g.node_count();
        let root = g.root();
        if root as usize >= n {
            return out;
        }
        // Per logical type, which of `type_names` it is.
        let mut slot = vec![NONE; self.logical_names.len()];
        for (i, t) in type_names.iter().enumerate() {
            if let Some(l) = self.logical_names.iter().position(|s| s == t) {
                slot[l] = i as u32;
            }
        }
        if slot.iter().all(|&s| s == NONE) {
            return out;
        }
        // Trie of paths: (parent path, step, run length); path 0 is the empty path (the root).
        let mut trie: Vec<(u32, u32, u32)> = vec![(NONE, NONE, 0)];
        let mut index: FxHashMap<(u32, u32, u32), u32> = FxHashMap::default();
        let mut path = vec![NONE; n];
        path[root as usize] = 0;
        // (slot, path) → (objects, bytes).
        let mut per_path: FxHashMap<(u32, u32), (u64, u64)> = FxHashMap::default();
        // The root pseudo-nodes first (breadth-first from the root, pseudo-nodes only), then
        // the objects: from each root that holds objects, in the order the roots table
        // credits them (statics first), breadth-first over what no earlier root reached. A
        // path so starts at the root the roots table credits with the object.
        let mut visit = |v: u32, c: u32, path: &mut Vec<u32>| -> bool {
            if path[c as usize] != NONE {
                return false;
            }
            let pv = path[v as usize];
            let step = self.step_id(c);
            let (parent, _, run) = trie[pv as usize];
            let key = if trie[pv as usize].1 == step {
                (parent, step, run + 1)
            } else {
                (pv, step, 1)
            };
            let id = *index.entry(key).or_insert_with(|| {
                trie.push(key);
                (trie.len() - 1) as u32
            });
            path[c as usize] = id;
            if !self.pseudo[c as usize] {
                let s = slot[self.logical[g.node_type(c) as usize] as usize];
                if s != NONE {
                    let e = per_path.entry((s, id)).or_insert((0, 0));
                    e.0 += 1;
                    e.1 += u64::from(g.node_size(c));
                }
            }
            true
        };
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(v) = queue.pop_front() {
            for &c in g.children(v) {
                if self.pseudo[c as usize] && visit(v, c, &mut path) {
                    queue.push_back(c);
                }
            }
        }
        for holder in self.claim_order() {
            if path[holder as usize] == NONE {
                continue;
            }
            queue.clear();
            queue.push_back(holder);
            while let Some(v) = queue.pop_front() {
                for &c in g.children(v) {
                    if !self.pseudo[c as usize] && visit(v, c, &mut path) {
                        queue.push_back(c);
                    }
                }
            }
        }
        for ((s, p), (objects, bytes)) in per_path {
            out[s as usize].push(RootPath {
                steps: self.steps_of(&trie, p),
                objects,
                bytes,
            });
        }
        for v in &mut out {
            v.sort_by(|a, b| b.objects.cmp(&a.objects).then(a.steps.cmp(&b.steps)));
            v.truncate(max_paths);
        }
        out
    }

    /// A node's step in a path: its logical type, or for a pseudo-node its own name.
    fn step_id(&self, c: u32) -> u32 {
        let t = self.graph.node_type(c);
        if self.pseudo[c as usize] {
            (1 << 31) | t
        } else {
            self.logical[t as usize]
        }
    }

    /// The names of path `p`'s steps, root side first.
    fn steps_of(&self, trie: &[(u32, u32, u32)], mut p: u32) -> Vec<String> {
        let mut out = Vec::new();
        while p != 0 && p != NONE {
            let (parent, step, run) = trie[p as usize];
            let name = if step & (1 << 31) != 0 {
                self.graph.type_name(step & !(1 << 31))
            } else {
                self.logical_names
                    .get(step as usize)
                    .map_or("", |s| s.as_str())
            };
            out.push(if run > 1 {
                format!("{name} ×{run}")
            } else {
                name.to_string()
            });
            p = parent;
        }
        out.reverse();
        out
    }
}

/// Retained size of every node: its own size plus what it dominates, summed bottom-up in
/// reverse BFS order of the dominator tree.
fn retained_sizes(g: &Graph, idom: &[u32]) -> Vec<u64> {
    let n = g.node_count();
    let mut retained: Vec<u64> = (0..n as u32)
        .map(|i| {
            if idom[i as usize] != NONE || i == g.root() {
                u64::from(g.node_size(i))
            } else {
                0
            }
        })
        .collect();
    // An order where every node comes after its dominator: BFS over the dominator tree.
    let mut start = vec![0u32; n + 1];
    for &d in idom {
        if d != NONE {
            start[d as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut kids = vec![0u32; start[n] as usize];
    for (v, &d) in idom.iter().enumerate() {
        if d != NONE {
            kids[fill[d as usize] as usize] = v as u32;
            fill[d as usize] += 1;
        }
    }
    drop(fill);
    if (g.root() as usize) >= n {
        return retained;
    }
    let mut order = Vec::with_capacity(n);
    order.push(g.root());
    let mut i = 0;
    while i < order.len() {
        let v = order[i] as usize;
        order.extend_from_slice(&kids[start[v] as usize..start[v + 1] as usize]);
        i += 1;
    }
    for &v in order.iter().rev() {
        let d = idom[v as usize];
        if d != NONE {
            retained[d as usize] += retained[v as usize];
        }
    }
    retained
}
