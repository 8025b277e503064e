//! `clrspy stack` on a stuck, busy process: testapps/Workloads `hang-busy` (two threads
//! deadlocked on two locks, and a CPU burner on every core in the same process). Twenty
//! snapshots out of twenty show both deadlocked threads by name, each in a lock acquisition
//! (.NET 10 shows `Monitor.Enter_Slowpath` under `Monitor.Enter`), every burner in its
//! loop, and the threads without managed frames; the text output says the same; `--native`
//! adds the native frames (libc's wait above `Monitor.Enter`) and leaves no files; a timeout
//! too short to finish gives what was taken and exit code 1. The time of each call is printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::{clrspy, live, machine, start};
use serde_json::Value;

/// The thread named `name` in a `stack --json` object.
fn thread<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name:?} in {v:#}"))
}

fn frames(t: &Value) -> Vec<&str> {
    t["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect()
}

/// The deadlocked thread `name` waits for a lock inside `method`: its innermost frames are
/// the lock acquisition, its own method below them.
fn assert_in_lock(v: &Value, name: &str, method: &str) {
    let t = thread(v, name);
    let f = frames(t);
    assert_eq!(t["managed"], true, "{name}: {t:#}");
    assert!(
        f[0].starts_with("System.Threading.Monitor.Enter"),
        "{name} is not in a lock acquisition: {f:?}"
    );
    let own = f.iter().position(|x| *x == method);
    let lock = f
        .iter()
        .position(|x| *x == "System.Threading.Monitor.Enter");
    assert!(
        matches!((lock, own), (Some(l), Some(o)) if l < o),
        "{name}: expected Monitor.Enter above {method}: {f:?}"
    );
}

#[test]
fn stack_shows_the_deadlocked_threads_of_a_busy_process_every_time() {
    if !live() {
        return;
    }
    // The burners load every core: take turns with the tests that count CPU.
    let _m = machine();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let app = start(
        "hang-busy",
        &["--seconds", "0", "--threads", &cores.to_string()],
    );
    let pid = app.1.to_string();
    // Let the deadlock form (the workload says so after 200 ms) and the burners start.
    std::thread::sleep(Duration::from_millis(1500));
    let mut times = Vec::new();
    for run in 0..20 {
        let t0 = Instant::now();
        let out = clrspy()
            .args(["stack", "-p", &pid, "--json"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        times.push(t0.elapsed());
        assert!(
            out.status.success(),
            "run {run}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["pid"].as_u64(), Some(u64::from(app.1)));
        assert_eq!(v["complete"], true);
        assert_in_lock(&v, "deadlock-a", "Workloads.Deadlock.TakeAThenB");
        assert_in_lock(&v, "deadlock-b", "Workloads.Deadlock.TakeBThenA");
        for b in 0..cores {
            let t = thread(&v, &format!("busy-{b}"));
            assert!(
                frames(t).contains(&"Workloads.Cpu.Burn"),
                "run {run}: busy-{b}: {t:#}"
            );
        }
        // The runtime's own threads are listed, without managed frames.
        let sig = thread(&v, ".NET SigHandler");
        assert_eq!(sig["managed"], false);
        assert!(frames(sig).is_empty());
        let main = v["threads"][0].clone();
        assert_eq!(main["thread_id"].as_u64(), Some(u64::from(app.1)));
        assert!(
            frames(&main).contains(&"Workloads.Deadlock.Run"),
            "{main:#}"
        );
    }
    let ms: Vec<u128> = times.iter().map(Duration::as_millis).collect();
    eprintln!("stack -p (busy, {cores} burners) took, ms: {ms:?}");

    // The text output: each thread's heading, then its frames innermost first.
    let out = clrspy().args(["stack", "-p", &pid]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in ["deadlock-a", "deadlock-b"] {
        let at = text
            .find(&format!(" \"{name}\"\n"))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        let block = &text[at..];
        let first = block.lines().nth(1).unwrap();
        assert!(
            first.starts_with("  System.Threading.Monitor.Enter"),
            "{name}: {first:?}\n{text}"
        );
    }
    assert!(
        text.contains("\".NET SigHandler\"\n  (no managed frames)\n"),
        "{text}"
    );

    // --native: whole stacks from the runtime's crash report; its files are deleted.
    let leftovers = || {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("clrspy-stack-{}-", app.1))
            })
            .count()
    };
    let t0 = Instant::now();
    let out = clrspy()
        .args(["stack", "-p", &pid, "--json", "--native"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let native_time = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("pauses"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (name, method) in [
        ("deadlock-a", "Workloads.Deadlock.TakeAThenB()"),
        ("deadlock-b", "Workloads.Deadlock.TakeBThenA()"),
    ] {
        let f = frames(thread(&v, name));
        let own = f.iter().position(|x| *x == method);
        let lock = f
            .iter()
            .position(|x| x.starts_with("System.Threading.Monitor.Enter("));
        // Native frames (the runtime's wait, libc's futex) above the lock acquisition.
        let native = f.iter().position(|x| x.starts_with("libc.so.6!"));
        assert!(
            matches!((native, lock, own), (Some(n), Some(l), Some(o)) if n < l && l < o),
            "{name}: {f:?}"
        );
    }
    // The runtime's own threads have native frames now.
    assert!(!frames(thread(&v, ".NET SigHandler")).is_empty());
    // A thread paused running managed code (the burners) has no frames in the crash
    // report: it keeps the managed ones of the runtime's sample, and a note says so.
    let busy = frames(thread(&v, "busy-0"));
    assert!(
        busy.iter().any(|f| f.starts_with("Workloads.Cpu.Burn")),
        "busy-0: {busy:?}\n{err}"
    );
    assert_eq!(leftovers(), 0, "the crash report's files are deleted");
    eprintln!("stack -p --native took {} ms", native_time.as_millis());

    // A timeout too short for the session: what was taken (the OS's threads at least), a
    // note on stderr, exit code 1 — never a hang.
    let out = clrspy()
        .args(["stack", "-p", &pid, "--json", "--timeout", "1ms"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["complete"], false);
    thread(&v, "deadlock-a");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("partial"), "{err}");
}
