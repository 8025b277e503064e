//! `clrspy report` on traces of the test workloads, recorded from their start: the reports
//! must name what each workload is known to do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};

use common::{clrspy, json, launch_record, live, machine, workloads};

/// Records `scenario args` from its start with `record_args`, returns the trace path.
fn record(dir: &Path, name: &str, record_args: &[&str], scenario: &[&str]) -> PathBuf {
    let trace = dir.join(format!("{name}.nettrace"));
    let out = launch_record(&trace, record_args, scenario);
    assert!(
        out.status.success(),
        "record {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    trace
}

fn report(trace: &Path, kind: &str) -> serde_json::Value {
    json(&[
        "report",
        trace.to_str().unwrap(),
        kind,
        "--json",
        "--top",
        "10",
    ])
}

fn methods(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn cpu_report_names_the_burning_method_and_keeps_waiting_threads_out() {
    if !live() {
        return;
    }
    // The burner's CPU is measured: the test takes the machine lock.
    let machine = machine();
    let dir = tempfile::tempdir().unwrap();
    let t = record(dir.path(), "cpu", &[], &["cpu", "--seconds", "3"]);
    let cpu = report(&t, "cpu");
    let top = &cpu["top_exclusive"][0];
    assert_eq!(top["method"], "Workloads.Cpu.Burn", "{cpu}");
    // At least 80% of the burning thread's CPU is in Burn itself.
    let threads = report(&t, "threads");
    let burner = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|th| th["top_frame"] == "Workloads.Cpu.Burn")
        .unwrap_or_else(|| panic!("no thread mostly in Burn: {threads}"));
    let burn_ms = top["ms"].as_f64().unwrap();
    let thread_cpu = burner["cpu_ms"].as_f64().unwrap();
    // On a busy machine the sampler suspends the burner less evenly and the burner waits for
    // a CPU as much as it runs.
    machine.check(
        "Burn holds 80% of its thread's CPU, which mostly runs",
        || {
            assert!(
                burn_ms >= 0.8 * thread_cpu,
                "Burn {burn_ms} ms of {thread_cpu} ms: {cpu}"
            );
            assert_eq!(burner["mostly"], "running", "{burner}");
        },
    );
    // The main thread waits in Join for the whole run; the CPU it uses after its last sample
    // (the runtime's shutdown) is unsampled, not Join's.
    for key in ["top_exclusive", "top_inclusive"] {
        for m in methods(&cpu, key) {
            assert!(
                !m.contains("Thread.Join") && !m.contains("Thread.Sleep"),
                "{m} in CPU {key}: {cpu}"
            );
        }
    }
    // The main thread waits in Join: that is waiting time (among the blocking calls; with the
    // kernel's sampler the runtime's native frames under it fill the inclusive top ten).
    let waits = report(&t, "waits");
    assert!(
        methods(&waits, "by_blocking_call")
            .iter()
            .chain(&methods(&waits, "top_inclusive"))
            .any(|m| m.starts_with("System.Threading.Thread.Join")),
        "{waits}"
    );
    let summary = clrspy()
        .args(["report", t.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(
        text.contains("Workloads.Cpu.Burn") && text.contains("Next"),
        "{text}"
    );
}

#[test]
fn alloc_exceptions_gc_and_contention_reports_match_the_workloads() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();

    let t = record(
        dir.path(),
        "alloc",
        &["--profile", "gc-verbose"],
        &["alloc", "--seconds", "2"],
    );
    let alloc = report(&t, "alloc");
    assert_eq!(
        alloc["types"][0]["type"], "Workloads.AllocatedThing",
        "{alloc}"
    );
    assert!(alloc["types"][0]["bytes"].as_u64().unwrap() > 1 << 20);
    assert!(
        alloc["types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "Workloads.BigThing[]" && t["heap"] == "large"),
        "{alloc}"
    );

    let t = record(
        dir.path(),
        "exc",
        &["--profile", "exceptions"],
        &["exceptions", "--count", "123"],
    );
    let exc = report(&t, "exceptions");
    assert_eq!(
        exc["types"][0]["type"], "Workloads.WorkloadException",
        "{exc}"
    );
    assert_eq!(exc["types"][0]["count"], 123, "{exc}");
    assert_eq!(exc["total"], 123);

    let t = record(
        dir.path(),
        "gc",
        &["--profile", "gc-collect"],
        &["gc", "--count", "7"],
    );
    let gc = report(&t, "gc");
    let induced_gen2 = gc["gcs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["generation"] == 2 && g["reason"] == "Induced")
        .count();
    assert_eq!(induced_gen2, 7, "{gc}");
    assert_eq!(gc["totals"]["induced"], 7);
    assert!(gc["gcs"][0]["pause_ms"].as_f64().is_some());

    let t = record(
        dir.path(),
        "contention",
        &["--providers", "Microsoft-Windows-DotNETRuntime:0x4000:5"],
        &["contention", "--seconds", "2"],
    );
    let c = report(&t, "contention");
    assert_eq!(
        c["top_exclusive"][0]["method"], "Workloads.Contention.Fight",
        "{c}"
    );
    assert!(c["count"].as_u64().unwrap() > 10, "{c}");
}

#[test]
fn a_deadlock_is_waiting_time_not_cpu() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The program exits with 3 when its threads are still hung after the given seconds.
    // The runtime's sampler (the kernel's: the test after this one).
    let trace = dir.path().join("hang.nettrace");
    let out = launch_record(
        &trace,
        &["--sampler", "runtime"],
        &["hang", "--seconds", "2"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cpu = report(&trace, "cpu");
    for m in methods(&cpu, "top_exclusive") {
        assert!(!m.contains("Deadlock.Take"), "{m} counted as CPU: {cpu}");
    }
    let waits = report(&trace, "waits");
    let w = methods(&waits, "top_inclusive");
    assert!(
        w.iter().any(|m| m == "Workloads.Deadlock.TakeAThenB"),
        "{waits}"
    );
    assert!(
        w.iter().any(|m| m == "Workloads.Deadlock.TakeBThenA"),
        "{waits}"
    );
}

/// The kernel's sampler (root here) on the same deadlock, launched: the waits of threads
/// that blocked as soon as they were born, and of the main thread in `Join`, reach the
/// managed code that waited (their stacks run through ReadyToRun code mapped just before);
/// the runtime's plumbing threads' waits are left out, and said so.
#[test]
fn the_kernel_samplers_waits_of_a_deadlock_reach_the_managed_code() {
    if !live()
        || !common::root_for(
            "the_kernel_samplers_waits_of_a_deadlock_reach_the_managed_code",
            "the kernel's sampler takes waits as root",
        )
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("hang.nettrace");
    let out = launch_record(
        &trace,
        &["--sampler", "kernel"],
        &["hang", "--seconds", "2"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("CPU samples from the kernel"), "{err}");
    let t = trace.to_str().unwrap();
    let waits = json(&["report", t, "waits", "--json", "--native", "fold"]);
    let w = methods(&waits, "top_inclusive");
    for m in [
        "Workloads.Deadlock.TakeAThenB",
        "Workloads.Deadlock.TakeBThenA",
        "System.Threading.Thread.Join(int32)",
    ] {
        assert!(w.iter().any(|x| x == m), "{m} missing: {waits}");
    }
    let calls = methods(&waits, "by_blocking_call");
    assert!(
        calls
            .iter()
            .any(|m| m == "System.Threading.Monitor.Enter_Slowpath"),
        "{waits}"
    );
    let left = &waits["left_out"];
    assert!(left["threads"].as_u64().unwrap() >= 3, "{waits}");
    assert!(left["wait_ms"].as_f64().unwrap() > 1000.0, "{waits}");
    let text = clrspy().args(["report", t, "waits"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(!text.contains("nothing matched"), "{text}");
    assert!(
        text.contains("waiting from the kernel's context switches"),
        "{text}"
    );
    assert!(text.contains("of the runtime's own threads"), "{text}");
}

#[test]
fn profile_records_and_reports_in_one_step() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("p.nettrace");
    let out = clrspy()
        .args(["profile", "--exceptions", "--gc", "-o"])
        .arg(&trace)
        .arg("--")
        .arg("dotnet")
        .arg(workloads())
        .args(["exceptions", "--count", "9"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Exceptions: 9 thrown"), "{text}");
    assert!(text.contains("Workloads.WorkloadException"), "{text}");
    assert!(text.contains("GCs:"), "{text}");
    assert!(trace.exists());
}

#[test]
fn profile_json_is_the_json_alone() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("p.nettrace");
    let out = clrspy()
        .args(["profile", "--gc", "--alloc", "--json", "--top", "3", "-o"])
        .arg(&trace)
        .arg("--")
        .arg("dotnet")
        .arg(workloads())
        .args(["alloc", "--seconds", "1"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // stdout parses as one JSON object: the program's own lines went elsewhere.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(
        stderr.contains("ready pid="),
        "the program's output goes to stderr: {stderr}"
    );
    for key in ["trace", "summary", "gc", "alloc"] {
        assert!(v.get(key).is_some(), "no {key}: {v}");
    }
    assert!(v.get("cpu").is_none(), "only the chosen reports");
    let types = v["alloc"]["types"].as_array().unwrap();
    assert!(!types.is_empty() && types.len() <= 3, "--top 3: {types:?}");
    assert!(v["gc"]["totals"]["count"].as_u64().unwrap() > 0);
    // The reports come from the analysis fed while recording: the same as the kept file's.
    let path = trace.to_str().unwrap();
    for (key, kind) in [("gc", "gc"), ("alloc", "alloc"), ("summary", "summary")] {
        let mut from_file = common::json(&["report", path, kind, "--json", "--top", "3"]);
        let mut live = v[key].clone();
        for r in [&mut from_file, &mut live] {
            if let Some(o) = r.as_object_mut() {
                o.remove("trace");
                o.remove("next");
            }
        }
        assert_eq!(live, from_file, "{key}");
    }
}
