//! `clrspy counters` on the `dotnet new web` template under `ab` load: the hosting meter's
//! `http.server.request.duration` histogram counts every request `ab` made (no interval lost or
//! doubled), its rate over the intervals inside the load matches `ab`'s own rate within 5%, and
//! `counters monitor` under tmux shows the request duration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{clrspy_command, live, needs, start_template, Need};
use serde_json::Value;

/// `ab` making exactly `requests` requests, 4 at a time: its completed requests and requests
/// per second. (With `-t`, requests in flight when time is up are served but not counted.)
fn ab_run(url: &str, requests: u32) -> (u64, f64) {
    let out = Command::new("/usr/bin/timeout")
        .arg("120")
        .arg(Need::Ab.path())
        .args(["-q", "-n", &requests.to_string()])
        .args(["-c", "4", "-s", "10", url])
        .output()
        .expect("run ab");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("ab printed no {name}: {text}"))
    };
    let failed = field("Failed requests:");
    assert_eq!(failed, 0.0, "{text}");
    (
        field("Complete requests:") as u64,
        field("Requests per second:"),
    )
}

fn utc(v: &Value) -> f64 {
    let s = v.as_str().expect("a timestamp string");
    // RFC 3339 UTC: 2026-11-27T09:01:02.345Z — seconds of the day are enough here.
    let t = s.split('T').nth(1).expect("a time").trim_end_matches('Z');
    let mut parts = t.split(':');
    let h: f64 = parts.next().unwrap().parse().unwrap();
    let m: f64 = parts.next().unwrap().parse().unwrap();
    let sec: f64 = parts.next().unwrap().parse().unwrap();
    h * 3600.0 + m * 60.0 + sec
}

#[test]
fn hosting_meter_counts_every_request_of_ab() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let (web, port) = start_template();
    let url = format!("http://127.0.0.1:{port}/");
    // Warm up before the collection starts: these requests are not counted.
    let _ = ab_run(&url, 5000);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("web.jsonl");
    let mut c = clrspy_command();
    c.args(["counters", "collect", "-p", &web.1.to_string()])
        // System.Runtime reports every interval: its first rows say the session is open (the
        // hosting histogram has no row before the first request).
        .args(["--counters", "System.Runtime,Microsoft.AspNetCore.Hosting"])
        .args(["--format", "jsonl"])
        .args(["--refresh-interval", "1", "--duration", "120s", "-o"])
        .arg(&out);
    // Stopped with Ctrl+C's signal once the load is over and two more intervals are in: a
    // fixed duration was shorter than the load on a busy machine (34,111 of 40,000 counted).
    let err = dir.path().join("collect.err");
    let mut collector = c
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&err).unwrap_or_default();
    // The session is open (its first interval arrived) before the load starts.
    let until = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&out).map_or(true, |t| t.is_empty()) {
        if Instant::now() > until || collector.try_wait().unwrap().is_some() {
            let _ = collector.kill();
            panic!("no interval arrived: {}", stderr());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let load_start = Instant::now();
    let (done, ab_rps) = ab_run(&url, 40_000);
    assert_eq!(done, 40_000);
    let load_secs = load_start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(2500));
    let sent = Command::new("kill")
        .args(["-INT", &collector.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = collector.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = collector.kill();
            panic!("counters collect did not stop on SIGINT: {}", stderr());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}: {}", stderr());
    let text = std::fs::read_to_string(&out).unwrap();
    // Per interval: the requests the histogram counted (summed over its series: route,
    // method, status code) and the interval's length.
    let mut intervals: Vec<(f64, f64, f64)> = Vec::new();
    for line in text.lines() {
        let row: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if row["name"] != "http.server.request.duration" {
            continue;
        }
        assert_eq!(row["kind"], "histogram", "{line}");
        assert_eq!(row["provider"], "Microsoft.AspNetCore.Hosting", "{line}");
        assert!(row["tags"].is_object(), "{line}");
        let (s, e) = (utc(&row["interval_start"]), utc(&row["interval_end"]));
        let n = row["value"]["count"].as_f64().unwrap();
        match intervals.iter_mut().find(|i| i.0 == s) {
            Some(i) => {
                assert_eq!(i.1, e, "one interval, one end: {line}");
                i.2 += n;
            }
            None => intervals.push((s, e, n)),
        }
    }
    let counted: f64 = intervals.iter().map(|i| i.2).sum();
    assert_eq!(
        counted as u64, done,
        "the histogram counted {counted} requests, ab made {done}: {intervals:?}"
    );
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in intervals.windows(2) {
        assert!(w[0].1 <= w[1].0 + 1e-3, "overlapping intervals: {w:?}");
    }
    // The rate over the intervals in the middle of the load (the first and last are partly
    // outside it) against ab's own.
    let busy: Vec<_> = intervals.iter().filter(|i| i.2 > 0.0).collect();
    assert!(busy.len() >= 5, "{intervals:?} over {load_secs:.1} s");
    let inner = &busy[1..busy.len() - 1];
    let (n, secs) = inner
        .iter()
        .fold((0.0, 0.0), |(n, t), i| (n + i.2, t + (i.1 - i.0)));
    let rate = n / secs;
    assert!(
        (rate / ab_rps - 1.0).abs() <= 0.05,
        "counters say {rate:.0} requests/s, ab {ab_rps:.0}: {intervals:?}"
    );
    drop(web);
}

#[test]
fn monitor_shows_the_request_duration_under_tmux() {
    if !live() || !needs(&[Need::Tmux, Need::Ab]) {
        return;
    }
    let (web, port) = start_template();
    let url = format!("http://127.0.0.1:{port}/");
    let load = std::thread::spawn(move || ab_run(&url, 60_000));
    // Not live_counters' name: both run in one test binary, with one process id.
    let session = format!("clrspy-counters-web-{}", std::process::id());
    let bin = assert_cmd::cargo::cargo_bin("clrspy");
    // The program and its arguments as tmux's own arguments (tmux runs them without a
    // shell): the checkout's path may hold spaces.
    let (bin, pid) = (bin.display().to_string(), web.1.to_string());
    let cmd = [
        bin.as_str(),
        "counters",
        "monitor",
        "-p",
        &pid,
        "--counters",
        "Microsoft.AspNetCore.Hosting",
        "--duration",
        "20s",
    ];
    let tmux = |args: &[&str]| {
        Command::new(Need::Tmux.path())
            .args(args)
            .output()
            .expect("run tmux")
    };
    let mut args = vec!["new-session", "-d", "-s", &session, "-x", "80", "-y", "24"];
    args.extend(cmd);
    let ok = tmux(&args);
    assert!(ok.status.success(), "{ok:?}");
    let until = Instant::now() + Duration::from_secs(15);
    let mut pane = String::new();
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(500));
        pane = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &session]).stdout)
            .into_owned();
        if pane.contains("    http.server.r") && pane.contains("/s p50 ") {
            break;
        }
    }
    let _ = tmux(&["kill-session", "-t", &session]);
    let _ = load.join();
    // The request duration's line: requests per second, then the percentiles.
    let line = pane
        .lines()
        // At 80 columns the name is cut to leave its tags and value room.
        .find(|l| l.starts_with("    http.server.r") && l.contains("/s p50 "))
        .unwrap_or_else(|| panic!("the monitor did not show the hosting meter:\n{pane}"));
    assert!(line.contains("/s p50 ") && line.ends_with(" ms"), "{pane}");
    assert!(pane.lines().count() <= 24, "{pane}");
    assert!(pane.lines().all(|l| l.chars().count() <= 80), "{pane}");
    drop(web);
}
