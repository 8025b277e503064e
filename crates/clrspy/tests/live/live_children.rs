//! Programs that start more .NET programs, recorded with `clrspy record -- command`: a build
//! (compiler server, MSBuild nodes) and a program that starts a .NET child after clrspy has gone.
//! Every runtime inherits `DOTNET_DiagnosticPorts`; none may wait forever for clrspy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{
    assert_spawn_later_finished, clrspy_command, json, live, run_bounded, workloads, KillMarked,
};

/// The variable that marks every process a test started, so the stragglers can be found.
const MARK: &str = "CLRSPY_TEST_CHILDREN";

/// `dotnet` with the build servers on and this test's mark.
fn dotnet_env(cmd: &mut std::process::Command, mark: &str) {
    common::dotnet_with_build_servers(cmd, MARK, mark);
}

#[test]
fn recording_dotnet_build_finishes() {
    if !live() {
        return;
    }
    // The SDK's build servers are this user's, shared by every build on the machine: one test
    // at a time runs them (declared first, released last, after the servers are gone).
    let _servers = common::build_servers();
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let project = dir.path().join("proj");
    let mut new = std::process::Command::new("dotnet");
    new.args(["new", "console", "-o"]).arg(&project);
    dotnet_env(&mut new, &mark);
    let out = run_bounded(new, dir.path(), Duration::from_secs(120));
    assert!(
        out.status.is_some_and(|s| s.success()),
        "dotnet new console: {}{}",
        out.stdout,
        out.stderr
    );
    let trace = dir.path().join("build.nettrace");
    let mut rec = clrspy_command();
    rec.args(["record", "--duration", "120s", "-o"])
        .arg(&trace)
        .args(["--", "dotnet", "build"])
        .arg(&project);
    dotnet_env(&mut rec, &mark);
    // Less than the duration: a build that hangs fails here instead of being cut at 120 s.
    let out = run_bounded(rec, dir.path(), Duration::from_secs(100));
    // The compiler server outlives the build: shut it down (or the guard kills it).
    let mut shutdown = std::process::Command::new("dotnet");
    shutdown.args(["build-server", "shutdown"]);
    dotnet_env(&mut shutdown, &mark);
    let _ = run_bounded(shutdown, dir.path(), Duration::from_secs(30));
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.is_some(),
        "clrspy record -- dotnet build did not finish in 100 s:\n{stdout}\n{stderr}"
    );
    assert_eq!(
        out.status.and_then(|s| s.code()),
        Some(0),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("Build succeeded"), "{stdout}");
    assert!(
        stderr.contains("the target ended the session"),
        "the build did not end on its own: {stderr}"
    );
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true, "{info}");
    assert!(info["events"].as_u64().unwrap() > 1000, "{info}");
}

#[test]
fn a_program_can_start_dotnet_children_after_clrspy_has_gone() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let trace = dir.path().join("w.nettrace");
    let log = dir.path().join("w.log");
    // The shell leaves the workload running in the background and exits once it is running
    // (30 s at most): clrspy records the workload for 2 s and ends; 4 s in, the workload starts
    // a .NET child and waits for it.
    let mut rec = clrspy_command();
    rec.args(["record", "--duration", "2s", "-o"])
        .arg(&trace)
        .args([
            "--",
            "sh",
            "-c",
            "dotnet \"$0\" spawn-later --seconds 4 > \"$1\" 2>&1 & i=0; \
             while [ $i -lt 300 ] && ! grep -q ready \"$1\"; do sleep 0.1; i=$((i+1)); done",
        ])
        .arg(workloads())
        .arg(&log)
        .env(MARK, &mark);
    let out = run_bounded(rec, dir.path(), Duration::from_secs(60));
    let stderr = &out.stderr;
    assert!(out.status.is_some_and(|s| s.success()), "{stderr}");
    assert!(stderr.contains("the duration passed"), "{stderr}");
    assert_spawn_later_finished(&log, MARK, &mark);
}

#[test]
fn runtimes_besides_the_recorded_one_are_let_run() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let trace = dir.path().join("two.nettrace");
    // Two programs at once, neither started by a runtime clrspy resumed: one is recorded, the
    // other connects to clrspy's port too and must be let run.
    let mut rec = clrspy_command();
    rec.args(["record", "--duration", "100s", "-o"])
        .arg(&trace)
        .args([
            "--",
            "sh",
            "-c",
            "dotnet \"$0\" startup & dotnet \"$0\" startup; wait",
        ])
        .arg(workloads())
        .env(MARK, &mark);
    let out = run_bounded(rec, dir.path(), Duration::from_secs(60));
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.is_some(),
        "clrspy did not finish in 60 s:\n{stdout}\n{stderr}"
    );
    assert_eq!(
        out.status.and_then(|s| s.code()),
        Some(0),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout.lines().filter(|l| *l == "done").count(),
        2,
        "{stdout}"
    );
    assert!(
        stderr.contains("1 other .NET process started by the program ran untraced"),
        "{stderr}"
    );
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true, "{info}");
}
