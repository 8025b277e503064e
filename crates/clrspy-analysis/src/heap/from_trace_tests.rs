//! The graph from synthetic heap dump events: whole, with a lost edge block, unfinished.

use super::from_trace::{graph_from_trace, FromTraceError};
use super::HeapModel;
use clr_events::runtime::ids;
use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};

const RT: &str = clr_events::RUNTIME_PROVIDER;

/// An event: id, version, payload.
type Ev = (u32, u8, Vec<u8>);

fn utf16z(s: &str) -> Vec<u8> {
    let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
    v.extend([0, 0]);
    v
}

fn gc_start(count: u32) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    for v in [count, 2, 1, 0] {
        p.extend(v.to_le_bytes());
    }
    p.extend(0u16.to_le_bytes());
    p.extend(0u64.to_le_bytes());
    (ids::GC_START, 2, p)
}

fn gc_end(count: u32) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    p.extend(count.to_le_bytes());
    p.extend(2u32.to_le_bytes());
    p.extend(0u16.to_le_bytes());
    (ids::GC_STOP, 1, p)
}

fn types(t: &[(u64, &str)]) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    p.extend((t.len() as u32).to_le_bytes());
    p.extend(0u16.to_le_bytes());
    for (id, name) in t {
        p.extend(id.to_le_bytes());
        p.extend(0u64.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.push(18);
        p.extend(utf16z(name));
        p.extend(0u32.to_le_bytes());
    }
    (ids::GC_BULK_TYPE, 0, p)
}

fn nodes(index: u32, n: &[(u64, u64, u64, u64)]) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    p.extend(index.to_le_bytes());
    p.extend((n.len() as u32).to_le_bytes());
    p.extend(0u16.to_le_bytes());
    for (a, s, t, e) in n {
        for v in [a, s, t, e] {
            p.extend(v.to_le_bytes());
        }
    }
    (ids::GC_BULK_NODE, 0, p)
}

fn edges(index: u32, e: &[u64]) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    p.extend(index.to_le_bytes());
    p.extend((e.len() as u32).to_le_bytes());
    p.extend(0u16.to_le_bytes());
    for t in e {
        p.extend(t.to_le_bytes());
        p.extend(0u32.to_le_bytes());
    }
    (ids::GC_BULK_EDGE, 0, p)
}

fn static_var(object: u64, ty: u64, field: &str) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    p.extend(1u32.to_le_bytes());
    p.extend(1u64.to_le_bytes());
    p.extend(0u16.to_le_bytes());
    p.extend(0x99u64.to_le_bytes());
    p.extend(object.to_le_bytes());
    p.extend(ty.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p.extend(utf16z(field));
    (ids::GC_BULK_ROOT_STATIC_VAR, 0, p)
}

fn handle_root(index: u32, object: u64, flags: u32) -> (u32, u8, Vec<u8>) {
    let mut p = Vec::new();
    p.extend(index.to_le_bytes());
    p.extend(1u32.to_le_bytes());
    p.extend(0u16.to_le_bytes());
    p.extend(object.to_le_bytes());
    p.push(2);
    p.extend(flags.to_le_bytes());
    p.extend(0x77u64.to_le_bytes());
    (ids::GC_BULK_ROOT_EDGE, 0, p)
}

fn trace(events: &[(u32, u8, Vec<u8>)]) -> Vec<u8> {
    let timed: Vec<_> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (7, i as i64 * 1000, e.clone()))
        .collect();
    trace_on(&timed)
}

/// A trace of (thread, time, event), in file order as given.
fn trace_on(events: &[(u64, i64, Ev)]) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
    let mut defined = Vec::new();
    for (thread, time, (id, version, payload)) in events {
        let m = match defined.iter().find(|(k, _)| *k == (*id, *version)) {
            Some((_, m)) => *m,
            None => {
                let m = w
                    .define(&EventMetadata {
                        provider: RT.into(),
                        event_id: *id,
                        version: *version,
                        ..EventMetadata::default()
                    })
                    .unwrap();
                defined.push(((*id, *version), m));
                m
            }
        };
        w.write(&EventRecord {
            metadata_id: m,
            thread_id: *thread,
            capture_thread_id: *thread,
            timestamp: *time,
            payload,
            ..EventRecord::default()
        })
        .unwrap();
    }
    w.finish().unwrap()
}

/// Holder(0x100) → List(0x200) → Order(0x300), Order(0x320); a static holds the holder;
/// a strong handle holds the list too; one weak handle is ignored. Types come last.
fn dump(lose_edge_block: bool) -> Vec<(u32, u8, Vec<u8>)> {
    let mut v = vec![
        gc_start(5),
        nodes(0, &[(0x100, 24, 1, 1), (0x200, 32, 2, 2)]),
        nodes(1, &[(0x300, 40, 3, 0), (0x320, 40, 3, 0)]),
        edges(0, &[0x200]),
        edges(1, &[0x300, 0x320]),
        static_var(0x100, 1, "Instance"),
        handle_root(0, 0x200, 0),
        handle_root(1, 0x300, 2),
        gc_end(5),
        types(&[
            (1, "App.Holder"),
            (2, "System.Collections.Generic.List`1[App.Order]"),
            (3, "App.Order"),
        ]),
    ];
    if lose_edge_block {
        v.remove(3);
    }
    v
}

#[test]
fn a_whole_dump_becomes_a_graph() {
    let bytes = trace(&dump(false));
    let mut r = nettrace::Reader::new(&bytes).unwrap();
    let h = graph_from_trace(&mut r, &mut |_| (), &mut |_| None).unwrap();
    assert_eq!(h.gc, 5);
    let m = HeapModel::new(h.dump.graph);
    assert_eq!(m.objects(), 4);
    assert_eq!(m.bytes(), 24 + 32 + 80);
    let order = m.types().iter().find(|t| t.name == "App.Order").unwrap();
    assert_eq!(order.count, 2);
    let list = m
        .types()
        .iter()
        .find(|t| t.name == "System.Collections.Generic.List<App.Order>")
        .unwrap();
    // Held by the static and by the handle: the list is nobody's alone but its own.
    assert_eq!(list.retained_bytes, 32 + 80);
    let p = m.paths_to_type("App.Order", 3);
    assert_eq!(p[0].objects, 2);
    // From the root the roots table credits: the static, before the handle.
    assert_eq!(p[0].steps.last().map(String::as_str), Some("App.Order"));
    assert!(
        p[0].steps.iter().any(|s| s.starts_with("[static var")),
        "{:?}",
        p[0].steps
    );
    // No assembly of the trace to read: the static is named by its field and the type it
    // holds, not as if App.Holder declared it.
    assert!(m
        .roots()
        .iter()
        .any(|r| r.name == "[static var Instance (of type App.Holder)]"));
    assert!(m.roots().iter().any(|r| r.name == "[strong Handles]"));
    assert_eq!(m.unreachable_objects(), 0);
}

#[test]
fn a_lost_edge_block_is_an_error_not_a_graph() {
    let bytes = trace(&dump(true));
    let mut r = nettrace::Reader::new(&bytes).unwrap();
    let e = graph_from_trace(&mut r, &mut |_| (), &mut |_| None).unwrap_err();
    assert!(matches!(e, FromTraceError::Lost { gc: 5, .. }), "{e}");
    let s = e.to_string();
    assert!(
        s.contains("GC/BulkEdge block 0 was followed by block 1"),
        "{s}"
    );
    assert!(s.contains("claim 3 references but 2 came"), "{s}");
}

#[test]
fn a_dump_without_its_end_is_incomplete() {
    let mut ev = dump(false);
    ev.retain(|(id, _, _)| *id != ids::GC_STOP);
    let bytes = trace(&ev);
    let mut r = nettrace::Reader::new(&bytes).unwrap();
    let e = graph_from_trace(&mut r, &mut |_| (), &mut |_| None).unwrap_err();
    assert!(
        matches!(e, FromTraceError::Incomplete { gc: 5, nodes: 4 }),
        "{e}"
    );
}

#[test]
fn no_dump_at_all() {
    let bytes = trace(&[gc_start(1), gc_end(1)]);
    let mut r = nettrace::Reader::new(&bytes).unwrap();
    let e = graph_from_trace(&mut r, &mut |_| (), &mut |_| None).unwrap_err();
    assert!(matches!(e, FromTraceError::NoHeapDump), "{e}");
}

/// Under server GC one GC thread writes `GC/Start` and another walks the heap and writes
/// `GC/Stop`; the file may hold the walker's events first (seen on a .NET 10 web app).
#[test]
fn a_start_read_after_the_walk_still_gives_the_dump() {
    let ev = dump(false);
    let (start, walk) = ev.split_first().unwrap();
    let mut events: Vec<_> = walk
        .iter()
        .enumerate()
        .map(|(i, e)| (9, 2000 + i as i64 * 10, e.clone()))
        .collect();
    events.push((8, 1000, start.clone()));
    let bytes = trace_on(&events);
    let mut r = nettrace::Reader::new(&bytes).unwrap();
    let h = graph_from_trace(&mut r, &mut |_| (), &mut |_| None).unwrap();
    assert_eq!(h.gc, 5);
    assert_eq!(HeapModel::new(h.dump.graph).objects(), 4);
}

/// An earlier gen2 GC's end read in the middle of the walk (another thread's buffer) is not
/// taken for the walk's end.
#[test]
fn an_earlier_gcs_end_read_mid_walk_does_not_cut_it() {
    let ev = dump(false);
    let walk = &ev[1..];
    let mut events = vec![(8, 100, gc_start(4))];
    for (i, e) in walk.iter().enumerate() {
        events.push((9, 2000 + i as i64 * 10, e.clone()));
        if i == 1 {
            events.push((8, 200, gc_end(4)));
        }
    }
    let bytes = trace_on(&events);
    let mut r = nettrace::Reader::new(&bytes).unwrap();
    let h = graph_from_trace(&mut r, &mut |_| (), &mut |_| None).unwrap();
    assert_eq!(h.gc, 5);
    assert_eq!(HeapModel::new(h.dump.graph).objects(), 4);
}
