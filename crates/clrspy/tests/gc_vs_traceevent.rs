//! `clrspy report gc` against TraceEvent's GC analysis (what PerfView's GCStats shows) on a real
//! trace with 478 GCs: the same GCs, generations, reasons and pauses (within 0.05 ms). The
//! expected rows were made once by bench/TraceEventHarness (`gc-stats`), see the data file.

mod common;

use common::{data, json, repo};

#[test]
fn every_gc_matches_traceevent() {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo().join("crates/clrspy/tests/data/traceevent-gc-objver4.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let trace = data("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let ours = json(&["report", trace.to_str().unwrap(), "gc", "--json"]);
    let ours = ours["gcs"].as_array().unwrap();
    let want = expected["gcs"].as_array().unwrap();
    assert_eq!(ours.len(), want.len());
    for (o, w) in ours.iter().zip(want) {
        assert_eq!(o["number"], w[0], "{o} vs {w}");
        assert_eq!(o["generation"], w[1], "{o} vs {w}");
        assert_eq!(o["reason"], w[2], "{o} vs {w}");
        let (a, b) = (o["pause_ms"].as_f64().unwrap(), w[3].as_f64().unwrap());
        assert!(
            (a - b).abs() <= 0.05,
            "GC {}: pause {a} ms, TraceEvent {b} ms",
            o["number"]
        );
    }
}
