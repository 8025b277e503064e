//! `clrspy ps` against real .NET processes started by the test.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::{clrspy, live, workloads};

/// A workload process killed when the test ends.
struct Running(Child, u32);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a scenario and waits for its `ready pid=N` line.
fn start(scenario: &str, args: &[&str]) -> Running {
    let mut child = Command::new("dotnet")
        .arg(workloads())
        .arg(scenario)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the workload");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("ready line");
    let pid = line
        .trim()
        .strip_prefix("ready pid=")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    Running(child, pid)
}

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
    // a runtime (this test's own pid, a plain file).
    std::fs::write(dir.path().join("dotnet-diagnostic-4000000-1-socket"), b"").unwrap();
    let me = std::process::id();
    std::fs::write(
        dir.path().join(format!("dotnet-diagnostic-{me}-1-socket")),
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
