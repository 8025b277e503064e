//! `clrspy report hangs` on the test workloads, recorded as a user would
//! (`clrspy record --profile hangs`): the `hang` deadlock is named as a cycle of its two
//! threads and their locks; `starve` (sync-over-async on the pool) is starvation with the
//! pool's injections as evidence; a deadlock that began before the recording is a hang in
//! progress pointing to `clrspy stack` and `clrspy dump`. A dotnet-trace recording of the
//! deadlock (committed under tests/data) names the same cycle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::{clrspy, json, launch_record, live, repo, start};

fn hangs(trace: &Path) -> serde_json::Value {
    json(&["report", trace.to_str().unwrap(), "hangs", "--json"])
}

/// The cycle's members as (thread name, waits for, holds).
fn members(v: &serde_json::Value) -> Vec<(Option<String>, String, String)> {
    let cycles = v["deadlocks"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{v}");
    cycles[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["thread_name"].as_str().map(String::from),
                m["waits_for_lock"].as_str().unwrap().to_string(),
                m["holds_lock"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Two members, each waiting for the lock the other holds.
fn assert_two_way(m: &[(Option<String>, String, String)]) {
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0].1, m[1].2, "{m:?}");
    assert_eq!(m[1].1, m[0].2, "{m:?}");
    assert_ne!(m[0].1, m[1].1, "{m:?}");
    assert!(m.iter().all(|x| x.1 != "0x0"), "{m:?}");
}

#[test]
fn a_deadlock_is_named_as_a_cycle_with_both_threads_and_locks() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("hang.nettrace");
    let out = launch_record(
        &trace,
        &["--profile", "hangs", "--duration", "3s"],
        &["hang", "--seconds", "2"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = hangs(&trace);
    let m = members(&v);
    assert_two_way(&m);
    let mut names: Vec<String> = m.iter().filter_map(|x| x.0.clone()).collect();
    names.sort();
    assert_eq!(names, ["deadlock-a", "deadlock-b"], "{v}");
    for c in v["deadlocks"][0].as_array().unwrap() {
        let stack: Vec<&str> = c["stack"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        assert!(
            stack
                .iter()
                .any(|f| f.starts_with("Workloads.Deadlock.Take")),
            "{stack:?}"
        );
    }
    assert!(v["in_progress"].is_null(), "{v}");
    let text = clrspy()
        .args(["report", trace.to_str().unwrap(), "hangs"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Deadlocks: 1"), "{text}");
    assert!(
        text.contains("(deadlock-a)") && text.contains("(deadlock-b)"),
        "{text}"
    );
    let summary = json(&["report", trace.to_str().unwrap(), "summary", "--json"]);
    assert_eq!(summary["hangs"]["deadlocks"], 1, "{summary}");
}

#[test]
fn dotnet_trace_recording_of_the_deadlock_names_the_same_cycle() {
    // No .NET needed: the committed trace (tests/data/README.md).
    let v = hangs(&repo().join("crates/clrspy/tests/data/dotnet-trace-deadlock.nettrace.zip"));
    let m = members(&v);
    assert_two_way(&m);
    // dotnet-trace records no thread names: both are called by the thread that started them
    // (Thread/Creating and /Running), the workload's main thread.
    let main = v["deadlocks"][0][0]["thread_name"]
        .as_str()
        .unwrap_or_default();
    assert!(main.starts_with("thread started by thread "), "{m:?}");
    assert!(m.iter().all(|x| x.0.as_deref() == Some(main)), "{m:?}");
    assert_eq!(v["lock_waits"], 2);
    assert_eq!(v["lock_waits_ended"], 0);
}

#[test]
fn sync_over_async_on_the_pool_is_starvation_with_its_evidence() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("starve.nettrace");
    let out = launch_record(
        &trace,
        &["--profile", "hangs"],
        &["starve", "--seconds", "1", "--threads", "8"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = hangs(&trace);
    let s = &v["starvation"];
    assert_eq!(s["detected"], true, "{s}");
    // ~80 items blocking 500 ms each on 2 CPUs: the pool must add many threads.
    let injections = s["injections"].as_u64().unwrap();
    assert!(injections >= 10, "{s}");
    let (before, max) = (
        s["workers_before"].as_u64().unwrap(),
        s["workers_max"].as_u64().unwrap(),
    );
    assert!(max > before, "{s}");
    // A thread injected is a worker started: never more than the pool grew, or started.
    assert!(injections <= max - before, "{s}");
    assert!(injections <= s["worker_starts"].as_u64().unwrap(), "{s}");
    let sites: Vec<&str> = s["sync_over_async"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["method"].as_str())
        .collect();
    assert!(sites.contains(&"Workloads.Starve.BlockOnDelay"), "{s}");
    assert!(v["deadlocks"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn a_deadlock_older_than_the_recording_is_a_hang_in_progress() {
    if !live() {
        return;
    }
    hang_in_progress(&[]);
}

/// With the kernel's sampler (where it takes waits: root here), the threads blocked since
/// before the recording are waits going on at its end, with the stacks read then.
#[test]
fn the_kernel_sampler_sees_a_deadlock_older_than_the_recording() {
    if !live()
        || !common::root_for(
            "the_kernel_sampler_sees_a_deadlock_older_than_the_recording",
            "the kernel's sampler takes waits as root",
        )
    {
        return;
    }
    let trace = hang_in_progress(&["--sampler", "kernel"]);
    let threads = json(&[
        "report",
        trace.path().join("attached.nettrace").to_str().unwrap(),
        "threads",
        "--json",
    ]);
    for name in ["deadlock-a", "deadlock-b"] {
        let t = threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {threads}"));
        let (wait, blocked) = (
            t["wait_ms"].as_f64().unwrap(),
            t["blocked_ms"].as_f64().unwrap(),
        );
        assert!(wait > 0.9 * blocked && wait < 1.05 * blocked, "{t}");
    }
}

/// Records 2 s of a process deadlocked before the recording (`record -p --profile hangs`
/// with `extra` arguments) and checks the hang in progress; the trace's folder.
fn hang_in_progress(extra: &[&str]) -> tempfile::TempDir {
    let app = start("hang", &["--seconds", "0"]);
    // The deadlock forms within 200 ms of `ready`.
    std::thread::sleep(std::time::Duration::from_millis(800));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("attached.nettrace");
    let pid = app.1.to_string();
    let out = clrspy()
        .args([
            "record",
            "-p",
            &pid,
            "--profile",
            "hangs",
            "--duration",
            "2s",
            "-o",
        ])
        .arg(&trace)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = hangs(&trace);
    assert!(v["deadlocks"].as_array().unwrap().is_empty(), "{v}");
    // Never "Deadlocks: 0" for a hang the trace could not see begin.
    let out = clrspy()
        .args(["report", trace.to_str().unwrap(), "hangs"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("Deadlocks: none began in the trace"),
        "{text}"
    );
    let p = &v["in_progress"];
    let mut names: Vec<&str> = p["threads"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter_map(|t| t["thread_name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["deadlock-a", "deadlock-b"], "{v}");
    let hint = p["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!("clrspy report hangs -p {pid}")),
        "{hint}"
    );
    assert!(hint.contains(&format!("clrspy dump -p {pid}")), "{hint}");
    assert_eq!(
        p["commands"],
        serde_json::json!([
            format!("clrspy report hangs -p {pid}"),
            format!("clrspy dump -p {pid}")
        ])
    );
    dir
}

/// A deadlock formed before clrspy came: `report hangs -p PID` reads who holds what from a
/// heap dump of the process (kept in the working folder) and names the cycle — the two
/// threads, each waiting for the monitor the other holds, in the workload's own methods.
#[test]
fn report_hangs_on_a_process_names_a_deadlock_older_than_clrspy() {
    if !live() {
        return;
    }
    let app = start("hang", &["--seconds", "0"]);
    std::thread::sleep(std::time::Duration::from_millis(800));
    let dir = tempfile::tempdir().unwrap();
    let pid = app.1.to_string();
    let out = clrspy()
        .current_dir(dir.path())
        .args(["report", "hangs", "-p", &pid, "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cycles = v["deadlocks"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{v}");
    let m = cycles[0]["members"].as_array().unwrap();
    assert_eq!(m.len(), 2, "{v}");
    // Each waits for what the other holds.
    assert_eq!(m[0]["holds"][0], m[1]["waits_for"], "{v}");
    assert_eq!(m[1]["holds"][0], m[0]["waits_for"], "{v}");
    let stacks: Vec<String> = m
        .iter()
        .map(|x| {
            x["stack"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    assert!(
        stacks
            .iter()
            .any(|s| s.contains("Workloads.Deadlock.TakeAThenB"))
            && stacks
                .iter()
                .any(|s| s.contains("Workloads.Deadlock.TakeBThenA")),
        "{stacks:#?}"
    );
    assert!(
        stacks.iter().all(|s| s.contains("Monitor.Enter")),
        "{stacks:#?}"
    );
    assert_eq!(v["locks"].as_array().unwrap().len(), 2, "{v}");
    // The dump is kept as the evidence, with the runtime's library beside it.
    let dump = v["dump"].as_str().unwrap();
    assert!(std::path::Path::new(dump).is_file(), "{dump}");
    assert!(
        std::path::Path::new(&format!("{dump}.libmscordaccore.so")).is_file(),
        "{dump}"
    );
    // The text names the cycle too.
    let out = clrspy()
        .current_dir(dir.path())
        .args(["report", "hangs", "-p", &pid])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("Deadlocks: 1\n  cycle 1: thread "),
        "{text}"
    );
}
