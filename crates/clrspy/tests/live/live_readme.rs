//! The README's symptom sections, run: each section's command against the workload its
//! excerpt came from, and the excerpt's telling lines (the method, the type, the cycle, the
//! blocking call, the throw site, the bundle's line) in both the output and the README, so the
//! front page cannot drift from what clrspy prints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::scenarios::start_diag;
use common::{ab, clrspy_command, live, needs, start, workloads, Need};

fn readme() -> String {
    std::fs::read_to_string(common::repo().join("README.md")).unwrap()
}

/// Runs clrspy (bounded), returns its stdout and stderr.
fn run(args: &[&str], dir: &Path) -> String {
    let mut cmd = clrspy_command();
    cmd.args(args).current_dir(dir);
    let out = common::run_bounded(cmd, dir, Duration::from_secs(150));
    let text = out.stdout + &out.stderr;
    assert!(
        out.status.is_some_and(|s| s.success()),
        "{args:?}: {:?}\n{text}",
        out.status
    );
    text
}

/// Each marker is in the README's section and in what the command printed.
fn both(section: &str, output: &str, markers: &[&str]) {
    let readme = readme();
    let at = readme
        .find(&format!("### {section}"))
        .unwrap_or_else(|| panic!("README has no section {section}"));
    let end = readme[at + 4..]
        .find("\n### ")
        .map_or(readme.len(), |e| at + 4 + e);
    let text = &readme[at..end];
    for m in markers {
        assert!(text.contains(m), "README's {section} lacks {m:?}");
        assert!(
            output.contains(m),
            "{section}: the output lacks {m:?}:\n{output:.4000}"
        );
    }
}

#[test]
fn each_symptom_section_of_the_readme_is_what_its_command_prints() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w = workloads().to_str().unwrap().to_string();

    let out = run(&["profile", "--", "dotnet", &w, "cpu", "--seconds", "3"], d);
    both(
        "Slow, or burning CPU",
        &out,
        &["hottest (CPU, exclusive):", "%  Workloads.Cpu.Burn"],
    );

    let leak = start("leak", &["--seconds", "40", "--count", "2000"]);
    let pid = leak.1.to_string();
    let out = run(
        &["heap", "watch", "-p", &pid, "--count", "3", "--every", "3s"],
        d,
    );
    drop(leak);
    both(
        "Memory grows",
        &out,
        &[
            "Types that grew in every interval (",
            "bytes  Workloads.LeakedThing",
            "held by [static vars] → [static var Items (of type System.Collections.Generic.List<Workloads.LeakedThing>)] → ",
        ],
    );

    let hang = start("hang", &["--seconds", "60"]);
    let pid = hang.1.to_string();
    let out = run(&["report", "hangs", "-p", &pid], d);
    drop(hang);
    both(
        "Hung, or deadlocked",
        &out,
        &[
            "Deadlocks: 1",
            "  cycle 1: thread ",
            "\"deadlock-a\"",
            "      waits for the monitor of System.Object 0x",
            "        Workloads.Deadlock.TakeAThenB()",
        ],
    );

    let diag = start_diag();
    let pid = diag.pid().to_string();
    let mut load = ab(&[
        "-q",
        "-t",
        "12",
        "-n",
        "300",
        "-c",
        "40",
        &diag.url("/api/diag/taskresult"),
    ])
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let trace = d.join("app.nettrace");
    let t = trace.to_str().unwrap();
    run(
        &[
            "record",
            "-p",
            &pid,
            "--profile",
            "aspnet",
            "--duration",
            "8s",
            "-o",
            t,
        ],
        d,
    );
    let _ = load.kill();
    let _ = load.wait();
    let out = run(&["report", t, "requests"], d);
    both(
        "Slow requests, thread-pool starvation",
        &out,
        &[
            "count   5xx    p50 ms    p95 ms    p99 ms    max ms  route (statuses)",
            "GET DiagScenarios.Controllers.DiagController.TaskResult (DiagScenarios)",
            "GET /api/diag/taskresult  status 200",
            "blocked on Task.Wait/.Result in dynamicClass.lambda_method",
        ],
    );

    let throws = d.join("throws.nettrace");
    let t = throws.to_str().unwrap();
    let url = diag.url("/api/diag/throw");
    // The throws come once the session runs (its "Recording" line), all 50 inside it.
    let log = d.join("record.log");
    let mut recorder = clrspy_command()
        .args(["record", "-p", &pid, "--duration", "8s", "-o", t])
        .current_dir(d)
        .stdout(std::fs::File::create(d.join("record.out")).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = common::wait_for_line(&log, &["Recording"], Duration::from_secs(60));
    assert!(
        started.is_some(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    std::thread::sleep(Duration::from_millis(500));
    let thrown = Command::new("ab")
        .args(["-q", "-n", "50", "-c", "2", &url])
        .output()
        .unwrap();
    assert!(thrown.status.success());
    assert!(recorder.wait().unwrap().success());
    let out = run(&["report", t, "exceptions"], d);
    both(
        "Crashes and exceptions",
        &out,
        &[
            "Exceptions: 300 thrown (50 exceptions, 250 rethrows of them)",
            "DiagScenarios.ScenarioException: 50 thrown (in DiagController.Throw), each rethrown 5 times through async frames",
            "thrown in: DiagScenarios.Controllers.DiagController+<Throw>d__5.MoveNext",
        ],
    );

    let out = run(
        &[
            "bundle",
            "-p",
            &pid,
            "--symptom",
            "high-cpu",
            "--duration",
            "3s",
            "-o",
            "case.zip",
        ],
        d,
    );
    both(
        "Send it to support",
        &out,
        &[
            "Wrote case.zip (",
            "owner-only). Open index.html in it; check it with `clrspy bundle verify case.zip`.",
        ],
    );
    drop(diag);
}
