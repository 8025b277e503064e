//! A .NET process in its own PID and mount namespaces (what a container is to the kernel),
//! with a private temporary directory (a tmpfs only its namespace sees, as its TMPDIR, where
//! its runtime puts the diagnostics socket): `ps` finds it through /proc/<pid>/root and
//! `record` attaches to it. The tmpfs is not mounted over /tmp itself, so the test also works
//! from a checkout under /tmp (the workload must stay visible). Needs root and `unshare`;
//! skipped (with a message) without them.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::{clrspy, json, live, workloads, Running};

#[test]
fn ps_and_record_reach_a_process_in_other_namespaces() {
    if !live() {
        return;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let unshare = Command::new("unshare").arg("--version").output().is_ok();
    if !root || !unshare {
        eprintln!("skipping: needs root and unshare to make namespaces");
        return;
    }
    let wl = workloads();
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let private = tempfile::tempdir_in(&base).unwrap();
    let script = format!(
        "mount -t tmpfs tmpfs '{dir}' && TMPDIR='{dir}' exec dotnet {} cpu --seconds 29.25",
        wl.display(),
        dir = private.path().display()
    );
    let mut child = Command::new("unshare")
        .args([
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // Inside its namespace the program is pid 1.
    assert_eq!(line.trim(), "ready pid=1");
    let unshare_pid = child.id();
    let _guard = Running(child, unshare_pid);
    let list = json(&["ps", "--json"]);
    let found = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["command_line"]
                .as_str()
                .is_some_and(|c| c.contains("Workloads.dll cpu --seconds 29.25"))
        })
        .unwrap_or_else(|| panic!("the namespaced process is not listed: {list}"));
    let host_pid = found["pid"].as_u64().unwrap();
    assert_ne!(host_pid, 1);
    let status = std::fs::read_to_string(format!("/proc/{host_pid}/status")).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1")),
        "{status}"
    );

    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ns.nettrace");
    clrspy()
        .args([
            "record",
            "-p",
            &host_pid.to_string(),
            "--duration",
            "2s",
            "-o",
        ])
        .arg(&trace)
        .assert()
        .success();
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true);
    assert_eq!(info["process_id"], 1);
    assert!(info["events"].as_u64().unwrap() > 100, "{info}");
}
