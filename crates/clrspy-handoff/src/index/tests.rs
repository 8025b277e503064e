//! The index page: grouping, escaping, the charts frame, and a real browser opening it offline.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::*;
use crate::manifest::Manifest;
use crate::package::finish;
use crate::package::tests::{sample_manifest, sample_staging};
use clrspy_collect::private::create_private_dir;

fn page(m: &Manifest, staging: &Path) -> String {
    let mut out = Vec::new();
    write_index(m, staging, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn entry(path: &str) -> FileEntry {
    FileEntry {
        path: path.into(),
        bytes: 2048,
        what: describe(path),
        ..FileEntry::default()
    }
}

#[test]
fn files_are_grouped_by_kind_with_the_html_report_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = sample_manifest();
    m.files = [
        "stacks.txt",
        "reports/cpu.txt",
        "heap/after.gcdump",
        "report.html",
        "counters/counters.csv",
        "trace.nettrace",
        "logs/app.log",
        "metrics/metrics.csv",
        "reports/cpu.json",
    ]
    .into_iter()
    .map(entry)
    .collect();
    let html = page(&m, dir.path());
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s}"));
    let order = [
        "<h2>Trace</h2>",
        "href=\"trace.nettrace\"",
        "<h2>Reports</h2>",
        "href=\"report.html\"",
        "href=\"reports/cpu.json\"",
        "href=\"reports/cpu.txt\"",
        "<h2>Logs</h2>",
        "<h2>Metrics</h2>",
        "<h2>Counters</h2>",
        "<h2>Heap and dump</h2>",
        "<h2>Other</h2>",
        "href=\"stacks.txt\"",
        "<h2>Redacted</h2>",
        "<h2>Privacy notice</h2>",
    ];
    for pair in order.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{} before {}", pair[0], pair[1]);
    }
    assert!(html.contains("<td>the HTML report</td><td class=n>2.0 KB</td>"));
    assert!(html.contains("<td>heap snapshot after</td>"));
    // No metrics page in the staging folder: no frame for it.
    assert!(!html.contains("<iframe"));
    // Self-contained: no script, and no link or source outside the bundle.
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
}

#[test]
fn text_from_the_target_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = sample_manifest();
    m.target.name = "<script>alert(1)</script>".into();
    m.target.command_line = "app \"--x=<b>\" & more".into();
    m.files = vec![entry("logs/files/a<b>&\"c.log")];
    m.notes = vec!["<img src=x onerror=alert(2)>".into()];
    let html = page(&m, dir.path());
    assert!(
        !html.contains("<script>") && !html.contains("<img"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; (pid 4242)"));
    assert!(html.contains("app &quot;--x=&lt;b&gt;&quot; &amp; more"));
    assert!(html.contains("href=\"logs/files/a%3Cb%3E%26%22c.log\""));
}

#[test]
fn paths_are_described_from_their_place() {
    for (path, what) in [
        ("trace.nettrace", "the EventPipe trace"),
        ("trace.nettrace.zst", "the EventPipe trace (zstd)"),
        ("reports/gc.json", "gc report (JSON)"),
        ("report.html", "the HTML report"),
        ("logs/app.jsonl", "the app's logs (JSON Lines)"),
        ("logs/files/web.log", "log file web.log"),
        (
            "metrics/metrics.csv",
            "system and process metrics, every second (CSV)",
        ),
        ("counters/counters.csv", "the runtime's counters (CSV)"),
        ("heap/diff.txt", "heap diff (text)"),
        ("dump/core.123.gz", "a dump of the process (gzip)"),
        (
            "environment.txt",
            "the target's environment, redacted (text)",
        ),
        ("notes.bin", "file notes.bin"),
    ] {
        assert_eq!(describe(path), what, "{path}");
    }
}

/// A real metrics page, drawn by the exporter from a minute of samples.
fn write_metrics_page(staging: &Path) {
    let mut chart = clrspy_export::metrics::MetricsChart::new();
    for s in 0..60u64 {
        let x = s as f64;
        chart.push(
            1_795_000_000_000 + s * 1000,
            &[
                ("cpu_pct".to_string(), Some(40.0 + 20.0 * (x / 7.0).sin())),
                (
                    "process_cpu_pct".to_string(),
                    Some(90.0 + 5.0 * (x / 5.0).cos()),
                ),
                ("mem_used_bytes".to_string(), Some(2.0e9 + 1.0e7 * x)),
                ("process_rss_bytes".to_string(), Some(3.0e8 + 2.0e6 * x)),
            ],
        );
    }
    create_private_dir(&staging.join("metrics")).unwrap();
    let mut out = Vec::new();
    chart.write_html("Shop.Api: metrics", &mut out).unwrap();
    fs::write(staging.join("metrics/metrics.html"), out).unwrap();
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn the_index_opens_offline_in_a_browser_without_console_messages() {
    let dir = tempfile::tempdir().unwrap();
    let staging = sample_staging(dir.path());
    write_metrics_page(&staging);
    let mut m = sample_manifest();
    finish(&staging, &mut m, &dir.path().join("b.zip")).unwrap();
    let index = staging.join("index.html");
    let html = fs::read_to_string(&index).unwrap();
    assert!(html.contains("<iframe src=\"metrics/metrics.html\""));
    assert!(html.contains("href=\"metrics/metrics.html\""));
    // The findings lead, escaped.
    assert!(html.contains("<h2>Findings</h2><ul>\n<li><b>critical</b> <code>sync-over-async</code>: pool threads blocked on tasks for 57.9 s &lt;in Orders.Get&gt;</li>"), "{html}");
    let md = fs::read_to_string(staging.join("MANIFEST.md")).unwrap();
    assert!(
        md.contains("## Findings\n\n- **critical** `sync-over-async`: pool threads blocked"),
        "{md}"
    );
    // Every href is relative and names a file of the bundle.
    for href in html.split("href=\"").skip(1) {
        let target = &href[..href.find('"').unwrap()];
        assert!(staging.join(target).is_file(), "{target}");
    }
    let Some(browser) = chromium() else {
        eprintln!("no Chromium: the page was checked as text only");
        return;
    };
    let png = dir.path().join("index.png");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--window-size=1100,1600",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", index.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !log.contains("CONSOLE") && !log.contains("Uncaught"),
        "console messages: {log}"
    );
    let bytes = fs::metadata(&png).map_or(0, |m| m.len());
    assert!(bytes > 10_000, "screenshot of {bytes} bytes: {log}");
    if let Ok(keep) = std::env::var("CLRSPY_KEEP_SCREENSHOT") {
        fs::copy(&png, keep).unwrap();
    }
}
