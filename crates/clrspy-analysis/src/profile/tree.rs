//! The top-down call tree of a stack profile.

use rustc_hash::FxHashMap;

use crate::symbols::{FrameId, Symbols};

/// A call tree node: a frame, its inclusive and exclusive weight, its callees.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TreeNode {
    /// Frame name.
    pub name: String,
    /// Weight including callees.
    pub inclusive: f64,
    /// Weight of the frame itself.
    pub exclusive: f64,
    /// Callees, heaviest first.
    pub children: Vec<TreeNode>,
}

/// Builds the top-down call tree of weighted leaf-first stacks (root = all threads).
pub(super) fn build<'a>(
    rows: impl Iterator<Item = (&'a [FrameId], f64)>,
    symbols: &Symbols,
) -> TreeNode {
    #[derive(Default)]
    struct N {
        incl: f64,
        excl: f64,
        kids: FxHashMap<FrameId, N>,
    }
    let mut root = N::default();
    for (frames, w) in rows {
        if w <= 0.0 {
            continue;
        }
        root.incl += w;
        let mut node = &mut root;
        for &f in frames.iter().rev() {
            node = node.kids.entry(f).or_default();
            node.incl += w;
        }
        node.excl += w;
    }
    fn convert(name: String, n: N, symbols: &Symbols) -> TreeNode {
        let mut children: Vec<TreeNode> = n
            .kids
            .into_iter()
            .map(|(f, k)| convert(symbols.frame(f).name.clone(), k, symbols))
            .collect();
        children.sort_by(|a, b| {
            b.inclusive
                .total_cmp(&a.inclusive)
                .then_with(|| a.name.cmp(&b.name))
        });
        TreeNode {
            name,
            inclusive: n.incl,
            exclusive: n.excl,
            children,
        }
    }
    convert("[all threads]".into(), root, symbols)
}
