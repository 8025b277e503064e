//! Numbers a real server can trust: testapps/WebApp (ASP.NET Core, Server GC) under `ab` load,
//! recorded with `clrspy record -p PID`. The test polls every thread's CPU time in
//! /proc/PID/task/*/schedstat itself before and after the recording, and checks:
//! - each thread's CPU in `report threads` is its readings in the trace over the window (1%),
//!   and those readings lie between the test's own polls, at the rate the polls saw;
//! - the process's CPU in the reports matches /proc's over the window (5%, as a rate: the polls
//!   bracket the recording's start and stop);
//! - the runtime's own threads (no managed frames) are there, named, with their role, and
//!   EventPipe's cost (and clrspy's own) is shown as overhead, and the runtime's threads are a
//!   frame group in the folded stacks;
//! - `WebApp.Work.Burn` leads the CPU top, `/throw` is thrown in `WebApp.Work.ThrowAndCatch`
//!   and caught there, idle pool workers are idle, and the waits name a blocking call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{ab, needs, Load, Need};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::proc_cpu::{poller, readings, when};
use common::{clrspy_command, json, live, run_bounded, start_web};
use serde_json::Value;

#[test]
fn web_server_cpu_adds_up_to_proc_and_names_runtime_threads() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let web = start_web();
    let pid = web.app.1;
    let base = format!("http://127.0.0.1:{}", web.port);
    let cpu_url = format!("{base}/cpu?ms=2");
    // Warm up (tiering, connection paths), then load for longer than the recording.
    let _ = ab(&["-q", "-n", "300", "-c", "4", "-s", "10", &cpu_url]).status();
    let _load = Load(
        ab(&[
            "-q", "-t", "20", "-n", "2000000", "-c", "8", "-s", "10", &cpu_url,
        ])
        .spawn()
        .expect("start ab"),
    );
    std::thread::sleep(Duration::from_millis(800));
    let throw_url = format!("{base}/throw");
    let thrower = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        let _ = ab(&["-q", "-n", "5", "-c", "1", "-s", "10", &throw_url]).status();
    });

    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("web.nettrace");
    let stop = Arc::new(AtomicBool::new(false));
    let polling = poller(pid, stop.clone());
    std::thread::sleep(Duration::from_millis(50));
    let mut rec = clrspy_command();
    rec.args(["record", "-p", &pid.to_string(), "--duration", "8s", "-o"])
        .arg(&trace);
    let r = run_bounded(rec, dir.path(), Duration::from_secs(90));
    stop.store(true, Ordering::Relaxed);
    let polls = polling.join().unwrap();
    let _ = thrower.join();
    assert!(r.status.is_some_and(|s| s.success()), "{}", r.stderr);
    assert!(r.stderr.contains("Thread CPU times:"), "{}", r.stderr);
    let t = trace.to_str().unwrap();

    let threads = json(&["report", t, "threads", "--json", "--top", "100000"]);
    let cpu = json(&["report", t, "cpu", "--json", "--top", "20"]);
    let waits = json(&["report", t, "waits", "--json", "--top", "20"]);
    let exceptions = json(&["report", t, "exceptions", "--json"]);
    let (read, window) = readings(t);
    let rows = threads["threads"].as_array().unwrap();
    let row = |tid: u64| rows.iter().find(|r| r["thread"].as_u64() == Some(tid));

    // 1. Each thread's CPU is its readings over the window (1%), and the readings are
    // /proc's own values, taken between the test's first and last polls.
    let (first_poll, last_poll) = (&polls[0], &polls[polls.len() - 1]);
    let mut trace_total = 0.0;
    for (&tid, &(ns, first, last)) in &read {
        let want = ns as f64 / 1e6;
        trace_total += want;
        let got = row(tid).map_or(0.0, |r| r["cpu_ms"].as_f64().unwrap());
        assert!(
            (got - want).abs() <= want * 0.01 + 0.2,
            "thread {tid}: report {got} ms, readings {want} ms\n{threads}"
        );
        if let (Some(&b), Some(&a)) = (first_poll.get(&tid), last_poll.get(&tid)) {
            assert!(
                b <= first && last <= a,
                "thread {tid}: {b} <= {first}..{last} <= {a}"
            );
        }
    }
    // The test's own polls over each thread's own span: from the last poll at or before its
    // first reading (0 for a thread created during the recording) to the first poll at or
    // after its last. A window shared by all threads would count threads that were created
    // or that exited inside it wrongly (a thread gone at the window's end has no /proc value).
    let mut proc_total = 0.0;
    let mut compared = 0;
    for (&tid, &(ns, first, last)) in &read {
        let created = ns != last - first;
        let lo = if created {
            0
        } else {
            polls
                .iter()
                .filter_map(|p| p.get(&tid).copied())
                .filter(|&v| v <= first)
                .max()
                .unwrap_or(first)
        };
        let hi = when(&polls, tid, last).map(|i| polls[i][&tid]);
        let Some(hi) = hi else {
            // It exited before the test's next poll: only the readings know its end.
            proc_total += ns as f64 / 1e6;
            continue;
        };
        let p = hi.saturating_sub(lo) as f64 / 1e6;
        proc_total += p;
        let got = row(tid).map_or(0.0, |r| r["cpu_ms"].as_f64().unwrap());
        if p >= 200.0 {
            compared += 1;
            assert!(
                (got - p).abs() <= 0.03 * p + 25.0,
                "thread {tid}: report {got} ms, /proc {p} ms over its span"
            );
        }
    }
    assert!(compared > 0, "no busy thread to compare with /proc");

    // 2. The process's CPU in the reports: the readings' total, and /proc's (5%).
    for (name, p) in [("threads", &threads["process"]), ("cpu", &cpu["process"])] {
        let got = p["cpu_ms"].as_f64().unwrap();
        assert!(
            (got - trace_total).abs() <= trace_total * 0.01,
            "{name}: process CPU {got} ms, readings {trace_total} ms"
        );
        assert!(
            (got - proc_total).abs() <= 0.05 * proc_total,
            "{name}: process CPU {got} ms, /proc {proc_total} ms over the same window"
        );
    }
    eprintln!(
        "process CPU: report {:.1} ms, readings {trace_total:.1} ms, /proc {proc_total:.1} ms; window {:.2} s",
        threads["process"]["cpu_ms"],
        window / 1e9
    );
    assert_eq!(cpu["exact"], true, "{cpu}");
    let period = cpu["sampler_period_ms"].as_f64().unwrap();
    assert!(period >= 0.9, "sampler period {period} ms");

    // 3. The runtime's threads, named, with roles; EventPipe's cost as overhead.
    let role_of = |r: &Value| r["role"].as_str().unwrap_or("").to_string();
    let eventpipe: Vec<&Value> = rows.iter().filter(|r| role_of(r) == "event-pipe").collect();
    assert!(
        eventpipe.iter().any(|r| r["cpu_ms"].as_f64().unwrap() > 0.0
            && r["name"]
                .as_str()
                .unwrap_or("")
                .starts_with(".NET EventPipe")),
        "{threads}"
    );
    assert!(
        rows.iter()
            .any(|r| role_of(r) == "gc" && r["name"].as_str().unwrap_or("").contains("GC")),
        "no GC thread: {threads}"
    );
    for r in rows {
        let frame = r["top_frame"].as_str().unwrap_or("");
        // A runtime thread's group (`[runtime: tiered JIT]`), not the runtime's native code a
        // managed thread ran (`[runtime: libcoreclr.so]`, the kernel sampler's grouped frames).
        if frame.starts_with("[runtime: ") && !frame.ends_with(".so]") {
            assert_ne!(role_of(r), "managed", "{r}");
            assert!(r["name"].is_string(), "{r}");
        }
    }
    let overhead = cpu["process"]["overhead_percent"].as_f64().unwrap();
    assert!(overhead > 0.0 && overhead < 50.0, "{cpu}");
    // clrspy's own CPU, read by itself at every tick.
    let recorder = cpu["process"]["recorder_cpu_ms"].as_f64().unwrap();
    assert!(recorder > 0.0 && recorder < window / 1e6, "{cpu}");
    // Its session's threads; the recorder's whole process beside it.
    let whole = cpu["process"]["recorder_process_cpu_ms"].as_f64().unwrap();
    assert!(recorder <= whole * 1.02 + 5.0, "{cpu}");
    // The runtime's threads are a frame group in the stack exports too.
    let folded = dir.path().join("web.folded");
    let out = clrspy_command()
        .args(["convert", t, "--to", "folded", "-o"])
        .arg(&folded)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folded = std::fs::read_to_string(&folded).unwrap();
    assert!(
        folded.lines().any(|l| l.contains(";[runtime: EventPipe] ")),
        "{folded}"
    );
    assert!(
        cpu["process"]["runtime_threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["role"] == "event-pipe"),
        "{cpu}"
    );

    // 4. The burning method leads; idle workers are idle, not hot.
    let top: Vec<&str> = cpu["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(top[0], "WebApp.Work.Burn", "{cpu}");
    for m in cpu["top_exclusive"].as_array().unwrap() {
        let name = m["method"].as_str().unwrap();
        assert!(
            !name.contains("LowLevelLifoSemaphore") && !name.ends_with("WorkerThreadStart"),
            "{name} is hot: {cpu}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| role_of(r) == "managed" && r["idle_ms"].as_f64().unwrap() > 0.0),
        "no idle pool time: {threads}"
    );

    // 5. Throw and catch sites are the user's frames.
    let ty = exceptions["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "WebApp.WorkException")
        .unwrap_or_else(|| panic!("no WebApp.WorkException: {exceptions}"));
    assert_eq!(
        ty["thrown_in"][0]["name"], "WebApp.Work.ThrowAndCatch",
        "{ty}"
    );
    assert_eq!(
        ty["catch_sites"][0]["name"], "WebApp.Work.ThrowAndCatch",
        "{ty}"
    );

    // 6. Waiting is named by its blocking call, never the root frame.
    let calls = waits["by_blocking_call"].as_array().unwrap();
    let named = calls
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .find(|m| !m.starts_with('['))
        .unwrap_or_else(|| panic!("{waits}"));
    assert!(
        ["Wait", "Read", "Sleep", "Poll", "Join", "Accept", "Receive"]
            .iter()
            .any(|w| named.contains(w))
            && !named.contains("StartCallback"),
        "{named}: {waits}"
    );
    let text = clrspy_command()
        .args(["report", t, "summary"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("runtime threads: "), "{text}");
    assert!(text.contains("recording overhead"), "{text}");
    assert!(!text.contains("most waited in: System.Threading.Thread.StartCallback"));
}
