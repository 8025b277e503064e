//! `clrspy metrics` on real processes: two burning threads show as ~200 % of a core with one
//! row per interval, threads and RSS plausible; inside a cgroup limited to half a CPU the
//! process gets ~50 % and the throttling columns count; the chart page is self-contained
//! SVG and opens in headless Chromium. The sampler's own CPU cost is
//! printed (the command says it on stderr), never asserted.
//!
//! The machine is shared and loaded: CPU figures have wide margins.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use common::{clrspy, live, machine, start};

/// The CSV as its header and rows of named cells.
fn read_csv(path: &Path) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(String::from)
        .collect();
    let rows = lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect();
    (header, rows)
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row.get(col)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{col} in {row:?}"))
}

fn mean(rows: &[HashMap<String, String>], col: &str) -> f64 {
    rows.iter().map(|r| num(r, col)).sum::<f64>() / rows.len().max(1) as f64
}

/// Why the process could not have had the `wanted` CPUs, from the CSV itself (None when it
/// could): the whole machine was busy (90 % or more) and other processes than the target took
/// more than the CPUs left beside what it wanted, with a quarter CPU of slack (at least half a
/// CPU).
fn crowded(rows: &[HashMap<String, String>], wanted: f64) -> Option<String> {
    let cores = rows.first().map_or(1, |r| {
        r.keys()
            .filter(|k| k.starts_with("cpu") && k.ends_with("_pct") && *k != "cpu_pct")
            .count()
    }) as f64;
    let machine = mean(rows, "cpu_pct");
    let others = machine / 100.0 * cores - mean(rows, "process_cpu_pct") / 100.0;
    let room = (cores - wanted + 0.25).max(0.5);
    (machine >= 90.0 && others > room).then(|| {
        format!("the machine was busy: {machine:.0} % of {cores} CPUs, {others:.1} CPUs by others")
    })
}

/// Checks a rule on the process's CPU unless the machine was crowded; says why when not.
fn check_cpu(rows: &[HashMap<String, String>], wanted: f64, what: &str, rule: impl FnOnce()) {
    match crowded(rows, wanted) {
        None => rule(),
        Some(why) => eprintln!("skipped the rule \"{what}\": {why}"),
    }
}

/// `clrspy metrics -p PID --duration D -o CSV [--html HTML]`: its stderr.
fn metrics(pid: u32, duration: &str, csv: &Path, html: Option<&Path>) -> String {
    let mut cmd = clrspy();
    cmd.args([
        "metrics",
        "-p",
        &pid.to_string(),
        "--duration",
        duration,
        "-o",
    ])
    .arg(csv);
    if let Some(h) = html {
        cmd.arg("--html").arg(h);
    }
    let out = cmd.timeout(Duration::from_secs(60)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "clrspy metrics failed: {err}");
    eprintln!("clrspy metrics said: {err}");
    err
}

#[test]
fn two_burning_threads_show_as_two_cores() {
    if !live() {
        return;
    }
    let _machine = machine();
    let app = start("cpu", &["--threads", "2", "--seconds", "60"]);
    let dir = tempfile::tempdir().unwrap();
    let (csv, html) = (dir.path().join("m.csv"), dir.path().join("m.html"));
    let err = metrics(app.1, "4s", &csv, Some(&html));
    assert!(err.contains("clrspy's own CPU"), "{err}");
    let (header, rows) = read_csv(&csv);
    for col in [
        "time_utc",
        "elapsed_s",
        "cpu_pct",
        "cpu0_pct",
        "process_cpu_pct",
        "mem_used_bytes",
        "process_rss_bytes",
        "gc_heap_bytes",
        "load1",
        "threads",
        "fds",
        "cgroup_throttled_periods",
    ] {
        assert!(header.iter().any(|h| h == col), "{col} in {header:?}");
    }
    assert!(
        header.iter().any(|h| h.starts_with("net_lo_")),
        "{header:?}"
    );
    assert!(
        (3..=5).contains(&rows.len()),
        "4 s at 1 s: {} rows",
        rows.len()
    );
    let cpu = mean(&rows, "process_cpu_pct");
    eprintln!("two burners: {cpu:.1} % of one core");
    // Whatever the load: the process never uses more than the machine did, nor more than two
    // cores, and it burned.
    let cores = header
        .iter()
        .filter(|h| h.starts_with("cpu") && h.ends_with("_pct") && *h != "cpu_pct")
        .count() as f64;
    for r in &rows {
        let p = num(r, "process_cpu_pct");
        assert!(p > 20.0 && p <= 210.0, "{r:?}");
        assert!(p <= num(r, "cpu_pct") * cores + 10.0, "{r:?}");
    }
    check_cpu(&rows, 2.0, "two burners use ~200 % of a core", || {
        assert!((150.0..=250.0).contains(&cpu), "two burners: {cpu} %");
    });
    assert!(rows.iter().all(|r| num(r, "threads") >= 2.0));
    assert!(rows.iter().all(|r| num(r, "process_rss_bytes") > 10e6));
    assert!(rows.iter().all(|r| num(r, "fds") >= 3.0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.matches("<svg").count() >= 4,
        "CPU, memory, load, threads"
    );
    assert!(!page.contains("<script"));
    common::chromium_screenshot(&html, &dir.path().join("m.png"), "1000,1400");
}

#[test]
fn a_half_cpu_limit_throttles() {
    if !live() {
        return;
    }
    let group = match common::cgroup::TestGroup::create() {
        Ok(g) => g,
        Err(why) => {
            common::machine_skip("a_half_cpu_limit_throttles", &why);
            return;
        }
    };
    let _machine = machine();
    let app = start("cpu", &["--threads", "2", "--seconds", "60"]);
    group.add(app.1).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("m.csv");
    metrics(app.1, "3s", &csv, None);
    let (_, rows) = read_csv(&csv);
    assert!((2..=4).contains(&rows.len()), "{} rows", rows.len());
    assert!(rows.iter().all(|r| num(r, "cgroup_cpu_limit_cores") == 0.5));
    assert!(rows
        .iter()
        .all(|r| num(r, "cgroup_throttled_periods") > 0.0));
    assert!(rows.iter().all(|r| num(r, "cgroup_throttled_ms") > 0.0));
    let cpu = mean(&rows, "process_cpu_pct");
    eprintln!("half a CPU: {cpu:.1} % of one core");
    check_cpu(&rows, 0.5, "a half-CPU limit gives ~50 % of a core", || {
        assert!((35.0..=65.0).contains(&cpu), "half a CPU: {cpu} %");
    });
    drop(app);
}

/// `clrspy metrics -- COMMAND`: rows until the program ends, its output on stderr (stdout is
/// the CSV's), clrspy's exit code its own.
#[test]
fn a_launched_program_ends_the_rows() {
    if !live() {
        return;
    }
    let out = common::clrspy_command()
        .args(["metrics", "--interval", "500ms", "--", "dotnet"])
        .arg(common::workloads())
        .args(["cpu", "--seconds", "3"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("burned seconds=3"), "{stderr}");
    let mut lines = stdout.lines();
    assert!(lines
        .next()
        .is_some_and(|h| h.starts_with("time_utc,elapsed_s,cpu_pct,")));
    // The runtime's start and 3 s of burning at 0.5 s: more than 5 rows, and it ended.
    let rows = lines.count();
    assert!((5..=30).contains(&rows), "{rows} rows: {stderr}");
}
