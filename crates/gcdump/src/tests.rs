//! Round trips through the writer and reader, and damaged files.

use crate::wire::{put_compressed, Cursor};
use crate::*;

fn sample(n: u32) -> HeapDump {
    let mut b = GraphBuilder::new();
    let root_t = b.add_type("[.NET Roots]", "");
    let a = b.add_type("Leak.Order", "Leak");
    let s = b.add_type("System.String ü €", "System.Private.CoreLib");
    // Root → holder 1 → all the rest; each node i also refers to i+1 (a chain) and back.
    let mut kids = vec![1];
    kids.truncate(1);
    b.add_node(root_t, 0, 0, &kids);
    for i in 1..n {
        let mut ch = Vec::new();
        if i + 1 < n {
            ch.push(i + 1);
        }
        if i > 2 {
            ch.push(i - 2);
        }
        let t = if i % 3 == 0 { s } else { a };
        b.add_node(t, 24 + (i % 5) * 8, 0x1000 + u64::from(i) * 32, &ch);
    }
    b.set_root(0);
    HeapDump {
        graph: b.finish().unwrap(),
        info: DumpInfo {
            process_name: Some("leak".into()),
            process_id: 42,
            creation_tool: Some("clrspy".into()),
            time_collected_ticks: 638_000_000_000_000_000,
            ..DumpInfo::default()
        },
    }
}

fn same(a: &Graph, b: &Graph) {
    assert_eq!(a.node_count(), b.node_count());
    assert_eq!(a.types(), b.types());
    assert_eq!(a.root(), b.root());
    for i in 0..a.node_count() as u32 {
        assert_eq!(a.node_type(i), b.node_type(i));
        assert_eq!(a.node_size(i), b.node_size(i));
        assert_eq!(a.node_address(i), b.node_address(i));
        assert_eq!(a.children(i), b.children(i));
    }
}

#[test]
fn compressed_ints_round_trip() {
    for v in [
        0,
        1,
        -1,
        63,
        64,
        -64,
        -65,
        8191,
        8192,
        i32::MAX,
        i32::MIN,
        1 << 20,
        -(1 << 27),
    ] {
        let mut buf = Vec::new();
        put_compressed(&mut buf, v);
        assert!(buf.len() <= 5);
        let mut c = Cursor::new(&buf);
        assert_eq!(c.compressed("x").unwrap(), v, "{v}");
        assert_eq!(c.remaining(), 0);
    }
}

#[test]
fn writer_reader_round_trip() {
    let d = sample(500);
    let bytes = write_to_vec(&d).unwrap();
    let back = read(&bytes).unwrap();
    same(&d.graph, &back.graph);
    assert_eq!(back.info, d.info);
    assert!(back.info.warnings.is_empty());
}

#[test]
fn an_empty_graph_round_trips() {
    let b = GraphBuilder::new();
    let d = HeapDump {
        graph: b.finish().unwrap(),
        info: DumpInfo::default(),
    };
    let back = read(&write_to_vec(&d).unwrap()).unwrap();
    assert_eq!(back.graph.node_count(), 0);
}

#[test]
fn the_builder_rejects_dangling_references() {
    let mut b = GraphBuilder::new();
    let t = b.add_type("T", "");
    b.add_node(t, 8, 0, &[5]);
    b.set_root(0);
    let e = b.finish().unwrap_err();
    assert!(e.to_string().contains("reference to node 5"), "{e}");
}

#[test]
fn not_a_gcdump() {
    let e = read(b"Nettrace\0\0\0\0").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::BadHeader { .. }), "{e}");
    assert!(read(&[]).is_err());
}

#[test]
fn every_cut_is_an_error_or_a_whole_graph() {
    let d = sample(60);
    let bytes = write_to_vec(&d).unwrap();
    for cut in 0..bytes.len() {
        match read(&bytes[..cut]) {
            Err(e) => assert!(e.offset <= cut as u64, "cut {cut}: {e}"),
            // Cut after the graph: the graph is whole, the rest is a warning.
            Ok(back) => {
                same(&d.graph, &back.graph);
                // Only the trailer (an end tag, the forward-reference table of one entry and
                // two labels: 17 bytes) may be missing without a warning.
                assert!(
                    !back.info.warnings.is_empty() || cut >= bytes.len() - 17,
                    "cut {cut}"
                );
            }
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let d = sample(80);
    let bytes = write_to_vec(&d).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..bytes.len() {
        for _ in 0..3 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut m = bytes.clone();
            m[i] ^= (seed as u8) | 1;
            if let Ok(g) = read(&m) {
                // Whatever was read is consistent.
                let g = g.graph;
                for n in 0..g.node_count() as u32 {
                    assert!((g.node_type(n) as usize) < g.types().len());
                    assert!(g.children(n).iter().all(|&c| (c as usize) < g.node_count()));
                }
            }
        }
    }
}

#[test]
fn huge_counts_do_not_allocate() {
    let d = sample(10);
    let mut bytes = write_to_vec(&d).unwrap();
    // Find the node count (after the types) by writing a graph with a known shape: set every
    // i32 that equals the node count to a huge value, one at a time.
    let n = d.graph.node_count() as i32;
    let pat = n.to_le_bytes();
    for i in 0..bytes.len() - 4 {
        if bytes[i..i + 4] == pat {
            let saved = [bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]];
            bytes[i..i + 4].copy_from_slice(&0x7fff_fff0i32.to_le_bytes());
            let _ = read(&bytes);
            bytes[i..i + 4].copy_from_slice(&saved);
        }
    }
}

#[test]
fn objects_are_the_nodes_with_a_size() {
    // The root pseudo-node has no size; the 9 others are objects.
    assert_eq!(sample(10).graph.object_count(), 9);
    assert_eq!(Graph::default().object_count(), 0);
}

#[test]
fn a_gcdump_file_is_told_from_a_trace_by_its_first_bytes() {
    let dir = std::env::temp_dir().join(format!("gcdump-sniff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (dump, trace, short) = (dir.join("a.gcdump"), dir.join("t.nettrace"), dir.join("s"));
    std::fs::write(&dump, write_to_vec(&sample(4)).unwrap()).unwrap();
    std::fs::write(&trace, b"Nettrace\x14\0\0\0!FastSerialization.1").unwrap();
    std::fs::write(&short, b"!Fast").unwrap();
    assert!(is_gcdump(&dump).unwrap());
    assert!(
        !is_gcdump(&trace).unwrap(),
        "the marker past the first 24 bytes is a trace's"
    );
    assert!(!is_gcdump(&short).unwrap());
    assert!(is_gcdump(&dir.join("missing")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
