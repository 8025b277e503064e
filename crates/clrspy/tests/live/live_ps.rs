//! `clrspy ps` and `clrspy record` against real .NET processes started by the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::{Child, Command, Stdio};

use common::{clrspy, clrspy_command, count, cpu_samples, info, live, machine, run_bounded, start};

#[test]
fn ps_lists_the_workload_with_its_runtime_version() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "30"]);
    let out = clrspy().args(["ps", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let me = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == w.1)
        .unwrap_or_else(|| panic!("pid {} not in {list}", w.1));
    assert_eq!(me["name"], "Workloads");
    let version = me["runtime_version"].as_str().unwrap();
    let dotnet = Command::new("dotnet")
        .arg("--list-runtimes")
        .output()
        .unwrap();
    let runtimes = String::from_utf8_lossy(&dotnet.stdout);
    assert!(
        runtimes.contains(&format!("Microsoft.NETCore.App {version} ")),
        "{version} is not an installed runtime: {runtimes}"
    );
    assert!(me["command_line"]
        .as_str()
        .unwrap()
        .contains("Workloads.dll idle"));
    assert_eq!(me["os"], "Linux");

    let text = clrspy().arg("ps").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.lines().any(|l| l.contains(&w.1.to_string())
            && l.contains("Workloads")
            && l.contains(version)),
        "{text}"
    );
}

#[test]
fn ps_skips_sockets_of_dead_processes_and_reports_silent_ones() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A socket file of a process that no longer exists, and one of a live process that is not
    // a runtime (this test's own pid, a plain file, named as a runtime names its socket: with
    // its start time in ticks).
    std::fs::write(dir.path().join("dotnet-diagnostic-4000000-1-socket"), b"").unwrap();
    let me = std::process::id();
    let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
    let start: u64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    std::fs::write(
        dir.path()
            .join(format!("dotnet-diagnostic-{me}-{start}-socket")),
        b"",
    )
    .unwrap();
    let out = clrspy()
        .args(["ps", "--json"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = list.as_array().unwrap();
    assert!(!list.iter().any(|p| p["pid"] == 4_000_000));
    let mine = list
        .iter()
        .find(|p| p["pid"] == me)
        .expect("the silent endpoint is listed");
    assert!(
        mine["error"].as_str().unwrap().contains("cannot connect"),
        "{mine}"
    );
}

/// Starts `clrspy record -p PID -o OUT` in the background (no duration: it runs until stopped).
fn spawn_record(pid: u32, out: &std::path::Path) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("clrspy"))
        .args(["record", "-p", &pid.to_string(), "-o"])
        .arg(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clrspy record")
}

#[test]
fn record_attaches_for_a_duration_and_gets_samples_and_rundown() {
    if !live() {
        return;
    }
    // The samples are counted: the test takes the machine lock.
    let machine = machine();
    let w = start("cpu", &["--seconds", "20"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cpu.nettrace");
    let run = clrspy()
        .args(["record", "-p", &w.1.to_string(), "--duration", "2s", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("the duration passed"), "{stderr}");
    let i = info(&out);
    assert_eq!(i["truncated"], false, "{i}");
    assert_eq!(i["process_id"], w.1);
    assert!(cpu_samples(&i) > 0, "{i}");
    // The burner gets less CPU on a busy machine, and the samples follow its CPU.
    machine.check("over 500 samples in 2 s", || {
        assert!(cpu_samples(&i) > 500, "{i}");
    });
    // The rundown names the burning method.
    let burn = clrspy()
        .args(["events", "--json", "--event", "Method/DCStopVerbose"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8(burn.stdout).unwrap();
    assert!(
        text.contains(r#""MethodNamespace":"Workloads.Cpu","MethodName":"Burn""#)
            || text.contains(r#""MethodName":"Burn""#),
        "no rundown for Burn"
    );
}

#[test]
fn record_survives_the_target_being_killed() {
    if !live() {
        return;
    }
    // The samples are counted: the test takes the machine lock.
    let machine = machine();
    let mut w = start("cpu", &["--seconds", "30"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("killed.nettrace");
    let child = spawn_record(w.1, &out);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let _ = w.0.kill();
    let _ = w.0.wait();
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert!(stderr.contains("the target ended the session"), "{stderr}");
    let i = info(&out);
    assert!(cpu_samples(&i) > 0, "{i}");
    machine.check("over 200 samples before the kill", || {
        assert!(cpu_samples(&i) > 200, "{i}");
    });
    // The stream stopped mid-way, but the file is a whole trace: every complete block, then
    // a valid end of stream (readers that need the end marker, TraceEvent among them, open it).
    assert_eq!(i["ended_cleanly"], true, "{i}");
    assert!(i["error"].is_null(), "{i}");
}

#[test]
fn record_refuses_an_unwritable_output_before_touching_the_target() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "20"]);
    let run = clrspy()
        .args([
            "record",
            "-p",
            &w.1.to_string(),
            "--duration",
            "1s",
            "-o",
            "/nonexistent-dir/x.nettrace",
        ])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("writing /nonexistent-dir/x.nettrace"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Recording"),
        "nothing is said before it fails: {stderr}"
    );
    // A pid that does not exist, and one that is not .NET: one clear line each.
    let run = clrspy().args(["record", "-p", "3999999"]).output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("no process with pid 3999999"));
    let run = clrspy().args(["record", "-p", "1"]).output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("has no .NET diagnostics endpoint"));
}

#[test]
fn record_stops_cleanly_on_sigint() {
    if !live() {
        return;
    }
    let w = start("cpu", &["--seconds", "30"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sigint.nettrace");
    let child = spawn_record(w.1, &out);
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let pid = child.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert!(stderr.contains("stopped on request"), "{stderr}");
    let i = info(&out);
    assert_eq!(i["truncated"], false, "{i}");
    assert!(count(&i, "Method/DCStopVerbose") > 100, "no rundown: {i}");
}

#[test]
fn env_reads_the_target_environment_through_its_runtime() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "20"]);
    let v = common::json(&["env", "-p", &w.1.to_string(), "--json"]);
    assert_eq!(v["CLRSPY_TEST_MARK"], "env-test-value", "{v}");
    let text = clrspy()
        .args(["env", "-p", &w.1.to_string()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout)
        .lines()
        .any(|l| l == "CLRSPY_TEST_MARK=env-test-value"));
    // SetEnvironmentVariable: the runtime's own environment changes.
    clrspy()
        .args([
            "env",
            "-p",
            &w.1.to_string(),
            "--set",
            "CLRSPY_SET=from clrspy",
        ])
        .assert()
        .success();
    let v = common::json(&["env", "-p", &w.1.to_string(), "--json"]);
    assert_eq!(v["CLRSPY_SET"], "from clrspy", "{v}");
    clrspy()
        .args(["env", "-p", &w.1.to_string(), "--set", "no-equals"])
        .assert()
        .code(2);
}

#[test]
fn record_names_its_file_after_the_process() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "20"]);
    let dir = tempfile::tempdir().unwrap();
    let run = clrspy()
        .current_dir(dir.path())
        .args(["record", "-p", &w.1.to_string(), "--duration", "1s"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // <name>_<yyyyMMdd_HHmmss>.nettrace, the name being the entry assembly.
    assert!(
        names[0].starts_with("Workloads_") && names[0].ends_with(".nettrace"),
        "{names:?}"
    );
    assert!(String::from_utf8_lossy(&run.stderr).contains("Workloads (pid "));
}

/// Fills the listen backlog of the Unix socket at `path` with connections nobody takes (as a
/// stopped runtime's fills up with the asks that timed out); returns how many it took.
fn fill_backlog(path: &std::path::Path) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let mut n = 0;
    loop {
        // SAFETY: plain socket calls on a sockaddr_un filled here; results checked.
        unsafe {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0);
            assert!(fd >= 0);
            let mut addr: libc::sockaddr_un = std::mem::zeroed();
            addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
                *d = *s as libc::c_char;
            }
            let r = libc::connect(
                fd,
                std::ptr::from_ref(&addr).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            );
            libc::close(fd);
            if r != 0 {
                return n;
            }
        }
        n += 1;
        assert!(n < 100_000, "the backlog never filled");
    }
}

/// A stopped process (SIGSTOP, a paused container) whose diagnostic socket's backlog is full
/// does not hang `ps` or `stack`: each gives up after its timeout and says why.
#[test]
fn a_stopped_process_with_a_full_backlog_does_not_hang_ps_or_stack() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "60"]);
    let pid = w.1.to_string();
    let socket = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("dotnet-diagnostic-{pid}-")))
        })
        .expect("the workload's diagnostic socket");
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    // Stopped for certain before its backlog is filled (it takes nothing from then on).
    let stopped = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('T'))
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !stopped() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(stopped(), "pid {pid} did not stop");
    let queued = fill_backlog(&socket);
    println!("the stopped runtime's backlog took {queued} connections");
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = clrspy_command();
        cmd.args(args);
        run_bounded(cmd, dir.path(), std::time::Duration::from_secs(60))
    };
    let out = run(&["ps", "--json"]);
    assert!(out.status.is_some(), "ps hung on a stopped process");
    assert!(out.status.unwrap().success(), "{}", out.stderr);
    let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == w.1)
        .unwrap_or_else(|| panic!("pid {pid} not in {list}"));
    assert!(
        row["error"].as_str().unwrap().contains("stopped or frozen"),
        "{row}"
    );
    let out = run(&["stack", "-p", &pid]);
    assert!(out.status.is_some(), "stack hung on a stopped process");
    assert!(!out.status.unwrap().success());
    assert!(out.stderr.contains("took no connection"), "{}", out.stderr);
    let _ = Command::new("kill").args(["-CONT", &pid]).status();
}
