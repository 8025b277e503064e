//! `clrspy watch --listen` with a rule's `dump.hold_hook`: a program held at the port gets
//! clrspy's hold hook through the port (its variables set through it too), and at each
//! matching first-chance exception, up to `max_actions`, the throwing thread waits while
//! its dump is written.
//!
//! The test runs Workloads.dll through a folder link of its own and matches only that path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::watch::Watch;
use common::{live, workloads};

#[test]
fn a_held_program_gets_the_hold_hook_through_the_port() {
    if !live() {
        return;
    }
    let (all, _dir) = held_casts(r#"{"max_actions":2}"#, "watch-hold-wl");
    let watching = all
        .iter()
        .find(|l| l["event"] == "watching")
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert!(
        watching["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("hold mode"),
        "{watching}"
    );
    let done: Vec<&serde_json::Value> =
        all.iter().filter(|l| l["event"] == "action_done").collect();
    assert_eq!(done.len(), 2, "max_actions: {all:#?}");
    for d in done {
        assert!(
            d["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("thread held"),
            "{d}"
        );
        let file = PathBuf::from(d["file"].as_str().unwrap());
        let mut core = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap())
            .read_to_end(&mut core)
            .unwrap();
        assert_eq!(&core[..4], b"\x7fELF", "{file:?}");
    }
    // No EventPipe watch of the exceptions besides the hook.
    assert!(
        !all.iter().any(|l| l["file"]
            .as_str()
            .is_some_and(|f| f.ends_with(".exceptions.nettrace"))),
        "{all:#?}"
    );
}

/// The hold mode obeys the rule's cooldown: of four casts one is dumped, the three others are
/// let go at once (the hook does not count them) and said to be skipped.
#[test]
fn the_hold_mode_keeps_the_rules_cooldown() {
    if !live() {
        return;
    }
    let (all, _dir) = held_casts(r#"{"max_actions":5,"cooldown":"1h"}"#, "watch-hold-cool-wl");
    let done = all.iter().filter(|l| l["event"] == "action_done").count();
    assert_eq!(done, 1, "cooldown: {all:#?}");
    let ended = all
        .iter()
        .find(|l| l["event"] == "watching_ended")
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert!(
        ended["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("3 matching exception(s) skipped"),
        "{ended}"
    );
    assert!(
        all.iter().any(|l| l["event"] == "skipped"
            && l["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("cooldown")),
        "{all:#?}"
    );
}

/// Runs `cast --count 4` held at watch's port under a hold-mode rule with `limits`; the
/// decision log once the process's watch ended (and the folder, kept alive).
fn held_casts(limits: &str, name: &str) -> (Vec<serde_json::Value>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let hook = common::hold_hook();
    let link = dir.path().join(name);
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        format!(
            r#"{{"rules":[{{"name":"casts","match":{{"command_line":"{name}/"}},
               "dump":{{"on_exception":["*.InvalidCastException"],"compress":"gzip",
                        "hold_hook":"{}"}},
               "limits":{limits}}}]}}"#,
            hook.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let sock = dir.path().join("port.sock");
    let sock_arg = sock.to_string_lossy().into_owned();
    let w = Watch::start(&rules, &out, &["--listen", &sock_arg]);
    let status = Command::new("dotnet")
        .arg(link.join("Workloads.dll"))
        .args(["cast", "--count", "4", "--seconds", "0"])
        .env(
            "DOTNET_DiagnosticPorts",
            format!("{},connect,suspend", sock.display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    w.wait_for(|l| l["event"] == "watching_ended", "watching_ended");
    (w.stop_with_log(), dir)
}
