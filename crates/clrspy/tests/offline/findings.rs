//! `clrspy report findings` on recorded traces: the third-party traces (crates/nettrace's
//! test data, recorded by the runtime in other projects) and the clean apps of tests/data
//! raise nothing above info, but for the two that are true (traces paused 20% and 23.6% of
//! their time for GCs); the traces of apps that have a mistake get its finding; the
//! summary leads with them and its JSON lists them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{json, repo};

/// A recording of clrspy's own test apps, crates/clrspy/tests/data.
fn data(name: &str) -> std::path::PathBuf {
    repo().join("crates/clrspy/tests/data").join(name)
}
use serde_json::Value;

fn findings(trace: &str) -> Vec<Value> {
    json(&["report", trace, "findings", "--json"])["findings"]
        .as_array()
        .unwrap()
        .clone()
}

fn above_info(trace: &str) -> Vec<Value> {
    findings(trace)
        .into_iter()
        .filter(|f| f["severity"] != "info")
        .collect()
}

#[test]
fn third_party_traces_raise_nothing_but_what_is_true() {
    let dir = common::data("");
    for name in [
        "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
        "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
        "only_managed_samples.nettrace.zip",
        "perf.nettrace",
    ] {
        let trace = dir.join(name);
        let found = above_info(trace.to_str().unwrap());
        assert!(found.is_empty(), "{name}: {found:#?}");
    }
    // TraceEvent's test trace is paused 20% of its time (TraceEvent's GCStats agree) in
    // 15 ms pauses of a 4 MB heap, the threads suspended in microseconds: the time is the
    // GC's, and the finding does not blame the suspension.
    let objver4 = dir.join("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let gc = findings(objver4.to_str().unwrap());
    assert_eq!(gc.len(), 1, "{gc:#?}");
    assert_eq!(gc[0]["id"], "gc-time");
    let said = gc[0]["said"].as_str().unwrap();
    assert!(said.contains("20.0%"), "{said}");
    assert!(!said.contains("suspension"), "{said}");
    // dotnet-trace's own test trace is paused 23.6% for the GCs of a 411 MB heap: true.
    let trace = dir.join("trace.nettrace");
    let trace = trace.to_str().unwrap();
    let found = above_info(trace);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["id"], "gc-time");
    let paused = json(&["report", trace, "gc", "--json"])["totals"]["paused_percent"]
        .as_f64()
        .unwrap();
    assert!(paused > 20.0, "{paused}");
    assert!(
        found[0]["said"]
            .as_str()
            .unwrap()
            .contains(&format!("{paused:.1}%")),
        "{found:#?}"
    );
}

#[test]
fn clean_recordings_of_the_test_apps_raise_nothing() {
    for name in [
        "webapp-requests-dotnet-trace.nettrace.zip",
        "webapp-requests-net8-dotnet-trace.nettrace.zip",
        "webapp-net.nettrace.zip",
        "httpclient-net.nettrace.zip",
        "dotnet-trace-httpclient.nettrace.zip",
        "loadfail.nettrace.zip",
    ] {
        let trace = data(name);
        let found = above_info(trace.to_str().unwrap());
        assert!(found.is_empty(), "{name}: {found:#?}");
    }
}

#[test]
fn a_mistake_in_a_recorded_app_is_named_first_in_the_summary() {
    // RazorApp's ranker compiles its selector as an expression tree on every call.
    let trace = data("razor-pages-cpu.nettrace.zip");
    let trace = trace.to_str().unwrap();
    let found = above_info(trace);
    assert_eq!(found[0]["id"], "compiled-per-call", "{found:#?}");
    assert!(
        found[0]["sites"][0]["name"]
            .as_str()
            .unwrap()
            .contains("RazorApp.Scoring.Ranker"),
        "{found:#?}"
    );
    let summary = json(&["report", trace, "--json"]);
    assert_eq!(summary["findings"][0]["id"], "compiled-per-call");
    let out = common::clrspy().args(["report", trace]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let first_section = text.split("\n\n").nth(1).unwrap_or("");
    assert!(
        first_section.starts_with("Findings\n  warning  compiled-per-call:"),
        "{text}"
    );
    // A lock workload of ours: one lock, two threads fighting for it all the time.
    let found = above_info(data("contention-thread-cpu.nettrace.zip").to_str().unwrap());
    assert_eq!(found[0]["id"], "lock-convoy", "{found:#?}");
    assert!(found[0]["sites"][0]["name"]
        .as_str()
        .unwrap()
        .contains("Workloads.Contention"));
}
