//! Thread CPU truth: `clrspy record` reads every target thread's CPU time from /proc while it
//! records and stores the readings inside the .nettrace (clrspy's own provider). The reports
//! then split CPU from waiting exactly, and the file still opens in TraceEvent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;

use common::{harness, json, launch_record, live, machine};

fn record(dir: &std::path::Path, name: &str, scenario: &[&str]) -> std::path::PathBuf {
    let trace = dir.join(format!("{name}.nettrace"));
    let out = launch_record(&trace, &[], scenario);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Thread CPU times:"), "{err}");
    trace
}

#[test]
fn readings_are_in_the_trace_and_split_cpu_from_waiting_exactly() {
    if !live() {
        return;
    }
    // The burner's CPU is measured: the test takes the machine lock.
    let machine = machine();
    let dir = tempfile::tempdir().unwrap();
    let t = record(dir.path(), "cpu", &["cpu", "--seconds", "2"]);
    let info = json(&["info", t.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true);
    assert_eq!(info["dropped_events"], 0);
    let names: Vec<String> = info["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["provider"] == "clrspy")
        .map(|e| e["name"].as_str().unwrap_or("").to_string())
        .collect();
    for n in [
        "ThreadCpu",
        "Tick",
        "ThreadName",
        "SamplerInfo",
        "ModuleMap",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing: {names:?}");
    }
    let cpu = json(&["report", t.to_str().unwrap(), "cpu", "--json"]);
    assert_eq!(cpu["method"], "thread-cpu-times", "{cpu}");
    assert_eq!(cpu["top_exclusive"][0]["method"], "Workloads.Cpu.Burn");
    // The burning thread is named by the program ("burner") and mostly runs.
    let threads = json(&["report", t.to_str().unwrap(), "threads", "--json"]);
    let burner = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "burner")
        .unwrap_or_else(|| panic!("no thread named burner: {threads}"));
    // On a busy machine the burner waits for a CPU as much as it runs.
    machine.check("the burner mostly runs", || {
        assert_eq!(burner["mostly"], "running", "{burner}");
    });

    // TraceEvent reads the file with clrspy's events in it, completely.
    if let Some(h) = harness() {
        let out = Command::new("dotnet")
            .arg(&h)
            .arg("counts")
            .arg(&t)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let te: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(te["events"], info["events"], "TraceEvent: {te}");
        assert_eq!(te["lost_events"], 0);
    }
}

#[test]
fn deadlocked_threads_use_no_cpu() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("hang.nettrace");
    let out = launch_record(&trace, &[], &["hang", "--seconds", "2"]);
    assert_eq!(out.status.code(), Some(3));
    let threads = json(&["report", trace.to_str().unwrap(), "threads", "--json"]);
    for name in ["deadlock-a", "deadlock-b"] {
        let t = threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {threads}"));
        let cpu = t["cpu_ms"].as_f64().unwrap();
        let wait = t["wait_ms"].as_f64().unwrap();
        assert_eq!(t["mostly"], "waiting", "{t}");
        assert!(
            cpu < 0.05 * wait,
            "{name}: {cpu} ms CPU vs {wait} ms waiting"
        );
    }
}

#[test]
fn an_idle_program_is_all_waiting() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("idle.nettrace");
    let out = launch_record(&trace, &[], &["idle", "--seconds", "2"]);
    assert!(out.status.success());
    let cpu = json(&["report", trace.to_str().unwrap(), "cpu", "--json"]);
    let waits = json(&["report", trace.to_str().unwrap(), "waits", "--json"]);
    let cpu_ms = cpu["total_ms"].as_f64().unwrap();
    let wait_ms = waits["total_ms"].as_f64().unwrap();
    // Start-up work is CPU; two seconds of Thread.Sleep are not.
    assert!(wait_ms > 1500.0, "{waits}");
    assert!(
        cpu_ms < 0.25 * wait_ms,
        "cpu {cpu_ms} ms vs waiting {wait_ms} ms"
    );
    // Among the blocking calls (with the kernel's sampler the runtime's native frames under
    // it fill the inclusive top ten).
    assert!(
        ["by_blocking_call", "top_inclusive"]
            .iter()
            .flat_map(|k| waits[k].as_array().unwrap())
            .any(|m| m["method"]
                .as_str()
                .is_some_and(|n| n.starts_with("System.Threading.Thread.Sleep"))),
        "{waits}"
    );
}
