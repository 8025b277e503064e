//! `clrspy heap` and `gcdump --from` on inputs without a heap graph: a damaged `.gcdump` gives
//! one error line with the byte offset, a trace without heap dump events says so, and the
//! fuzz seed (a synthetic snapshot) is read with its exact totals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{clrspy, data, repo};

#[test]
fn a_synthetic_snapshot_reads_exactly() {
    let seed = repo().join("fuzz/seeds/gcdump_read/synth60.gcdump");
    let out = clrspy()
        .args(["heap", "--json"])
        .arg(&seed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 60 items and one holder (examples/synth in crates/gcdump).
    assert_eq!(v["objects"], 61);
    let item = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "Synth.Item")
        .unwrap();
    assert_eq!(item["count"], 60);
    assert_eq!(v["roots"][0]["name"], "[static var Synth.Cache.Items]");
}

#[test]
fn a_cut_snapshot_is_one_error_with_an_offset() {
    let seed = std::fs::read(repo().join("fuzz/seeds/gcdump_read/synth60.gcdump")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.gcdump");
    std::fs::write(&cut, &seed[..seed.len() / 2]).unwrap();
    let out = clrspy().arg("heap").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("byte offset"), "{err}");
}

#[test]
fn a_trace_without_a_heap_dump_says_so() {
    let trace = data("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let out = clrspy()
        .args(["gcdump", "--from"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds no GC heap dump"), "{err}");
}
