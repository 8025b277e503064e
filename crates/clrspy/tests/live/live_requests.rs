//! `clrspy report requests` on testapps/WebApp under `ab` load, recorded at the same time by
//! `clrspy record --profile aspnet -p PID` and by dotnet-trace with the profile's event sources:
//! both reports count exactly the requests `ab` made, by route and status (the throwing route's
//! 500s counted), the sleeping route is the slowest, its breakdown names `Thread.Sleep` as
//! blocked time (from the clrspy recording's samples), `--requests-jsonl` streams one line per
//! request, and TraceEvent's raw counts of the events read equal the report's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{clrspy_command, harness, json, live, need, needs, start_web, Need};
use serde_json::Value;

/// `ab -n N -c C URL`: the requests it completed and its non-2xx responses.
fn ab_counts(n: u32, c: u32, url: &str) -> (u64, u64) {
    let out = Command::new("/usr/bin/timeout")
        .arg("60")
        .arg(Need::Ab.path())
        .args(["-q", "-n", &n.to_string()])
        .args(["-c", &c.to_string(), "-s", "10", url])
        .output()
        .expect("run ab");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let done = field("Complete requests:").unwrap_or_else(|| panic!("ab said:\n{text}"));
    (done, field("Non-2xx responses:").unwrap_or(0))
}

/// Waits until `file` has a line starting with `prefix`.
fn wait_for(file: &Path, prefix: &str) {
    let until = Instant::now() + Duration::from_secs(30);
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

fn route<'a>(report: &'a Value, path: &str) -> &'a Value {
    report["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["route"] == path)
        .unwrap_or_else(|| panic!("no route {path}: {report}"))
}

#[test]
fn requests_match_ab_by_route_and_the_sleep_is_blocked_time() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let web = start_web();
    let pid = web.app.1.to_string();
    let base = format!("http://127.0.0.1:{}", web.port);
    // Warm up (first requests JIT the routes), unrecorded.
    for path in ["/", "/fail", "/sleep?ms=1"] {
        ab_counts(5, 1, &format!("{base}{path}"));
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("aspnet.nettrace");
    let theirs = dir.path().join("dotnet-trace.nettrace");
    let log = dir.path().join("record.log");
    let mut rec = clrspy_command()
        .args([
            "record",
            "-p",
            &pid,
            "--profile",
            "aspnet",
            "--duration",
            "9s",
            "-o",
        ])
        .arg(&ours)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let providers = clr_events::profiles::ASPNET_EVENT_SOURCES;
    let mut other = need(Need::DotnetTrace).map(|exe| {
        Command::new(exe)
            .args(["collect", "-p", &pid, "--rundown", "false", "--providers"])
            .arg(providers)
            .args(["--duration", "00:00:00:09", "-o"])
            .arg(&theirs)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    });
    wait_for(&log, "Recording");
    // dotnet-trace says nothing we can wait for: give its session time to start.
    std::thread::sleep(Duration::from_millis(1500));

    let (sleeps, _) = ab_counts(24, 3, &format!("{base}/sleep?ms=100"));
    let (fails, non2xx) = ab_counts(15, 3, &format!("{base}/fail"));
    let (roots, _) = ab_counts(300, 4, &format!("{base}/"));
    assert_eq!((sleeps, fails, non2xx, roots), (24, 15, 15, 300));
    let total = sleeps + fails + roots;

    assert!(
        rec.wait().unwrap().success(),
        "{:?}",
        std::fs::read_to_string(&log)
    );
    let ours = ours.to_str().unwrap();
    let rows = dir.path().join("rows.jsonl");
    let out = clrspy_command()
        .args([
            "report",
            ours,
            "requests",
            "--json",
            "--top",
            "5",
            "--requests-jsonl",
        ])
        .arg(&rows)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = |r: &Value, who: &str| {
        assert_eq!(r["finished"], total, "{who}: {r}");
        assert_eq!(r["in_flight"], 0, "{who}");
        assert_eq!(r["with_status"], total, "{who}");
        assert_eq!(r["with_route"], total, "{who}");
        assert_eq!(route(r, "/sleep")["count"], sleeps, "{who}");
        assert_eq!(route(r, "/")["statuses"]["200"], roots, "{who}");
        let fail = route(r, "/fail");
        assert_eq!(fail["statuses"]["500"], fails, "{who}");
        assert_eq!(fail["errors"], fails, "{who}");
        assert!(
            route(r, "/sleep")["p50_ms"].as_f64().unwrap() >= 100.0,
            "{who}"
        );
        let slowest = r["slowest"].as_array().unwrap();
        assert!(
            slowest
                .iter()
                .all(|s| s["path"] == "/sleep" && s["status"] == 200),
            "{who}: {slowest:?}"
        );
    };
    check(&r, "clrspy record");

    // The slow requests' time: blocked in Thread.Sleep, most of their samples.
    for s in r["slowest"].as_array().unwrap() {
        let blocked = s["blocked"].as_array().unwrap();
        let top = &blocked[0];
        assert!(
            top["name"]
                .as_str()
                .unwrap()
                .starts_with("System.Threading.Thread.Sleep"),
            "{s}"
        );
        let samples = s["samples"].as_u64().unwrap();
        assert!(top["samples"].as_u64().unwrap() * 2 > samples, "{s}");
        assert!(s["connection_id"].is_string(), "{s}");
    }
    let text = std::fs::read_to_string(&rows).unwrap();
    assert_eq!(text.lines().count() as u64, total);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "start_ms",
            "method",
            "path",
            "route",
            "status",
            "duration_ms"
        ]
    );

    // TraceEvent's raw counts of the events read.
    if let Some(h) = harness() {
        let out = Command::new("dotnet")
            .arg(h)
            .args(["counts", ours])
            .output()
            .unwrap();
        let c: Value = serde_json::from_slice(&out.stdout).unwrap();
        let count = |provider: &str, name: &str| {
            c["per_event"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["provider"] == provider && e["name"] == name)
                .map_or(0, |e| e["count"].as_u64().unwrap())
        };
        let hosting = "Microsoft.AspNetCore.Hosting";
        assert_eq!(
            count(hosting, "Request/Start"),
            r["started"].as_u64().unwrap()
        );
        assert_eq!(count(hosting, "Request/Stop"), total);
        assert_eq!(
            count(hosting, "UnhandledException"),
            r["unhandled_exceptions"].as_u64().unwrap()
        );
        let ds = "Microsoft-Diagnostics-DiagnosticSource";
        assert_eq!(count(ds, "Activity1/Stop"), total);
    }

    // The same requests, recorded by dotnet-trace.
    if let Some(child) = other.as_mut() {
        assert!(child.wait().unwrap().success(), "dotnet-trace failed");
        let t = json(&["report", theirs.to_str().unwrap(), "requests", "--json"]);
        check(&t, "dotnet-trace");
    }
}

/// The `dotnet new web` template as it is (default host, default logging): every request `ab`
/// made, with its status and route.
/// With the kernel's sampler (root here), the slow requests' time is the kernel's waits of
/// their threads (written a drain after the requests ended): blocked in Thread.Sleep.
#[test]
fn with_the_kernel_sampler_the_sleep_is_blocked_time_too() {
    if !live()
        || !common::root_for(
            "with_the_kernel_sampler_the_sleep_is_blocked_time_too",
            "the kernel's sampler takes waits as root",
        )
        || !needs(&[Need::Ab])
    {
        return;
    }
    let web = start_web();
    let pid = web.app.1.to_string();
    let base = format!("http://127.0.0.1:{}", web.port);
    ab_counts(5, 1, &format!("{base}/sleep?ms=1"));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("kernel.nettrace");
    let log = dir.path().join("record.log");
    let mut rec = clrspy_command()
        .args(["record", "-p", &pid, "--profile", "aspnet"])
        .args(["--sampler", "kernel", "--duration", "5s", "-o"])
        .arg(&trace)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&log, "Recording");
    let (sleeps, _) = ab_counts(12, 3, &format!("{base}/sleep?ms=100"));
    assert_eq!(sleeps, 12);
    assert!(rec.wait().unwrap().success());
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("CPU samples from the kernel"), "{log}");
    let r = json(&[
        "report",
        trace.to_str().unwrap(),
        "requests",
        "--json",
        "--top",
        "5",
    ]);
    assert_eq!(route(&r, "/sleep")["count"], 12, "{r}");
    for s in r["slowest"].as_array().unwrap() {
        assert_eq!(s["path"], "/sleep", "{s}");
        let top = &s["blocked"][0];
        assert!(
            top["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("System.Threading.Thread.Sleep")),
            "{s}"
        );
        // 100 ms asleep: the kernel's wait covers most of the request.
        let ms = top["ms"].as_f64().unwrap();
        let took = s["duration_ms"].as_f64().unwrap();
        assert!(ms >= 90.0 && ms <= took + 1.0, "{ms} ms of {took}: {s}");
    }
}

#[test]
fn the_web_template_as_it_is_counts_every_request() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let (app, port) = common::start_template();
    let base = format!("http://127.0.0.1:{port}/");
    ab_counts(5, 1, &base);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("template.nettrace");
    let log = dir.path().join("record.log");
    let mut rec = clrspy_command()
        .args(["record", "-p", &app.1.to_string(), "--profile", "aspnet"])
        .args(["--duration", "6s", "-o"])
        .arg(&trace)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&log, "Recording");
    let (done, non2xx) = ab_counts(200, 4, &base);
    assert_eq!((done, non2xx), (200, 0));
    assert!(
        rec.wait().unwrap().success(),
        "{:?}",
        std::fs::read_to_string(&log)
    );
    let r = json(&["report", trace.to_str().unwrap(), "requests", "--json"]);
    assert_eq!(r["finished"], 200, "{r}");
    assert_eq!(r["with_status"], 200, "{r}");
    assert_eq!(route(&r, "/")["statuses"]["200"], 200, "{r}");
}
