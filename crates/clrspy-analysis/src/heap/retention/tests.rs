//! The folded dominator tree against the model's retained sizes, on hand-made and random
//! graphs.

use super::*;
use gcdump::GraphBuilder;

fn find(t: &RetentionTree, steps: &[&str]) -> Option<PathNode> {
    (0..t.nodes.len() as u32)
        .find(|&p| t.steps(p) == steps)
        .map(|p| t.nodes[p as usize])
}

/// roots → [static var P.Cache] → holder(100) → list(40) → a(10), b(20 000, a size bucket of
/// Item); a → b; [local vars] → c(30) → shared(5); holder → shared; garbage(7).
fn sample() -> HeapModel {
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let st = g.add_type("[static var P.Cache]", "");
    let lv = g.add_type("[local vars]", "");
    let holder = g.add_type("Holder", "");
    let list = g.add_type("List<Item>", "");
    let item = g.add_type("Item", "");
    let big = g.add_type("Item (Bytes > 10K)", "");
    let shared = g.add_type("Shared", "");
    let c = g.add_type("C", "");
    g.add_node(roots, 0, 0, &[1, 2]); // 0
    g.add_node(st, 0, 0, &[3]); // 1
    g.add_node(lv, 0, 0, &[7]); // 2
    g.add_node(holder, 100, 0x100, &[4, 8]); // 3
    g.add_node(list, 40, 0x200, &[5, 6]); // 4
    g.add_node(item, 10, 0x300, &[6]); // 5
    g.add_node(big, 20_000, 0x400, &[]); // 6
    g.add_node(c, 30, 0x500, &[8]); // 7
    g.add_node(shared, 5, 0x600, &[]); // 8
    g.add_node(item, 7, 0x700, &[]); // 9 garbage
    g.set_root(0);
    HeapModel::new(g.finish().unwrap())
}

#[test]
fn paths_total_the_retained_bytes() {
    let m = sample();
    let t = RetentionTree::new(&m);
    assert_eq!(t.total_bytes(), m.retained(0));
    assert_eq!(t.total_bytes(), m.bytes() - 7);
    let holder = find(&t, &["static", "[static var P.Cache]", "Holder"]).unwrap();
    assert_eq!(
        (holder.total_bytes, holder.self_bytes),
        (m.retained(3), 100)
    );
    let list = find(
        &t,
        &["static", "[static var P.Cache]", "Holder", "List<Item>"],
    )
    .unwrap();
    assert_eq!(list.total_bytes, m.retained(4));
    // a and b (a size bucket of Item) are one path, under the list that dominates both.
    let items = find(
        &t,
        &[
            "static",
            "[static var P.Cache]",
            "Holder",
            "List<Item>",
            "Item",
        ],
    )
    .unwrap();
    assert_eq!((items.objects, items.self_bytes), (2, 20_010));
    assert_eq!(
        find(&t, &["stack", "[local vars]", "C"])
            .unwrap()
            .total_bytes,
        m.retained(7)
    );
    // Held by a static and a local: dominated by the top, put under the static (statics
    // first, as held bytes count).
    assert_eq!(m.immediate_dominator(8), Some(0));
    let shared = find(&t, &["static", "[static var P.Cache]", "Shared"]).unwrap();
    assert_eq!(shared.total_bytes, 5);
    assert!(find(&t, &["stack", "[local vars]", "Shared"]).is_none());
    let kinds: u64 = t
        .nodes
        .iter()
        .filter(|n| n.parent == Some(0))
        .map(|n| n.total_bytes)
        .sum();
    assert_eq!(kinds, m.retained(0));
}

#[test]
fn a_run_of_one_type_is_one_step_and_deep_paths_stop() {
    // [static var L.Head] → Node ×300 (a linked list) → Leaf(8) at its end; and a chain of
    // alternating types A, B deeper than MAX_DEPTH.
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let st = g.add_type("[static var L.Head]", "");
    let node = g.add_type("Node", "");
    let leaf = g.add_type("Leaf", "");
    let a = g.add_type("A", "");
    let b = g.add_type("B", "");
    let len = 300u32;
    let alt = MAX_DEPTH + 50;
    let first_alt = 3 + len;
    g.add_node(roots, 0, 0, &[1]); // 0
    g.add_node(st, 0, 0, &[2, first_alt]); // 1
    for i in 0..len {
        g.add_node(node, 24, 0x1000 + u64::from(i) * 32, &[3 + i]);
    }
    g.add_node(leaf, 8, 0x9000, &[]); // 2 + len
    for i in 0..alt {
        let next: &[u32] = if i + 1 < alt {
            &[first_alt + i + 1]
        } else {
            &[]
        };
        g.add_node(
            if i % 2 == 0 { a } else { b },
            16,
            0x10_0000 + u64::from(i) * 16,
            next,
        );
    }
    g.set_root(0);
    let m = HeapModel::new(g.finish().unwrap());
    let t = RetentionTree::new(&m);
    let list = find(&t, &["static", "[static var L.Head]", "Node"]).unwrap();
    assert_eq!(
        (list.objects, list.self_bytes),
        (u64::from(len), u64::from(len) * 24)
    );
    assert_eq!(list.total_bytes, m.retained(2));
    let l = find(&t, &["static", "[static var L.Head]", "Node", "Leaf"]).unwrap();
    assert_eq!(l.total_bytes, 8);
    let deepest = (0..t.nodes.len() as u32)
        .map(|p| t.steps(p).len())
        .max()
        .unwrap();
    assert_eq!(deepest as u32, MAX_DEPTH + 3);
    let deeper: Vec<u32> = (0..t.nodes.len() as u32)
        .filter(|&p| t.steps(p).last() == Some(&DEEPER))
        .collect();
    assert_eq!(deeper.len(), 1);
    let d = t.nodes[deeper[0] as usize];
    assert_eq!(d.objects, u64::from(alt - MAX_DEPTH));
    assert_eq!(t.total_bytes(), m.retained(0));
}

/// A pseudo-random graph where every object has a type of its own, so that every path is
/// one object's and its total must be that object's retained size.
fn random_graph(seed: u64, objects: u32) -> HeapModel {
    let mut x = seed;
    let mut next = move |n: u32| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % u64::from(n)) as u32
    };
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let st = g.add_type("[static var R.S]", "");
    let lv = g.add_type("[local vars]", "");
    let ty: Vec<u32> = (0..objects)
        .map(|i| g.add_type(&format!("T{i}"), ""))
        .collect();
    g.add_node(roots, 0, 0, &[1, 2]);
    let st_kids: Vec<u32> = (0..3).map(|_| 3 + next(objects)).collect();
    let lv_kids: Vec<u32> = (0..3).map(|_| 3 + next(objects)).collect();
    g.add_node(st, 0, 0, &st_kids);
    g.add_node(lv, 0, 0, &lv_kids);
    for (i, &t) in ty.iter().enumerate() {
        let k = next(4);
        let kids: Vec<u32> = (0..k).map(|_| 3 + next(objects)).collect();
        g.add_node(t, 8 + next(100), 0x1000 + i as u64 * 0x100, &kids);
    }
    g.set_root(0);
    HeapModel::new(g.finish().unwrap())
}

/// Object `v`'s path, walked up the model's immediate dominators; the objects a pseudo-node
/// dominates go under the static when it reaches them (`from_static`), else the local.
fn path_of(m: &HeapModel, v: u32, from_static: &[bool]) -> Vec<String> {
    let g = m.graph();
    let mut steps = Vec::new();
    let mut at = v;
    loop {
        steps.push(g.type_name(g.node_type(at)).to_string());
        let d = m.immediate_dominator(at).unwrap();
        if m.is_pseudo(d) {
            if from_static[at as usize] {
                steps.extend(["[static var R.S]".to_string(), "static".into()]);
            } else {
                steps.extend(["[local vars]".to_string(), "stack".into()]);
            }
            break;
        }
        at = d;
    }
    steps.reverse();
    steps
}

/// What node 1 (the static) reaches.
fn reached_from_static(m: &HeapModel) -> Vec<bool> {
    let g = m.graph();
    let mut seen = vec![false; g.node_count()];
    let mut todo = vec![1u32];
    while let Some(x) = todo.pop() {
        for &c in g.children(x) {
            if !seen[c as usize] {
                seen[c as usize] = true;
                todo.push(c);
            }
        }
    }
    seen
}

#[test]
fn on_random_graphs_every_path_totals_its_object_s_retained_size() {
    for seed in 1..40u64 {
        let m = random_graph(seed * 7919, 60);
        let t = RetentionTree::new(&m);
        assert_eq!(t.total_bytes(), m.retained(0), "seed {seed}");
        let by_steps: FxHashMap<Vec<&str>, PathNode> = (0..t.nodes.len() as u32)
            .map(|p| (t.steps(p), t.nodes[p as usize]))
            .collect();
        let from_static = reached_from_static(&m);
        let mut checked = 0;
        for v in 3..m.graph().node_count() as u32 {
            if m.immediate_dominator(v).is_none() {
                continue;
            }
            let steps = path_of(&m, v, &from_static);
            let key: Vec<&str> = steps.iter().map(String::as_str).collect();
            let node = by_steps
                .get(&key)
                .unwrap_or_else(|| panic!("seed {seed}: {key:?}"));
            // An object the static and the local share is dominated by the top: it goes
            // under the static.
            assert_eq!(node.total_bytes, m.retained(v), "seed {seed}: {key:?}");
            assert_eq!(node.objects, 1);
            checked += 1;
        }
        assert!(checked > 0);
    }
}

#[test]
fn kind_names_are_the_json_views_names() {
    use RootKind::*;
    for k in [
        Stack,
        StrongHandle,
        PinningHandle,
        WeakHandle,
        Finalizer,
        Static,
        ThreadStatic,
        DependentHandle,
        Com,
        Other,
    ] {
        assert_eq!(serde_json::to_value(k).unwrap(), kind_name(k));
    }
}
