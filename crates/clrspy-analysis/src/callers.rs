//! A method's callers and callees, merged over every stack that runs it: the caller tree from
//! the method up to the threads' roots (the "caller view" of profilers), the callee tree from
//! the method down to the leaves, and the heaviest path from a root to the method.
//!
//! A stack that runs the method more than once (recursion) counts once, at its root-most
//! call: every caller and callee weighs what it holds of the method's own inclusive weight.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::grouping::{fold_root_first, JustMyCode};
use crate::profile::{Metric, StackProfile};
use crate::symbols::{FrameId, Symbols};

/// One frame of a caller or callee tree.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinkNode {
    /// The frame's name.
    pub frame: String,
    /// The metric's weight through this frame (units of [`StackProfile::interval_ns`]).
    #[serde(skip)]
    pub weight: f64,
    /// Samples through this frame (each sample's share of the metric).
    pub samples: f64,
    /// Its callers (caller tree) or callees (callee tree), heaviest first.
    pub next: Vec<LinkNode>,
}

/// The merged callers and callees of one method.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodLinks {
    /// The method's name (the frame the pattern chose).
    pub method: String,
    /// Other frame names the pattern matched (lighter; not included).
    pub also_matched: Vec<String>,
    /// The method's inclusive weight.
    pub weight: f64,
    /// Its inclusive samples.
    pub samples: f64,
    /// Callers, from the direct ones up to the thread roots, heaviest first.
    pub callers: Vec<LinkNode>,
    /// Callees, from the direct ones down to the leaves, heaviest first.
    pub callees: Vec<LinkNode>,
}

impl MethodLinks {
    /// The heaviest path from a thread's root down to the method's direct caller, root first,
    /// with each frame's weight and samples.
    pub fn heaviest_path(&self) -> Vec<(String, f64, f64)> {
        let mut path = Vec::new();
        let mut level = &self.callers;
        while let Some(n) = level.first() {
            path.push((n.frame.clone(), n.weight, n.samples));
            level = &n.next;
        }
        path.reverse();
        path
    }
}

#[derive(Default)]
struct Trie {
    weight: f64,
    samples: f64,
    kids: FxHashMap<FrameId, Trie>,
}

impl Trie {
    fn add(&mut self, path: impl Iterator<Item = FrameId>, w: f64, n: f64) {
        let mut node = self;
        for f in path {
            node = node.kids.entry(f).or_default();
            node.weight += w;
            node.samples += n;
        }
    }

    fn into_nodes(self, symbols: &Symbols) -> Vec<LinkNode> {
        let mut v: Vec<LinkNode> = self
            .kids
            .into_iter()
            .map(|(f, t)| LinkNode {
                frame: symbols.frame(f).name.clone(),
                weight: t.weight,
                samples: t.samples,
                next: t.into_nodes(symbols),
            })
            .collect();
        v.sort_by(|a, b| {
            b.weight
                .total_cmp(&a.weight)
                .then_with(|| a.frame.cmp(&b.frame))
        });
        v
    }
}

/// The frame names of the profile that `pattern` names: the frame called exactly that when
/// there is one, else every frame whose name contains it; heaviest (inclusive `metric`) first.
pub(crate) fn matching_methods(
    profile: &StackProfile,
    metric: Metric,
    symbols: &Symbols,
    pattern: &str,
) -> Vec<(String, f64)> {
    let mut incl: FxHashMap<FrameId, f64> = FxHashMap::default();
    let mut seen = FxHashSet::default();
    // Whether a frame's name holds the pattern, once per frame (rows share most frames).
    let mut matches: FxHashMap<FrameId, bool> = FxHashMap::default();
    for r in &profile.rows {
        let w = r.weight(metric);
        if w <= 0.0 {
            continue;
        }
        seen.clear();
        for &f in &r.frames {
            if seen.insert(f)
                && *matches
                    .entry(f)
                    .or_insert_with(|| symbols.frame(f).name.contains(pattern))
            {
                *incl.entry(f).or_default() += w;
            }
        }
    }
    let mut v: Vec<(String, f64)> = incl
        .into_iter()
        .map(|(f, w)| (symbols.frame(f).name.clone(), w))
        .collect();
    if let Some(i) = v.iter().position(|(n, _)| n == pattern) {
        return vec![v.swap_remove(i)];
    }
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The callers and callees of the heaviest method `pattern` names (`matching_methods`);
/// None when no stack of `metric` has it. With `group`, the callers and the callees are
/// folded by it (the method itself stays, framework or not): `profile` is then the
/// ungrouped one.
pub fn method_links(
    profile: &StackProfile,
    metric: Metric,
    symbols: &Symbols,
    pattern: &str,
    group: Option<&JustMyCode>,
) -> Option<MethodLinks> {
    let mut found = matching_methods(profile, metric, symbols, pattern).into_iter();
    let (method, _) = found.next()?;
    let also_matched = found.map(|(n, _)| n).collect();
    let mut up = Trie::default();
    let mut down = Trie::default();
    for r in &profile.rows {
        let w = r.weight(metric);
        if w <= 0.0 {
            continue;
        }
        // The root-most call (frames are leaf first).
        let Some(pos) = r
            .frames
            .iter()
            .rposition(|&f| symbols.frame(f).name == method)
        else {
            continue;
        };
        let n = r.samples_of(metric);
        up.weight += w;
        up.samples += n;
        let mut callers = r.frames[pos + 1..].to_vec();
        let mut callees: Vec<FrameId> = r.frames[..pos].iter().rev().copied().collect();
        if let Some(g) = group {
            callers = g.fold_ids(callers, symbols);
            let fw = |&f: &FrameId| g.is_framework_frame(f, symbols);
            callees = fold_root_first(callees, fw);
        }
        up.add(callers.into_iter(), w, n);
        down.add(callees.into_iter(), w, n);
    }
    Some(MethodLinks {
        method,
        also_matched,
        weight: up.weight,
        samples: up.samples,
        callers: up.into_nodes(symbols),
        callees: down.into_nodes(symbols),
    })
}
