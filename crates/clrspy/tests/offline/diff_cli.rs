//! `clrspy diff` on committed real traces: a trace against itself is unchanged in every row;
//! the unit of work is chosen and said; `--per` and `--fail-if` read their values and refuse
//! bad ones (exit 2); two heap snapshots compare as `heap diff`; a snapshot against a trace is
//! refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, repo};
use serde_json::Value;

fn trace(name: &str) -> String {
    repo()
        .join("crates/clrspy/tests/data")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn diff_json(args: &[&str]) -> Value {
    let out = clrspy()
        .arg("diff")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The tables' ids, in their order: the JSON's stable keys (docs/diff.md).
const TABLES: [&str; 12] = [
    "cpu.exclusive",
    "cpu.inclusive",
    "wait.exclusive",
    "wait.inclusive",
    "alloc.types",
    "alloc.methods",
    "exceptions.types",
    "exceptions.sites",
    "contention.sites",
    "gc",
    "requests.routes",
    "http.hosts",
];

#[test]
fn a_trace_against_itself_is_unchanged_in_every_row() {
    let t = trace("webapp-requests-dotnet-trace.nettrace.zip");
    let d = diff_json(&[&t, &t, "--top", "1000"]);
    assert_eq!(d["verdict"], "unchanged", "{d:#}");
    assert!(d["regressions"].as_array().unwrap().is_empty());
    let ids: Vec<&str> = d["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, TABLES);
    let mut rows = 0;
    for table in d["tables"].as_array().unwrap() {
        for r in table["rows"].as_array().unwrap() {
            rows += 1;
            assert_eq!(r["verdict"], "noise", "{r:#}");
            assert_eq!(r["delta"], 0.0, "{r:#}");
            assert_eq!(r["presence"], "both", "{r:#}");
        }
    }
    assert!(rows > 10, "{rows} rows");
    // 25 requests: too few to divide by unless asked.
    assert_eq!(d["per"], "second");
    assert_eq!(d["base"]["requests"], 25);
    // The route's four figures.
    let routes = &d["tables"][10]["rows"];
    let measures: Vec<&str> = routes
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["measure"].as_str().unwrap())
        .collect();
    for m in ["count", "p50", "p95", "p99"] {
        assert!(measures.contains(&m), "{measures:?}");
    }
}

#[test]
fn the_unit_of_work_is_the_one_asked_for() {
    let t = trace("webapp-requests-dotnet-trace.nettrace.zip");
    let d = diff_json(&[&t, &t, "--per", "requests"]);
    assert_eq!(d["per"], "request");
    assert_eq!(d["base"]["units"], 25.0);
    let d = diff_json(&[
        &t,
        &t,
        "--per",
        "ops:Microsoft.AspNetCore.Hosting/RequestStop",
    ]);
    assert_eq!(d["base"]["units"], 25.0);
    assert_eq!(d["per"], "Microsoft.AspNetCore.Hosting/RequestStop event");
    // By the event's name alone: Kestrel's and Hosting's.
    let d = diff_json(&[&t, &t, "--per", "ops:requeststop"]);
    assert_eq!(d["base"]["units"], 50.0);
}

#[test]
fn bad_values_are_refused_with_exit_2() {
    let t = trace("webapp-requests-dotnet-trace.nettrace.zip");
    let cpu = trace("razor-pages-cpu.nettrace.zip");
    for (args, says) in [
        (
            vec![t.as_str(), t.as_str(), "--fail-if", "cpu:10"],
            "percentage",
        ),
        (
            vec![t.as_str(), t.as_str(), "--fail-if", "speed:+5%"],
            "unknown figure",
        ),
        (
            vec![t.as_str(), t.as_str(), "--per", "minutes"],
            "unknown --per",
        ),
        (
            vec![cpu.as_str(), cpu.as_str(), "--per", "requests"],
            "no request",
        ),
        (
            vec![t.as_str(), t.as_str(), "--per", "ops:NoSuchEvent"],
            "no event named",
        ),
    ] {
        let out = clrspy().arg("diff").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn fail_if_passes_when_nothing_regressed() {
    let t = trace("razor-pages-cpu.nettrace.zip");
    let out = clrspy()
        .args(["diff", &t, &t, "--fail-if", "cpu:+10%,p99:+20%,alloc:+15%"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Verdict: unchanged"), "{text}");
    assert!(text.contains("neither trace holds requests"), "{text}");
}

#[test]
fn two_snapshots_compare_as_heap_diff_and_a_snapshot_with_a_trace_is_refused() {
    let seed = repo().join("fuzz/seeds/gcdump_read/synth60.gcdump");
    let s = seed.to_str().unwrap();
    let out = clrspy().args(["diff", s, s, "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["types"].is_array(), "{v:#}");
    let t = trace("razor-pages-cpu.nettrace.zip");
    let out = clrspy().args(["diff", s, &t]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("heap snapshot"));
}

#[test]
fn two_folders_compare_process_by_process() {
    let (base, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for name in [
        "razor-pages-cpu.nettrace.zip",
        "webapp-requests-dotnet-trace.nettrace.zip",
    ] {
        std::fs::copy(trace(name), base.path().join(name)).unwrap();
        // Another file name in the new folder: the command line matches them.
        std::fs::copy(trace(name), new.path().join(format!("x-{name}"))).unwrap();
    }
    std::fs::copy(
        trace("webapp-net.nettrace.zip"),
        new.path().join("webapp-net.nettrace.zip"),
    )
    .unwrap();
    let d = diff_json(&[base.path().to_str().unwrap(), new.path().to_str().unwrap()]);
    let pairs = d["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{d:#}");
    for p in pairs {
        assert_eq!(p["diff"]["verdict"], "unchanged", "{p:#}");
        let (b, n) = (
            p["diff"]["base"]["label"].as_str().unwrap(),
            p["diff"]["new"]["label"].as_str().unwrap(),
        );
        let b = std::path::Path::new(b)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert!(n.ends_with(&format!("x-{b}")), "{b} matched with {n}");
    }
    assert_eq!(d["unmatched_base"].as_array().unwrap().len(), 0);
    // webapp-net's process had another command line than the two in the base.
    let only_new = d["unmatched_new"].as_array().unwrap();
    assert_eq!(only_new.len(), 1, "{only_new:?}");
    assert_eq!(only_new[0], "webapp-net.nettrace.zip");
}
