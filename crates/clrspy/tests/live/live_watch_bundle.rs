//! `clrspy watch` with a rule's `bundle` action against real .NET processes: a program that
//! throws a SocketException after a few seconds leaves one bundle — the ring of trace that led
//! to it, its reports, the manifest — in the rule's folder, owner-only, that `clrspy bundle
//! verify` accepts; a program that ends without the trigger leaves nothing, is logged as
//! `watching_ended` and is not counted against `max_actions`.
//!
//! Other tests run the same workloads on this machine: the programs here run Workloads.dll
//! through a folder link of this test's own and the rule matches only that path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::watch::Watch;
use common::{clrspy, live, workloads};

/// `dotnet DLL ARGS`, output discarded, killed when dropped.
struct Program(Child);

impl Program {
    fn start(dll: &Path, args: &[&str]) -> Program {
        let child = Command::new("dotnet")
            .arg(dll)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dotnet");
        Program(child)
    }

    /// Waits for the exit (2 minutes at most).
    fn wait(&mut self) {
        let until = Instant::now() + Duration::from_secs(120);
        while self.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "the program did not end");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn for_pid(l: &serde_json::Value, event: &str, pid: u32) -> bool {
    l["event"] == event && l["pid"] == pid && l["action"] == "bundle"
}

/// Every entry of the zip at `path`: name and bytes.
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut e = zip.by_index(i).unwrap();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (e.name().unwrap().to_string(), bytes)
        })
        .collect()
}

#[test]
fn a_bundle_rule_leaves_the_triggered_moment_whole_and_nothing_without_a_trigger() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("watch-bundle-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let dll = link.join("Workloads.dll");
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{ "rules": [ { "name": "wl-bundle",
        "match": { "name": "Workloads", "command_line": "watch-bundle-wl/" },
        "bundle": { "profile": "cpu", "ring_mb": 32,
                    "stop_on": [ { "exception": "System.Net.Sockets.*" } ],
                    "after_trigger": "1s" },
        "limits": { "max_actions": 1 } } ] }"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let w = Watch::start(&rules, &out, &[]);

    // A program that ends without the trigger: no bundle, and the rule's one action is given
    // back.
    let mut quiet = Program::start(&dll, &["cpu", "--seconds", "4"]);
    let qpid = quiet.0.id();
    w.wait_for(|l| for_pid(l, "action_started", qpid), "the quiet start");
    quiet.wait();
    let ended = w.wait_for(
        |l| {
            (l["event"] == "watching_ended"
                || l["event"] == "action_done"
                || l["event"] == "action_failed")
                && l["pid"] == qpid
        },
        "the end of the quiet window",
    );
    assert_eq!(ended["event"], "watching_ended", "{ended}");
    let why = ended["detail"].as_str().unwrap_or("");
    assert!(why.starts_with("no trigger fired: "), "{ended}");

    // A SocketException after 6 s: the window ends 1 s later and the bundle is kept (the
    // quiet program's action was given back, so max_actions 1 still admits it).
    let mut web = Program::start(&dll, &["throw-later", "--seconds", "6"]);
    let pid = web.0.id();
    let started = w.wait_for(|l| for_pid(l, "action_started", pid), "the bundle's start");
    let named = PathBuf::from(started["file"].as_str().unwrap());
    assert_eq!(named.parent().unwrap(), out.join("wl-bundle"), "{started}");
    let name = named.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with(&format!("Workloads_{pid}_")) && name.ends_with(".bundle.zip"),
        "{name}"
    );
    let detail = started["detail"].as_str().unwrap_or("");
    assert!(detail.contains("waiting for"), "{started}");
    assert!(detail.contains("32 MB"), "{started}");
    let done = w.wait_for(
        |l| {
            (l["event"] == "action_done"
                || l["event"] == "action_failed"
                || l["event"] == "watching_ended")
                && l["pid"] == pid
        },
        "the end of the bundle",
    );
    assert_eq!(done["event"], "action_done", "{done}");
    assert_eq!(done["rule"], "wl-bundle", "{done}");
    assert!(
        done["detail"]
            .as_str()
            .unwrap_or("")
            .contains("a stop trigger fired"),
        "{done}"
    );
    web.wait();
    let log = w.stop_with_log();
    assert!(
        !log.iter().any(|l| l["event"] == "skipped"),
        "the given-back action left room: {log:#?}"
    );
    // The staging folder is gone: the rule's folder holds the zip only.
    let left: Vec<PathBuf> = std::fs::read_dir(out.join("wl-bundle"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();

    assert_eq!(left, std::slice::from_ref(&named), "{left:?}");
    let folder = std::fs::metadata(out.join("wl-bundle")).unwrap();
    assert_eq!(
        folder.permissions().mode() & 0o777,
        0o700,
        "owner-only folder"
    );
    assert_eq!(done["file"].as_str(), named.to_str(), "{done}");
    let meta = std::fs::metadata(&named).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "owner-only");
    assert_eq!(done["bytes"].as_u64(), Some(meta.len()), "{done}");
    let files = entries(&named);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"manifest.json"), "{names:?}");
    let trace = files
        .iter()
        .find(|(n, _)| n == "trace.nettrace")
        .unwrap_or_else(|| panic!("no trace: {names:?}"));
    assert!(trace.1.starts_with(b"Nettrace"), "a trace file");
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("reports/") && n.ends_with(".txt")),
        "{names:?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&files.iter().find(|(n, _)| n == "manifest.json").unwrap().1)
            .unwrap();
    assert_eq!(manifest["target"]["pid"], pid, "{manifest}");
    let command = manifest["command"].as_str().unwrap_or("");
    assert!(command.contains("watch"), "{manifest}");
    assert!(command.contains("wl-bundle"), "{manifest}");
    let verify = clrspy()
        .args(["bundle", "verify"])
        .arg(&named)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}
