//! The heap model on hand-made graphs with known dominators and retained sizes.

use super::*;
use gcdump::GraphBuilder;

/// roots → [static var P.Cache] → holder(100) → list(40) → a(10), b(20)
///       → [local vars] → c(30) → shared(5); holder → shared as well (so neither owns it)
///       a → b (b stays dominated by list)
/// plus an unreachable garbage(7).
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
    g.add_node(item, 10, 0x300, &[6]); // 5 a
    g.add_node(big, 20_000, 0x400, &[]); // 6 b
    g.add_node(c, 30, 0x500, &[8]); // 7
    g.add_node(shared, 5, 0x600, &[]); // 8
    g.add_node(item, 7, 0x700, &[]); // 9 garbage
    g.set_root(0);
    HeapModel::new(g.finish().unwrap())
}

#[test]
fn dominators_and_retained_sizes() {
    let m = sample();
    assert_eq!(m.immediate_dominator(4), Some(3));
    assert_eq!(m.immediate_dominator(6), Some(4));
    assert_eq!(m.immediate_dominator(8), Some(0)); // shared by the static and the local
    assert_eq!(m.retained(4), 40 + 10 + 20_000);
    assert_eq!(m.retained(3), 100 + m.retained(4));
    assert_eq!(m.retained(7), 30);
    assert_eq!(m.retained(0), 100 + 40 + 10 + 20_000 + 30 + 5);
    assert_eq!(m.retained(9), 0);
    assert_eq!(m.unreachable_objects(), 1);
}

#[test]
fn types_merge_size_buckets_and_do_not_count_twice() {
    let m = sample();
    assert_eq!(m.objects(), 7);
    assert_eq!(m.bytes(), 100 + 40 + 10 + 20_000 + 30 + 5 + 7);
    let item = m.types().iter().find(|t| t.name == "Item").unwrap();
    assert_eq!((item.count, item.bytes), (3, 10 + 20_000 + 7));
    // a retains only itself (b is dominated by the list); b itself; garbage nothing.
    assert_eq!(item.retained_bytes, 10 + 20_000);
    let holder = m.types().iter().find(|t| t.name == "Holder").unwrap();
    assert_eq!(holder.retained_bytes, m.retained(3));
    // By retained bytes: the holder keeps the list and its items.
    assert_eq!(m.types()[0].name, "Holder");
}

#[test]
fn roots_by_kind_with_what_they_retain() {
    let m = sample();
    let r: Vec<(RootKind, &str, u64)> = m
        .roots()
        .iter()
        .map(|r| (r.kind, r.name.as_str(), r.retained_bytes))
        .collect();
    assert_eq!(
        r,
        [
            (
                RootKind::Static,
                "[static var P.Cache]",
                100 + 40 + 10 + 20_000
            ),
            (RootKind::Stack, "[local vars]", 30),
        ]
    );
}

#[test]
fn shortest_paths_name_the_static_field() {
    let m = sample();
    let p = m.paths_to_type("Item", 5);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].objects, 2);
    assert_eq!(
        p[0].steps,
        ["[static var P.Cache]", "Holder", "List<Item>", "Item"]
    );
    assert!(m.paths_to_type("Nope", 5).is_empty());
}

#[test]
fn a_path_starts_at_the_root_the_roots_table_credits() {
    // The list is reached in two steps from the locals (through the runtime's Object[] of
    // statics) and in three from its static: the roots table credits the static, and so does
    // the path, though it is longer.
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let lv = g.add_type("[local vars]", "");
    let statics = g.add_type("[static vars]", "");
    let st = g.add_type("[static var P.Cache]", "");
    let arr = g.add_type("System.Object[]", "");
    let list = g.add_type("List<Item>", "");
    let item = g.add_type("Item", "");
    g.add_node(roots, 0, 0, &[1, 2]); // 0
    g.add_node(lv, 0, 0, &[4]); // 1
    g.add_node(statics, 0, 0, &[3]); // 2
    g.add_node(st, 0, 0, &[5]); // 3
    g.add_node(arr, 32, 0x100, &[5]); // 4
    g.add_node(list, 40, 0x200, &[6]); // 5
    g.add_node(item, 10, 0x300, &[]); // 6
    g.set_root(0);
    let m = HeapModel::new(g.finish().unwrap());
    let credited = m.roots().iter().find(|r| r.held_bytes >= 50).unwrap();
    assert_eq!(credited.name, "[static var P.Cache]");
    let p = m.paths_to_type("Item", 5);
    assert_eq!(
        p[0].steps,
        [
            "[static vars]",
            "[static var P.Cache]",
            "List<Item>",
            "Item"
        ]
    );
    // What only the locals reach keeps its path from them.
    assert_eq!(
        m.paths_to_type("System.Object[]", 5)[0].steps,
        ["[local vars]", "System.Object[]"]
    );
}

#[test]
fn runs_of_one_type_fold() {
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[local vars]", "");
    let node = g.add_type("Node", "");
    g.add_node(roots, 0, 0, &[1]);
    for i in 1..10u32 {
        let kids: Vec<u32> = if i < 9 { vec![i + 1] } else { vec![] };
        g.add_node(node, 24, u64::from(i) * 64, &kids);
    }
    g.set_root(0);
    let m = HeapModel::new(g.finish().unwrap());
    let p = m.paths_to_type("Node", 20);
    // Every node's path is a prefix of the chain (the root itself is not a step).
    assert_eq!(p.len(), 9);
    assert!(p.iter().any(|p| p.steps == ["Node ×9"]));
    // Each node retains the rest of the chain; the type once (the head), not 9 times.
    assert_eq!(m.retained(1), 9 * 24);
    assert_eq!(m.types()[0].retained_bytes, 9 * 24);
}

#[test]
fn diff_sorts_by_growth() {
    let old = sample();
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[local vars]", "");
    let item = g.add_type("Item", "");
    let new_t = g.add_type("Fresh", "");
    g.add_node(roots, 0, 0, &[1, 2, 3]);
    g.add_node(item, 10, 0x10, &[]);
    g.add_node(item, 10, 0x20, &[]);
    g.add_node(new_t, 50, 0x30, &[]);
    g.set_root(0);
    let new = HeapModel::new(g.finish().unwrap());
    let d = diff::diff(&old, &new);
    assert_eq!(d[0].name, "Fresh");
    assert_eq!(
        (d[0].count_old, d[0].count_new, d[0].bytes_delta),
        (0, 1, 50)
    );
    let item = d.iter().find(|t| t.name == "Item").unwrap();
    assert_eq!(
        (item.count_old, item.count_new, item.count_delta),
        (3, 2, -1)
    );
    assert_eq!(item.bytes_delta, 20 - (10 + 20_000 + 7));
}

#[test]
fn type_names_read_like_csharp() {
    use from_trace::display_type_name as d;
    assert_eq!(
        d("System.Collections.Generic.List`1[Leak.Order]"),
        "System.Collections.Generic.List<Leak.Order>"
    );
    assert_eq!(d("Leak.Order[]"), "Leak.Order[]");
    assert_eq!(
        d("System.Collections.Generic.Dictionary`2[System.String,System.Int32[]]"),
        "System.Collections.Generic.Dictionary<System.String,System.Int32[]>"
    );
    assert_eq!(d("System.Int32[,]"), "System.Int32[,]");
}
