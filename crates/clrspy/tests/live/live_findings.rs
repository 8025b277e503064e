//! `clrspy report findings` on testapps/Mistakes: each route with a known .NET mistake,
//! recorded under `ab -c 8` on a fresh app process, gets its rule's finding (warning or
//! above) naming the app's method, with its figures against the truth the route makes (10
//! exceptions a request, one induced GC, one thread, one connection); its fixed twin, under
//! the same load, gets no finding above info. The tests take the machine lock: the rules
//! weigh shares of CPU and time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{clrspy_command, json, live, machine, needs, start_mistakes, Need};
use serde_json::Value;

/// Seconds recorded; the load runs inside them.
const SECONDS: u64 = 7;

/// A recording of one route under load.
struct Recorded {
    _dir: tempfile::TempDir,
    trace: PathBuf,
    /// `report findings --json`.
    findings: Value,
}

impl Recorded {
    fn trace(&self) -> &str {
        self.trace.to_str().unwrap()
    }

    /// The finding of rule `id`, if there is one.
    fn finding(&self, id: &str) -> Option<&Value> {
        self.findings["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
    }

    /// The finding of `id`, of warning or above, whose first site names `site`.
    fn expect(&self, id: &str, site: &str) -> &Value {
        let f = self
            .finding(id)
            .unwrap_or_else(|| panic!("no {id} finding: {:#}", self.findings));
        assert!(
            f["severity"] == "warning" || f["severity"] == "critical",
            "{id} is only {}: {f:#}",
            f["severity"]
        );
        let first = f["sites"][0]["name"].as_str().unwrap_or("");
        assert!(
            first.contains(site),
            "{id}'s first site is not {site}: {f:#}"
        );
        f
    }

    /// No finding above info.
    fn expect_clean(&self) {
        for f in self.findings["findings"].as_array().unwrap() {
            assert_eq!(f["severity"], "info", "the fixed twin has a finding: {f:#}");
        }
    }

    /// A fact of a finding, as a number (its first word, separators dropped).
    fn fact(f: &Value, name: &str) -> f64 {
        let v = f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no fact {name}: {f:#}"))["value"]
            .as_str()
            .unwrap();
        v.split_whitespace()
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap_or_else(|_| panic!("fact {name} is no number: {v}"))
    }

    /// Requests the app finished in the trace (`report requests`).
    fn served(&self) -> f64 {
        json(&["report", self.trace(), "requests", "--json"])["finished"]
            .as_f64()
            .unwrap()
    }
}

/// Waits until `file` has a line starting with `prefix`.
fn wait_for(file: &Path, prefix: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with(prefix))
    {
        assert!(
            Instant::now() < until,
            "no '{prefix}' in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Records `route` of a fresh Mistakes app with `clrspy record -p PID ARGS` while `ab -c 8`
/// loads it, and reads its findings.
fn record(route: &str, args: &[&str]) -> Recorded {
    record_app(start_mistakes(), route, args)
}

/// [`record`] of an app already started.
fn record_app(web: common::Web, route: &str, args: &[&str]) -> Recorded {
    let url = format!("http://127.0.0.1:{}{route}", web.port);
    // One request compiles the route; the pool keeps its size.
    let warm = Command::new("curl")
        .args(["-s", "-o", "/dev/null", &url])
        .status();
    assert!(warm.is_ok_and(|s| s.success()), "curl {url}");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("mistake.nettrace");
    let log = dir.path().join("record.log");
    let mut rec = clrspy_command()
        .args(["record", "-p", &web.app.1.to_string(), "--duration"])
        .arg(format!("{SECONDS}s"))
        .args(args)
        .arg("-o")
        .arg(&trace)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&log, "Recording");
    let ab = Command::new("/usr/bin/timeout")
        .arg((SECONDS + 10).to_string())
        .arg(Need::Ab.path())
        .args(["-q", "-n", "10000000", "-c", "8", "-s", "20", "-t"])
        .arg((SECONDS - 2).to_string())
        .arg(&url)
        .output()
        .expect("run ab");
    let said = String::from_utf8_lossy(&ab.stdout).to_string();
    assert!(said.contains("Complete requests"), "ab: {said}");
    assert!(
        rec.wait().unwrap().success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    drop(web);
    let findings = json(&["report", trace.to_str().unwrap(), "findings", "--json"]);
    Recorded {
        _dir: dir,
        trace,
        findings,
    }
}

/// Whether these tests run here.
fn run() -> bool {
    live() && needs(&[Need::Ab])
}

/// `a` within `tolerance` (a fraction) of `b`.
fn near(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= b.abs() * tolerance
}

#[test]
fn expressions_compiled_per_request() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/expr/percall", &["--profile", "aspnet"]);
    let f = r.expect("compiled-per-call", "Mistakes.Expressions.CompilePerCall");
    // One expression tree compiled per request.
    let compiled = Recorded::fact(f, "expression trees compiled");
    let served = r.served();
    assert!(
        near(compiled, served, 0.05),
        "{compiled} compiled for {served} requests: {f:#}"
    );
    record("/expr/cached", &["--profile", "aspnet"]).expect_clean();
}

#[test]
fn regexes_constructed_per_request() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/regex/percall", &[]);
    let f = r.expect("compiled-per-call", "Mistakes.Regexes.ConstructPerCall");
    assert!(
        f["said"].as_str().unwrap().contains("regular expressions"),
        "{f:#}"
    );
    record("/regex/cached", &[]).expect_clean();
}

#[test]
fn sync_over_async_starves_the_pool() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/sync/result?ms=20", &[]);
    let f = r.expect("sync-over-async", "in Mistakes.SyncOverAsync.Blocking");
    assert_eq!(f["severity"], "critical", "{f:#}");
    record("/sync/await?ms=20", &[]).expect_clean();
}

#[test]
fn blocking_reads_on_pool_threads() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/io/blocking?ms=10", &[]);
    r.expect(
        "blocking-on-pool",
        "Socket.Receive in Mistakes.Io.BlockingRead",
    );
    record("/io/async?ms=10", &[]).expect_clean();
}

#[test]
fn exceptions_thrown_as_control_flow() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/throw/flow?n=10", &["--profile", "aspnet"]);
    let f = r.expect(
        "exceptions-as-control-flow",
        "System.FormatException in Mistakes.ControlFlow.ParseWithExceptions",
    );
    let per_request = Recorded::fact(f, "per request");
    assert!(
        near(per_request, 10.0, 0.05),
        "{per_request} a request: {f:#}"
    );
    record("/throw/none?n=10", &["--profile", "aspnet"]).expect_clean();
}

#[test]
fn a_task_left_to_fail() {
    if !run() {
        return;
    }
    let _m = machine();
    // Each request starts work it never awaits, which uses what the request disposed: one
    // ObjectDisposedException a request, caught only by the work's own state machine.
    let r = record("/fire/forget", &["--profile", "aspnet"]);
    let f = r.expect(
        "bug-exceptions",
        "System.ObjectDisposedException in Mistakes.RequestResource.Read",
    );
    let said = f["said"].as_str().unwrap();
    assert!(said.contains("fire and forget"), "{f:#}");
    let per_request = Recorded::fact(f, "per request");
    assert!(
        near(per_request, 1.0, 0.05),
        "{per_request} a request: {f:#}"
    );
    // A bug, not control flow.
    if let Some(flow) = r.finding("exceptions-as-control-flow") {
        panic!("called control flow too: {flow:#}");
    }
    record("/fire/awaited", &["--profile", "aspnet"]).expect_clean();
}

#[test]
fn one_lock_for_every_request() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/lock/convoy?ms=2", &["--profile", "hangs"]);
    let f = r.expect("lock-convoy", "Mistakes.Locks.Convoy");
    // Eight clients on one 2 ms lock: about one thread always waits (0.98 to 1.7 measured on
    // two loaded CPUs, the thread-time samples taking their share).
    assert!(
        Recorded::fact(f, "threads waiting on average") >= 0.5,
        "{f:#}"
    );
    // Where the owner was while the others waited: spinning inside the lock, in Spin (called
    // by Convoy; the kernel sampler's frame-pointer walk may drop Convoy when Spin keeps no
    // frame, so only Spin is required), for most of the time it was seen holding it.
    let owner = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "owner was in")
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no holder: {f:#}"));
    assert!(owner.starts_with("Mistakes.Locks.Spin ("), "{f:#}");
    let share: f64 = owner
        .rsplit('(')
        .next()
        .and_then(|p| p.trim_end_matches("%)").parse().ok())
        .unwrap();
    assert!(share >= 50.0, "{f:#}");
    let stack: Vec<&str> = f["stack"]
        .as_array()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        stack.iter().any(|s| s.starts_with("Mistakes.Locks.Spin")),
        "the holder's stack has no Spin: {f:#}"
    );
    record("/lock/none?ms=2", &["--profile", "hangs"]).expect_clean();
}

#[test]
fn gc_collect_per_request() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/gc/collect", &["--profile", "aspnet"]);
    let f = r.expect("induced-gc", "Mistakes.Gc.CollectPerCall");
    // Each request asks for one; the runtime runs one GC for the calls that come while
    // another thread's induced GC is under way (0.8 a request under `ab -c 8` here).
    let induced = Recorded::fact(f, "induced GCs");
    let served = r.served();
    assert!(
        induced <= served * 1.02 && induced >= served * 0.5,
        "{induced} induced for {served} requests: {f:#}"
    );
    record("/gc/none", &["--profile", "aspnet"]).expect_clean();
}

#[test]
fn large_arrays_per_request() {
    if !run() {
        return;
    }
    let _m = machine();
    // The default recording: the gen2 GCs say it; the allocation ticks name the type.
    let r = record(
        "/loh/churn?kb=256",
        &[
            "--clrevents",
            "gc",
            "--clrevents-level",
            "5",
            "--profile",
            "cpu",
        ],
    );
    r.expect("large-object-churn", "System.Byte[]");
    // The GCs it causes are a share of the time, and the arrays what was allocated.
    r.expect("gc-time", "System.Byte[]");
    record(
        "/loh/pooled?kb=256",
        &[
            "--clrevents",
            "gc",
            "--clrevents-level",
            "5",
            "--profile",
            "cpu",
        ],
    )
    .expect_clean();
}

#[test]
fn an_http_client_per_request() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/http/percall", &["--profile", "net"]);
    let f = r
        .finding("http-client-per-call")
        .unwrap_or_else(|| panic!("{:#}", r.findings));
    assert_eq!(f["severity"], "critical", "{f:#}");
    assert!(
        f["sites"][0]["name"]
            .as_str()
            .unwrap()
            .contains("Mistakes.Http"),
        "{f:#}"
    );
    // Every call a connection of its own.
    let new = Recorded::fact(f, "new connections");
    let requests = Recorded::fact(f, "requests");
    assert!(near(new, requests, 0.05), "{f:#}");
    record("/http/shared", &["--profile", "net"]).expect_clean();
    // A shared client to a server that closes every connection opens one per call too, but
    // builds no handler per call: not this mistake (info at most, naming both causes).
    let closing = record("/http/shared?close=1", &["--profile", "net"]);
    closing.expect_clean();
    let f = closing
        .finding("http-client-per-call")
        .unwrap_or_else(|| panic!("{:#}", closing.findings));
    assert!(
        f["said"].as_str().unwrap().contains("server may close"),
        "{f:#}"
    );
}

#[test]
fn a_thread_per_request() {
    if !run() {
        return;
    }
    let _m = machine();
    let r = record("/thread/percall", &["--profile", "aspnet"]);
    let f = r
        .finding("thread-per-call")
        .unwrap_or_else(|| panic!("{:#}", r.findings));
    assert_eq!(f["severity"], "critical", "{f:#}");
    let created = Recorded::fact(f, "threads created");
    let served = r.served();
    assert!(
        near(created, served, 0.05),
        "{created} threads for {served} requests: {f:#}"
    );
    record("/thread/pool", &["--profile", "aspnet"]).expect_clean();
}

/// Records `pid` with `clrspy record ARGS` for [`SECONDS`] while `ab -c 8` asks for each of
/// `urls` in turn, and reads its findings.
fn record_clean(pid: u32, urls: &[String], args: &[&str]) -> Recorded {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("clean.nettrace");
    let log = dir.path().join("record.log");
    let mut rec = clrspy_command()
        .args(["record", "-p", &pid.to_string(), "--duration"])
        .arg(format!("{SECONDS}s"))
        .args(args)
        .arg("-o")
        .arg(&trace)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&log, "Recording");
    let each = ((SECONDS - 2) / urls.len() as u64).max(1);
    for url in urls {
        let ab = Command::new("/usr/bin/timeout")
            .arg((each + 10).to_string())
            .arg(Need::Ab.path())
            .args(["-q", "-n", "10000000", "-c", "8", "-s", "20", "-t"])
            .arg(each.to_string())
            .arg(url)
            .output()
            .expect("run ab");
        assert!(String::from_utf8_lossy(&ab.stdout).contains("Complete requests"));
    }
    assert!(
        rec.wait().unwrap().success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let findings = json(&["report", trace.to_str().unwrap(), "findings", "--json"]);
    Recorded {
        _dir: dir,
        trace,
        findings,
    }
}

#[test]
fn the_sdks_web_templates_under_load_have_no_findings() {
    if !run() {
        return;
    }
    let _m = machine();
    for (dll, paths) in [
        (common::template_web(), &["/"][..]),
        (common::template_webapp(), &["/", "/Privacy"][..]),
    ] {
        // Run as deployed: from its folder, its appsettings.json applying.
        let (app, port) = common::start_template_dll(dll, true);
        let urls: Vec<String> = paths
            .iter()
            .map(|p| format!("http://127.0.0.1:{port}{p}"))
            .collect();
        for url in &urls {
            let warm = Command::new("curl")
                .args(["-s", "-o", "/dev/null", url])
                .status();
            assert!(warm.is_ok_and(|s| s.success()), "curl {url}");
        }
        for args in [&[][..], &["--profile", "aspnet"][..]] {
            let r = record_clean(app.1, &urls, args);
            eprintln!("{} {args:?}: {:#}", dll.display(), r.findings["findings"]);
            r.expect_clean();
        }
        drop(app);
    }
}

#[test]
fn dotnet_build_has_no_findings() {
    if !run() {
        return;
    }
    let _m = machine();
    let _servers = common::build_servers();
    // The project's obj/ folder is shared with the tests' own build of it.
    let _build = common::build_lock();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("build.nettrace");
    let out = dir.path().join("out");
    let mut cmd = clrspy_command();
    cmd.args(["record", "-o"])
        .arg(&trace)
        .args(["--", "dotnet", "build"])
        .arg(common::repo().join("testapps/Workloads"))
        .args([
            "-c",
            "Release",
            "--no-incremental",
            "-p:UseSharedCompilation=false",
            "-o",
        ])
        .arg(&out)
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1")
        .env("MSBUILDDISABLENODEREUSE", "1");
    let r = common::run_bounded(cmd, dir.path(), Duration::from_secs(300));
    assert!(
        r.status.is_some_and(|s| s.success()),
        "{}{}",
        r.stdout,
        r.stderr
    );
    let findings = json(&["report", trace.to_str().unwrap(), "findings", "--json"]);
    let r = Recorded {
        _dir: dir,
        trace,
        findings,
    };
    eprintln!("dotnet build: {:#}", r.findings["findings"]);
    r.expect_clean();
}

#[test]
fn a_cpu_limit_the_app_hits() {
    if !run() {
        return;
    }
    let group = match common::cgroup::TestGroup::create() {
        Ok(g) => g,
        Err(why) => {
            common::machine_skip("a_cpu_limit_the_app_hits", &why);
            return;
        }
    };
    let _m = machine();
    let web = start_mistakes();
    group
        .add(web.app.1)
        .unwrap_or_else(|why| panic!("could not move the app in: {why}"));
    let r = record_app(web, "/cpu/burn?ms=5", &[]);
    let f = r
        .finding("cpu-saturated")
        .unwrap_or_else(|| panic!("{:#}", r.findings));
    assert!(
        f["severity"] == "warning" || f["severity"] == "critical",
        "{f:#}"
    );
    assert_eq!(Recorded::fact(f, "CPUs it may use"), 0.5, "{f:#}");
    // Without the limit, the same load leaves CPU to spare on this machine's two.
    record("/cpu/burn?ms=5", &[]).expect_clean();
}
