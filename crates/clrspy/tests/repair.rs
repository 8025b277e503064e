//! `clrspy repair` on the real traces: whole ones come out byte for byte the same, cut ones
//! come out whole with every whole block, at any cut. (`bench/repair.sh` opens 200 random cuts
//! in TraceEvent before and after.)

mod common;

use std::io::Read;

use common::{clrspy, data, json};

/// The trace inside a test file (the first entry of a zip).
fn bytes(name: &str) -> Vec<u8> {
    let raw = std::fs::read(data(name)).unwrap();
    if !raw.starts_with(b"PK\x03\x04") {
        return raw;
    }
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
    let mut out = Vec::new();
    z.by_index(0).unwrap().read_to_end(&mut out).unwrap();
    out
}

#[test]
fn whole_traces_come_out_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "perf.nettrace",
        "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
        "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
        "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
        "only_managed_samples.nettrace.zip",
    ] {
        let out = dir.path().join("r.nettrace");
        let v = json(&[
            "repair",
            data(name).to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(v["was_whole"], true, "{name}: {v}");
        assert_eq!(std::fs::read(&out).unwrap(), bytes(name), "{name}");
    }
}

#[test]
fn a_cut_trace_comes_out_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fixed.nettrace");
    let v = json(&[
        "repair",
        data("trace.nettrace").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["was_whole"], false);
    assert_eq!(v["output_whole"], true);
    assert_eq!(v["cut_at"], 4_170_673);
    // TraceEvent recovers 19,799 events from the cut file (bench/README.md); every whole
    // block holds 19,842, and the cut last block 69 more whole events, which our reader
    // recovers too: all are kept.
    assert_eq!(v["salvaged_events"], 69, "{v}");
    assert_eq!(v["events_kept"], 19_911, "{v}");
    assert_eq!(v["events_kept"], v["events_readable_before"], "{v}");
    let info = json(&["info", "--json", out.to_str().unwrap()]);
    assert_eq!(info["ended_cleanly"], true);
    assert!(info["error"].is_null());
}

#[test]
fn any_cut_of_a_real_trace_comes_out_whole() {
    let whole = bytes("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let dir = tempfile::tempdir().unwrap();
    let cut_path = dir.path().join("cut.nettrace");
    let out = dir.path().join("fixed.nettrace");
    // 40 cuts spread over the file (a fixed pseudo-random walk; bench/repair.sh does 200 with
    // TraceEvent).
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut last: Vec<(usize, u64)> = Vec::new();
    for _ in 0..40 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let cut = 200 + (x % (whole.len() as u64 - 200)) as usize;
        std::fs::write(&cut_path, &whole[..cut]).unwrap();
        let v = json(&[
            "repair",
            cut_path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(v["output_whole"], true, "cut at {cut}: {v}");
        assert!(v["bytes_kept"].as_u64().unwrap() <= cut as u64);
        // Every event our reader finds in the cut file is kept.
        assert_eq!(
            v["events_kept"], v["events_readable_before"],
            "cut at {cut}: {v}"
        );
        last.push((cut, v["events_kept"].as_u64().unwrap()));
    }
    // A longer prefix never keeps fewer events.
    last.sort();
    for w in last.windows(2) {
        assert!(w[0].1 <= w[1].1, "{w:?}");
    }
}

#[test]
fn repair_refuses_to_overwrite_its_input_and_non_traces() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.nettrace");
    std::fs::copy(data("perf.nettrace"), &t).unwrap();
    clrspy()
        .args(["repair", t.to_str().unwrap(), "-o", t.to_str().unwrap()])
        .assert()
        .code(2);
    assert_eq!(std::fs::read(&t).unwrap(), bytes("perf.nettrace"));
    let junk = dir.path().join("junk.nettrace");
    std::fs::write(&junk, b"this is not a trace at all").unwrap();
    clrspy()
        .args(["repair", junk.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("not"));
    assert!(!dir.path().join("junk.repaired.nettrace").exists());
}
