//! The C# compiler server (VBCSCompiler) recorded with `clrspy record -p PID` while `dotnet
//! build` compiles a small project a few times: a real program whose CPU is mostly the runtime's
//! own threads (the tiered JIT) rather than sampled managed code. The test polls every thread's
//! CPU time in /proc/PID/task/*/schedstat itself while the recording runs, and checks:
//! - each thread's CPU in `report threads` is its readings in the trace (1%), and the readings
//!   lie between the test's own first and last polls; busy threads match the polls over the
//!   same window (3%);
//! - the process's CPU in the reports is the readings' total (1%) and /proc's over the window
//!   (5%);
//! - the runtime's threads are named, with their role; the tiered JIT thread (role `jit`) is
//!   there, among the busiest threads, and is in the process's runtime threads of `report
//!   threads`, `report cpu` and the summary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::proc_cpu::{poller, readings};
use common::{clrspy_command, json, live, pids_with_env, run_bounded, KillMarked};
use serde_json::Value;

/// The variable that marks every process the test started, so its compiler server is found
/// (and killed) among others'.
const MARK: &str = "CLRSPY_TEST_VBCS";

/// `dotnet` with the SDK's chatter off and its compiler server on (this machine's environment
/// may turn build servers off).
fn dotnet(args: &[&str], mark: &str) -> Command {
    let mut cmd = Command::new("dotnet");
    cmd.args(args);
    common::dotnet_with_build_servers(&mut cmd, MARK, mark);
    cmd
}

/// Shuts the build servers down when dropped (the test's end, or a failure); the
/// [`KillMarked`] guard dropped after it kills whatever is left.
struct Shutdown(String, std::path::PathBuf);

impl Drop for Shutdown {
    fn drop(&mut self) {
        let cmd = dotnet(&["build-server", "shutdown"], &self.0);
        let _ = run_bounded(cmd, &self.1, Duration::from_secs(30));
    }
}

/// The compiler server among the processes marked `mark` (10 s at most).
fn compiler_server(mark: &str) -> Option<u32> {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let found = pids_with_env(MARK, mark).into_iter().find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("VBCSCompiler"))
        });
        if found.is_some() {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Writes a Program.cs that differs from the last one, so the build must compile again.
fn touch_program(project: &Path, n: usize) {
    let body = format!(
        "using System.Linq;\n\
         static class P{n} {{\n\
             static int Main() => Enumerable.Range(0, {n} + 10).Select(i => i * {n}).Sum() > 0 ? 0 : 1;\n\
         }}\n"
    );
    std::fs::write(project.join("Program.cs"), body).unwrap();
}

#[test]
fn compiler_server_cpu_is_its_readings_and_its_jit_thread_is_named() {
    if !live() {
        return;
    }
    // The SDK's build servers are this user's, shared by every build on the machine: one test
    // at a time runs them (declared first, released last, after the servers are gone).
    let _servers = common::build_servers();
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _kill = KillMarked(MARK, mark.clone());
    let _shutdown = Shutdown(mark.clone(), dir.path().to_path_buf());
    let project = dir.path().join("proj");
    let mut new = dotnet(&["new", "console", "-o"], &mark);
    new.arg(&project);
    let out = run_bounded(new, dir.path(), Duration::from_secs(120));
    assert!(
        out.status.is_some_and(|s| s.success()),
        "dotnet new console: {}{}",
        out.stdout,
        out.stderr
    );
    let build = |n: usize| {
        touch_program(&project, n);
        let mut cmd = dotnet(&["build", "--nologo", "-v", "q"], &mark);
        cmd.arg(&project);
        let out = run_bounded(cmd, dir.path(), Duration::from_secs(120));
        assert!(
            out.status.is_some_and(|s| s.success()),
            "dotnet build: {}{}",
            out.stdout,
            out.stderr
        );
    };
    // The first build starts the compiler server.
    build(0);
    let pid = compiler_server(&mark).expect("no VBCSCompiler started by the build");

    // Record the server while the project is built again (changed each time).
    let trace = dir.path().join("vbcs.nettrace");
    let stop = Arc::new(AtomicBool::new(false));
    let polling = poller(pid, stop.clone());
    std::thread::sleep(Duration::from_millis(50));
    let mut rec = clrspy_command();
    rec.args(["record", "-p", &pid.to_string(), "--duration", "15s", "-o"])
        .arg(&trace);
    let rec_dir = dir.path().join("rec");
    std::fs::create_dir_all(&rec_dir).unwrap();
    let recording = std::thread::spawn(move || run_bounded(rec, &rec_dir, Duration::from_secs(90)));
    std::thread::sleep(Duration::from_secs(2));
    let started = Instant::now();
    for n in 1..=3 {
        // A build started late would run past the recording: nothing to see there.
        if n > 1 && started.elapsed() > Duration::from_secs(9) {
            break;
        }
        build(n);
    }
    let r = recording.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let polls = polling.join().unwrap();
    assert!(r.status.is_some_and(|s| s.success()), "{}", r.stderr);
    assert!(r.stderr.contains("Thread CPU times:"), "{}", r.stderr);
    let t = trace.to_str().unwrap();

    let threads = json(&["report", t, "threads", "--json", "--top", "100000"]);
    let cpu = json(&["report", t, "cpu", "--json", "--top", "20"]);
    let summary = json(&["report", t, "--json"]);
    let read = readings(t).0;
    let rows = threads["threads"].as_array().unwrap();
    let row = |tid: u64| rows.iter().find(|r| r["thread"].as_u64() == Some(tid));
    let cpu_of = |r: &Value| r["cpu_ms"].as_f64().unwrap_or(0.0);

    // 1. Each thread's CPU is its readings (1%), and the readings are /proc's own values,
    // taken between the test's first and last polls.
    let (first_poll, last_poll) = (&polls[0], &polls[polls.len() - 1]);
    let mut trace_total = 0.0;
    for (&tid, &(ns, first, last)) in &read {
        let want = ns as f64 / 1e6;
        trace_total += want;
        let got = row(tid).map_or(0.0, cpu_of);
        assert!(
            (got - want).abs() <= want * 0.01 + 0.2,
            "thread {tid}: report {got} ms, readings {want} ms\n{threads}"
        );
        if let (Some(&b), Some(&a)) = (first_poll.get(&tid), last_poll.get(&tid)) {
            // A thread that ended after the test's last look at it and before clrspy's last
            // reading has a last reading past the test's last poll of it.
            let alive = Path::new(&format!("/proc/{pid}/task/{tid}")).exists();
            assert!(
                b <= first && (last <= a || !alive),
                "thread {tid}: {b} <= {first}..{last} <= {a}"
            );
        }
    }
    // The test's polls over the same window: the last poll before every thread's first reading
    // and the first poll after every thread's last one bracket the recording (within a poll,
    // ~10 ms, at each end). The server's threads are busy in bursts: no single thread tells
    // where the window is.
    let i0 = polls
        .iter()
        .rposition(|p| {
            read.iter()
                .all(|(t, &(_, first, _))| p.get(t).is_none_or(|&v| v <= first))
        })
        .expect("a poll before the recording");
    // (A thread that exited between two polls may have been read once more by clrspy than by
    // the test: its last poll cannot bound the window.)
    let bounding: Vec<(u64, u64)> = read
        .iter()
        .filter(|(t, r)| last_poll.get(t).is_some_and(|&v| v >= r.2))
        .map(|(&t, r)| (t, r.2))
        .collect();
    let i1 = polls
        .iter()
        .position(|p| {
            bounding
                .iter()
                .all(|(t, last)| p.get(t).is_some_and(|v| v >= last))
        })
        .expect("a poll after the recording");
    eprintln!(
        "{} threads read, {} bound the window's end; polls {i0}..{i1} of {}",
        read.len(),
        bounding.len(),
        polls.len()
    );
    assert!(i1 > i0 + 100, "window of {} polls", i1.saturating_sub(i0));
    let proc_cpu = |tid: &u64| {
        let at = |i: usize| polls[i].get(tid).copied().unwrap_or(0);
        at(i1).saturating_sub(at(i0)) as f64 / 1e6
    };
    let mut proc_total = 0.0;
    for tid in polls[i1].keys() {
        let p = proc_cpu(tid);
        proc_total += p;
        let got = row(*tid).map_or(0.0, cpu_of);
        if p >= 200.0 {
            assert!(
                (got - p).abs() <= 0.03 * p + 20.0,
                "thread {tid}: report {got} ms, /proc {p} ms over the same window"
            );
        }
    }

    // 2. The process's CPU: the readings' total (1%) and /proc's over the window (5%).
    // Threads that lived between two readings rounds were never read: the kernel's samples
    // alone say what they used (CI once had 190 ms of them). They are part of the process's
    // CPU, not of the readings'.
    let unread: f64 = rows
        .iter()
        .filter(|r| r["thread"].as_u64().is_some_and(|t| !read.contains_key(&t)))
        .map(cpu_of)
        .sum();
    if unread > 0.0 {
        eprintln!("{unread:.1} ms of CPU in threads never read (sampled only)");
    }
    for (name, p) in [
        ("threads", &threads["process"]),
        ("cpu", &cpu["process"]),
        ("summary", &summary["cpu"]["process"]),
    ] {
        let got = p["cpu_ms"].as_f64().unwrap_or(-1.0);
        assert!(
            (got - unread - trace_total).abs() <= trace_total * 0.01,
            "{name}: process CPU {got} ms ({unread} ms of it in threads never read), readings {trace_total} ms\n{p}"
        );
        assert!(
            (got - proc_total).abs() <= 0.05 * proc_total,
            "{name}: process CPU {got} ms, /proc {proc_total} ms over the same window"
        );
    }
    assert_eq!(cpu["exact"], true, "{cpu}");

    // 3. The runtime's threads are named, with their role.
    let role_of = |r: &Value| r["role"].as_str().unwrap_or("").to_string();
    for r in rows {
        let frame = r["top_frame"].as_str().unwrap_or("");
        // A runtime thread's group (`[runtime: tiered JIT]`), not the runtime's native code a
        // managed thread ran (`[runtime: libcoreclr.so]`, the kernel sampler's grouped frames).
        if frame.starts_with("[runtime: ") && !frame.ends_with(".so]") {
            assert_ne!(role_of(r), "managed", "{r}");
            assert!(r["name"].is_string(), "{r}");
        }
    }
    assert!(
        rows.iter()
            .any(|r| role_of(r) == "event-pipe" && cpu_of(r) > 0.0),
        "{threads}"
    );

    // EventPipe's cost is the recording's overhead, in every view of the process.
    for (name, p) in [
        ("threads", &threads["process"]),
        ("summary", &summary["cpu"]["process"]),
    ] {
        let overhead = p["overhead_percent"].as_f64().unwrap_or(-1.0);
        assert!(overhead > 0.0 && overhead < 50.0, "{name}: {p}");
    }
    let text = clrspy_command()
        .args(["report", t, "summary"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("runtime threads: "), "{text}");
    assert!(text.contains("tiered JIT"), "{text}");
    assert!(text.contains("recording overhead"), "{text}");

    // 4. The tiered JIT thread: named, with its role, among the three busiest threads.
    let jit: Vec<&Value> = rows.iter().filter(|r| role_of(r) == "jit").collect();
    assert!(
        jit.iter().any(|r| r["name"]
            .as_str()
            .unwrap_or("")
            .starts_with(".NET Tiered Com")),
        "no tiered JIT thread: {threads}"
    );
    let jit_ms: f64 = jit.iter().map(|r| cpu_of(r)).sum();
    let mut by_cpu: Vec<f64> = rows.iter().map(cpu_of).collect();
    by_cpu.sort_by(|a, b| b.total_cmp(a));
    let top_jit = jit.iter().map(|r| cpu_of(r)).fold(0.0, f64::max);
    assert!(
        by_cpu.iter().take(3).any(|&c| c <= top_jit),
        "the JIT thread ({top_jit} ms) is not among the 3 busiest: {threads}"
    );
    for (name, p) in [
        ("threads", &threads["process"]),
        ("cpu", &cpu["process"]),
        ("summary", &summary["cpu"]["process"]),
    ] {
        let listed = p["runtime_threads"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["role"] == "jit"))
            .unwrap_or_else(|| panic!("{name}: no jit in the runtime threads: {p}"));
        let ms = listed["cpu_ms"].as_f64().unwrap_or(-1.0);
        assert!(
            (ms - jit_ms).abs() <= jit_ms * 0.01 + 0.2,
            "{name}: jit {ms} ms, threads {jit_ms} ms"
        );
    }
    // The JIT's CPU is shown as its own, even when the sampler caught the thread in managed
    // code now and then (a class constructor, a lock): compiling is native work. The runtime's
    // sampler never walks the JIT thread: its CPU is one group. The kernel's samples it: its
    // CPU is under the JIT's own functions (`--native show`: `libclrjit.so!…`), and by default
    // one row, `[JIT compiler: libclrjit.so]`.
    if cpu["kernel_samples"] == true {
        let busiest = jit
            .iter()
            .copied()
            .max_by(|a, b| cpu_of(a).total_cmp(&cpu_of(b)));
        let tid = busiest
            .and_then(|r| r["thread"].as_u64())
            .unwrap()
            .to_string();
        let one = json(&[
            "report", t, "cpu", "--json", "--thread", &tid, "--top", "100000", "--native", "show",
        ]);
        // Under the JIT's entry (inclusive): the JIT asks the runtime about types and
        // methods and libc for memory as it compiles, and those leaves are its work too (a
        // third of the thread's samples end in libcoreclr.so or libc on .NET 10).
        let in_jit = one["top_inclusive"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                m["method"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("libclrjit.so!"))
            })
            .map(|m| m["ms"].as_f64().unwrap_or(0.0))
            .fold(0.0, f64::max);
        assert!(
            in_jit >= 0.8 * top_jit,
            "libclrjit.so's entry holds {in_jit} ms of the JIT thread's {top_jit} ms\n{one}"
        );
        // By default (native frames grouped by role) the thread's CPU is the JIT's.
        let grouped = json(&["report", t, "cpu", "--json", "--thread", &tid]);
        let jit_group = grouped["top_exclusive"]
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|m| m["method"] == "[JIT compiler: libclrjit.so]")
            })
            .map_or(0.0, |m| m["ms"].as_f64().unwrap_or(0.0));
        assert!(
            jit_group >= 0.8 * top_jit,
            "[JIT compiler: libclrjit.so] has {jit_group} ms of the JIT thread's {top_jit} ms\n{grouped}"
        );
    } else {
        let group = cpu["top_exclusive"]
            .as_array()
            .and_then(|a| a.iter().find(|m| m["method"] == "[runtime: tiered JIT]"))
            .map_or(0.0, |m| m["ms"].as_f64().unwrap_or(0.0));
        assert!(
            group >= 0.9 * jit_ms,
            "[runtime: tiered JIT] has {group} ms of the JIT threads' {jit_ms} ms\n{cpu}\n{threads}"
        );
    }
    eprintln!(
        "VBCSCompiler: process CPU report {:.1} ms, readings {trace_total:.1} ms, /proc {proc_total:.1} ms; \
         JIT {jit_ms:.1} ms ({:.0}%), busiest threads {:?}",
        threads["process"]["cpu_ms"],
        100.0 * jit_ms / trace_total.max(1.0),
        &by_cpu[..by_cpu.len().min(5)]
    );
    // (`threads` lists them by all their time; CPU first here.)
    let mut hot: Vec<&Value> = rows.iter().collect();
    hot.sort_by(|a, b| cpu_of(b).total_cmp(&cpu_of(a)));
    for r in hot.iter().take(5) {
        eprintln!(
            "  {} {} {}: {:.1} ms, {}",
            r["thread"],
            r["name"],
            r["role"],
            cpu_of(r),
            r["top_frame"]
        );
    }
}
