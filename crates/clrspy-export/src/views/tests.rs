//! The registry and the heap views on a hand-made snapshot.

use super::*;
use crate::report::TextStyle;
use gcdump::GraphBuilder;

/// roots → [static var P.Cache] → Holder(100) → Item(10), Item(20); an unreachable Item(7).
fn snapshot(items: &[u32]) -> HeapModel {
    let mut g = GraphBuilder::new();
    let roots = g.add_type("[.NET Roots]", "");
    let st = g.add_type("[static var P.Cache]", "");
    let holder = g.add_type("Holder", "");
    let item = g.add_type("Item", "");
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

fn text(v: &Built) -> String {
    let mut out = Vec::new();
    v.write_text(&mut out, &TextStyle::default()).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_view_has_one_name_and_the_trace_reports_come_first() {
    let all = all();
    let names: Vec<_> = all.iter().map(|v| v.name).collect();
    for (i, n) in names.iter().enumerate() {
        assert!(!names[i + 1..].contains(n), "{n} twice");
    }
    assert_eq!(all.len(), ReportKind::ALL.len() + 3);
    for (v, k) in all.iter().zip(ReportKind::ALL) {
        assert_eq!(
            (v.name, v.report(), v.input),
            (k.name(), Some(k), InputKind::Trace)
        );
        assert_eq!(v.needs, Some(k.needs()));
    }
    assert_eq!(
        find("HEAP-DIFF").map(|v| v.input),
        Some(InputKind::HeapDiff)
    );
    assert!(find("nope").is_none());
}

#[test]
fn a_view_refuses_another_input() {
    let m = snapshot(&[10]);
    let e = find("heap-diff")
        .unwrap()
        .build(&Input::Heap(&m), &ViewOptions::default())
        .err()
        .unwrap();
    assert!(e.message.contains("heap-diff"), "{e}");
}

#[test]
fn the_heap_summary_counts_types_roots_and_garbage() {
    let m = snapshot(&[10, 20]);
    let o = ViewOptions {
        type_name: Some("Item".into()),
        ..ViewOptions::default()
    };
    let v = find("heap").unwrap().build(&Input::Heap(&m), &o).unwrap();
    let j = v.json();
    assert_eq!(j["objects"], 4);
    assert_eq!(j["bytes"], 137);
    assert_eq!(j["unreachable_objects"], 1);
    assert_eq!(j["types"][0]["type"], "Holder");
    assert_eq!(j["types"][0]["retained_bytes"], 130);
    assert_eq!(j["type"]["count"], 3);
    let t = text(&v);
    assert!(
        t.starts_with("4 objects, 137 B; 1 unreachable from any root\n"),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "\n{:>14} {:>14} {:>12}  Holder\n",
            "130 B", "100 B", 1
        )),
        "{t}"
    );
}

#[test]
fn a_missing_type_names_the_near_ones() {
    let m = snapshot(&[10]);
    let o = |t: &str| ViewOptions {
        type_name: Some(t.into()),
        ..ViewOptions::default()
    };
    // Part of a name that one type has is that type, as dumpheap -type takes it.
    let v = find("heap-type")
        .unwrap()
        .build(&Input::Heap(&m), &o("Ite"))
        .unwrap();
    assert_eq!(v.json()["type"], "Item");
    // Part of several names: refused, the candidates named.
    let e = find("heap-type")
        .unwrap()
        .build(&Input::Heap(&m), &o("e"))
        .err()
        .unwrap();
    assert!(e.message.contains("types match e"), "{e}");
    assert!(
        e.hint.as_deref().unwrap_or("").contains("Item"),
        "{:?}",
        e.hint
    );
    let e = find("heap-type")
        .unwrap()
        .build(&Input::Heap(&m), &o("Nothing"))
        .err()
        .unwrap();
    assert_eq!(e.message, "no objects of type Nothing in the snapshot");
    assert_eq!(e.hint, None);
    let o = ViewOptions {
        type_name: Some("Item".into()),
        ..ViewOptions::default()
    };
    let v = find("heap-type")
        .unwrap()
        .build(&Input::Heap(&m), &o)
        .unwrap();
    assert!(text(&v).contains("Holder → Item"), "{}", text(&v));
}

#[test]
fn the_diff_says_what_grew_and_who_holds_it() {
    let (old, new) = (snapshot(&[10]), snapshot(&[10, 20, 30]));
    let v = find("heap-diff")
        .unwrap()
        .build(&Input::HeapDiff(&old, &new), &ViewOptions::default())
        .unwrap();
    assert_eq!(v.json()["bytes_new"], 167);
    let t = text(&v);
    assert!(
        t.contains("Grew most: Item (+2 objects, +50 B); in NEW they are held by"),
        "{t}"
    );
    let same = find("heap-diff")
        .unwrap()
        .build(&Input::HeapDiff(&old, &old), &ViewOptions::default())
        .unwrap();
    assert!(text(&same).ends_with("\nNo type grew.\n"));
}

fn file_text(format: Format, input: &Input) -> String {
    let o = FileOptions {
        title: "t".into(),
        html: Default::default(),
    };
    let mut out = Vec::new();
    file(format, input.kind())
        .unwrap()
        .write(input, &o, &mut out)
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_snapshot_converts_to_its_files_and_refuses_the_trace_s() {
    assert_eq!(
        formats(InputKind::Heap),
        vec![
            Format::Folded,
            Format::Flamegraph,
            Format::Speedscope,
            Format::Html
        ]
    );
    assert_eq!(formats(InputKind::HeapDiff), vec![Format::Html]);
    let e = file(Format::Pprof, InputKind::Heap).unwrap_err();
    assert_eq!(
        e.message,
        "a heap snapshot does not convert to pprof: it converts to folded, flamegraph, speedscope, html"
    );
    assert!(file(Format::Folded, InputKind::HeapDiff).is_err());
    let m = snapshot(&[10, 20]);
    // Folded root paths: the holder and the items it retains; the garbage item is no path.
    assert_eq!(
        file_text(Format::Folded, &Input::Heap(&m)),
        "static;[static var P.Cache];Holder 100\nstatic;[static var P.Cache];Holder;Item 30\n"
    );
    let svg = file_text(Format::Flamegraph, &Input::Heap(&m));
    assert!(svg.contains("retained bytes"), "{svg}");
    let ss: serde_json::Value =
        serde_json::from_str(&file_text(Format::Speedscope, &Input::Heap(&m))).unwrap();
    assert_eq!(ss["profiles"][0]["unit"], "bytes");
    assert_eq!(ss["profiles"][0]["endValue"], 130.0);
    assert_eq!(ss["profiles"][0]["name"], "all roots (retained bytes)");
    let old = snapshot(&[10]);
    let h = file_text(Format::Html, &Input::HeapDiff(&old, &m));
    assert!(h.contains("Grew most: <b>Item</b>"), "{h}");
}
