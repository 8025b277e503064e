//! The dominator tree folded by type path ([`RetentionTree`]): every reachable object's path
//! is `root kind; root name; type; ...; type` — the dominator-tree path from the root that
//! keeps it alive, objects named by type — and equal paths merge. An object adds its own
//! bytes to its path, so a path's total is the retained bytes of the objects that start it:
//! what the flame graph and folded-stack views of a heap draw.
//!
//! The objects that several roots reach (in .NET, whatever a static holds: the statics'
//! arrays are held by handles too) are dominated by no single root, only by a root group or
//! the top of the roots. Such an object goes under the root that holds it as `clrspy heap`'s
//! held bytes count it — the first root to reach it, statics first — so that its path names
//! the static field rather than `[.NET Roots]`; under it, the path follows the dominator
//! tree, so a type step's total is still the retained bytes of its objects.
//!
//! Two foldings keep paths short: a run of one type (a linked list's nodes, each dominating
//! the next) is one step, and steps below `MAX_DEPTH` go to one `[deeper]` step.

use rustc_hash::FxHashMap;

use super::dominators::NONE;
use super::{logical_type_name, priority, HeapModel, RootKind};

/// Steps of objects below a root at most; what is deeper is the `[deeper]` step.
pub(crate) const MAX_DEPTH: u32 = 200;

/// The root-kind step of a root whose kind no name says (a group of several kinds, the top
/// of the roots).
pub(crate) const SHARED: &str = "shared";

/// The step of the objects below [`MAX_DEPTH`].
pub(crate) const DEEPER: &str = "[deeper]";

/// One path of the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathNode {
    /// The path it extends (None for the top, the empty path).
    pub parent: Option<u32>,
    /// Its last step, an index into `RetentionTree::step_names`.
    pub step: u32,
    /// Objects whose path it is.
    pub objects: u64,
    /// Their own bytes.
    pub self_bytes: u64,
    /// Bytes of every object on it and on the paths under it.
    pub total_bytes: u64,
}

/// The dominator tree of a heap folded by type path.
#[derive(Clone, Debug)]
pub struct RetentionTree {
    /// The paths; a path comes after the one it extends; 0 is the empty path (the top).
    pub nodes: Vec<PathNode>,
    /// The names of the steps.
    pub(crate) step_names: Vec<String>,
}

/// What a step is, as the walk interns it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    Kind(Option<RootKind>),
    Pseudo(u32),
    Type(u32),
    Deeper,
}

struct Interner {
    ids: FxHashMap<Step, u32>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: Step, name: impl FnOnce() -> String) -> u32 {
        if let Some(&i) = self.ids.get(&s) {
            return i;
        }
        self.names.push(name());
        let i = (self.names.len() - 1) as u32;
        self.ids.insert(s, i);
        i
    }
}

/// The snake-case name of a root kind, as the JSON views spell it.
pub fn kind_name(k: RootKind) -> String {
    match k {
        RootKind::Stack => "stack",
        RootKind::StrongHandle => "strong_handle",
        RootKind::PinningHandle => "pinning_handle",
        RootKind::WeakHandle => "weak_handle",
        RootKind::Finalizer => "finalizer",
        RootKind::Static => "static",
        RootKind::ThreadStatic => "thread_static",
        RootKind::DependentHandle => "dependent_handle",
        RootKind::Com => "com",
        RootKind::Other => "other",
    }
    .into()
}

impl RetentionTree {
    /// Folds `m`'s dominator tree. Time and memory grow with the objects (one walk of the
    /// dominator tree, two arrays of the node count) and the distinct paths.
    pub fn new(m: &HeapModel) -> RetentionTree {
        let g = m.graph();
        let n = g.node_count();
        let mut tree = RetentionTree {
            nodes: vec![PathNode {
                parent: None,
                step: u32::MAX,
                objects: 0,
                self_bytes: 0,
                total_bytes: 0,
            }],
            step_names: Vec::new(),
        };
        let root = g.root();
        if root as usize >= n {
            return tree;
        }
        let mut steps = Interner {
            ids: FxHashMap::default(),
            names: Vec::new(),
        };
        // Per graph type: its step as an object (logical type) and as a pseudo-node.
        let mut by_logical: FxHashMap<&str, u32> = FxHashMap::default();
        let type_step: Vec<u32> = g
            .types()
            .iter()
            .map(|t| {
                let name = logical_type_name(&t.name);
                let next = by_logical.len() as u32;
                let l = *by_logical.entry(name).or_insert(next);
                steps.id(Step::Type(l), || name.to_string())
            })
            .collect();
        drop(by_logical);
        let deeper = steps.id(Step::Deeper, || DEEPER.into());
        let (start, kids) = dominator_children(m);
        let kinds = pseudo_kinds(m);
        let holder = holders(m, &kinds);
        // The path of root `r`: its kind, then its name.
        let mut root_paths: FxHashMap<u32, u32> = FxHashMap::default();
        let mut index: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut depth: Vec<u32> = vec![0];
        let mut root_path = |tree: &mut RetentionTree,
                             index: &mut FxHashMap<(u32, u32), u32>,
                             depth: &mut Vec<u32>,
                             r: u32| {
            if let Some(&p) = root_paths.get(&r) {
                return p;
            }
            let k = kinds.get(r as usize).copied().flatten();
            let ks = steps.id(Step::Kind(k), || k.map_or(SHARED.into(), kind_name));
            let name = g.type_name(g.node_type(r));
            let ps = steps.id(Step::Pseudo(g.node_type(r)), || name.to_string());
            let kp = tree.intern(index, depth, 0, ks);
            let p = tree.intern(index, depth, kp, ps);
            root_paths.insert(r, p);
            p
        };
        // The walk: (node, its path; None for the pseudo-nodes).
        let mut stack: Vec<(u32, Option<u32>)> = vec![(root, None)];
        while let Some((v, path)) = stack.pop() {
            for &c in &kids[start[v as usize] as usize..start[v as usize + 1] as usize] {
                if m.is_pseudo(c) {
                    stack.push((c, None));
                    continue;
                }
                let step = type_step
                    .get(g.node_type(c) as usize)
                    .copied()
                    .unwrap_or(u32::MAX);
                let p = match path {
                    None => {
                        // Right under a pseudo-node: under the root that holds it.
                        let h = holder.get(c as usize).copied().filter(|&h| h != NONE);
                        let rp = root_path(&mut tree, &mut index, &mut depth, h.unwrap_or(v));
                        tree.intern(&mut index, &mut depth, rp, step)
                    }
                    Some(path) => {
                        let last = tree.nodes[path as usize].step;
                        if last == step || last == deeper {
                            path
                        } else if depth[path as usize] >= MAX_DEPTH + 2 {
                            tree.intern(&mut index, &mut depth, path, deeper)
                        } else {
                            tree.intern(&mut index, &mut depth, path, step)
                        }
                    }
                };
                let node = &mut tree.nodes[p as usize];
                node.objects += 1;
                node.self_bytes += u64::from(g.node_size(c));
                stack.push((c, Some(p)));
            }
        }
        for i in (0..tree.nodes.len()).rev() {
            let node = &mut tree.nodes[i];
            node.total_bytes += node.self_bytes;
            let (t, parent) = (node.total_bytes, node.parent);
            if let Some(p) = parent {
                tree.nodes[p as usize].total_bytes += t;
            }
        }
        tree.step_names = steps.names;
        tree
    }

    /// The path extending `parent` by `step`, made when new.
    fn intern(
        &mut self,
        index: &mut FxHashMap<(u32, u32), u32>,
        depth: &mut Vec<u32>,
        parent: u32,
        step: u32,
    ) -> u32 {
        if let Some(&i) = index.get(&(parent, step)) {
            return i;
        }
        self.nodes.push(PathNode {
            parent: Some(parent),
            step,
            objects: 0,
            self_bytes: 0,
            total_bytes: 0,
        });
        let i = (self.nodes.len() - 1) as u32;
        depth.push(depth[parent as usize] + 1);
        index.insert((parent, step), i);
        i
    }

    /// The bytes of every object on a path: the reachable heap's bytes.
    pub fn total_bytes(&self) -> u64 {
        self.nodes.first().map_or(0, |n| n.total_bytes)
    }

    /// The step names of path `p`, top first.
    pub fn steps(&self, mut p: u32) -> Vec<&str> {
        let mut out = Vec::new();
        while let Some(node) = self.nodes.get(p as usize) {
            let Some(parent) = node.parent else {
                break;
            };
            out.push(
                self.step_names
                    .get(node.step as usize)
                    .map_or("", String::as_str),
            );
            p = parent;
        }
        out.reverse();
        out
    }
}

/// The root kind of every pseudo-node: named by it, else by the nearest pseudo-node above it
/// in the dominator tree that is (None: a group of several kinds, or the top).
fn pseudo_kinds(m: &HeapModel) -> Vec<Option<RootKind>> {
    let g = m.graph();
    (0..g.node_count() as u32)
        .map(|v| {
            if !m.is_pseudo(v) {
                return None;
            }
            let mut at = v;
            for _ in 0..64 {
                if let Some(k) = RootKind::from_pseudo_name(g.type_name(g.node_type(at))) {
                    return Some(k);
                }
                at = m.immediate_dominator(at)?;
            }
            None
        })
        .collect()
}

/// The root that holds every object ([`NONE`] when none does): the first to reach it, roots
/// (the pseudo-nodes that hold objects directly) taken by kind as the held bytes of
/// `clrspy heap` take them, then by name.
fn holders(m: &HeapModel, kinds: &[Option<RootKind>]) -> Vec<u32> {
    let g = m.graph();
    let n = g.node_count();
    let mut roots: Vec<u32> = (0..n as u32)
        .filter(|&v| m.is_pseudo(v) && g.children(v).iter().any(|&c| !m.is_pseudo(c)))
        .collect();
    let rank = |v: u32| {
        priority(
            kinds
                .get(v as usize)
                .copied()
                .flatten()
                .unwrap_or(RootKind::Other),
        )
    };
    roots.sort_by(|&a, &b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| g.type_name(g.node_type(a)).cmp(g.type_name(g.node_type(b))))
    });
    let mut holder = vec![NONE; n];
    let mut queue: Vec<u32> = Vec::new();
    for r in roots {
        queue.clear();
        queue.push(r);
        while let Some(x) = queue.pop() {
            for &c in g.children(x) {
                if holder[c as usize] == NONE && !m.is_pseudo(c) {
                    holder[c as usize] = r;
                    queue.push(c);
                }
            }
        }
    }
    holder
}

/// The dominator tree's children of every node, as offsets and a list.
fn dominator_children(m: &HeapModel) -> (Vec<u32>, Vec<u32>) {
    let n = m.graph().node_count();
    let mut start = vec![0u32; n + 1];
    for v in 0..n as u32 {
        if let Some(d) = m.immediate_dominator(v) {
            start[d as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut kids = vec![0u32; start[n] as usize];
    for v in 0..n as u32 {
        if let Some(d) = m.immediate_dominator(v) {
            kids[fill[d as usize] as usize] = v;
            fill[d as usize] += 1;
        }
    }
    (start, kids)
}

#[cfg(test)]
mod tests;
