//! A heap snapshot as weighted stacks for the stack writers (folded stacks, flame graph,
//! speedscope): one stack per path of the dominator tree folded by type
//! ([`RetentionTree`]), `root kind; root name; type; ...`, weighing the own bytes of the
//! objects on it in [`crate::stack_unit::StackUnit::RetainedBytes`], so that a frame's
//! total is the retained bytes of the objects it stands for. [`stacks`] and [`pictured`]
//! bound them for a file and a picture.

use std::collections::BinaryHeap;
use std::sync::Arc;

use clrspy_analysis::heap::retention::RetentionTree;

use crate::WeightedStack;

/// The paths with objects of their own, heaviest first, at most `budget` of them (the
/// heaviest; what the others weigh goes to `[other: N paths]` lines under the paths shown, so
/// the weights still sum to the reachable heap's bytes and every shown frame's total is
/// exact). A heap of random types has about one path per object: the budget bounds the file.
pub(crate) fn stacks(tree: &RetentionTree, budget: usize) -> Vec<WeightedStack> {
    pictured(tree, usize::MAX, budget)
}

/// At most `budget` paths for a picture (an icicle, a flame graph): paths are opened
/// heaviest first, each showing its `width` heaviest paths under it; what a shown path does
/// not open weighs on it as `[other: N paths]` (so totals stay exact).
pub(crate) fn pictured(tree: &RetentionTree, width: usize, budget: usize) -> Vec<WeightedStack> {
    let n = tree.nodes.len();
    if n == 0 {
        return Vec::new();
    }
    // The paths under each path, as offsets and a list.
    let mut start = vec![0u32; n + 1];
    for node in &tree.nodes {
        if let Some(p) = node.parent {
            start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut kids = vec![0u32; start[n] as usize];
    for (i, node) in tree.nodes.iter().enumerate() {
        if let Some(p) = node.parent {
            kids[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
    drop(fill);
    let children = |p: u32| &kids[start[p as usize] as usize..start[p as usize + 1] as usize];
    let mut shown = vec![false; n];
    let mut open: BinaryHeap<(u64, u32)> = BinaryHeap::new();
    shown[0] = true;
    open.push((tree.nodes[0].total_bytes, 0));
    let mut count = 1;
    while let Some((_, p)) = open.pop() {
        let mut sorted = children(p).to_vec();
        sorted.sort_by_key(|&k| std::cmp::Reverse(tree.nodes[k as usize].total_bytes));
        for &k in sorted.iter().take(width) {
            if count >= budget {
                break;
            }
            shown[k as usize] = true;
            count += 1;
            open.push((tree.nodes[k as usize].total_bytes, k));
        }
        if count >= budget {
            break;
        }
    }
    let mut out = Vec::new();
    for p in 0..n as u32 {
        if !shown[p as usize] {
            continue;
        }
        let node = &tree.nodes[p as usize];
        let frames: Vec<Arc<str>> = tree.steps(p).into_iter().map(Arc::from).collect();
        if node.self_bytes > 0 && p != 0 {
            out.push(WeightedStack {
                thread: 0,
                frames: frames.clone(),
                weight: node.self_bytes as f64,
            });
        }
        let (mut hidden, mut weight) = (0usize, 0u64);
        for &k in children(p).iter().filter(|&&k| !shown[k as usize]) {
            hidden += 1;
            weight += tree.nodes[k as usize].total_bytes;
        }
        if weight > 0 {
            let mut f = frames;
            f.push(Arc::from(format!("[other: {hidden} paths]")));
            out.push(WeightedStack {
                thread: 0,
                frames: f,
                weight: weight as f64,
            });
        }
    }
    sort(&mut out);
    out
}

fn sort(v: &mut [WeightedStack]) {
    v.sort_by(|x, y| {
        y.weight
            .total_cmp(&x.weight)
            .then_with(|| x.frames.cmp(&y.frames))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folded;
    use crate::stack_unit::StackUnit;
    use clrspy_analysis::heap::HeapModel;
    use gcdump::GraphBuilder;

    /// [static var S.Items] → holders, each holding a chain of items (as examples/synth in
    /// crates/gcdump, smaller); [local vars] → a Buffer shared with the first holder.
    fn synth(groups: u32, per: u32) -> HeapModel {
        let mut b = GraphBuilder::new();
        let item = b.add_type("Synth.Item", "");
        let holder = b.add_type("Synth.Holder", "");
        let buffer = b.add_type("Synth.Buffer", "");
        let st = b.add_type("[static var Synth.Cache.Items]", "");
        let lv = b.add_type("[local vars]", "");
        let roots = b.add_type("[.NET Roots]", "");
        let n = groups * per;
        for i in 0..n {
            let head = i - i % per;
            if (i + 1) % per != 0 {
                b.push_child(i + 1);
            }
            if i != head {
                b.push_child(head);
            }
            b.end_node(item, 24 + (i % 4) * 8, 0x1000 + u64::from(i) * 64);
        }
        let buf = n + groups;
        for g in 0..groups {
            b.push_child(g * per);
            if g == 0 {
                b.push_child(buf);
            }
            b.end_node(holder, 32, 0x90_0000 + u64::from(g) * 64);
        }
        b.add_node(buffer, 1000, 0xA0_0000, &[]);
        let kids: Vec<u32> = (n..n + groups).collect();
        let s = b.add_node(st, 0, 0, &kids);
        let l = b.add_node(lv, 0, 0, &[buf]);
        let r = b.add_node(roots, 0, 0, &[s, l]);
        b.set_root(r);
        HeapModel::new(b.finish().unwrap())
    }

    /// Folded lines parsed back: (frames, weight).
    fn parse(text: &str) -> Vec<(Vec<String>, u64)> {
        text.lines()
            .map(|l| {
                let (stack, w) = l.rsplit_once(' ').unwrap();
                (
                    stack.split(';').map(String::from).collect(),
                    w.parse().unwrap(),
                )
            })
            .collect()
    }

    fn inclusive(lines: &[(Vec<String>, u64)], prefix: &[&str]) -> u64 {
        lines
            .iter()
            .filter(|(f, _)| f.len() >= prefix.len() && f.iter().zip(prefix).all(|(a, b)| a == b))
            .map(|(_, w)| w)
            .sum()
    }

    #[test]
    fn folded_totals_are_the_model_s_retained_sizes() {
        let (groups, per) = (7u32, 50u32);
        let m = synth(groups, per);
        let tree = RetentionTree::new(&m);
        let mut out = Vec::new();
        folded::write(
            &mut out,
            &stacks(&tree, usize::MAX),
            StackUnit::RetainedBytes,
            &|_| String::new(),
            false,
        )
        .unwrap();
        let lines = parse(&String::from_utf8(out).unwrap());
        let total: u64 = lines.iter().map(|(_, w)| w).sum();
        let root = m.graph().root();
        assert_eq!(total, m.retained(root));
        assert_eq!(total, m.bytes() - m.unreachable_objects());
        let st = ["static", "[static var Synth.Cache.Items]"];
        let static_node = m.graph().children(root)[0];
        // The static retains its holders; the buffer the local reaches too is its as well (the
        // first root to reach it): what `clrspy heap` counts as its held bytes.
        let held = m
            .roots()
            .iter()
            .find(|r| r.name == st[1])
            .unwrap()
            .held_bytes;
        assert_eq!(inclusive(&lines, &st), held);
        assert_eq!(held, m.retained(static_node) + 1000);
        // The holders (the buffer is shared with the local, so no holder retains it; it is
        // the static's, the first root to reach it).
        let holders: u64 = (groups * per..groups * per + groups)
            .map(|h| m.retained(h))
            .sum();
        assert_eq!(inclusive(&lines, &[st[0], st[1], "Synth.Holder"]), holders);
        // A chain of items is one frame under its holder, retained by the group's head.
        let heads: u64 = (0..groups).map(|g| m.retained(g * per)).sum();
        assert_eq!(
            inclusive(&lines, &[st[0], st[1], "Synth.Holder", "Synth.Item"]),
            heads
        );
        assert_eq!(
            lines
                .iter()
                .find(|(f, _)| f.last().map(String::as_str) == Some("Synth.Buffer")),
            Some(&(
                vec![st[0].into(), st[1].into(), "Synth.Buffer".into()],
                1000
            ))
        );
    }

    #[test]
    fn a_picture_keeps_the_totals_within_its_budget() {
        let m = synth(5, 10);
        let tree = RetentionTree::new(&m);
        let all = stacks(&tree, usize::MAX);
        let total: f64 = all.iter().map(|s| s.weight).sum();
        for (width, budget) in [(1, 3), (2, 4), (10, 100)] {
            let p = pictured(&tree, width, budget);
            assert_eq!(
                p.iter().map(|s| s.weight).sum::<f64>(),
                total,
                "{width} {budget}"
            );
            let distinct: std::collections::BTreeSet<&[Arc<str>]> =
                p.iter().map(|s| &s.frames[..]).collect();
            assert!(
                distinct.len() <= budget * 2,
                "{width} {budget}: {}",
                distinct.len()
            );
        }
        let narrow = pictured(&tree, 1, 3);
        assert!(
            narrow
                .iter()
                .any(|s| s.frames.last().is_some_and(|f| f.starts_with("[other: "))),
            "{narrow:?}"
        );
        assert_eq!(pictured(&tree, 10, 100), all);
        let few = stacks(&tree, 3);
        assert_eq!(few.iter().map(|s| s.weight).sum::<f64>(), total);
        assert!(few.len() < all.len() && few.len() <= 3 * 2, "{few:?}");
    }
}
