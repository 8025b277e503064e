//! `clrspy heap` and `gcdump --from` on inputs without a heap graph: a damaged `.gcdump` gives
//! one error line with the byte offset, a trace without heap dump events says so, and the
//! fuzz seed (a synthetic snapshot) is read with its exact totals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

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

#[test]
fn a_snapshot_converts_to_root_paths_and_its_page() {
    let seed = repo().join("fuzz/seeds/gcdump_read/synth60.gcdump");
    let out = clrspy()
        .args(["convert", "--to", "folded", "-o", "-"])
        .arg(&seed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut total = 0u64;
    for line in text.lines() {
        let (stack, w) = line.rsplit_once(' ').unwrap();
        assert!(
            stack.starts_with("static;[static var Synth.Cache.Items];Synth.Holder"),
            "{line}"
        );
        total += w.parse::<u64>().unwrap();
    }
    // Every object is reachable: the lines sum to the snapshot's bytes.
    let j = clrspy()
        .args(["heap", "--json"])
        .arg(&seed)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(serde_json::json!(total), v["bytes"]);
    assert_eq!(serde_json::json!(total), v["types"][0]["retained_bytes"]);

    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("s.html");
    let out = clrspy()
        .args(["convert", "--to", "html", "-o"])
        .arg(&html)
        .arg(&seed)
        .output()
        .unwrap();
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<td>Synth.Item</td>") && page.contains("<iframe id=icicle"));

    let diff = dir.path().join("d.html");
    let out = clrspy()
        .args(["heap", "diff"])
        .arg(&seed)
        .arg(&seed)
        .arg("--html")
        .arg(&diff)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&diff)
        .unwrap()
        .contains("No type grew."));
}

#[test]
fn a_snapshot_to_a_trace_only_format_is_a_clear_error() {
    let seed = repo().join("fuzz/seeds/gcdump_read/synth60.gcdump");
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("x.pb.gz");
    let out = clrspy()
        .args(["convert", "--to", "pprof", "-o"])
        .arg(&out_file)
        .arg(&seed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a heap snapshot does not convert to pprof: it converts to folded, flamegraph, speedscope, html"),
        "{err}"
    );
    assert!(!out_file.exists());
}
