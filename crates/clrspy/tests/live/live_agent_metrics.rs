//! `clrspy agent`'s `GET /metrics` against real .NET processes: without credentials 401; with
//! the key, the text format (content type 0.0.4) carries the alloc workload's GC count and CPU
//! time with its `pid` and `process` labels, next to the agent's own figures. Then the real
//! Prometheus (Debian's `prometheus`, installed by `.ci/setup`) scrapes
//! the agent every second with the bearer key, and its query API returns the same series
//! with the same labels; once the workload ends its series go. A second test measures the agent's RSS and `/metrics` latency with
//! ten processes visible.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::agent::{new_key, start_agent, Agent};
use common::{alone, live, start, Running};
use serde_json::Value;

/// The GC count and the CPU time: System.Runtime's meter (.NET 9+) or its EventCounters.
const GC: [&str; 2] = [
    "system_runtime_dotnet_gc_collections_total",
    "system_runtime_gen_0_gc_count_total",
];
const CPU: [&str; 2] = [
    "system_runtime_dotnet_process_cpu_time_total",
    "system_runtime_cpu_usage",
];

/// A child killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `curl URL` with the key: status, content type, body.
fn get(url: &str, key: Option<&str>) -> (u16, String, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-S", "--max-time", "30", "-o", "-"])
        .args(["-w", "\n%{http_code} %{content_type}"]);
    if let Some(k) = key {
        cmd.args(["-H", &format!("Authorization: Bearer {k}")]);
    }
    let out = cmd.arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (code, ctype) = last.split_once(' ').unwrap_or((last, ""));
    (
        code.trim().parse().unwrap_or(0),
        ctype.trim().to_string(),
        body.to_string(),
    )
}

/// A sample line of one of `names` for `pid`: (its whole line, its value).
fn sample(text: &str, names: &[&str], pid: u32) -> Option<(String, f64)> {
    let label = format!("pid=\"{pid}\"");
    text.lines().find_map(|l| {
        let name = l.split(['{', ' ']).next()?;
        if !names.contains(&name) || !l.contains(&label) {
            return None;
        }
        let v = l.rsplit(' ').next()?.parse().ok()?;
        Some((l.to_string(), v))
    })
}

/// Starts an agent collecting every second; with its config in `dir`. Its test runs
/// [`alone`]: the agent opens a Metrics session in every visible process, and a runtime's
/// MetricsEventSource serves sessions of one configuration at a time (another test's
/// `counters`, or another such agent, would find the meters taken, or take them first).
fn agent_for_metrics(dir: &std::path::Path, hash: &str) -> (Agent, String) {
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        "[metrics]\nrefresh_seconds = 1\nrescan_seconds = 1\n",
    )
    .unwrap();
    let agent = start_agent(&[
        "--config",
        config.to_str().unwrap(),
        "--urls",
        "http://127.0.0.1:0",
        "--api-key-hash",
        hash,
    ]);
    let base = agent.base.clone();
    (agent, base)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn metrics_for_prometheus() {
    if !live() {
        return;
    }
    let _alone = alone();
    let w: Running = start("alloc", &["--seconds", "120"]);
    let (key, hash) = new_key();
    let dir = tempfile::tempdir().unwrap();
    let (_agent, base) = agent_for_metrics(dir.path(), &hash);
    let url = format!("{base}/metrics");

    assert_eq!(get(&url, None).0, 401);
    assert_eq!(get(&url, Some("wrong")).0, 401);

    // The process's name as /processes gives it.
    let (s, _, body) = get(&format!("{base}/processes"), Some(&key));
    assert_eq!(s, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let name = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == w.1)
        .and_then(|p| p["name"].as_str())
        .unwrap()
        .to_string();

    let deadline = Instant::now() + Duration::from_secs(60);
    let (gc, cpu, text) = loop {
        let (s, ctype, text) = get(&url, Some(&key));
        assert_eq!(s, 200, "{text}");
        assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
        let gc = sample(&text, &GC, w.1).filter(|(_, v)| *v > 0.0);
        let cpu = sample(&text, &CPU, w.1);
        if let (Some(gc), Some(cpu)) = (gc, cpu) {
            break (gc, cpu, text);
        }
        assert!(
            Instant::now() < deadline,
            "no GC count and CPU for {}:\n{text}",
            w.1
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!("{}\n{}", gc.0, cpu.0);
    let labels = format!("pid=\"{}\",process=\"{name}\"", w.1);
    assert!(
        gc.0.contains(&labels) && cpu.0.contains(&labels),
        "{}\n{}",
        gc.0,
        cpu.0
    );
    for own in [
        "clrspy_agent_sessions_open ",
        "clrspy_agent_processes_visible ",
        "clrspy_agent_series_dropped_total ",
        "# TYPE clrspy_agent_series_dropped_total counter",
    ] {
        assert!(text.contains(own), "{own}\n{text}");
    }
    let open: f64 = sample(&text, &["clrspy_agent_sessions_open"], 0)
        .map(|s| s.1)
        .unwrap_or_else(|| {
            text.lines()
                .find_map(|l| l.strip_prefix("clrspy_agent_sessions_open ")?.parse().ok())
                .unwrap()
        });
    assert!(open >= 1.0, "{text}");

    prometheus_scrapes(dir.path(), &base, &key, w.1, &name);
    counters_borrow_the_meters(&base, &key, w.1);

    // The process ends: its series go, its session closes.
    let pid = w.1;
    drop(w);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, _, text) = get(&url, Some(&key));
        if !text.contains(&format!("pid=\"{pid}\"")) {
            break;
        }
        assert!(Instant::now() < deadline, "{pid} still has series:\n{text}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `/counters` of a process `/metrics` watches: the runtime gives its meters to one session,
/// so the stream borrows the collector's — its meter rows come (no "held by another tool"
/// note), `/metrics` keeps the process's series meanwhile, and the collector takes it back.
fn counters_borrow_the_meters(base: &str, key: &str, pid: u32) {
    // Once more if the runtime still held the collector's meters session (CI's busy machine):
    // a second miss is a failure.
    for attempt in 0..2 {
        if borrowed(base, key, pid, attempt == 1) {
            return;
        }
        eprintln!("counters: the meters were still held; once more");
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// One `/counters` stream of `pid` with `/metrics` watched meanwhile; false when the stream
/// says another session holds the meters and `last` is false.
fn borrowed(base: &str, key: &str, pid: u32, last: bool) -> bool {
    let url = format!("{base}/counters?pid={pid}&duration=10s");
    let stream = std::thread::spawn({
        let key = key.to_string();
        move || get(&url, Some(&key))
    });
    // While the stream runs, /metrics has the process's series from the stream's rows.
    let until = Instant::now() + Duration::from_secs(9);
    let during = loop {
        std::thread::sleep(Duration::from_millis(500));
        let (_, _, during) = get(&format!("{base}/metrics"), Some(key));
        let has = sample(&during, &GC, pid).is_some() || sample(&during, &CPU, pid).is_some();
        if has || Instant::now() > until {
            break during;
        }
    };
    let (s, _, text) = stream.join().unwrap();
    assert_eq!(s, 200, "{text}");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let held = rows.iter().any(|r| {
        r["note"]
            .as_str()
            .is_some_and(|n| n.contains("another tool"))
    });
    if held && !last {
        return false;
    }
    let meter = rows
        .iter()
        .filter(|r| r["provider"] == "System.Runtime")
        .count();
    assert!(meter >= 1, "no meter rows:\n{text}");
    assert!(
        !rows.iter().any(|r| r["note"]
            .as_str()
            .is_some_and(|n| n.contains("another tool"))),
        "{text}"
    );
    assert!(
        sample(&during, &GC, pid).is_some() || sample(&during, &CPU, pid).is_some(),
        "no series of {pid} while lent:\n{during}"
    );
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let (_, _, after) = get(&format!("{base}/metrics"), Some(key));
        let open = after.lines().find_map(|l| {
            l.strip_prefix("clrspy_agent_sessions_open ")?
                .parse::<f64>()
                .ok()
        });
        if open.is_some_and(|n| n >= 1.0) && sample(&after, &CPU, pid).is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the collector did not take {pid} back:\n{after}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    true
}

/// The real Prometheus scrapes the agent and answers queries for the workload's series.
fn prometheus_scrapes(dir: &std::path::Path, base: &str, key: &str, pid: u32, name: &str) {
    let Some(prometheus) = common::need(common::Need::Prometheus) else {
        return;
    };
    let target = base.trim_start_matches("http://");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: clrspy\n    scrape_interval: 1s\n    scrape_timeout: 1s\n\
             \x20   authorization:\n      credentials: {key}\n\
             \x20   static_configs:\n      - targets: [\"{target}\"]\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let prom = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let api = format!("http://127.0.0.1:{port}/api/v1/query");
    let deadline = Instant::now() + Duration::from_secs(60);
    for names in [GC, CPU] {
        let query = format!("{{__name__=~\"{}\",pid=\"{pid}\"}}", names.join("|"));
        loop {
            let out = Command::new("curl")
                .args(["-s", "--max-time", "5", "-G", &api, "--data-urlencode"])
                .arg(format!("query={query}"))
                .output()
                .unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            let found = v["data"]["result"]
                .as_array()
                .and_then(|r| r.first().cloned());
            if let Some(r) = found {
                eprintln!("prometheus: {r}");
                assert_eq!(r["metric"]["pid"], pid.to_string(), "{r}");
                assert_eq!(r["metric"]["process"], name, "{r}");
                assert_eq!(r["metric"]["job"], "clrspy", "{r}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus never returned {query}: {v}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    drop(prom);
}

/// The agent's RSS and `/metrics` latency with ten idle processes collected from.
#[test]
fn metrics_with_ten_processes() {
    if !live() {
        return;
    }
    let _alone = alone();
    let work: Vec<Running> = (0..10)
        .map(|_| start("idle", &["--seconds", "120"]))
        .collect();
    let (key, hash) = new_key();
    let dir = tempfile::tempdir().unwrap();
    let (agent, base) = agent_for_metrics(dir.path(), &hash);
    let url = format!("{base}/metrics");
    // Ten runtimes answering their first sessions on a loaded 2-core machine: give them time.
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let (_, _, text) = get(&url, Some(&key));
        if work.iter().all(|w| sample(&text, &CPU, w.1).is_some()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every process has series:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Let a few intervals go by, then time 50 scrapes.
    std::thread::sleep(Duration::from_secs(3));
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..50 {
        let t = Instant::now();
        let (s, _, text) = get(&url, Some(&key));
        times.push(t.elapsed());
        assert_eq!(s, 200);
        size = text.len();
    }
    times.sort();
    let status = std::fs::read_to_string(format!("/proc/{}/status", agent.child.id())).unwrap();
    let rss: Vec<&str> = status
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("RssAnon") || l.starts_with("Threads"))
        .collect();
    eprintln!(
        "10 processes: /metrics {size} bytes, latency (curl, incl. process start) p50 {:?} max {:?}; agent {rss:?}",
        times[25], times[49]
    );
}
