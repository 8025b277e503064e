//! The heap pages on a hand-made snapshot: their rows, their bounds and their escaping.

use super::*;
use gcdump::GraphBuilder;

/// roots → [static var P.Cache] → Holder(100) → Item<int>(10), Item<int>(20), ...; an
/// unreachable Item<int>(7).
fn snapshot(items: &[u32]) -> HeapModel {
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let st = g.add_type("[static var P.Cache]", "");
    let holder = g.add_type("Holder", "");
    let item = g.add_type("Item<int>", "");
    let children: Vec<u32> = (0..items.len() as u32).map(|i| 3 + i).collect();
    g.add_node(roots, 0, 0, &[1]);
    g.add_node(st, 0, 0, &[2]);
    g.add_node(holder, 100, 0x100, &children);
    for (i, &size) in items.iter().enumerate() {
        g.add_node(item, size, 0x200 + i as u64 * 0x10, &[]);
    }
    g.add_node(item, 7, 0x900, &[]);
    g.set_root(0);
    HeapModel::new(g.finish().unwrap())
}

fn page(m: &HeapModel, o: &Options) -> String {
    let mut out = Vec::new();
    write(m, "snap <1>.gcdump", o, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_page_holds_totals_types_roots_paths_and_the_icicle() {
    let m = snapshot(&[10, 20]);
    let h = page(&m, &Options::default());
    assert!(h.starts_with("<!doctype html>"), "{}", &h[..80]);
    assert!(h.contains("<title>snap &lt;1&gt;.gcdump</title>"));
    assert!(h.contains("<tr><td>objects</td><td>4</td></tr>"), "{h}");
    assert!(h.contains("<tr><td>unreachable objects</td><td>1</td></tr>"));
    // Holder retains itself and both items: 130 bytes, first by retained bytes.
    assert!(
        h.contains("<tr><td class=n data-v=130>130 B</td><td class=n data-v=100>100 B</td><td class=n data-v=1>1</td><td>Holder</td></tr>"),
        "{h}"
    );
    assert!(h.contains("<td>Item&lt;int&gt;</td>"));
    assert!(h.contains("<tr><td>static</td><td class=n data-v=1>1</td><td class=n data-v=1>1</td><td class=n data-v=130>130 B</td>"), "{h}");
    assert!(
        h.contains("<td>[static var P.Cache] → Holder → Item&lt;int&gt;</td>"),
        "{h}"
    );
    assert!(h.contains("<iframe id=icicle"));
    assert!(h.contains("all roots: 130 B retained"));
    assert!(h.trim_end().ends_with("</body></html>"));
}

#[test]
fn tables_and_the_icicle_are_bounded() {
    // 2 000 items of 2 000 types under one holder each.
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let st = g.add_type("[static var P.Cache]", "");
    let n = 2000u32;
    let holders: Vec<u32> = (0..n).map(|i| 2 + i).collect();
    g.add_node(roots, 0, 0, &[1]);
    g.add_node(st, 0, 0, &holders);
    for i in 0..n {
        let t = g.add_type(&format!("H{i}"), "");
        g.add_node(t, 24 + i, 0x1000 + u64::from(i) * 0x100, &[2 + n + i]);
    }
    for i in 0..n {
        let t = g.add_type(&format!("I{i}"), "");
        g.add_node(t, 16, 0x100_0000 + u64::from(i) * 0x100, &[]);
    }
    g.set_root(0);
    let m = HeapModel::new(g.finish().unwrap());
    let o = Options {
        types: 50,
        budget: 100,
        ..Options::default()
    };
    let h = page(&m, &o);
    let type_rows = h
        .split("id=types-table")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap()
        .matches("<tr>")
        .count();
    assert_eq!(type_rows, 51);
    assert!(h.contains("3950 more types"), "{}", h.len());
    assert!(h.contains("[other: "));
    let all = page(
        &m,
        &Options {
            budget: 100_000,
            types: 100_000,
            ..Options::default()
        },
    );
    assert!(h.len() * 3 < all.len(), "{} {}", h.len(), all.len());
}

#[test]
fn the_diff_page_names_what_grew_and_what_holds_it() {
    let (old, new) = (snapshot(&[10]), snapshot(&[10, 20, 30]));
    let mut out = Vec::new();
    write_diff(&old, &new, "a → b", &Options::default(), &mut out).unwrap();
    let h = String::from_utf8(out).unwrap();
    assert!(
        h.contains("Grew most: <b>Item&lt;int&gt;</b> (+2 objects, +50 B)."),
        "{h}"
    );
    assert!(h.contains("<tr class=grew><td class=n data-v=2>2</td><td class=n data-v=4>4</td><td class=n data-v=2>+2</td><td class=n data-v=17>17 B</td><td class=n data-v=67>67 B</td><td class=n data-v=50>+50 B</td><td>Item&lt;int&gt;</td></tr>"), "{h}");
    assert!(h.contains("<td>[static var P.Cache] → Holder → Item&lt;int&gt;</td>"));
    let mut out = Vec::new();
    write_diff(&old, &old, "same", &Options::default(), &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("No type grew."));
}
