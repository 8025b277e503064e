//! `clrspy repair` on the real traces: whole ones come out byte for byte the same, cut ones
//! come out whole with every whole block, at any cut. (`bench/repair.sh` opens 200 random cuts
//! in TraceEvent before and after.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

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

/// A small NetPerf (v3) trace: one metadata row inline, then `n` events of two threads with
/// inline stacks.
fn netperf(n: u32) -> Vec<u8> {
    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        v.extend_from_slice(&[0, 0]);
        v
    }
    fn fs_type(name: &str) -> Vec<u8> {
        let mut t = vec![4u8, 1];
        t.extend_from_slice(&3i32.to_le_bytes());
        t.extend_from_slice(&3i32.to_le_bytes());
        t.extend_from_slice(&(name.len() as u32).to_le_bytes());
        t.extend_from_slice(name.as_bytes());
        t.push(6);
        t
    }
    fn event(meta: u32, thread: u32, ts: i64, payload: &[u8], stack: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&meta.to_le_bytes());
        b.extend_from_slice(&thread.to_le_bytes());
        b.extend_from_slice(&ts.to_le_bytes());
        b.extend_from_slice(&[0u8; 32]);
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(payload);
        b.extend_from_slice(&((stack.len() * 8) as u32).to_le_bytes());
        stack
            .iter()
            .for_each(|ip| b.extend_from_slice(&ip.to_le_bytes()));
        while !(b.len() + 4).is_multiple_of(4) {
            b.push(0);
        }
        let mut out = (b.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&b);
        out
    }
    let mut f = 20u32.to_le_bytes().to_vec();
    f.extend_from_slice(b"!FastSerialization.1");
    f.push(4);
    f.extend_from_slice(&fs_type("Microsoft.DotNet.Runtime.EventPipeFile"));
    [2018u16, 6, 0, 1, 12, 0, 0, 0]
        .iter()
        .for_each(|v| f.extend_from_slice(&v.to_le_bytes()));
    f.extend_from_slice(&100i64.to_le_bytes());
    f.extend_from_slice(&10_000_000i64.to_le_bytes());
    [8i32, 77, 4, 1_000_000]
        .iter()
        .for_each(|v| f.extend_from_slice(&v.to_le_bytes()));
    f.push(6);
    let mut meta = 1u32.to_le_bytes().to_vec();
    meta.extend(utf16z("Old-Source"));
    meta.extend_from_slice(&5u32.to_le_bytes());
    meta.extend(utf16z("Hello"));
    meta.extend_from_slice(&[0u8; 8 + 4]);
    meta.extend_from_slice(&4u32.to_le_bytes());
    meta.extend_from_slice(&1u32.to_le_bytes());
    meta.extend_from_slice(&9u32.to_le_bytes());
    meta.extend(utf16z("n"));
    let mut events = event(0, 0, 0, &meta, &[]);
    for i in 0..n {
        let ts = 1000 + i64::from(i) * 10;
        events.extend(event(
            1,
            40 + i % 2,
            ts,
            &i.to_le_bytes(),
            &[0x1000, 0x2000],
        ));
    }
    f.push(4);
    f.extend_from_slice(&fs_type("EventBlock"));
    f.extend_from_slice(&(events.len() as u32).to_le_bytes());
    while !f.len().is_multiple_of(4) {
        f.push(0);
    }
    f.extend_from_slice(&events);
    f.push(6);
    f.push(1);
    f
}

#[test]
fn a_netperf_trace_is_converted_to_nettrace_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let np = dir.path().join("old.netperf");
    let bytes = netperf(50);
    std::fs::write(&np, &bytes).unwrap();
    let v = json(&["repair", np.to_str().unwrap(), "--json"]);
    let out = dir.path().join("old.nettrace");
    assert_eq!(v["output"], out.to_str().unwrap(), "{v}");
    assert_eq!(
        (&v["converted"], &v["was_whole"], &v["output_format"]),
        (&true.into(), &true.into(), &"NetTrace4".into()),
        "{v}"
    );
    assert_eq!(
        (v["events_kept"].as_u64(), v["events_converted"].as_u64()),
        (Some(50), Some(50))
    );
    // The input is untouched; the output is NetTrace with the same facts and events.
    assert_eq!(std::fs::read(&np).unwrap(), bytes);
    let (a, b) = (common::info(&np), common::info(&out));
    assert_eq!(b["format"], "NetTrace4");
    for k in [
        "events",
        "events_with_stack",
        "process_id",
        "pointer_size",
        "cpu_count",
        "sampling_interval_ns",
        "start_time_utc",
        "duration_ns",
        "first_event_ns",
        "dropped_events",
        "ended_cleanly",
        "per_provider",
        "per_event",
    ] {
        assert_eq!(a[k], b[k], "{k}");
    }
    // A second run does not overwrite the first conversion: it writes old.repaired.nettrace.
    let v = json(&["repair", np.to_str().unwrap(), "--json"]);
    assert_eq!(
        v["output"],
        dir.path().join("old.repaired.nettrace").to_str().unwrap()
    );
    // A cut one: converted up to its last whole event.
    let cut = dir.path().join("cut.netperf");
    std::fs::write(&cut, &bytes[..bytes.len() - 30]).unwrap();
    let v = json(&["repair", cut.to_str().unwrap(), "--json"]);
    assert_eq!(
        (&v["converted"], &v["was_whole"]),
        (&true.into(), &false.into())
    );
    assert_eq!(v["events_kept"], v["events_readable_before"], "{v}");
    assert_eq!(v["output_whole"], true);
}
