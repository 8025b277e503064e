//! Live: the rules file's `counters` action. `clrspy watch` with a rule whose counters action
//! asks for the meters workload's own meter (testapps/Workloads `meters`: a counter added to an
//! exactly known number of times) writes `<process>_<pid>_<stamp>.counters.jsonl` in the rule's
//! folder from the match until the process ends: the counter's increments add up to the
//! workload's own total, and the action ends with the process, logged with its intervals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::watch::Watch;
use common::{live, workloads};

#[test]
fn a_rules_counters_action_collects_until_the_process_ends() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Workloads.dll through a folder link of this test's own: other tests run the meters
    // workload at the same time, and the rule matches only this path.
    let link = dir.path().join("counters-rule-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        format!(
            r#"{{"rules": [{{"name": "meters", "match": {{"command_line": "{}/Workloads\\.dll meters"}},
            "counters": {{"counters": "Workloads.Meters", "format": "jsonl"}},
            "limits": {{"max_actions": 1}}}}]}}"#,
            link.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let watch = Watch::start(&rules, &out, &[]);
    let stdout = dir.path().join("meters.stdout");
    let mut w = Command::new("dotnet")
        .arg(link.join("Workloads.dll"))
        .args(["meters", "--seconds", "5"])
        .stdout(std::fs::File::create(&stdout).unwrap())
        .spawn()
        .expect("start the workload");
    let pid = w.id();
    let until = Instant::now() + Duration::from_secs(60);
    while w.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = w.kill();
            panic!("the meters workload did not end");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let printed = std::fs::read_to_string(&stdout).unwrap();
    let total: u64 = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("meters total="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total: {printed}"));
    let done = watch.done("meters", pid);
    assert_eq!(done["action"], "counters", "{done}");
    let detail = done["detail"].as_str().unwrap_or_default();
    assert!(detail.ends_with("the process ended"), "{done}");
    let file = std::path::PathBuf::from(done["file"].as_str().unwrap());
    assert!(
        file.starts_with(out.join("meters")) && file.to_string_lossy().ends_with(".counters.jsonl"),
        "{}",
        file.display()
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let mut sum = 0.0;
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        if row["name"] == "workloads.items" {
            assert_eq!(row["kind"], "rate", "{line}");
            sum += row["value"].as_f64().unwrap();
        }
    }
    assert_eq!(sum as u64, total, "{text}");
    let log = watch.stop_with_log();
    let started = log
        .iter()
        .filter(|l| l["event"] == "action_started" && l["action"] == "counters")
        .count();
    assert_eq!(started, 1, "{log:#?}");
}
