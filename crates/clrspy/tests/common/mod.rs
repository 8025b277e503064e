//! Helpers shared by the CLI tests: paths to the test data, the C# workloads built once with the
//! .NET SDK, and running the clrspy binary.
#![allow(dead_code)]
// Test helpers fail the test the way tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

pub mod agent;
pub mod cgroup;
pub mod heap_workload;
pub mod proc_cpu;

/// A load generator (`ab`) killed when dropped.
pub struct Load(pub Child);

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ab` (apache2-utils) with `args`, quiet.
pub fn ab(args: &[&str]) -> Command {
    let mut c = Command::new("/usr/bin/ab");
    c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    c
}
pub mod watch;
pub mod watchdog;

/// The repository root.
pub fn repo() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Without `..`: paths under it are given to programs in namespaces, where clrspy refuses
    // `..` (it could climb out of their root).
    std::fs::canonicalize(&here).unwrap_or(here)
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

/// `clrspy info --json` of a trace.
pub fn info(path: &Path) -> serde_json::Value {
    json(&["info", "--json", path.to_str().expect("UTF-8 path")])
}

/// CPU samples in an `info --json`: the runtime's (`Thread/Sample`) or the kernel's
/// (`KernelSample`), whichever sampler the recording used.
pub fn cpu_samples(info: &serde_json::Value) -> u64 {
    count(info, "Thread/Sample") + count(info, "KernelSample")
}

/// Events named `name` in an `info --json` object.
pub fn count(info: &serde_json::Value, name: &str) -> u64 {
    info["per_event"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|e| e["name"] == name)
                .filter_map(|e| e["count"].as_u64())
                .sum()
        })
        .unwrap_or(0)
}

/// Sets up `dotnet` for tests that need the SDK's build servers: chatter off, the compiler
/// and MSBuild servers on (this machine's environment may turn them off; they are what starts
/// extra runtimes), and `mark_var=mark` so the test can find and kill what it started.
pub fn dotnet_with_build_servers(cmd: &mut Command, mark_var: &str, mark: &str) {
    cmd.env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1")
        .env("UseSharedCompilation", "true")
        .env_remove("MSBUILDDISABLENODEREUSE")
        .env_remove("DOTNET_CLI_USE_MSBUILD_SERVER")
        .env(mark_var, mark);
}

/// True when live tests should run. Without `dotnet` they fail with install instructions,
/// unless `CLRSPY_SKIP_LIVE=1` says to skip them.
pub fn live() -> bool {
    if std::env::var("CLRSPY_SKIP_LIVE").is_ok_and(|v| v == "1") {
        eprintln!("CLRSPY_SKIP_LIVE=1: skipping a live test");
        return false;
    }
    watchdog::start();
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
        dotnet_build(&project, &out);
        out.join("Workloads.dll")
    })
}

/// `dotnet build -c Release -o OUT PROJECT`, quiet and without build servers (an MSBuild node
/// or the compiler server left running is one more .NET process in every later live test, and
/// holds on to the pipes of whoever started the build), at most 10 minutes; the reason, with
/// the build's output, when it failed.
pub fn try_dotnet_build(project: &Path, out: &Path) -> Result<(), String> {
    let mut cmd = Command::new("dotnet");
    cmd.args(["build", "-c", "Release", "--nologo", "-v", "q"])
        .args(["-nodeReuse:false", "-p:UseSharedCompilation=false", "-o"])
        .arg(out)
        .arg(project)
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1")
        .env("MSBUILDDISABLENODEREUSE", "1")
        .env("DOTNET_CLI_USE_MSBUILD_SERVER", "0");
    let logs = tempfile::tempdir().map_err(|e| e.to_string())?;
    let r = run_bounded(cmd, logs.path(), std::time::Duration::from_secs(600));
    match r.status {
        Some(s) if s.success() => Ok(()),
        status => Err(format!(
            "dotnet build {} {}:\n{}{}",
            project.display(),
            status.map_or("took over 10 minutes".to_string(), |s| format!(
                "failed ({s})"
            )),
            r.stdout,
            r.stderr
        )),
    }
}

/// [`try_dotnet_build`], failing the test when the build fails.
pub fn dotnet_build(project: &Path, out: &Path) {
    if let Err(e) = try_dotnet_build(project, out) {
        panic!("{e}");
    }
}

/// Builds testapps/WebApp once per test run; returns the path of WebApp.dll.
pub fn web_app() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/WebApp");
        let lock = repo().join("target/testapps/.build.lock");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let _guard = FileLock::acquire(&lock);
        dotnet_build(&repo().join("testapps/WebApp"), &out);
        out.join("WebApp.dll")
    })
}

/// A running WebApp (killed when dropped) and the port it listens on (127.0.0.1).
pub struct Web {
    /// The process.
    pub app: Running,
    /// Its port.
    pub port: u16,
}

/// Starts testapps/WebApp and waits for its `ready pid=N port=P` line.
pub fn start_web() -> Web {
    start_web_with_env(&[])
}

/// [`start_web`] with more environment variables (the runtime's own EventPipe settings).
pub fn start_web_with_env(env: &[(&str, &str)]) -> Web {
    let mut child = Command::new("dotnet")
        .arg(web_app())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start WebApp");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("ready line");
    let mut pid = None;
    let mut port = None;
    for w in line.split_whitespace() {
        if let Some(v) = w.strip_prefix("pid=") {
            pid = v.parse().ok();
        }
        if let Some(v) = w.strip_prefix("port=") {
            port = v.parse().ok();
        }
    }
    match (pid, port) {
        (Some(pid), Some(port)) => Web {
            app: Running(child, pid),
            port,
        },
        _ => {
            let _ = child.kill();
            panic!("unexpected first line from WebApp: {line:?}")
        }
    }
}

pub struct FileLock(std::fs::File);

/// The lock every build of a test app takes (`target/testapps/.build.lock`).
pub fn build_lock() -> FileLock {
    let base = repo().join("target/testapps");
    std::fs::create_dir_all(&base).unwrap();
    FileLock::acquire(&base.join(".build.lock"))
}

/// The tests' machine lock, held while a test records something whose amounts of CPU time or
/// samples it checks: such tests take turns, in this test binary and in any other on this
/// machine (the lock file is in the system's temporary directory, shared by every checkout).
/// Other work on the machine (builds) still competes: [`Machine::busy`] says when it did.
pub struct Machine {
    _lock: FileLock,
    /// The machine's busy and total ticks, and this process's with its waited-for children,
    /// when the lock was taken.
    start: (u64, u64, u64),
}

/// Takes the machine lock (waits for it).
pub fn machine() -> Machine {
    let lock = FileLock::acquire(&std::env::temp_dir().join("clrspy-tests-machine.lock"));
    Machine {
        _lock: lock,
        start: cpu_ticks(),
    }
}

/// The machine's busy and total CPU time so far (/proc/stat), and this process's with the
/// children it waited for (/proc/self/stat), in clock ticks.
fn cpu_ticks() -> (u64, u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let total: u64 = f.iter().take(8).sum();
    // idle and iowait
    let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
    let own = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = own.rsplit_once(')').map_or("", |r| r.1);
    let o: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime, stime, cutime, cstime
    let own: u64 = (11..15).map(|i| o.get(i).copied().unwrap_or(0)).sum();
    (total - idle, total, own)
}

impl Machine {
    /// Why the machine was too busy, since the lock was taken, for a rule on amounts of CPU
    /// or samples to hold (None when it was not): other processes than the test's own (this
    /// process and the children it waited for) used more than half a CPU on average.
    pub fn busy(&self) -> Option<String> {
        let (busy, total, own) = cpu_ticks();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let total = total.saturating_sub(self.start.1);
        if total == 0 {
            return None;
        }
        let others = busy
            .saturating_sub(self.start.0)
            .saturating_sub(own.saturating_sub(self.start.2));
        let others = others as f64 / total as f64 * cpus;
        (others > 0.5).then(|| {
            format!(
                "the machine was busy: other processes used {others:.1} of its {cpus} CPUs on \
                 average while the test ran"
            )
        })
    }

    /// Checks `rule` unless the machine was busy; says why when it does not.
    pub fn check(&self, what: &str, rule: impl FnOnce()) {
        match self.busy() {
            None => rule(),
            Some(why) => eprintln!("skipped the rule \"{what}\": {why}"),
        }
    }
}

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

/// Processes whose environment holds `NAME=value` (Linux; none elsewhere).
pub fn pids_with_env(name: &str, value: &str) -> Vec<u32> {
    let needle = format!("{name}={value}");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

/// Kills, when dropped, every process whose environment holds `NAME=value`: the stragglers a
/// test's programs started (build servers, children left suspended).
pub struct KillMarked(pub &'static str, pub String);

impl Drop for KillMarked {
    fn drop(&mut self) {
        for pid in pids_with_env(self.0, &self.1) {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}

/// Waits up to 10 s for every process whose environment holds `NAME=value` to end, then
/// asserts none is left.
pub fn assert_marked_gone(name: &str, value: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !pids_with_env(name, value).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(pids_with_env(name, value), Vec::<u32>::new());
}

/// Waits up to `limit` for a line starting with one of `prefixes` in `file`.
pub fn wait_for_line(file: &Path, prefixes: &[&str], limit: std::time::Duration) -> Option<String> {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if let Ok(text) = std::fs::read_to_string(file) {
            if let Some(l) = text
                .lines()
                .find(|l| prefixes.iter().any(|p| l.starts_with(p)))
            {
                return Some(l.to_string());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    None
}

/// Asserts the `spawn-later` workload writing `log` ran its late .NET child to its end (it
/// waits 60 s for the child at most; this waits a little more) and that no process marked
/// `NAME=value` is left waiting.
pub fn assert_spawn_later_finished(log: &Path, name: &str, value: &str) {
    let line = wait_for_line(
        log,
        &["child exit=", "child timeout"],
        std::time::Duration::from_secs(90),
    );
    let text = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(
        line.as_deref(),
        Some("child exit=0"),
        "the child did not run to its end: {text}"
    );
    assert!(text.contains("done"), "{text}");
    assert_marked_gone(name, value);
}

/// The stdout of a finished command, asserting it succeeded (its stderr in the message) and
/// wrote UTF-8.
pub fn ok_stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// What [`run_bounded`] saw.
pub struct Bounded {
    /// The exit status; None when the command was killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

/// Runs `cmd` with stdout and stderr going to files in `dir` (not pipes: a grandchild that
/// keeps a pipe open would keep the reader waiting), killing it after `limit`.
pub fn run_bounded(mut cmd: Command, dir: &Path, limit: std::time::Duration) -> Bounded {
    let out = dir.join(format!("run-{}.out", std::process::id()));
    let err = dir.join(format!("run-{}.err", std::process::id()));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start the command");
    let until = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if std::time::Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    Bounded {
        status,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
}

/// The clrspy binary under test, as a plain command.
pub fn clrspy_command() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("clrspy"))
}

/// Builds the TraceEvent harness of bench/ once (it needs the TraceEvent NuGet package).
pub fn harness() -> Option<PathBuf> {
    static DLL: OnceLock<Option<PathBuf>> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/harness");
        let lock = repo().join("target/testapps/.harness.lock");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let _guard = FileLock::acquire(&lock);
        try_dotnet_build(&repo().join("bench/TraceEventHarness"), &out)
            .ok()
            .map(|()| out.join("TraceEventHarness.dll"))
    })
    .clone()
}

/// dotnet-trace, where the bench scripts keep it (bench/out/tools), installed there from NuGet
/// when missing, once per test run; the reason as an error when it cannot be had.
pub fn dotnet_trace() -> Result<PathBuf, String> {
    static TOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TOOL.get_or_init(|| {
        let dir = repo().join("bench/out/tools");
        let exe = dir.join("dotnet-trace");
        if exe.is_file() {
            return Ok(exe);
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let _guard = FileLock::acquire(&dir.join(".install.lock"));
        if exe.is_file() {
            return Ok(exe);
        }
        let out = Command::new("dotnet")
            .args(["tool", "install", "--tool-path"])
            .arg(&dir)
            .arg("dotnet-trace")
            .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
            .env("DOTNET_NOLOGO", "1")
            .output()
            .map_err(|e| format!("dotnet tool install: {e}"))?;
        if exe.is_file() {
            Ok(exe)
        } else {
            Err(format!(
                "dotnet tool install dotnet-trace failed (NuGet unreachable?): {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ))
        }
    })
    .clone()
}

/// The `dotnet new web` template, made and built once per test run (offline: the SDK has it).
pub fn template_web() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| {
        let base = repo().join("target/testapps");
        std::fs::create_dir_all(&base).unwrap();
        let _guard = build_lock();
        let src = base.join("TemplateWeb-src");
        let out = base.join("TemplateWeb");
        let env = [("DOTNET_CLI_TELEMETRY_OPTOUT", "1"), ("DOTNET_NOLOGO", "1")];
        if !src.join("TemplateWeb.csproj").exists() {
            let ok = Command::new("dotnet")
                .args(["new", "web", "--force", "-n", "TemplateWeb", "-o"])
                .arg(&src)
                .envs(env)
                .stdout(Stdio::null())
                .status()
                .expect("run dotnet new web");
            assert!(ok.success(), "dotnet new web failed");
        }
        dotnet_build(&src, &out);
        out.join("TemplateWeb.dll")
    })
}

/// Starts the template on a free loopback port; waits until it accepts connections.
pub fn start_template() -> (Running, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("dotnet")
        .arg(template_web())
        .args(["--urls", &format!("http://127.0.0.1:{port}")])
        .env("ASPNETCORE_ENVIRONMENT", "Production")
        .stdout(Stdio::null())
        .spawn()
        .expect("start the web template");
    let pid = child.id();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < until,
            "the web template did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (Running(child, pid), port)
}

/// Opens `html` in headless Chromium when it is installed (`window` as `W,H`) and writes the
/// screenshot to `png`: the page must load and render (a screenshot over 10 KB) and say
/// nothing on the console. Without Chromium the page stays checked as text only (said on
/// stderr).
pub fn chromium_screenshot(html: &Path, png: &Path, window: &str) {
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        eprintln!("no Chromium: the page was checked as text only");
        return;
    };
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--window-size={window}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !log.contains("CONSOLE") && !log.contains("Uncaught"),
        "console messages: {log}"
    );
    let bytes = std::fs::metadata(png).map_or(0, |m| m.len());
    assert!(bytes > 10_000, "screenshot of {bytes} bytes: {log}");
}
