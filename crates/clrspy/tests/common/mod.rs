//! Helpers shared by the CLI tests: paths to the test data, the C# workloads built once with the
//! .NET SDK, and running the clrspy binary.
#![allow(dead_code)]
// Test helpers fail the test the way tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub mod agent;
pub mod cgroup;
pub mod heap_workload;
pub mod proc_cpu;
pub mod scenarios;

/// A load generator (`ab`) killed when dropped.
pub struct Load(pub Child);

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ab` (apache2-utils) with `args`, quiet. The test says first that it needs it
/// ([`needs`]`(&[Need::Ab])`).
pub fn ab(args: &[&str]) -> Command {
    let mut c = Command::new(Need::Ab.path());
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
    take_share();
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

/// The live tests' turns within their test binary: every live test holds a share from
/// [`live`] until its thread ends, and a test that must have the binary to itself ([`alone`])
/// takes the whole. (The standard library's lock on Linux lets no new share be taken while a
/// test waits for the whole, so that test waits only for the tests already running.)
static TURN: RwLock<()> = RwLock::new(());

/// What the calling test holds of [`TURN`].
enum Held {
    Nothing,
    Share(RwLockReadGuard<'static, ()>),
    Whole,
}

thread_local! {
    /// Dropped, and with it the share, when the test's thread ends (passed or failed).
    static HELD: RefCell<Held> = const { RefCell::new(Held::Nothing) };
}

/// Takes the calling test's share of the turn, once (waits while a test runs [`alone`]).
fn take_share() {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if matches!(*h, Held::Nothing) {
            *h = Held::Share(TURN.read().unwrap_or_else(|e| e.into_inner()));
        }
    });
}

/// The calling test runs alone in its test binary while this is held ([`alone`]).
pub struct Alone(RwLockWriteGuard<'static, ()>);

impl Drop for Alone {
    fn drop(&mut self) {
        HELD.with(|h| *h.borrow_mut() = Held::Nothing);
    }
}

/// Waits until no other live test of this binary runs, and keeps new ones from starting while
/// the guard is held: for a test that measures amounts of CPU (through [`machine`]), or that
/// reaches into every .NET process it sees (an agent collecting metrics opens a session in
/// each). Tests used to be alone like this in a binary of their own; now all live tests share
/// one binary, two at a time.
pub fn alone() -> Alone {
    // The test's own share goes first: waiting for the whole while holding a share would wait
    // for ever.
    HELD.with(|h| *h.borrow_mut() = Held::Whole);
    Alone(TURN.write().unwrap_or_else(|e| e.into_inner()))
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
    try_dotnet_build_with(project, out, &[])
}

/// [`try_dotnet_build`] with more MSBuild arguments (`-p:DebugType=embedded`).
pub fn try_dotnet_build_with(project: &Path, out: &Path, extra: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new("dotnet");
    cmd.args(["build", "-c", "Release", "--nologo", "-v", "q"])
        .args(extra)
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

/// Builds testapps/Mistakes once per test run; returns the path of Mistakes.dll.
pub fn mistakes_app() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/Mistakes");
        let _guard = build_lock();
        dotnet_build(&repo().join("testapps/Mistakes"), &out);
        out.join("Mistakes.dll")
    })
}

/// Starts testapps/Mistakes (a fresh process: its thread pool not yet grown) and waits for
/// its `ready pid=N port=P` line.
pub fn start_mistakes() -> Web {
    start_app(mistakes_app(), &[])
}

/// [`start_mistakes`] with more environment variables (`MISTAKES_REGRESS`: the regressed
/// "build" of `/diff/work`).
pub fn start_mistakes_with_env(env: &[(&str, &str)]) -> Web {
    start_app(mistakes_app(), env)
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
    start_app(web_app(), env)
}

/// Starts a web test app (`dotnet DLL`) that prints `ready pid=N port=P` once it listens.
fn start_app(dll: &Path, env: &[(&str, &str)]) -> Web {
    let mut child = Command::new("dotnet")
        .arg(dll)
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
            panic!("unexpected first line from {}: {line:?}", dll.display())
        }
    }
}

/// A lock on a file (`flock`): it excludes other processes, and other threads of this one (each
/// acquisition opens the file anew).
pub struct FileLock(std::fs::File);

/// The lock of the tests that run the SDK's build servers (the C# compiler server, MSBuild
/// nodes): they are shared by every build of this user on this machine, a build reuses the
/// server another test started, and `dotnet build-server shutdown` stops them all. Such tests
/// take turns, in every test binary on this machine.
pub fn build_servers() -> FileLock {
    FileLock::acquire(&std::env::temp_dir().join("clrspy-tests-build-servers.lock"))
}

/// hooks/ClrspyHold (the hold hook of `--dump-hold-hook`), built from the repository's source
/// as hooks/build.sh does, once per test binary; returns the path of ClrspyHold.dll.
pub fn hold_hook() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/ClrspyHold");
        let _guard = build_lock();
        dotnet_build(&repo().join("hooks/ClrspyHold"), &out);
        out.join("ClrspyHold.dll")
    })
}

/// The lock every build of a test app takes (`target/testapps/.build.lock`).
pub fn build_lock() -> FileLock {
    let base = repo().join("target/testapps");
    std::fs::create_dir_all(&base).unwrap();
    FileLock::acquire(&base.join(".build.lock"))
}

/// The tests' machine lock, held while a test records something whose amounts of CPU time or
/// samples it checks: such a test runs [`alone`] in its test binary, and takes turns with
/// those of any other test binary on this machine (the lock file is in the system's temporary
/// directory, shared by every checkout). Other work on the machine (builds) still competes:
/// [`Machine::busy`] says when it did.
pub struct Machine {
    _lock: FileLock,
    _alone: Alone,
    /// The machine's busy and total ticks, and this process's with its waited-for children,
    /// when the lock was taken.
    start: (u64, u64, u64),
}

/// Takes the machine lock (waits for it).
pub fn machine() -> Machine {
    // The binary's turn first, then the file: a test holding the file while it waits for the
    // turn could wait for one that waits for the file.
    let alone = alone();
    let lock = FileLock::acquire(&std::env::temp_dir().join("clrspy-tests-machine.lock"));
    Machine {
        _lock: lock,
        _alone: alone,
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

/// Builds the TraceEvent harness of bench/ once (it needs the TraceEvent NuGet package): its
/// path, or why it could not be built.
fn build_harness() -> Result<PathBuf, String> {
    static DLL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/harness");
        let lock = repo().join("target/testapps/.harness.lock");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let _guard = FileLock::acquire(&lock);
        try_dotnet_build(&repo().join("bench/TraceEventHarness"), &out)
            .map(|()| out.join("TraceEventHarness.dll"))
    })
    .clone()
}

/// The TraceEvent harness of bench/ ([`Need::TraceEvent`]): None when it could not be built
/// and `CLRSPY_ALLOW_SKIP=1` (the test fails otherwise).
pub fn harness() -> Option<PathBuf> {
    need(Need::TraceEvent)
}

/// Where `.ci/setup` installs what the tests use that is not a Debian package: `bench/out`
/// (git-ignored; the bench scripts keep their tools there too): dotnet tools in `tools/`, npm
/// packages in `node/`, compiled locales in `locale/`.
pub fn setup_dir() -> PathBuf {
    let dir = repo().join("bench/out");
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// A program the tests drive clrspy with or check its output against: a real consumer. A test
/// says what it needs with [`need`] or [`needs`]; `.ci/setup` installs all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// ApacheBench (`ab`, Debian's apache2-utils), the HTTP load.
    Ab,
    /// tmux, a real terminal for the full-screen views.
    Tmux,
    /// Headless Chromium, which opens the HTML pages clrspy writes.
    Chromium,
    /// The Prometheus server, which scrapes the agent's metrics.
    Prometheus,
    /// npm's `pprof-format` (in `bench/out/node`, run by `node`), which decodes pprof profiles;
    /// the path is the package's folder.
    PprofFormat,
    /// Microsoft's dotnet-trace (in `bench/out/tools`).
    DotnetTrace,
    /// Microsoft's dotnet-dump (in `bench/out/tools`), which analyses core dumps.
    DotnetDump,
    /// TraceEvent, through bench/TraceEventHarness (built from NuGet by the tests).
    TraceEvent,
    /// The de_DE.UTF-8 locale, whose decimal point is a comma (compiled into
    /// `bench/out/locale`); the path is the folder to give as `LOCPATH`.
    DecimalCommaLocale,
}

impl Need {
    /// What the messages call it.
    pub fn name(self) -> &'static str {
        match self {
            Need::Ab => "ab",
            Need::Tmux => "tmux",
            Need::Chromium => "chromium",
            Need::Prometheus => "prometheus",
            Need::PprofFormat => "pprof-format",
            Need::DotnetTrace => "dotnet-trace",
            Need::DotnetDump => "dotnet-dump",
            Need::TraceEvent => "TraceEvent",
            Need::DecimalCommaLocale => "locale de_DE.UTF-8",
        }
    }

    /// Where it is, or why it is not there.
    pub fn find(self) -> Result<PathBuf, String> {
        let installed = |p: PathBuf| {
            if p.exists() {
                Ok(p)
            } else {
                Err(format!("{} is missing", p.display()))
            }
        };
        match self {
            Need::Ab => on_path(&["ab"]),
            Need::Tmux => on_path(&["tmux"]),
            Need::Chromium => on_path(&["chromium", "chromium-browser", "google-chrome"]),
            Need::Prometheus => on_path(&["prometheus"]),
            Need::PprofFormat => {
                on_path(&["node"])?;
                let module = setup_dir().join("node/node_modules/pprof-format");
                installed(module.join("package.json")).map(|_| module)
            }
            Need::DotnetTrace => installed(setup_dir().join("tools/dotnet-trace")),
            Need::DotnetDump => installed(setup_dir().join("tools/dotnet-dump")),
            Need::TraceEvent => build_harness(),
            Need::DecimalCommaLocale => {
                let dir = setup_dir().join("locale");
                installed(dir.join("de_DE.UTF-8/LC_NUMERIC"))?;
                let mut cmd = Command::new("locale");
                cmd.args(["-k", "decimal_point"]);
                decimal_comma_env(&mut cmd, &dir);
                let out = cmd.output().map_err(|e| format!("locale: {e}"))?;
                let said = String::from_utf8_lossy(&out.stdout);
                if said.trim() == "decimal_point=\",\"" {
                    Ok(dir)
                } else {
                    Err(format!(
                        "de_DE.UTF-8 in {} has no decimal comma (`locale -k decimal_point`: {said:?})",
                        dir.display()
                    ))
                }
            }
        }
    }

    /// Its path, failing the test when it is missing (for helpers called after [`need`]).
    pub fn path(self) -> PathBuf {
        self.find()
            .unwrap_or_else(|why| panic!("{} is needed: {why}; {SETUP_HINT}", self.name()))
    }
}

/// How to get what a test needs.
const SETUP_HINT: &str = "run `.ci/setup` (as root it installs every program the tests use; \
    the README's test command runs it), or set CLRSPY_ALLOW_SKIP=1 to skip such checks knowingly";

/// The first of `names` on PATH.
fn on_path(names: &[&str]) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(format!("no {} on PATH", names.join(" or ")))
}

/// Sets `cmd` to run in the de_DE.UTF-8 locale compiled in `locpath`
/// ([`Need::DecimalCommaLocale`]'s path).
pub fn decimal_comma_env(cmd: &mut Command, locpath: &Path) {
    cmd.env("LOCPATH", locpath)
        .env("LC_ALL", "de_DE.UTF-8")
        .env("LANG", "de_DE.UTF-8");
}

/// What a check needs: its path ([`Need::find`]). When it is missing the test fails, saying
/// how to install it, unless `CLRSPY_ALLOW_SKIP=1`: then this says loudly that the check is
/// skipped and gives None. Both are written to `$CLRSPY_CONSUMER_LOG` when set (`.ci/run` sums
/// them up).
pub fn need(what: Need) -> Option<PathBuf> {
    let p = what.find().map_err(|why| missing(what, &why)).ok()?;
    found(what, &p);
    Some(p)
}

/// [`need`] for each of `what`: true when all are there (and only then are they said to run).
pub fn needs(what: &[Need]) -> bool {
    let mut paths = Vec::new();
    for &n in what {
        match n.find() {
            Ok(p) => paths.push((n, p)),
            Err(why) => {
                missing(n, &why);
                return false;
            }
        }
    }
    for (n, p) in paths {
        found(n, &p);
    }
    true
}

/// Says that the check against `what` runs, with `path`.
fn found(what: Need, path: &Path) {
    eprintln!("consumer check: {} ({}) runs", what.name(), path.display());
    consumer_log(&format!("ran\t{}", what.name()));
}

/// Fails the test for `what` missing (`why`), unless CLRSPY_ALLOW_SKIP=1: then says the check
/// is skipped.
fn missing(what: Need, why: &str) {
    if std::env::var("CLRSPY_ALLOW_SKIP").is_ok_and(|v| v == "1") {
        eprintln!(
            "SKIPPED a check against {}: {why} (CLRSPY_ALLOW_SKIP=1)",
            what.name()
        );
        consumer_log(&format!("skipped\t{}\t{why}", what.name()));
    } else {
        panic!(
            "this test checks against {}, which is missing: {why}; {SETUP_HINT}",
            what.name()
        );
    }
}

/// Says loudly that `test` is skipped for a limit of this machine (no root, no namespaces, no
/// cgroup to make), which `.ci/setup` cannot install and `CLRSPY_ALLOW_SKIP` does not cover;
/// written to `$CLRSPY_CONSUMER_LOG` too.
pub fn machine_skip(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why} (this machine's limit, not a missing program)");
    consumer_log(&format!("machine-skip\t{test}\t{why}"));
}

/// True when the test runs as root; else says loudly ([`machine_skip`]) that `test` is skipped
/// because it needs root for `what`.
pub fn root_for(test: &str, what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        machine_skip(test, &format!("needs root: {what}"));
    }
    root
}

/// Appends `line` (with the test binary and test names) to `$CLRSPY_CONSUMER_LOG` when set.
fn consumer_log(line: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("CLRSPY_CONSUMER_LOG") else {
        return;
    };
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
    let binary = stem.rsplit_once('-').map_or(stem, |(name, _hash)| name);
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    // One write of one line: test binaries append side by side.
    let entry = format!("{binary}\t{test}\t{line}\n");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(entry.as_bytes());
    }
}

/// The `dotnet new web` template, made and built once per test run (offline: the SDK has it).
pub fn template_web() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| template("web", "TemplateWeb"))
}

/// The `dotnet new webapp` template (Razor Pages), made and built once per test run.
pub fn template_webapp() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| template("webapp", "TemplateWebApp"))
}

/// Makes the SDK's template `kind` as project `name` under target/testapps (once) and builds
/// it; returns the path of its DLL.
fn template(kind: &str, name: &str) -> PathBuf {
    let base = repo().join("target/testapps");
    std::fs::create_dir_all(&base).unwrap();
    let _guard = build_lock();
    let src = base.join(format!("{name}-src"));
    let out = base.join(name);
    let env = [("DOTNET_CLI_TELEMETRY_OPTOUT", "1"), ("DOTNET_NOLOGO", "1")];
    if !src.join(format!("{name}.csproj")).exists() {
        let ok = Command::new("dotnet")
            .args(["new", kind, "--force", "-n", name, "-o"])
            .arg(&src)
            .envs(env)
            .stdout(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("run dotnet new {kind}: {e}"));
        assert!(ok.success(), "dotnet new {kind} failed");
    }
    dotnet_build(&src, &out);
    out.join(format!("{name}.dll"))
}

/// Starts the `dotnet new web` template on a free loopback port; waits until it accepts
/// connections.
pub fn start_template() -> (Running, u16) {
    start_template_dll(template_web(), false)
}

/// Starts a template's `dll` on a free loopback port (`--urls`, Production); waits until it
/// accepts connections. `deployed`: from its own folder, as a deployed app runs, so its
/// `appsettings.json` applies (else from the tests' folder, without it: the framework then
/// logs every request at Information).
pub fn start_template_dll(dll: &Path, deployed: bool) -> (Running, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new("dotnet");
    if deployed {
        cmd.current_dir(dll.parent().unwrap_or(Path::new(".")));
    }
    let child = cmd
        .arg(dll)
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
            "{} did not listen",
            dll.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (Running(child, pid), port)
}

/// Opens `html` in headless Chromium ([`Need::Chromium`]; `window` as `W,H`) and writes the
/// screenshot to `png`: the page must load and render (a screenshot over 10 KB) and say
/// nothing on the console.
pub fn chromium_screenshot(html: &Path, png: &Path, window: &str) {
    let Some(chromium) = need(Need::Chromium) else {
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
