//! Process trees with `clrspy record --children -o DIR -- COMMAND`: every .NET process the
//! command starts, directly or through a shell, gets a whole trace of its own in DIR, named
//! `<name>_<pid>.nettrace`, from its first instruction; a process that outlives the command has
//! its trace finished then (with rundown) and runs on untraced, able to start .NET programs
//! after clrspy has gone; `dotnet build` of a small project gives one trace per .NET process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{
    assert_spawn_later_finished, clrspy_command, json, live, run_bounded, workloads, KillMarked,
};

/// The variable that marks every process a test started.
const MARK: &str = "CLRSPY_TEST_TREE";

/// The traces in `dir`, sorted.
fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "nettrace"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The pids of the `ready pid=N` lines.
fn ready_pids(text: &str) -> Vec<u32> {
    let mut v: Vec<u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ready pid="))
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    v.sort();
    v
}

/// True when the trace names the method `name` from its JIT events (it was recorded from
/// before the method ran).
fn jitted(trace: &Path, name: &str) -> bool {
    let out = clrspy_command()
        .args(["events"])
        .arg(trace)
        .args(["--event", "Method/LoadVerbose", "--no-stacks"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).contains(name)
}

#[test]
fn a_script_starting_three_dotnet_programs_gives_three_whole_traces() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let out_dir = dir.path().join("traces");
    // One after the other, then two at once.
    let script = "dotnet \"$0\" startup; dotnet \"$0\" cast --count 2 --seconds 0 & \
                  dotnet \"$0\" idle --seconds 1; wait";
    let mut rec = clrspy_command();
    rec.args(["record", "--children", "-o"])
        .arg(&out_dir)
        .args(["--", "sh", "-c", script])
        .arg(workloads())
        .env(MARK, &mark);
    let out = run_bounded(rec, dir.path(), Duration::from_secs(120));
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.is_some_and(|s| s.success()),
        "{stdout}\n{stderr}"
    );
    let pids = ready_pids(stdout);
    assert_eq!(pids.len(), 3, "{stdout}");
    let files = traces(&out_dir);
    let expected: Vec<PathBuf> = pids
        .iter()
        .map(|p| out_dir.join(format!("Workloads_{p}.nettrace")))
        .collect();
    assert_eq!(files, expected, "{stderr}");
    for f in &files {
        let info = json(&["info", f.to_str().unwrap(), "--json"]);
        assert_eq!(info["ended_cleanly"], true, "{f:?}: {info}");
        assert!(
            jitted(f, "Workloads.Program"),
            "{f:?} misses the program's start"
        );
        // clrspy's cost per target is its session's, not the recorder's whole process (which
        // recorded the others too).
        let cpu = json(&["report", f.to_str().unwrap(), "cpu", "--json"]);
        let p = &cpu["process"];
        let (session, whole) = (
            p["recorder_cpu_ms"].as_f64().unwrap(),
            p["recorder_process_cpu_ms"].as_f64().unwrap(),
        );
        eprintln!("{f:?}: recorder session {session} ms, whole process {whole} ms");
        assert!(session > 0.0 && session <= whole * 1.02 + 5.0, "{f:?}: {p}");
    }
    assert!(stderr.contains("3 .NET processes traced into"), "{stderr}");
}

#[test]
fn a_process_outliving_the_command_is_finished_and_runs_on() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let out_dir = dir.path().join("traces");
    let log = dir.path().join("w.log");
    // The shell leaves the workload running and exits once it is ready; 4 s in, the workload
    // starts a .NET child (clrspy has gone by then) and waits for it.
    let mut rec = clrspy_command();
    rec.args(["record", "--children", "-o"])
        .arg(&out_dir)
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
    assert!(
        stderr.contains("The program ended; still running: Workloads ("),
        "{stderr}"
    );
    assert!(stderr.contains("it outlived the program"), "{stderr}");
    let files = traces(&out_dir);
    assert_eq!(files.len(), 1, "{files:?}\n{stderr}");
    let info = json(&["info", files[0].to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true, "{info}");
    // Its rundown is in: methods are named at the end.
    let names: Vec<&str> = info["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("Method/DCStop")),
        "{names:?}"
    );
    assert_spawn_later_finished(&log, MARK, &mark);
}

#[test]
fn dotnet_build_gives_one_whole_trace_per_dotnet_process() {
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
    common::dotnet_with_build_servers(&mut new, MARK, &mark);
    let out = run_bounded(new, dir.path(), Duration::from_secs(120));
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let out_dir = dir.path().join("traces");
    let build = |record: bool| {
        let mut cmd = if record {
            let mut c = clrspy_command();
            c.args(["record", "--children", "-o"])
                .arg(&out_dir)
                .args(["--", "dotnet"]);
            c
        } else {
            std::process::Command::new("dotnet")
        };
        cmd.args(["build", "--no-incremental"]).arg(&project);
        common::dotnet_with_build_servers(&mut cmd, MARK, &mark);
        run_bounded(cmd, dir.path(), Duration::from_secs(150))
    };
    let out = build(true);
    let (stdout, stderr) = (out.stdout.clone(), out.stderr.clone());
    assert_eq!(
        out.status.and_then(|s| s.code()),
        Some(0),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("Build succeeded"), "{stdout}");
    let files = traces(&out_dir);
    // The root (`dotnet build`, named after its first argument) at least; the compiler client
    // or server and MSBuild nodes when this build started them.
    assert!(
        files.iter().any(|f| f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("build_")),
        "{files:?}\n{stderr}"
    );
    for f in &files {
        let info = json(&["info", f.to_str().unwrap(), "--json"]);
        assert_eq!(info["ended_cleanly"], true, "{f:?}: {info}");
        // Every file is one process, named after it.
        let pid = f
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .rsplit('_')
            .next()
            .and_then(|p| p.parse::<u64>().ok());
        assert!(pid.is_some(), "{f:?}");
    }
    // The tree as one report: every process with its command line, CPU summing to the
    // tree's, the hottest methods across it, what the recording cost.
    let tree = json(&["report", out_dir.to_str().unwrap(), "--json"]);
    let procs = tree["processes"].as_array().unwrap();
    assert_eq!(procs.len(), files.len(), "{tree}");
    let sum: f64 = procs.iter().map(|p| p["cpu_ms"].as_f64().unwrap()).sum();
    let total = tree["total_cpu_ms"].as_f64().unwrap();
    assert!((sum - total).abs() <= 0.1 * procs.len() as f64, "{tree}");
    assert!(
        procs.iter().any(|p| p["command_line"]
            .as_str()
            .is_some_and(|c| c.contains("build"))),
        "{tree}"
    );
    assert!(
        !tree["top_exclusive"].as_array().unwrap().is_empty(),
        "{tree}"
    );
    assert!(
        tree["recording"]["recorder_cpu_ms"].as_f64().unwrap() > 0.0,
        "{tree}"
    );
    let text = clrspy_command()
        .args(["report", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Hottest across the tree") && text.contains("To record the tree for less"),
        "{text}"
    );
    let n = files.len();
    assert!(
        stderr.contains(&format!(
            "{n} .NET process{} traced",
            if n == 1 { "" } else { "es" }
        )),
        "{stderr}"
    );
    // Whatever servers the build left run untraced: a second build, without clrspy, is not
    // held up by them waiting for clrspy's socket.
    let again = build(false);
    assert_eq!(
        again.status.and_then(|s| s.code()),
        Some(0),
        "{}",
        again.stdout
    );
    let mut shutdown = std::process::Command::new("dotnet");
    shutdown.args(["build-server", "shutdown"]);
    common::dotnet_with_build_servers(&mut shutdown, MARK, &mark);
    let _ = run_bounded(shutdown, dir.path(), Duration::from_secs(30));
}

#[test]
fn exception_dumps_across_a_tree_share_one_limit() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let out_dir = dir.path().join("traces");
    // Two programs throw two InvalidCastExceptions each; three dumps at most in all. Dumps
    // are written one at a time: the programs stay 8 s after their throws, so none is gone
    // before its dump.
    let script = "dotnet \"$0\" cast --count 2 --seconds 8 & \
                  dotnet \"$0\" cast --count 2 --seconds 8; wait";
    let mut rec = clrspy_command();
    rec.args([
        "record",
        "--children",
        "--dump-on-exception",
        "InvalidCastException",
        "--max-dumps",
        "3",
        "-o",
    ])
    .arg(&out_dir)
    .args(["--", "sh", "-c", script])
    .arg(workloads())
    .env(MARK, &mark);
    let out = run_bounded(rec, dir.path(), Duration::from_secs(120));
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.is_some_and(|s| s.success()),
        "{stdout}\n{stderr}"
    );
    let pids = ready_pids(stdout);
    assert_eq!(traces(&out_dir).len(), 2, "{stderr}");
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".dmp.gz"))
        .collect();
    dumps.sort();
    assert_eq!(dumps.len(), 3, "{dumps:?}\n{stderr}");
    for d in &dumps {
        // dump_<pid>_<n>.dmp.gz, of one of the two programs, an ELF core inside.
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let pid: u32 = name.split('_').nth(1).unwrap().parse().unwrap();
        assert!(pids.contains(&pid), "{name} not of {pids:?}");
        let mut magic = [0u8; 4];
        use std::io::Read;
        flate2::read::GzDecoder::new(std::fs::File::open(d).unwrap())
            .read_exact(&mut magic)
            .unwrap();
        assert_eq!(&magic, b"\x7fELF");
    }
    assert!(stderr.contains("Exception dumps: 3 written"), "{stderr}");
}

/// `--children --sampler kernel`: every process of the tree is sampled by the kernel from its
/// start (its runtime held at the reverse port), none by the runtime's sampler.
#[test]
fn every_process_of_a_tree_is_sampled_by_the_kernel() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let _cleanup = KillMarked(MARK, mark.clone());
    let out_dir = dir.path().join("traces");
    let script =
        "dotnet \"$0\" cpu --seconds 1 --threads 1; dotnet \"$0\" cpu --seconds 1 --threads 1";
    let mut rec = clrspy_command();
    rec.args(["record", "--children", "--sampler", "kernel", "-o"])
        .arg(&out_dir)
        .args(["--", "sh", "-c", script])
        .arg(workloads())
        .env(MARK, &mark);
    let out = run_bounded(rec, dir.path(), Duration::from_secs(120));
    assert!(
        out.status.is_some_and(|s| s.success()),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    let files = traces(&out_dir);
    assert_eq!(files.len(), 2, "{}", out.stderr);
    for f in &files {
        let i = common::info(f);
        assert!(i["kernel_samples"].as_u64().unwrap() > 200, "{f:?}: {i}");
        assert_eq!(i["runtime_samples"], 0, "{f:?}: {i}");
    }
}
