//! `clrspy doctor`: on this machine, each symptom's plan as JSON names the collection the
//! symptom needs, with this machine's facts; with `-p` on a running workload, the process's
//! runtime and access; `--run` for a leak leaves a bundle whose heap diff names the type that
//! leaks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;
use std::path::Path;

use common::{clrspy_command, live, start};
use serde_json::Value;

fn doctor(args: &[&str]) -> (bool, Value, String) {
    let out = clrspy_command().arg("doctor").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), json, stderr)
}

/// The commands of a plan, in order.
fn commands(plan: &Value) -> Vec<String> {
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["command"].as_str().unwrap().to_string())
        .collect()
}

/// What each symptom must collect: a command that holds all of these words.
const NEEDS: &[(&str, &[&[&str]])] = &[
    (
        "high-cpu",
        &[&["bundle", "--symptom high-cpu"], &["report", " cpu"]],
    ),
    (
        "memory-leak",
        &[
            &["counters monitor"],
            &["bundle", "--symptom memory-leak"],
            &["heap diff"],
        ],
    ),
    (
        "slow-requests",
        &[
            &["bundle", "--symptom slow-requests"],
            &["report", " requests"],
        ],
    ),
    (
        "hang",
        &[
            &["report hangs -p"],
            &["stack -p"],
            &["bundle", "--symptom hang"],
            &["report", " hangs"],
            &["dump -p"],
        ],
    ),
    (
        "excessive-gc",
        &[
            &["bundle", "--symptom excessive-gc"],
            &["report", " gc"],
            &["counters"],
        ],
    ),
    (
        "http-errors",
        &[&["bundle", "--symptom http-errors"], &["report", " http"]],
    ),
    (
        "assembly-load",
        &[
            &["bundle", "--symptom assembly-load", "-- COMMAND"],
            &["report", " loader"],
        ],
    ),
    (
        "request-errors",
        &[
            &["bundle", "--symptom request-errors"],
            &["report", " requests"],
            &["report", " exceptions"],
            &["logs -p"],
        ],
    ),
    (
        "starvation",
        &[
            &["counters monitor"],
            &["stack -p"],
            &["bundle", "--symptom starvation"],
            &["report", " hangs"],
        ],
    ),
    (
        "crash",
        &[
            &["record", "--dump-on-crash", "-- COMMAND"],
            &["watch --rules"],
            &["report", " exceptions"],
        ],
    ),
];

#[test]
fn each_symptom_plans_what_it_needs_on_this_machine() {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    for (symptom, needs) in NEEDS {
        let (ok, plan, stderr) = doctor(&["--symptom", symptom, "--json"]);
        assert!(ok, "{symptom}: {stderr}");
        assert_eq!(plan["symptom"], *symptom);
        let env = &plan["environment"];
        assert_eq!(env["os"], "Linux");
        assert_eq!(env["kernel"], kernel.trim());
        assert!(env["free_disk_bytes"].as_u64().unwrap() > 0);
        assert!(env["target"].is_null());
        let cmds = commands(&plan);
        for need in *needs {
            assert!(
                cmds.iter().any(|c| need.iter().all(|w| c.contains(w))),
                "{symptom}: no command with {need:?} in {cmds:#?}"
            );
        }
        for step in plan["steps"].as_array().unwrap() {
            for key in ["what", "why", "cost"] {
                assert!(!step[key].as_str().unwrap().is_empty(), "{symptom}: {key}");
            }
        }
    }
    // Not on a terminal and no symptom: a usage error naming the flag.
    let out = clrspy_command().arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--symptom"));
    let (ok, _, stderr) = doctor(&["--symptom", "hang", "--run"]);
    assert!(!ok && stderr.contains("-p PID"), "{stderr}");
}

#[test]
fn with_a_process_the_plan_knows_its_runtime_and_access() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "60"]);
    let pid = w.1.to_string();
    let (ok, plan, stderr) = doctor(&["-p", &pid, "--symptom", "hang", "--json"]);
    assert!(ok, "{stderr}");
    let t = &plan["environment"]["target"];
    assert_eq!(t["pid"], w.1);
    assert_eq!(t["name"], "Workloads");
    assert!(t["runtime_version"]
        .as_str()
        .unwrap()
        .starts_with(char::is_numeric));
    assert_eq!(t["can_attach"], true);
    // The entry assembly `dotnet` runs, and its build's version.
    assert!(
        t["entry_assembly"]
            .as_str()
            .unwrap()
            .ends_with("/Workloads.dll"),
        "{t}"
    );
    assert!(
        t["app_version"].as_str().unwrap().starts_with("1.0.0"),
        "{t}"
    );
    let rss = t["rss_bytes"].as_u64().unwrap();
    assert!(rss > 1 << 20);
    let cmds = commands(&plan);
    assert!(cmds.contains(&format!("clrspy dump -p {pid}")), "{cmds:?}");
    assert!(cmds.iter().all(|c| !c.contains("PID")), "{cmds:?}");
    // The text form: the environment, then numbered steps.
    let out = clrspy_command()
        .args(["doctor", "-p", &pid, "--symptom", "hang"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Process") && text.contains("clrspy can attach"),
        "{text}"
    );
    assert!(
        text.contains("  1. ") && text.contains("Run:  clrspy stack -p"),
        "{text}"
    );
}

/// The entry `name` of the bundle `zip`.
fn bundle_file(zip: &Path, name: &str) -> Option<String> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(zip).ok()?).ok()?;
    let mut e = z.by_name(name).ok()?;
    let mut s = String::new();
    e.read_to_string(&mut s).ok()?;
    Some(s)
}

#[test]
fn run_for_a_leak_leaves_a_diff_that_names_the_leaking_type() {
    if !live() {
        return;
    }
    // 10 000 objects a second, kept forever.
    let w = start("leak", &["--seconds", "120", "--count", "1000"]);
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("leak.zip");
    let out = clrspy_command()
        .args([
            "doctor",
            "--run",
            "--symptom",
            "memory-leak",
            "--duration",
            "8s",
        ])
        .args(["-p", &w.1.to_string(), "-o"])
        .arg(&zip)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(zip.is_file(), "no bundle at {}: {stderr}", zip.display());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Plan for memory-leak"), "{stdout}");
    let diff = bundle_file(&zip, "heap/diff.txt")
        .unwrap_or_else(|| panic!("no heap/diff.txt in the bundle: {stderr}"));
    let first = diff
        .lines()
        .find(|l| l.contains("LeakedThing"))
        .unwrap_or_else(|| panic!("LeakedThing not in the diff:\n{diff}"));
    eprintln!("{first}");
    // Count before, count after, growth: the type grew.
    let cols: Vec<&str> = first.split_whitespace().collect();
    assert!(cols.get(2).is_some_and(|g| g.starts_with('+')), "{first}");
    // The manifest's target facts: the entry assembly beside `dotnet`, its versions.
    let manifest = bundle_file(&zip, "manifest.json")
        .unwrap_or_else(|| panic!("no manifest.json in the bundle: {stderr}"));
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    // The heap diff's finding is among the bundle's: a type that grew, held by a static.
    let growth = manifest["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "heap-growth")
        .unwrap_or_else(|| panic!("no heap-growth finding: {}", manifest["findings"]));
    assert!(
        growth["said"].as_str().unwrap().contains("[static var"),
        "{growth}"
    );
    let t = &manifest["target"];
    assert_eq!(t["pid"], w.1);
    assert!(
        t["entry_assembly"]
            .as_str()
            .unwrap()
            .ends_with("/Workloads.dll"),
        "{t}"
    );
    assert_eq!(t["assembly_version"], "1.0.0.0", "{t}");
    assert!(
        t["informational_version"]
            .as_str()
            .unwrap()
            .starts_with("1.0.0"),
        "{t}"
    );
    assert!(t["started_utc"].as_str().unwrap().ends_with('Z'), "{t}");

    // The plan's steps that read the bundle run as printed, in order (`clrspy` is this
    // build), and the heap diff names the type.
    let zip_s = zip.to_str().unwrap();
    let pid = w.1.to_string();
    let (ok, plan, stderr) = doctor(&[
        "--symptom",
        "memory-leak",
        "-p",
        &pid,
        "-o",
        zip_s,
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let bin = assert_cmd::cargo::cargo_bin("clrspy");
    let reads: Vec<String> = commands(&plan)
        .into_iter()
        // clrspy's own steps on the bundle (not the bundle itself, nor the `docker cp` a plan
        // made inside a container adds to take the file out of it).
        .filter(|c| {
            c.contains(zip_s) && c.starts_with("clrspy ") && !c.starts_with("clrspy bundle")
        })
        .collect();
    assert!(reads.len() >= 2, "{reads:?}");
    for cmd in &reads {
        let rest = cmd.strip_prefix("clrspy ").unwrap();
        let line = format!(
            "'{}' {rest}",
            bin.display().to_string().replace('\'', "'\\''")
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &line])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{cmd}: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        if cmd.contains("heap diff") {
            assert!(stdout.contains("LeakedThing"), "{cmd}:\n{stdout}");
        }
    }
}

/// Commands that run until stopped (a live view, a watcher): run for a few seconds, then
/// stopped as a user would with Ctrl+C.
const UNTIL_STOPPED: &[&str] = &["top", "counters monitor", "logs", "watch"];

/// Every symptom's plan, made for a live web app, runs as printed, in order, from the folder
/// the user is in: each `clrspy` step (this build) succeeds; the chains (`a && sleep 5 && b`,
/// a redirect to a file) run through the shell as a user would paste them; a program the plan
/// leaves to the user (`-- COMMAND`) is a workload here; `docker cp` (a plan inside a container)
/// is not a clrspy step.
#[test]
fn every_plans_printed_steps_run_in_order_on_a_live_app() {
    if !live() {
        return;
    }
    let app = common::scenarios::start_diag();
    let pid = app.pid().to_string();
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("clrspy");
    let quoted = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
    let program = format!(
        "dotnet {} cpu --seconds 2 --threads 1",
        quoted(common::workloads())
    );
    let symptoms = [
        "high-cpu",
        "memory-leak",
        "slow-requests",
        "hang",
        "excessive-gc",
        "http-errors",
        "request-errors",
        "starvation",
        "assembly-load",
        "crash",
    ];
    for symptom in symptoms {
        let (ok, plan, stderr) = doctor(&[
            "--symptom",
            symptom,
            "-p",
            &pid,
            "--duration",
            "3s",
            "--json",
        ]);
        assert!(ok, "{symptom}: {stderr}");
        let steps: Vec<String> = commands(&plan)
            .into_iter()
            .filter(|c| !c.starts_with("docker cp"))
            .collect();
        assert!(steps.len() >= 2, "{symptom}: {steps:?}");
        for step in &steps {
            for part in step.split(" && ") {
                let Some(rest) = part.strip_prefix("clrspy ") else {
                    // `sleep 5` between two stacks: the pause is the point, not the test's.
                    assert!(part.starts_with("sleep "), "{symptom}: {part}");
                    continue;
                };
                let line = format!("{} {}", quoted(&bin), rest.replace("COMMAND", &program));
                let until_stopped = UNTIL_STOPPED.iter().any(|c| rest.starts_with(c));
                let mut child = std::process::Command::new("sh")
                    .args(["-c", &line])
                    .current_dir(dir.path())
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let limit = if until_stopped { 4 } else { 180 };
                let started = std::time::Instant::now();
                let mut stopped = false;
                let status = loop {
                    if let Some(s) = child.try_wait().unwrap() {
                        break s;
                    }
                    if started.elapsed().as_secs() >= limit {
                        assert!(
                            until_stopped,
                            "{symptom}: `{part}` did not end in {limit} s"
                        );
                        // Ctrl+C, to the shell and the clrspy it runs.
                        stop_group(child.id());
                        stopped = true;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                };
                let mut out = String::new();
                child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                assert!(
                    status.success() || stopped,
                    "{symptom}: `{part}` failed ({status}): {err}\n{out}"
                );
                assert!(
                    !(out.trim().is_empty() && err.trim().is_empty()) || rest.contains('>'),
                    "{symptom}: `{part}` said nothing"
                );
            }
        }
    }
}

/// Sends SIGINT to process `pid` and its children (the shell and the clrspy it runs).
fn stop_group(pid: u32) {
    let _ = std::process::Command::new("pkill")
        .args(["-INT", "-P", &pid.to_string()])
        .status();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
}
