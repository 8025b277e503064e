//! "My code is slow" is often "my code was not allowed to run": `clrspy record` reads each
//! thread's run-queue time (schedstat's second field) and the throttling counters of the
//! target's cgroup, and the reports split every thread's lifetime into CPU, waiting for a CPU
//! and blocked. Two proofs on real processes: more CPU-bound threads than cores (the run
//! queue is large), and a cgroup CPU limit (the summary says it throttled).
//!
//! The machine is shared and loaded: the assertions are proportions with wide margins, never
//! times.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{clrspy, json, live, start, Running};
use serde_json::Value;

/// Burner threads: twice the cores, at least 4.
fn burners() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (2 * cores).max(4)
}

/// Starts the `cpu` workload with `n` burner threads (long enough for any recording; it is
/// killed when dropped).
fn start_burners(n: usize) -> Running {
    start("cpu", &["--threads", &n.to_string(), "--seconds", "60"])
}

/// `clrspy record -p PID --duration 3s -o TRACE`.
fn record(pid: u32, trace: &Path) {
    let out = clrspy()
        .args(["record", "-p", &pid.to_string(), "--duration", "3s", "-o"])
        .arg(trace)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run-queue ns so far of every thread of `pid`, from schedstat.
fn runqueue_now(pid: u32) -> std::collections::BTreeMap<u64, u64> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        if let Some(ns) = s.split_whitespace().nth(1).and_then(|v| v.parse().ok()) {
            out.insert(tid, ns);
        }
    }
    out
}

/// The burner rows of `report threads --json`.
fn burner_rows(threads: &Value) -> Vec<Value> {
    threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("burner-")))
        .cloned()
        .collect()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

fn text(args: &[&str]) -> String {
    let out = clrspy().args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn more_burners_than_cores_wait_for_a_cpu_and_each_lifetime_splits_three_ways() {
    if !live() {
        return;
    }
    // It counts CPU and run-queue time: the other test's burners must not compete.
    let _machine = common::machine();
    let n = burners();
    let app = start_burners(n);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("burners.nettrace");
    // Let every burner start.
    std::thread::sleep(Duration::from_millis(500));
    let before = runqueue_now(app.1);
    record(app.1, &trace);
    let after = runqueue_now(app.1);
    let t = trace.to_str().unwrap();

    // The trace's reading window: every burner lived through it.
    let (_, window_ns) = common::proc_cpu::readings(t);
    let window_ms = window_ns / 1e6;
    assert!(window_ms > 1000.0, "window {window_ms} ms");

    let threads = json(&["report", t, "threads", "--json"]);
    assert_eq!(threads["runqueue_source"], "schedstat", "{threads}");
    let rows = burner_rows(&threads);
    assert_eq!(rows.len(), n, "burners in {threads}");
    for r in &rows {
        let (cpu, runq, blocked) = (f(r, "cpu_ms"), f(r, "runqueue_ms"), f(r, "blocked_ms"));
        let life = f(r, "lifetime_ms");
        eprintln!(
            "{}: lifetime {life:.0} ms = cpu {cpu:.0} + run queue {runq:.0} + blocked {blocked:.0}",
            r["name"]
        );
        // The three parts make up the thread's lifetime, which is the trace's window.
        assert!(
            (cpu + runq + blocked - life).abs() <= 0.02 * life,
            "{r}: cpu + runqueue + blocked != lifetime"
        );
        assert!(
            (life - window_ms).abs() <= 0.02 * window_ms,
            "{r}: lifetime vs the readings' window {window_ms} ms"
        );
        // Twice as many burners as cores: each waits for a CPU a large part of the time
        // (about half on an idle machine, more on a loaded one).
        assert!(runq > 0.2 * life, "{r}: run queue only {runq} of {life} ms");
        assert_eq!(r["runnable_ms"], r["runqueue_ms"]);
        assert_eq!(r["mostly"], "running", "{r}");
        // Measured, not made up: no more than the thread's own counter grew around the
        // recording.
        let tid = r["thread"].as_u64().unwrap();
        if let (Some(a), Some(b)) = (before.get(&tid), after.get(&tid)) {
            let grew = b.saturating_sub(*a) as f64 / 1e6;
            assert!(
                runq <= grew * 1.01 + 1.0,
                "{r}: {runq} ms > schedstat's {grew} ms"
            );
        }
    }

    // The summary and the waits report say it.
    let summary = json(&["report", t, "summary", "--json"]);
    let total_runq = f(&summary, "runqueue_ms");
    let burners_runq: f64 = rows.iter().map(|r| f(r, "runqueue_ms")).sum();
    assert!(
        total_runq >= burners_runq * 0.99,
        "{total_runq} vs {burners_runq}"
    );
    let words = text(&["report", t, "summary"]);
    assert!(words.contains("waiting for a CPU"), "{words}");
    // It says how much of the machine the process had: alone, that its own threads queue
    // for the CPUs; with competition, that others kept it waiting.
    assert!(
        words.contains("the process itself used ") || words.contains("the process used "),
        "{words}"
    );
    let waits = json(&["report", t, "waits", "--json"]);
    assert_eq!(waits["runqueue_source"], "schedstat");
    let (wq, wb, wt) = (
        f(&waits, "runqueue_ms"),
        f(&waits, "blocked_ms"),
        f(&waits, "total_ms"),
    );
    assert!(
        wq > 0.0 && (wq + wb - wt).abs() <= 0.01 * wt + 0.2,
        "{waits}"
    );
    let runnable = waits["by_blocking_call"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["method"]
                .as_str()
                .is_some_and(|s| s.starts_with("[runnable"))
        })
        .unwrap_or_else(|| panic!("no [runnable] row: {waits}"));
    assert!(
        (f(runnable, "ms") - wq).abs() <= 0.01 * wq + 0.2,
        "{runnable} vs {wq}"
    );
    let threads_text = text(&["report", t, "threads"]);
    assert!(threads_text.contains("runq ms"), "{threads_text}");
}

#[test]
fn a_cpu_limit_shows_as_throttling_in_the_summary() {
    if !live() {
        return;
    }
    let group = match common::cgroup::TestGroup::create() {
        Ok(g) => g,
        Err(why) => {
            common::machine_skip("a_cpu_limit_shows_as_throttling_in_the_summary", &why);
            return;
        }
    };
    // Under a busy machine the group's burners get less than their quota and are rarely
    // throttled (CI once saw 41 of 261 periods, with 0 ms counted as held off).
    let machine = common::machine();
    let app = start_burners(burners());
    if let Err(why) = group.add(app.1) {
        panic!(
            "made {} but could not move the workload in: {why}",
            group.dir.display()
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("limited.nettrace");
    record(app.1, &trace);
    let t = trace.to_str().unwrap();
    drop(app);

    let summary = json(&["report", t, "summary", "--json"]);
    let th = &summary["cpu_throttling"];
    eprintln!("cpu_throttling: {th}");
    assert!(th.is_object(), "no cpu_throttling: {summary}");
    let periods = th["periods"].as_u64().unwrap();
    let throttled = th["throttled_periods"].as_u64().unwrap();
    assert!(periods > 0 && throttled > 0, "{th}");
    // On a busy machine the kernel may count throttled periods but no time held off (CI once
    // read 41 throttled periods and a throttled_time that had not moved).
    machine.check("time held off the CPU is counted", || {
        assert!(f(th, "throttled_ms") > 0.0, "{th}")
    });
    assert_eq!(th["limit_cpus"].as_f64(), Some(0.5), "{th}");
    assert_eq!(
        th["cgroup"].as_str(),
        group.dir.to_str(),
        "the group read is the one made"
    );
    // Under a limit of half a CPU the burners wait far more than they run.
    let cpu = f(&summary, "thread_cpu_ms");
    let runq = f(&summary, "runqueue_ms");
    assert!(runq > cpu, "run queue {runq} ms vs CPU {cpu} ms");
    let words = text(&["report", t, "summary"]);
    eprintln!("{words}");
    assert!(words.contains("CPU contention: throttled "), "{words}");
    assert!(words.contains("% of periods"), "{words}");
    assert!(words.contains("limit 0.5 CPU"), "{words}");
    let threads = text(&["report", t, "threads"]);
    assert!(threads.contains("throttled "), "{threads}");
    let waits = json(&["report", t, "waits", "--json"]);
    assert!(waits["cpu_throttling"]["throttled_periods"].as_u64() == Some(throttled));
}
