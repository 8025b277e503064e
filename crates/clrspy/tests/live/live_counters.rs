//! Live tests of `clrspy counters`: the workload `meters` (a Meter of its own with a counter
//! added to an exactly known number of times, a histogram of the values 1..1000, GCs induced)
//! collected from its first instruction.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `clrspy counters ARGS -- dotnet Workloads.dll meters --seconds N`, not yet started.
fn counters(args: &[&str], seconds: &str) -> Command {
    let mut c = common::clrspy_command();
    c.arg("counters")
        .args(args)
        .arg("--")
        .arg("dotnet")
        .arg(common::workloads())
        .args(["meters", "--seconds", seconds]);
    c
}

/// The `meters total=N` line's N.
fn total(stdout: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("meters total="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total in {stdout:?}"))
}

/// The complete lines of `path` as it stands (a line without its newline is not complete).
fn complete_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.rfind('\n') {
        Some(end) => text[..end].lines().map(str::to_string).collect(),
        None => Vec::new(),
    }
}

#[test]
fn collect_jsonl_counts_every_increment_once() {
    if !common::live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let mut child = counters(
        &[
            "collect",
            "--format",
            "jsonl",
            "-o",
            file.to_str().unwrap(),
            "--counters",
            "Workloads.Meters",
        ],
        "6",
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Read the file while it is written: every complete line is a JSON object.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen_while_running = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "clrspy counters did not end");
        for l in complete_lines(&file) {
            serde_json::from_str::<serde_json::Value>(&l)
                .unwrap_or_else(|e| panic!("a line read during the run is not JSON ({e}): {l}"));
            seen_while_running += 1;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let status = child.wait().unwrap();
    assert!(status.success(), "clrspy failed: {err}");
    assert!(seen_while_running > 0, "nothing readable during the run");
    let want = total(&out);
    let rows: Vec<serde_json::Value> = complete_lines(&file)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The counter's increments over all intervals (both shards) are exactly the total.
    let items: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["name"] == "workloads.items")
        .collect();
    let sum: f64 = items.iter().map(|r| r["value"].as_f64().unwrap()).sum();
    assert_eq!(sum, want as f64, "increments summed over intervals");
    assert!(items
        .iter()
        .all(|r| r["kind"] == "rate" && r["unit"] == "{item}"));
    assert!(items
        .iter()
        .all(|r| r["tags"]["shard"] == "0" || r["tags"]["shard"] == "1"));
    // Per time series: no interval twice, none overlapping the one before.
    let mut series: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for r in &rows {
        let key = format!("{}/{}/{}", r["provider"], r["name"], r["tags"]);
        let s = r["interval_start"].as_str().unwrap().to_string();
        let e = r["interval_end"].as_str().unwrap().to_string();
        assert!(s < e && e.ends_with('Z'), "interval {s} .. {e}");
        series.entry(key).or_default().push((s, e));
    }
    for (key, mut ivs) in series {
        let n = ivs.len();
        ivs.sort();
        ivs.dedup();
        assert_eq!(ivs.len(), n, "{key}: an interval reported twice");
        for w in ivs.windows(2) {
            assert!(w[1].0 >= w[0].1, "{key}: {:?} overlaps {:?}", w[1], w[0]);
        }
    }
    // The histogram of 1..1000: its percentiles, in every interval that has values.
    let hist: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["name"] == "workloads.latency" && r["value"]["count"].as_u64() > Some(0))
        .collect();
    assert!(hist.len() >= 3, "histogram rows: {}", hist.len());
    for h in hist {
        let v = &h["value"];
        let p = |k: &str| v[k].as_f64().unwrap();
        assert_eq!(h["kind"], "histogram");
        assert!((p("p50") - 500.0).abs() <= 25.0, "{v}");
        assert!((p("p95") - 950.0).abs() <= 25.0, "{v}");
        assert!((p("p99") - 990.0).abs() <= 15.0, "{v}");
        assert_eq!(
            v["count"].as_u64().unwrap() % 1000,
            0,
            "whole rounds of 1..1000: {v}"
        );
        assert_eq!(p("sum"), v["count"].as_f64().unwrap() * 500.5, "{v}");
    }
}

#[test]
fn collect_csv_is_invariant_in_a_decimal_comma_locale() {
    if !common::live() {
        return;
    }
    let Some(locpath) = common::need(common::Need::DecimalCommaLocale) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.csv");
    let mut cmd = counters(
        &[
            "collect",
            "-o",
            file.to_str().unwrap(),
            "--counters",
            "System.Runtime,Workloads.Meters",
        ],
        "3",
    );
    common::decimal_comma_env(&mut cmd, &locpath);
    let out = cmd
        .env_remove("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = total(&String::from_utf8_lossy(&out.stdout));
    let mut reader = csv::Reader::from_path(&file).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(header.join(","), clrspy_csv_header());
    let (mut sum, mut fractional, mut runtime) = (0.0, 0, 0);
    for rec in reader.records() {
        let rec = rec.unwrap();
        assert_eq!(rec.len(), 13);
        for col in 7..13 {
            let v = &rec[col];
            if !v.is_empty() {
                assert!(!v.contains(','), "a decimal comma: {rec:?}");
                v.parse::<f64>()
                    .unwrap_or_else(|_| panic!("not a number: {rec:?}"));
                fractional += usize::from(v.contains('.'));
            }
        }
        if &rec[3] == "workloads.items" {
            sum += rec[7].parse::<f64>().unwrap();
            assert!(rec[4] == *"shard=0" || rec[4] == *"shard=1", "{rec:?}");
        }
        runtime += usize::from(&rec[2] == "System.Runtime");
    }
    assert_eq!(sum, want as f64);
    assert!(
        fractional > 0,
        "no value with a fraction to show the decimal point"
    );
    assert!(runtime > 0, "no System.Runtime rows");
}

fn clrspy_csv_header() -> &'static str {
    "interval_start,interval_end,provider,name,tags,kind,unit,value,count,sum,p50,p95,p99"
}

#[test]
fn monitor_under_tmux_shows_the_runtime_counters() {
    if !common::live() || !common::needs(&[common::Need::Tmux]) {
        return;
    }
    let exe = assert_cmd::cargo::cargo_bin("clrspy");
    let session = format!("clrspy-counters-{}", std::process::id());
    // The program and its arguments as tmux's own arguments (tmux runs them without a
    // shell): the checkout's path may hold spaces.
    let started = Command::new("tmux")
        .args(["new-session", "-d", "-s", &session, "-x", "80", "-y", "24"])
        .arg(&exe)
        .args(["counters", "monitor", "--", "dotnet"])
        .arg(common::workloads())
        .args(["meters", "--seconds", "8"])
        .status()
        .unwrap();
    assert!(started.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut screen = String::new();
    while Instant::now() < deadline {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &session])
            .output()
            .unwrap();
        screen = String::from_utf8_lossy(&out.stdout).to_string();
        if screen.contains("[System.Runtime]") && screen.contains("dotnet.gc") {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
    assert!(
        screen.contains("[System.Runtime]") && screen.contains("dotnet.gc"),
        "the screen: {screen}"
    );
    assert!(screen.lines().count() <= 24);
    assert!(screen.lines().all(|l| l.chars().count() <= 80));
}
