//! Live: `clrspy record --ring 8MB` on a 60 s allocation-heavy workload leaves a file of at
//! most 8 MB plus one block plus the rundown (kept beyond the budget), a whole trace (TraceEvent reads it without error, the rundown
//! names the methods) whose events are the newest ones, each with its stack; `clrspy info` says
//! the ring dropped the older events by design, not that the runtime lost them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, harness, json, launch_record, live};

const BUDGET: u64 = 8 << 20;

#[test]
fn a_ring_keeps_the_newest_8mb_as_a_whole_trace() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ring.nettrace");
    let out = launch_record(
        &trace,
        &["--ring", "8MB", "--profile", "gc-verbose"],
        &["alloc", "--seconds", "60"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Ring: kept the newest"), "{stderr}");
    assert!(!dir.path().join("ring.nettrace.ring").exists());

    // At most the budget plus one block.
    let bytes = std::fs::read(&trace).unwrap();
    let mut scanner = nettrace::Scanner::new();
    let mut largest = 0;
    let mut sequence_points = 0;
    scanner
        .feed_all(&bytes, |i| {
            if let nettrace::Item::Block(b) = i {
                largest = largest.max(b.len());
                sequence_points += u64::from(b.is_sequence_point());
            }
        })
        .unwrap();
    assert!(scanner.is_ended());
    // What came after the stop (the rundown) is kept beyond the budget, and said.
    let after_stop: u64 = stderr
        .lines()
        .find_map(|l| {
            l.split("; the last ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{stderr}"));
    eprintln!(
        "ring file {} bytes, largest block {largest}, {sequence_points} sequence points kept, {after_stop} bytes after the stop",
        bytes.len()
    );
    assert!(after_stop > 0 && after_stop < BUDGET, "{stderr}");
    assert!(
        bytes.len() as u64 <= BUDGET + largest + after_stop,
        "{} > {BUDGET} + {largest} + {after_stop}",
        bytes.len()
    );

    // A whole trace: clrspy and TraceEvent read it to its end, the same events.
    let path = trace.to_str().unwrap();
    let info = json(&["info", path, "--json"]);
    assert_eq!(info["ended_cleanly"], true, "{info}");
    // info says what the ring dropped, by design, apart from what the runtime lost.
    let ring = &info["ring"];
    assert_eq!(ring["budget_bytes"], BUDGET, "{info}");
    assert!(ring["dropped_blocks"].as_u64().unwrap() > 0, "{info}");
    let text = clrspy().args(["info", path]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Ring buffer:    kept the newest 8.0 MB of the ")
            && text.contains(" received; older events were dropped by design\n"),
        "{text}"
    );
    let lost = info["dropped_events"].as_u64().unwrap();
    assert_eq!(text.contains("lost by the runtime"), lost > 0, "{text}");
    eprintln!(
        "ring: {} events before the kept blocks (the ring's), {lost} lost by the runtime",
        ring["events_before_kept"]
    );
    if let Some(h) = harness() {
        let te = std::process::Command::new("dotnet")
            .arg(&h)
            .arg("counts")
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            te.status.success(),
            "{}",
            String::from_utf8_lossy(&te.stderr)
        );
        let te: serde_json::Value = serde_json::from_slice(&te.stdout).unwrap();
        assert_eq!(te["events"], info["events"], "TraceEvent: {te}");
    }
    // The rundown at the end names the methods; clrspy's thread CPU readings are spliced in
    // (their metadata kept with the runtime's).
    assert!(common::count(&info, "Method/DCStopVerbose") > 0, "{info}");
    assert!(common::count(&info, "ThreadCpu") > 0, "{info}");

    // The newest events: the kept allocation ticks start late in the recording and run to its
    // end (the ring received several times its budget), and each has its stack.
    let ticks = clrspy()
        .args(["events", path, "--json", "--event", "GC/AllocationTick"])
        .output()
        .unwrap();
    assert!(ticks.status.success());
    let times: Vec<(f64, bool)> = String::from_utf8_lossy(&ticks.stdout)
        .lines()
        .map(|l| {
            let e: serde_json::Value = serde_json::from_str(l).unwrap();
            let stacked = e["stack"].as_array().is_some_and(|s| !s.is_empty());
            (e["timestamp_ns"].as_f64().unwrap() / 1e9, stacked)
        })
        .collect();
    assert!(times.len() > 1000, "{} allocation ticks", times.len());
    assert!(
        times.iter().all(|t| t.1),
        "an allocation tick lost its stack"
    );
    let first = times.iter().map(|t| t.0).fold(f64::MAX, f64::min);
    let last = times.iter().map(|t| t.0).fold(0.0, f64::max);
    let received: u64 = stderr
        .lines()
        .find_map(|l| l.split(" of ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(received > 3 * BUDGET, "received only {received} bytes");
    eprintln!("allocation ticks from {first:.1} s to {last:.1} s; {received} bytes received");
    assert!(
        first > last / 2.0,
        "kept events start at {first} s of {last} s"
    );
}
