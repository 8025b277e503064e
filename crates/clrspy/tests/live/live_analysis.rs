//! A live analysis is the file's analysis: testapps/WebApp under `ab` load, attached for 20 s
//! with a trace file and, beside it, an `Analysis` fed by the session's event tap
//! (clrspy-live). At the end `clrspy report` on the file and the live analysis agree: the CPU
//! total (within 0.5%), the top 10 methods, the GC count. While the session runs, methods
//! jitted before the attach are named (a short rundown session), and its cost is printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{ab, needs, Load, Need};

use std::time::{Duration, Instant};

use clrspy_analysis::Options;
use clrspy_export::report::{self, ReportKind, ReportOptions};
use clrspy_live::{LiveAnalysis, LiveSession, SessionSpec};
use common::{json, live, machine, start_web};
use diagnostics_client::{SessionConfig, DEFAULT_RUNDOWN_KEYWORD};
use serde_json::Value;

/// The top `n` methods of a CPU report's JSON, by exclusive time.
fn top(report: &Value, n: usize) -> Vec<String> {
    report["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .take(n)
        .map(|m| m["method"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_live_analysis_of_a_web_app_under_load_is_the_files() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    // The recording's timing matters (samples, readings): take turns with the other tests.
    let _m = machine();
    let web = start_web();
    let pid = web.app.1;
    let url = format!("http://127.0.0.1:{}/cpu?ms=2", web.port);
    // Warm up: the hot methods are jitted before the attach.
    let _ = ab(&["-q", "-n", "300", "-c", "4", "-s", "10", &url]).status();
    let _load = Load(
        ab(&[
            "-q", "-t", "40", "-n", "4000000", "-c", "8", "-s", "10", &url,
        ])
        .spawn()
        .expect("start ab"),
    );
    // Allocations too, so the GCs are there to count.
    let alloc_url = format!("http://127.0.0.1:{}/alloc?kb=512", web.port);
    let _alloc = Load(
        ab(&[
            "-q", "-t", "40", "-n", "4000000", "-c", "1", "-s", "10", &alloc_url,
        ])
        .spawn()
        .expect("start ab"),
    );
    std::thread::sleep(Duration::from_millis(500));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("web.nettrace");
    let kinds = [ReportKind::Cpu, ReportKind::Gc];
    let config = SessionConfig {
        providers: report::providers_for(&kinds)
            .into_iter()
            .map(clrspy_collect::session_provider)
            .collect(),
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        ..SessionConfig::default()
    };
    let spec = SessionSpec {
        config,
        out: Some(file.clone()),
        duration: Some(Duration::from_secs(20)),
        thread_cpu: Some(Duration::from_millis(20)),
        lossless: false,
    };
    let ep = clrspy_collect::endpoint_for_pid(pid).unwrap();
    let analysis = LiveAnalysis::new(Options::default());
    let session = LiveSession::attach(ep.clone(), spec, vec![analysis.consumer()]).unwrap();

    // Names while live: the code jitted before the attach, from a short rundown session.
    std::thread::sleep(Duration::from_secs(3));
    let names = clrspy_live::name_jitted_code(&ep, &analysis).unwrap();
    eprintln!(
        "names while live: {} rundown events in {:.0} ms, under load",
        names.events,
        names.elapsed.as_secs_f64() * 1000.0
    );
    assert!(names.events > 100, "{names:?}");
    let mid = analysis.snapshot().expect("the live analysis started");
    let mid_cpu = report::build(ReportKind::Cpu, &mid, &ReportOptions::default()).json();
    assert!(
        top(&mid_cpu, 3)
            .iter()
            .any(|t| t.contains("WebApp.Work.Burn")),
        "named while the session runs: {:?}",
        top(&mid_cpu, 10)
    );

    let waited = Instant::now();
    let summary = session.join().unwrap();
    assert!(waited.elapsed() < Duration::from_secs(60));
    assert_eq!(
        summary.tap_lost, None,
        "the live view kept up (else it cannot equal the file)"
    );
    let end = analysis.end().expect("the consumer was told the end");
    assert_eq!(end.error, None);
    let live_final = analysis.snapshot().unwrap();

    // The user's view of the file, from the command line.
    let path = file.to_str().unwrap();
    let file_cpu = json(&["report", path, "cpu", "--json"]);
    let file_gc = json(&["report", path, "gc", "--json"]);
    let o = ReportOptions {
        trace: path.to_string(),
        ..ReportOptions::default()
    };
    let live_cpu = report::build(ReportKind::Cpu, &live_final, &o).json();
    let live_gc = report::build(ReportKind::Gc, &live_final, &o).json();

    let (f, l) = (
        file_cpu["total_ms"].as_f64().unwrap(),
        live_cpu["total_ms"].as_f64().unwrap(),
    );
    eprintln!(
        "CPU total: file {f:.1} ms, live {l:.1} ms; GCs: file {}, live {}; events {:?}",
        file_gc["totals"]["count"], live_gc["totals"]["count"], summary.events
    );
    assert!(f > 1000.0, "the app was busy: {f} ms");
    assert!((f - l).abs() <= f * 0.005, "file {f} ms, live {l} ms");
    assert_eq!(top(&file_cpu, 10), top(&live_cpu, 10));
    assert_eq!(file_gc["totals"]["count"], live_gc["totals"]["count"]);
    assert!(file_gc["totals"]["count"].as_u64().unwrap() > 0);
}
