//! Immediate dominators of a graph from one root: Lengauer–Tarjan (the simple version, with
//! path compression), iterative throughout — no recursion, so no stack limit on deep chains —
//! in arrays of `u32` indexed by DFS number (about 28 bytes a node plus 4 an edge).

/// A node no DFS from the root reached, or the root's own dominator.
pub(crate) const NONE: u32 = u32::MAX;

/// Immediate dominators of a graph given as adjacency (`offsets.len() == n + 1`).
/// `idom[v]` is `v`'s immediate dominator, [`NONE`] for the root and for unreachable nodes.
pub(crate) fn immediate_dominators(offsets: &[u64], edges: &[u32], root: u32) -> Vec<u32> {
    let n = offsets.len().saturating_sub(1);
    let mut idom_out = vec![NONE; n];
    if (root as usize) >= n {
        return idom_out;
    }
    let succ = |v: u32| -> &[u32] {
        let s = offsets[v as usize] as usize;
        let e = offsets[v as usize + 1] as usize;
        &edges[s..e]
    };
    // 1. Iterative DFS: preorder numbers, vertex by number, DFS-tree parents (by number).
    let mut dfn = vec![NONE; n];
    let mut vertex: Vec<u32> = Vec::new();
    let mut parent: Vec<u32> = Vec::new();
    let mut stack: Vec<(u32, u32)> = vec![(root, NONE)];
    while let Some((v, p)) = stack.pop() {
        if dfn[v as usize] != NONE {
            continue;
        }
        dfn[v as usize] = vertex.len() as u32;
        vertex.push(v);
        parent.push(p);
        let me = dfn[v as usize];
        // Reverse so the first child is visited first (any order is correct).
        for &w in succ(v).iter().rev() {
            if dfn[w as usize] == NONE {
                stack.push((w, me));
            }
        }
    }
    drop(stack);
    let m = vertex.len();
    // 2. Predecessors among reached nodes, by DFS number.
    let mut pred_start = vec![0u64; m + 1];
    for (i, &v) in vertex.iter().enumerate() {
        let _ = i;
        for &w in succ(v) {
            let dw = dfn[w as usize];
            if dw != NONE {
                pred_start[dw as usize + 1] += 1;
            }
        }
    }
    for i in 0..m {
        pred_start[i + 1] += pred_start[i];
    }
    let mut fill = pred_start.clone();
    let mut preds = vec![0u32; pred_start[m] as usize];
    for (dv, &v) in vertex.iter().enumerate() {
        for &w in succ(v) {
            let dw = dfn[w as usize];
            if dw != NONE {
                preds[fill[dw as usize] as usize] = dv as u32;
                fill[dw as usize] += 1;
            }
        }
    }
    drop(fill);
    // 3. Semidominators and a first dominator guess, in reverse preorder.
    let mut semi: Vec<u32> = (0..m as u32).collect();
    let mut label: Vec<u32> = (0..m as u32).collect();
    let mut ancestor = vec![NONE; m];
    let mut idom = vec![NONE; m];
    let mut bucket_head = vec![NONE; m];
    let mut bucket_next = vec![NONE; m];
    let mut path: Vec<u32> = Vec::new();
    for w in (1..m as u32).rev() {
        let (s, e) = (
            pred_start[w as usize] as usize,
            pred_start[w as usize + 1] as usize,
        );
        for &v in &preds[s..e] {
            let u = eval(v, &mut ancestor, &mut label, &semi, &mut path);
            if semi[u as usize] < semi[w as usize] {
                semi[w as usize] = semi[u as usize];
            }
        }
        let sw = semi[w as usize] as usize;
        bucket_next[w as usize] = bucket_head[sw];
        bucket_head[sw] = w;
        let p = parent[w as usize];
        ancestor[w as usize] = p;
        let mut v = bucket_head[p as usize];
        bucket_head[p as usize] = NONE;
        while v != NONE {
            let next = bucket_next[v as usize];
            let u = eval(v, &mut ancestor, &mut label, &semi, &mut path);
            idom[v as usize] = if semi[u as usize] < semi[v as usize] {
                u
            } else {
                p
            };
            v = next;
        }
    }
    // 4. Fix the guesses in preorder.
    for w in 1..m {
        if idom[w] != semi[w] {
            idom[w] = idom[idom[w] as usize];
        }
    }
    for w in 1..m {
        idom_out[vertex[w] as usize] = vertex[idom[w] as usize];
    }
    idom_out
}

/// The vertex of least semidominator on the compressed ancestor path of `v`.
fn eval(v: u32, ancestor: &mut [u32], label: &mut [u32], semi: &[u32], path: &mut Vec<u32>) -> u32 {
    if ancestor[v as usize] == NONE {
        return v;
    }
    // Compress: collect the path up to the node whose ancestor is a tree root.
    path.clear();
    let mut x = v;
    while ancestor[ancestor[x as usize] as usize] != NONE {
        path.push(x);
        x = ancestor[x as usize];
    }
    // From the top down, each node takes the better label of its ancestor.
    while let Some(y) = path.pop() {
        let a = ancestor[y as usize] as usize;
        if semi[label[a] as usize] < semi[label[y as usize] as usize] {
            label[y as usize] = label[a];
        }
        ancestor[y as usize] = ancestor[a];
    }
    label[v as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adj(n: usize, e: &[(u32, u32)]) -> (Vec<u64>, Vec<u32>) {
        let mut lists = vec![Vec::new(); n];
        for &(a, b) in e {
            lists[a as usize].push(b);
        }
        let mut off = vec![0u64];
        let mut edges = Vec::new();
        for l in lists {
            edges.extend(l);
            off.push(edges.len() as u64);
        }
        (off, edges)
    }

    /// Dominators by definition: d dominates v iff v is unreachable from root without d.
    fn brute(n: usize, e: &[(u32, u32)], root: u32) -> Vec<u32> {
        let reach = |skip: u32| {
            let mut seen = vec![false; n];
            let mut st = vec![root];
            if root == skip {
                return seen;
            }
            seen[root as usize] = true;
            while let Some(v) = st.pop() {
                for &(a, b) in e {
                    if a == v && b != skip && !seen[b as usize] {
                        seen[b as usize] = true;
                        st.push(b);
                    }
                }
            }
            seen
        };
        let all = reach(NONE);
        let doms: Vec<Vec<bool>> = (0..n as u32)
            .map(|d| {
                let r = reach(d);
                (0..n).map(|v| all[v] && !r[v]).collect()
            })
            .collect();
        // idom(v): the strict dominator of v dominated by every other strict dominator.
        (0..n)
            .map(|v| {
                if !all[v] || v as u32 == root {
                    return NONE;
                }
                let strict: Vec<usize> = (0..n).filter(|&d| d != v && doms[d][v]).collect();
                strict
                    .iter()
                    .copied()
                    .find(|&d| strict.iter().all(|&o| o == d || doms[o][d]))
                    .map_or(NONE, |d| d as u32)
            })
            .collect()
    }

    #[test]
    fn the_classic_example() {
        // Lengauer and Tarjan's figure (R=0, A..L = 1..12).
        let e = [
            (0, 1),
            (0, 2),
            (0, 3),
            (1, 4),
            (2, 1),
            (2, 4),
            (2, 5),
            (3, 6),
            (3, 7),
            (4, 12),
            (5, 8),
            (6, 9),
            (7, 9),
            (7, 10),
            (8, 5),
            (8, 11),
            (9, 11),
            (10, 9),
            (11, 0),
            (11, 9),
            (12, 8),
        ];
        let (o, ed) = adj(13, &e);
        let got = immediate_dominators(&o, &ed, 0);
        assert_eq!(got, brute(13, &e, 0));
        assert_eq!(got[11], 0); // I is dominated only by R
        assert_eq!(got[9], 0);
        assert_eq!(got[10], 7); // K by G
    }

    #[test]
    fn random_graphs_match_the_definition() {
        let mut seed = 12345u64;
        let mut rnd = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as u32
        };
        for _ in 0..300 {
            let n = 2 + rnd(14) as usize;
            let edges: Vec<(u32, u32)> = (0..rnd(40))
                .map(|_| (rnd(n as u64), rnd(n as u64)))
                .collect();
            let (o, ed) = adj(n, &edges);
            assert_eq!(
                immediate_dominators(&o, &ed, 0),
                brute(n, &edges, 0),
                "{edges:?}"
            );
        }
    }

    #[test]
    fn a_long_chain_needs_no_recursion() {
        let n = 1_000_000u32;
        let e: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let (o, ed) = adj(n as usize, &e);
        let d = immediate_dominators(&o, &ed, 0);
        assert_eq!(d[(n - 1) as usize], n - 2);
    }
}
