//! `clrspy report gc` against TraceEvent's GC analysis (what PerfView's GCStats shows), GC by
//! GC, on real traces: a workstation GC trace with 478 GCs (.NET Core 3.0, Windows) and a
//! Server GC trace of testapps/WebApp under load with background GCs (1,361 GCs: blocking,
//! background and foreground GCs from two heaps' GC threads). The same GCs, generations,
//! reasons, types, pauses (within 0.05 ms) and heap sizes after. The expected rows were made
//! once by bench/TraceEventHarness (`gc-stats`), see the data files' "about".
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{data, json, repo};

fn expected(name: &str) -> serde_json::Value {
    let path = repo().join("crates/clrspy/tests/data").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn assert_pause(o: &serde_json::Value, want: &serde_json::Value) {
    let (a, b) = (o["pause_ms"].as_f64().unwrap(), want.as_f64().unwrap());
    assert!(
        (a - b).abs() <= 0.05,
        "GC {}: pause {a} ms, TraceEvent {b} ms",
        o["number"]
    );
}

#[test]
fn every_gc_matches_traceevent() {
    let expected = expected("traceevent-gc-objver4.json");
    let trace = data("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let ours = json(&["report", trace.to_str().unwrap(), "gc", "--json"]);
    assert_eq!(ours["gc_mode"], "workstation");
    assert_eq!(ours["heaps"], 1);
    let ours = ours["gcs"].as_array().unwrap();
    let want = expected["gcs"].as_array().unwrap();
    assert_eq!(ours.len(), want.len());
    for (o, w) in ours.iter().zip(want) {
        assert_eq!(o["number"], w[0], "{o} vs {w}");
        assert_eq!(o["generation"], w[1], "{o} vs {w}");
        assert_eq!(o["reason"], w[2], "{o} vs {w}");
        assert_pause(o, &w[3]);
    }
}

#[test]
fn every_server_gc_matches_traceevent() {
    let expected = expected("traceevent-gc-webapp-server.json");
    let trace = repo().join("crates/clrspy/tests/data/webapp-server-gc.nettrace.zip");
    let ours = json(&["report", trace.to_str().unwrap(), "gc", "--json"]);
    // TraceEvent's heap count; the trace has no settings event, only the GCs' own events.
    assert_eq!(expected["processes"][0]["heaps"], 2);
    assert_eq!(
        (&ours["gc_mode"], &ours["concurrent"], &ours["heaps"]),
        (&"server".into(), &true.into(), &2.into())
    );
    let ours = ours["gcs"].as_array().unwrap();
    let want = expected["gcs"].as_array().unwrap();
    assert_eq!(ours.len(), want.len());
    let mut kinds = std::collections::BTreeSet::new();
    for (o, w) in ours.iter().zip(want) {
        assert_eq!(o["number"], w[0], "{o} vs {w}");
        assert_eq!(o["generation"], w[1], "{o} vs {w}");
        assert_eq!(o["reason"], w[2], "{o} vs {w}");
        // TraceEvent says "NonConcurrentGC", "BackgroundGC", "ForegroundGC".
        let kind = o["type"].as_str().unwrap();
        assert_eq!(format!("{kind}GC"), w[3].as_str().unwrap(), "{o} vs {w}");
        kinds.insert(kind.to_string());
        assert_pause(o, &w[4]);
        // Heap after: clrspy's MB are 2^20 bytes, TraceEvent's 10^6.
        match (o["heap_after_mb"].as_f64(), w[5].as_f64()) {
            (Some(a), Some(b)) => assert!(
                (a * 1048576.0 - b * 1e6).abs() < 1024.0,
                "GC {}: heap after {a} MiB, TraceEvent {b} MB",
                o["number"]
            ),
            (a, b) => assert_eq!(a, b, "GC {}: heap after", o["number"]),
        }
    }
    // The trace has every kind of GC, and only the last one (cut by the end of the
    // recording) has no pause.
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    let zero: Vec<_> = ours.iter().filter(|g| g["pause_ms"] == 0.0).collect();
    assert_eq!(zero.len(), 1, "{zero:?}");
    assert!(zero[0]["duration_ms"].is_null(), "{}", zero[0]);
}
