//! The CPU estimate of traces without readings holds to the machine: testapps/WebApp (ASP.NET
//! Core, Server GC, `/cpu` burns CPU) under `ab`, recorded by dotnet-trace (from NuGet, in
//! bench/out/tools where `.ci/setup` installs it) and by the runtime's own `DOTNET_EnableEventPipe` settings. The test reads
//! the process's CPU in /proc/PID/stat and the machine's in /proc/stat itself, and checks for
//! each trace:
//! - the estimate is said (`method` "estimate") with the CPU count it assumed;
//! - `report cpu`, its `process` and `report threads` give one CPU total (one model);
//! - the total never exceeds CPUs × duration;
//! - it is within 25% of /proc's CPU over the same time, when the rest of the machine was
//!   quiet (others used under 10% of it: the estimate cannot see CPU other processes took,
//!   so on a busy machine only the limit is checked, and the test says so);
//! - a thread whose most seen frame is a blocking call is not "running", and
//!   `WebApp.Work.Burn` leads the CPU.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{ab, needs, Load, Need};

use std::process::Command;
use std::time::{Duration, Instant};

use common::{json, live, machine, run_bounded, start_web, start_web_with_env, Web};
use serde_json::Value;

/// Warms the app up, then loads it for `secs` seconds (8 clients, 20 ms of CPU a request: the
/// app is CPU-bound and `ab` itself costs little, so the machine is the app's).
fn load(web: &Web, secs: u32) -> Load {
    let url = format!("http://127.0.0.1:{}/cpu?ms=20", web.port);
    let _ = ab(&["-q", "-n", "300", "-c", "4", "-s", "10", &url]).status();
    let t = secs.to_string();
    Load(
        ab(&["-q", "-t", &t, "-n", "5000000", "-c", "8", "-s", "10", &url])
            .spawn()
            .expect("start ab"),
    )
}

/// A process's CPU (user + system) from /proc/PID/stat, ns.
fn process_cpu_ns(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (in parentheses, which may hold spaces).
    let rest = s.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    ticks * 1_000_000_000 / clock_ticks()
}

/// The whole machine's busy CPU (user, nice, system, irq, softirq) from /proc/stat, ns.
fn machine_busy_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = s.lines().next().unwrap_or("");
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let busy: u64 = [0, 1, 2, 5, 6].iter().filter_map(|&i| f.get(i)).sum();
    busy * 1_000_000_000 / clock_ticks()
}

fn clock_ticks() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output();
    out.ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// What /proc saw over a stretch: the process's CPU, the machine's busy CPU, the wall time.
#[derive(Debug, Clone, Copy)]
struct Seen {
    cpu_ms: f64,
    others_ms: f64,
    wall_ms: f64,
}

struct Mark(u64, u64, Instant);

fn mark(pid: u32) -> Mark {
    Mark(process_cpu_ns(pid), machine_busy_ns(), Instant::now())
}

fn seen(pid: u32, from: &Mark) -> Seen {
    let cpu = process_cpu_ns(pid).saturating_sub(from.0) as f64 / 1e6;
    let busy = machine_busy_ns().saturating_sub(from.1) as f64 / 1e6;
    Seen {
        cpu_ms: cpu,
        others_ms: (busy - cpu).max(0.0),
        wall_ms: from.2.elapsed().as_secs_f64() * 1e3,
    }
}

fn cpus() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
}

/// Holds the reports of `trace` to the rules; `proc_ms` is /proc's CPU over the trace's time.
fn check(trace: &str, seen: Seen, proc_ms: f64) {
    let cpu = json(&["report", trace, "cpu", "--json", "--top", "10"]);
    let threads = json(&["report", trace, "threads", "--json", "--top", "100000"]);
    let summary = json(&["report", trace, "summary", "--json"]);
    assert_eq!(cpu["method"], "estimate", "{trace}: {}", cpu["method_note"]);
    assert_eq!(threads["process"]["method"], "estimate");
    let n = cpu["cpus"].as_f64().expect("the trace's CPU count");
    assert!(
        cpu["method_note"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("{n} CPUs"))),
        "{}",
        cpu["method_note"]
    );
    let total = cpu["total_ms"].as_f64().unwrap();
    let by_threads: f64 = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cpu_ms"].as_f64().unwrap())
        .sum();
    for (what, v) in [
        ("cpu process", cpu["process"]["cpu_ms"].as_f64().unwrap()),
        (
            "threads process",
            threads["process"]["cpu_ms"].as_f64().unwrap(),
        ),
        ("threads' sum", by_threads),
    ] {
        assert!(
            (v - total).abs() <= 0.002 * total + 1.0,
            "{trace}: report cpu {total} ms, {what} {v} ms"
        );
    }
    let duration = summary["duration_ms"].as_f64().unwrap();
    assert!(
        total <= n * duration * 1.001,
        "{trace}: {total} ms of CPU in {duration} ms on {n} CPUs"
    );
    let quiet = seen.others_ms <= 0.10 * cpus() * seen.wall_ms;
    println!(
        "{trace}: estimate {total:.0} ms, /proc {proc_ms:.0} ms (ratio {:.2}), limit {:.0} ms; \
         others used {:.0} ms of {:.0} ms",
        total / proc_ms,
        n * duration,
        seen.others_ms,
        cpus() * seen.wall_ms
    );
    if quiet {
        assert!(
            (total - proc_ms).abs() <= 0.25 * proc_ms,
            "{trace}: estimate {total} ms, /proc {proc_ms} ms"
        );
    } else {
        println!("the machine was busy: the 25% rule is not checked (only the limit)");
    }
    // A thread seen mostly in a blocking call is not running.
    for t in threads["threads"].as_array().unwrap() {
        let top = t["top_frame"].as_str().unwrap_or("");
        let blocked = [
            "System.Threading.Monitor.Wait",
            "System.Threading.WaitHandle.Wait",
            "System.Threading.LowLevel",
            "System.IO.FileSystemWatcher+RunningInstance.TryReadEvent",
        ]
        .iter()
        .any(|b| top.starts_with(b));
        if blocked {
            assert_ne!(t["mostly"], "running", "{trace}: {t}");
        }
    }
    let first = &cpu["top_exclusive"][0]["method"];
    assert_eq!(first, "WebApp.Work.Burn", "{trace}: {cpu}");
}

#[test]
fn dotnet_trace_recording_of_a_busy_web_app_respects_the_machine() {
    if !live() || !needs(&[Need::Ab, Need::DotnetTrace]) {
        return;
    }
    // The /proc comparison needs the machine to itself.
    let _machine = machine();
    let dt = Need::DotnetTrace.path();
    let web = start_web();
    let pid = web.app.1;
    let _load = load(&web, 40);
    std::thread::sleep(Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("web.nettrace");
    let mut c = Command::new(&dt);
    c.args([
        "collect",
        "-p",
        &pid.to_string(),
        "--duration",
        "00:00:00:10",
        "-o",
    ])
    .arg(&trace)
    .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1");
    let from = mark(pid);
    let r = run_bounded(c, dir.path(), Duration::from_secs(90));
    let s = seen(pid, &from);
    assert!(
        r.status.is_some_and(|s| s.success()),
        "{}{}",
        r.stdout,
        r.stderr
    );
    let t = trace.to_str().unwrap();
    // /proc's CPU over the trace's own length, as a rate over the collect call (the load
    // is steady; the call also holds the session's start and stop).
    let summary: Value = json(&["report", t, "summary", "--json"]);
    let duration = summary["duration_ms"].as_f64().unwrap();
    check(t, s, s.cpu_ms / s.wall_ms * duration);
}

#[test]
fn runtime_env_recording_of_a_busy_web_app_respects_the_machine() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    // The /proc comparison needs the machine to itself.
    let _machine = machine();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("env.nettrace");
    let out = trace.to_str().unwrap().to_string();
    let web = start_web_with_env(&[
        ("DOTNET_EnableEventPipe", "1"),
        ("DOTNET_EventPipeOutputPath", &out),
        (
            "DOTNET_EventPipeConfig",
            "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x4c14fccbd:5",
        ),
    ]);
    let pid = web.app.1;
    let from = mark(pid);
    {
        let _load = load(&web, 10);
        std::thread::sleep(Duration::from_secs(11));
    }
    let s = seen(pid, &from);
    // The process's whole life is in the trace: /proc's CPU since its start.
    let life_ms = process_cpu_ns(pid) as f64 / 1e6;
    // SIGTERM: ASP.NET Core shuts down, and the runtime closes the file session.
    let _ = Command::new("kill").arg(pid.to_string()).status();
    let until = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(format!("/proc/{pid}")).is_ok() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(web);
    let info = json(&["info", &out, "--json"]);
    assert!(
        info["events"].as_u64().unwrap_or(0) > 0,
        "no trace written: {info}"
    );
    check(&out, s, life_ms);
}
