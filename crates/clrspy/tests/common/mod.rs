//! Helpers shared by the CLI tests: paths to the test data, the C# workloads built once with the
//! .NET SDK, and running the clrspy binary.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A real trace from crates/nettrace/tests/data.
pub fn data(name: &str) -> PathBuf {
    repo().join("crates/nettrace/tests/data").join(name)
}

/// The clrspy binary under test.
pub fn clrspy() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("clrspy").expect("clrspy binary")
}

/// Runs clrspy and parses its stdout as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = clrspy().args(args).output().expect("run clrspy");
    assert!(
        out.status.success(),
        "clrspy {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// True when live tests should run. Without `dotnet` they fail with install instructions,
/// unless `CLRSPY_SKIP_LIVE=1` says to skip them.
pub fn live() -> bool {
    if std::env::var("CLRSPY_SKIP_LIVE").is_ok_and(|v| v == "1") {
        eprintln!("CLRSPY_SKIP_LIVE=1: skipping a live test");
        return false;
    }
    let ok = Command::new("dotnet")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "live tests need the .NET SDK 8 or newer: install it (https://dot.net, or your package manager's dotnet-sdk-10.0) \
         so that `dotnet` is on PATH, or set CLRSPY_SKIP_LIVE=1 to skip them"
    );
    true
}

/// Builds testapps/Workloads once per test run; returns the path of Workloads.dll.
pub fn workloads() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/Workloads");
        let project = repo().join("testapps/Workloads");
        let lock = repo().join("target/testapps/.build.lock");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        // Test binaries run in parallel: let one build at a time.
        let _guard = FileLock::acquire(&lock);
        let status = Command::new("dotnet")
            .args(["build", "-c", "Release", "--nologo", "-v", "q", "-o"])
            .arg(&out)
            .arg(&project)
            .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
            .env("DOTNET_NOLOGO", "1")
            .status()
            .expect("run dotnet build");
        assert!(status.success(), "dotnet build testapps/Workloads failed");
        out.join("Workloads.dll")
    })
}

struct FileLock(std::fs::File);

impl FileLock {
    fn acquire(path: &Path) -> FileLock {
        let f = std::fs::File::create(path).unwrap();
        f.lock().unwrap();
        FileLock(f)
    }
}

/// A workload process killed when the test ends.
pub struct Running(pub Child, pub u32);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a scenario and waits for its `ready pid=N` line.
pub fn start(scenario: &str, args: &[&str]) -> Running {
    let mut child = Command::new("dotnet")
        .arg(workloads())
        .arg(scenario)
        .args(args)
        .env("CLRSPY_TEST_MARK", "env-test-value")
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

/// `clrspy record -o TRACE RECORD_ARGS -- dotnet Workloads.dll SCENARIO...`: the workload
/// started and recorded from its first instruction (2 minutes at most).
pub fn launch_record(
    trace: &Path,
    record_args: &[&str],
    scenario: &[&str],
) -> std::process::Output {
    clrspy()
        .arg("record")
        .arg("-o")
        .arg(trace)
        .args(record_args)
        .arg("--")
        .arg("dotnet")
        .arg(workloads())
        .args(scenario)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("run clrspy record")
}
