//! Live: heap snapshots as actions on the leak workload (testapps/Workloads `heap`, exactly
//! 12,345 `Workloads.HeapOrder` held by a static list, `grow N` adds N). `clrspy heap watch`
//! takes three snapshots while the test grows the list by 1,000 then 2,500: the order type
//! grew in every interval by exactly that, held by the static field `Orders`. A rules file's
//! `heap` action makes `clrspy watch` write a `.gcdump` of the workload with exactly its
//! 12,345 orders; its workload runs through a folder link of the test's own, which is all the
//! rule matches (other tests run the same workload at the same time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::heap_workload::Workload;
use common::live;
use common::watch::Watch;

const ORDER: &str = "Workloads.HeapOrder";

#[test]
fn heap_watch_reports_the_growing_type_with_its_exact_deltas() {
    if !live() {
        return;
    }
    let mut w = Workload::start();
    let dir = tempfile::tempdir().unwrap();
    let mut child = common::clrspy_command()
        .args(["heap", "watch", "-p", &w.pid.to_string()])
        .args([
            "--every", "5s", "--count", "3", "--json", "--top", "50", "-o",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    for line in stderr.lines() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.starts_with("snapshot 1/3") {
            assert_eq!(w.grow(1_000), 13_345);
        } else if line.starts_with("snapshot 2/3") {
            assert_eq!(w.grow(2_500), 15_845);
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "heap watch: {log}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shots = v["snapshots"].as_array().unwrap();
    assert_eq!(shots.len(), 3, "{v}");
    for s in shots {
        assert!(std::path::Path::new(s["file"].as_str().unwrap()).is_file());
    }
    let growing = v["grew_in_every_interval"].as_array().unwrap();
    let top = &growing[0];
    assert_eq!(top["type"], ORDER, "{v}");
    assert_eq!(top["count_deltas"], serde_json::json!([1_000, 2_500]));
    assert_eq!(top["count_delta"], 3_500);
    let b0 = top["bytes_deltas"][0].as_i64().unwrap();
    assert!(b0 > 0 && b0 % 1_000 == 0, "{top}");
    assert_eq!(top["bytes_deltas"][1].as_i64().unwrap(), b0 / 1_000 * 2_500);
    let held: Vec<&str> = top["held_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        held.iter()
            .any(|s| s.starts_with("[static var") && s.ends_with(".Orders]")),
        "{held:?}"
    );
    assert!(v["verdict"].as_str().unwrap().contains(ORDER), "{v}");
    // The heap-growth finding names the type and the static that holds it.
    let f = &v["findings"][0];
    assert_eq!(f["id"], "heap-growth", "{v}");
    assert!(
        f["severity"] == "warning" || f["severity"] == "critical",
        "{f:#}"
    );
    assert_eq!(f["sites"][0]["name"], ORDER, "{f:#}");
    let said = f["said"].as_str().unwrap();
    assert!(
        said.contains("grew in every one of 2 intervals, by 3,500 objects")
            && said.contains(".Orders]"),
        "{said}"
    );
}

#[test]
fn heap_watch_of_a_heap_that_does_not_grow_finds_nothing() {
    if !live() {
        return;
    }
    let w = Workload::start();
    let dir = tempfile::tempdir().unwrap();
    let out = common::clrspy_command()
        .args(["heap", "watch", "-p", &w.pid.to_string()])
        .args(["--every", "2s", "--count", "3", "--json", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "heap watch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["snapshots"].as_array().unwrap().len(), 3, "{v}");
    for f in v["findings"].as_array().unwrap() {
        assert_eq!(f["severity"], "info", "a heap that does not grow: {f:#}");
    }
}

#[test]
fn a_rules_heap_action_writes_a_gcdump_with_the_exact_count() {
    rules_heap_action("heap-at-match-wl", r#"{"timeout": "60s"}"#, "at match");
}

#[test]
fn a_rules_heap_action_on_a_trigger_writes_a_gcdump_with_the_exact_count() {
    rules_heap_action(
        "heap-on-trigger-wl",
        r#"{"when": {"counter": "gc-heap-size-mb>0"}}"#,
        "trigger counter=gc-heap-size-mb>0 fired",
    );
}

/// A watch with one rule whose heap action is `heap` snapshots the workload (run through a
/// folder link named `link`) once; its `action_started` detail begins with `why`.
fn rules_heap_action(link: &str, heap: &str, why: &str) {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Workloads.dll through a folder link of this test's own: other tests run the same
    // workload on this machine, and the rule matches only this path.
    let link = dir.path().join(link);
    std::os::unix::fs::symlink(common::workloads().parent().unwrap(), &link).unwrap();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        format!(
            r#"{{"rules": [{{"name": "leak", "match": {{"command_line": "{}/Workloads\\.dll heap$"}},
            "heap": {heap}, "limits": {{"max_actions": 1}}}}]}}"#,
            link.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    // The workload holds its orders before the watch starts: a rule acts as soon as it
    // matches, and a process seen at its start (the runtime's port opens before Main) would
    // be snapshotted before it built its heap.
    let w = Workload::start_from(&link.join("Workloads.dll"));
    let watch = Watch::start(&rules, &out, &[]);
    let done = watch.done("leak", w.pid);
    assert_eq!(done["action"], "heap", "{done}");
    let file = std::path::PathBuf::from(done["file"].as_str().unwrap());
    assert_eq!(file.extension().and_then(|e| e.to_str()), Some("gcdump"));
    assert!(file.starts_with(out.join("leak")), "{}", file.display());
    let v = common::json(&["heap", file.to_str().unwrap(), "--json", "--top", "100000"]);
    let order = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == ORDER)
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(order["count"], 12_345, "{order}");
    let log = watch.stop_with_log();
    let started = log
        .iter()
        .filter(|l| l["event"] == "action_started" && l["action"] == "heap")
        .count();
    assert_eq!(started, 1, "{log:#?}");
    let detail = log
        .iter()
        .find(|l| l["event"] == "action_started" && l["action"] == "heap")
        .and_then(|l| l["detail"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(detail.starts_with(why), "{detail}");
    // No hidden trace left beside the snapshot.
    let left: Vec<_> = std::fs::read_dir(out.join("leak"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    drop(w);
}

#[test]
fn record_snapshot_heap_takes_a_snapshot_when_the_trigger_fires() {
    if !live() {
        return;
    }
    let w = Workload::start();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("rec.nettrace");
    let out = common::clrspy()
        .args(["record", "-p", &w.pid.to_string()])
        .args([
            "--stop-on",
            "counter=gc-heap-size-mb>0",
            "--after-trigger",
            "3s",
        ])
        .args(["--snapshot-heap", "--duration", "60s", "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "record: {err}");
    assert!(err.contains("Heap snapshot (trigger"), "{err}");
    // The recording went on while the snapshot was taken: both files are whole.
    let snaps: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gcdump"))
        .collect();
    assert_eq!(snaps.len(), 1, "{snaps:?} {err}");
    let name = snaps[0].file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("rec_"), "{name}");
    let v = common::json(&[
        "heap",
        snaps[0].to_str().unwrap(),
        "--json",
        "--top",
        "100000",
    ]);
    let order = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == ORDER)
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(order["count"], 12_345, "{order}");
    let i = common::info(&trace);
    assert_eq!(i["ended_cleanly"], true, "{i}");
    drop(w);
}
