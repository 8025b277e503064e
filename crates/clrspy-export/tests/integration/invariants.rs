//! Numbers that cannot be false, on every trace the repository holds (crates/*/tests/data)
//! and the shared ones (/work/shared/data/nettrace, when there): no report shows more CPU than
//! the trace's CPUs × its window; each thread's parts add up to its lifetime, idle is part of
//! blocked, and `mostly` names its largest part; "waiting for a CPU" is one number in the
//! summary, the threads report at any `--top` and the waits report; the threads JSON keeps
//! every row whatever `--top` says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};

use clrspy_analysis::r2r::ImageSources;
use clrspy_analysis::{Analysis, Options};
use clrspy_export::report::{self, ReportKind, ReportOptions};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every trace to walk: `*.nettrace` and `*.nettrace.zip`.
fn traces() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/work/shared/data/nettrace")];
    if let Ok(rd) = std::fs::read_dir(repo().join("crates")) {
        for c in rd.flatten() {
            dirs.push(c.path().join("tests/data"));
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for f in rd.flatten() {
            let p = f.path();
            let n = p.to_string_lossy();
            if n.ends_with(".nettrace") || n.ends_with(".nettrace.zip") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn bytes(p: &Path) -> Vec<u8> {
    let raw = std::fs::read(p).unwrap();
    if !p.to_string_lossy().ends_with(".zip") {
        return raw;
    }
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
    let mut f = z.by_index(0).unwrap();
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    out
}

fn analyse(p: &Path) -> Option<Analysis> {
    let b = bytes(p);
    let mut r = nettrace::StreamReader::from_read(std::io::Cursor::new(b)).ok()?;
    let options = Options {
        images: ImageSources {
            dirs: Vec::new(),
            original_paths: false,
        },
        ..Options::default()
    };
    Analysis::run(&mut r, options, &mut |_| ()).ok()
}

fn json(kind: ReportKind, a: &Analysis, top: usize) -> Value {
    let o = ReportOptions {
        top,
        trace: "t".into(),
        ..ReportOptions::default()
    };
    report::build(kind, a, &o).json()
}

fn text(kind: ReportKind, a: &Analysis, top: usize) -> String {
    let o = ReportOptions {
        top,
        trace: "t".into(),
        ..ReportOptions::default()
    };
    let mut out = Vec::new();
    report::build(kind, a, &o)
        .write_text(
            &mut out,
            &report::TextStyle {
                width: 200,
                bold: false,
            },
        )
        .unwrap();
    String::from_utf8(out).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// The invariants of one trace; the failures, in words.
fn check(name: &str, a: &Analysis) -> Vec<String> {
    let mut bad = Vec::new();
    let window_ms = a.duration_ns as f64 / 1e6;
    let threads = json(ReportKind::Threads, a, 3);
    let cpu = f(&threads["process"]["cpu_ms"]);
    if let Some(n) = a.cpu.cpus() {
        // One reading interval of slack (the window is first to last event; readings are
        // 20 ms apart).
        let limit = f64::from(n) * (window_ms + 40.0) * 1.01;
        if cpu > limit {
            bad.push(format!(
                "{name}: CPU {cpu:.0} ms > {n} CPUs x {window_ms:.0} ms"
            ));
        }
        let summary_cpu = f(&json(ReportKind::Cpu, a, 3)["total_ms"]);
        if summary_cpu > limit {
            bad.push(format!(
                "{name}: cpu report {summary_cpu:.0} ms > limit {limit:.0}"
            ));
        }
    }
    let rows = threads["threads"].as_array().cloned().unwrap_or_default();
    let all = json(ReportKind::Threads, a, 1000)["threads"]
        .as_array()
        .map_or(0, Vec::len);
    if rows.len() != all {
        bad.push(format!(
            "{name}: threads JSON at --top 3 has {} rows, {all} at --top 1000",
            rows.len()
        ));
    }
    for t in &rows {
        let (c, q, b, i) = (
            f(&t["cpu_ms"]),
            f(&t["runqueue_ms"]),
            f(&t["blocked_ms"]),
            f(&t["idle_ms"]),
        );
        let id = &t["thread"];
        if i > b + 0.05 {
            bad.push(format!("{name}: thread {id} idle {i} > blocked {b}"));
        }
        if let Some(life) = t["lifetime_ms"].as_f64() {
            if (c + q + b - life).abs() > 0.2 && c + q <= life {
                bad.push(format!(
                    "{name}: thread {id} cpu {c} + runq {q} + blocked {b} != lifetime {life}"
                ));
            }
            if c > life + 0.2 {
                bad.push(format!("{name}: thread {id} cpu {c} > lifetime {life}"));
            }
            let most = t["mostly"].as_str().unwrap_or("");
            let want = if c + q >= b {
                "running"
            } else if i > b - i {
                "idle"
            } else {
                "waiting"
            };
            if most != want {
                bad.push(format!(
                    "{name}: thread {id} mostly {most} (cpu {c}, runq {q}, blocked {b}, idle {i})"
                ));
            }
        }
    }
    // One "waiting for a CPU": the summary's JSON, the threads text at any --top, the waits
    // report.
    let summary = json(ReportKind::Summary, a, 5);
    if let Some(runq) = summary["runqueue_ms"].as_f64() {
        let waits = f(&json(ReportKind::Waits, a, 5)["runqueue_ms"]);
        if (waits - runq).abs() > 0.2 {
            bad.push(format!("{name}: waits runqueue {waits} != summary {runq}"));
        }
        let line = |s: String| {
            s.lines()
                .find(|l| l.contains("waiting for a CPU ("))
                .map(str::to_string)
        };
        let (t3, t1000) = (
            line(text(ReportKind::Threads, a, 3)),
            line(text(ReportKind::Threads, a, 1000)),
        );
        let s = line(text(ReportKind::Summary, a, 5));
        if t3 != t1000 || t3.as_deref().map(str::trim) != s.as_deref().map(str::trim) {
            bad.push(format!(
                "{name}: waiting for a CPU: threads --top 3 {t3:?}, --top 1000 {t1000:?}, summary {s:?}"
            ));
        }
    }
    bad
}

#[test]
fn every_trace_keeps_the_invariants() {
    let mut bad = Vec::new();
    let mut walked = 0;
    for p in traces() {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let Some(a) = analyse(&p) else {
            continue;
        };
        walked += 1;
        bad.extend(check(&name, &a));
    }
    assert!(walked >= 5, "only {walked} traces walked");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The ring trace of testapps/WebApp (see crates/clrspy/tests/data/README.md): thread-pool
/// workers that ran before the kept window run again in it. Their first kept readings hold all
/// their CPU since they started; counted from 0 they made 6.6 s of CPU in a 1.95 s window on 2
/// CPUs, 70% of it `[idle: thread pool waiting for work]`.
#[test]
fn a_ring_trace_counts_cpu_from_its_window_and_names_its_threads() {
    let p = repo().join("crates/clrspy/tests/data/webapp-ring-trigger.nettrace.zip");
    let a = analyse(&p).unwrap();
    assert!(a.ring.is_some());
    let bad = check("webapp-ring-trigger", &a);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let cpu = json(ReportKind::Cpu, &a, 5);
    let idle = cpu["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "[idle: thread pool waiting for work]")
        .map_or(0.0, |m| f(&m["percent"]));
    assert!(idle < 30.0, "idle waiting counted as CPU: {idle}%");
    let threads = json(ReportKind::Threads, &a, 100);
    let named = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].is_string())
        .count();
    assert!(named >= 3, "{named} threads named");
    let roles: Vec<&str> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["role"].as_str())
        .collect();
    assert!(roles.contains(&"event-pipe"), "{roles:?}");
}

/// A trace with thread CPU readings but no CPU samples: the readings' groups
/// (`[runtime: native]`) are no hot method, and no stacks-only view is drawn of them.
#[test]
fn a_trace_without_samples_names_no_hottest_method() {
    let p = repo().join("crates/clrspy/tests/data/gc-no-samples.nettrace.zip");
    let a = analyse(&p).unwrap();
    let cpu = json(ReportKind::Cpu, &a, 5);
    assert!(f(&cpu["total_ms"]) > 0.0, "the readings' CPU stays");
    assert_eq!(cpu["top_exclusive"].as_array().map(Vec::len), Some(0));
    let s = text(ReportKind::Summary, &a, 5);
    assert!(!s.contains("hottest (CPU"), "{s}");
    assert!(s.contains("hottest: not known (no CPU samples"), "{s}");
    let stacks =
        clrspy_export::weighted_stacks(&a, clrspy_analysis::Metric::Cpu, &Default::default());
    assert!(stacks.is_empty(), "{} cpu stacks", stacks.len());
}

/// The exceptions text says what its counts are and shows the throw stack (not only the JSON).
#[test]
fn the_exceptions_text_says_its_counts_and_shows_the_throw_stack() {
    let p = repo().join("crates/clrspy/tests/data/webapp-ring-trigger.nettrace.zip");
    let a = analyse(&p).unwrap();
    let t = text(ReportKind::Exceptions, &a, 5);
    assert!(t.contains("caught in = catch handlers that ran"), "{t}");
    assert!(t.contains("throw stack (the commonest):"), "{t}");
    assert!(t.contains("      dynamicClass.lambda_method"), "{t}");
    let j = json(ReportKind::Exceptions, &a, 5);
    assert_eq!(j["types"][0]["catches"], 1);
    assert_eq!(j["types"][0]["rethrown"], 0);
}
