//! Report bugs found by trying clrspy as a new user would (issue 10's "wrong today" list), each
//! held by a test that failed before its fix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, data, json};
use nettrace::{EventMetadata, EventRecord, TraceWriter, WriteFormat, WriterOptions};

const OBJVER4: &str = "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip";

fn path(name: &str) -> String {
    data(name).to_string_lossy().into_owned()
}

#[test]
fn gc_share_of_time_is_over_the_window() {
    let all = json(&["report", &path(OBJVER4), "gc", "--json"]);
    let v = json(&[
        "report",
        &path(OBJVER4),
        "gc",
        "--json",
        "--from",
        "10s",
        "--to",
        "12s",
    ]);
    let t = &v["totals"];
    let paused = t["total_pause_ms"].as_f64().unwrap();
    assert!(paused > 100.0, "the window has GCs: {paused} ms");
    // The window is 2 s long: the share is of 2,000 ms, not of the whole trace.
    let want = paused / 2000.0 * 100.0;
    let got = t["paused_percent"].as_f64().unwrap();
    assert!((got - want).abs() < 0.01, "paused {got}%, want {want}%");
    // Before the fix it was divided by the whole trace: 1.1%.
    assert!(got > 15.0, "{got}");
    assert!(all["totals"]["total_pause_ms"].as_f64().unwrap() > paused);
}

#[test]
fn from_zero_is_the_start() {
    let all = json(&["report", &path("perf.nettrace"), "cpu", "--json"]);
    let from0 = json(&[
        "report",
        &path("perf.nettrace"),
        "cpu",
        "--json",
        "--from",
        "0",
    ]);
    assert_eq!(all["total_samples"], from0["total_samples"]);
    clrspy()
        .args([
            "report",
            &path("perf.nettrace"),
            "--from",
            "2s",
            "--to",
            "1s",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("must be after --from"));
}

#[test]
fn no_negative_zero_in_any_report() {
    for trace in ["perf.nettrace", "only_managed_samples.nettrace.zip"] {
        for kind in [
            "summary",
            "cpu",
            "waits",
            "alloc",
            "exceptions",
            "contention",
            "gc",
            "threads",
        ] {
            for extra in [&["--json"][..], &[][..], &["--thread", "1"][..]] {
                let out = clrspy()
                    .args(["report", &path(trace), kind])
                    .args(extra)
                    .output()
                    .unwrap();
                assert!(out.status.success());
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    !text.contains("-0.0"),
                    "{trace} {kind} {extra:?} prints -0.0:\n{text}"
                );
            }
        }
    }
}

#[test]
fn gc_table_honours_top() {
    let out = clrspy()
        .args(["report", &path(OBJVER4), "gc", "--top", "5"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = text
        .lines()
        .filter(|l| {
            let mut w = l.split_whitespace();
            w.next().is_some_and(|n| n.parse::<u64>().is_ok())
                && w.next().is_some_and(|g| g.parse::<u64>().is_ok())
        })
        .count();
    assert_eq!(rows, 5, "{text}");
    assert!(text.contains("473 earlier GCs not shown"), "{text}");
}

#[test]
fn chromium_says_where_a_cut_trace_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cut.chromium.json");
    let run = clrspy()
        .args(["convert", &path("trace.nettrace"), "--to", "chromium", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("second pass"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let why = v["otherData"]["stopped_early"].as_str().unwrap_or_default();
    assert!(why.contains("byte offset"), "{why}");
}

#[test]
fn lock_owners_are_plain_thread_ids() {
    let out = clrspy()
        .args([
            "report",
            &common::repo()
                .join("crates/clrspy/tests/data/contention-thread-cpu.nettrace.zip")
                .to_string_lossy(),
            "contention",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let owners: Vec<&str> = text.lines().filter(|l| l.contains(" lock 0x")).collect();
    assert!(!owners.is_empty(), "{text}");
    for l in owners {
        assert!(!l.contains('[') && l.contains("held by threads: "), "{l}");
    }
}

/// A trace with one GC/Start too short to decode and one that decodes.
fn trace_with_a_bad_gc_start(path: &std::path::Path) {
    let opts = WriterOptions {
        format: WriteFormat::V5,
        ..WriterOptions::default()
    };
    let mut w = TraceWriter::new(Vec::new(), opts).unwrap();
    let gc_start = |version| EventMetadata {
        provider: "Microsoft-Windows-DotNETRuntime".into(),
        event_id: 1,
        version,
        level: 4,
        keywords: 1,
        ..Default::default()
    };
    let bad = w.define(&gc_start(2)).unwrap();
    for (i, payload) in [&[1u8, 0][..], &[][..]].iter().enumerate() {
        w.write(&EventRecord {
            metadata_id: bad,
            thread_id: 7,
            capture_thread_id: 7,
            processor: 0,
            timestamp: 1_000 + i as i64,
            activity_id: Default::default(),
            related_activity_id: Default::default(),
            stack: &[],
            payload,
            is_sorted: true,
        })
        .unwrap();
    }
    std::fs::write(path, w.finish().unwrap()).unwrap();
}

#[test]
fn undecodable_events_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("bad.nettrace");
    trace_with_a_bad_gc_start(&t);
    let out = clrspy().arg("report").arg(&t).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 events could not be decoded"), "{text}");
    let v = json(&["report", &t.to_string_lossy(), "--json"]);
    assert_eq!(v["undecodable_events"], 2);
    let errors = v["decode_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["event"], "GC/Start");
    assert_eq!(errors[0]["count"], 2);
    assert!(text.contains("2 GC/Start: "), "{text}");
}

// Issue 11's smaller items in the views and flags.

#[test]
fn an_empty_stack_view_is_an_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("f.svg");
    // perf.nettrace has rundown but no samples.
    clrspy()
        .args([
            "convert",
            &path("perf.nettrace"),
            "--to",
            "flamegraph",
            "-o",
        ])
        .arg(&svg)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no cpu stacks"));
    assert!(!svg.exists(), "no empty SVG left behind");
}

#[test]
fn html_report_says_when_allocations_were_not_recorded_and_draws_the_metric() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    clrspy()
        .args([
            "convert",
            &path("only_managed_samples.nettrace.zip"),
            "--to",
            "html",
            "-o",
        ])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("not recorded (record with --profile alloc)"));
    assert!(!page.contains("0.0 MB"));
    assert!(page.contains("Flame graph (CPU"));
    clrspy()
        .args([
            "convert",
            &path(OBJVER4),
            "--to",
            "html",
            "--metric",
            "alloc",
            "-o",
        ])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Flame graph (allocated bytes"),
        "the alloc flame graph"
    );
}

#[test]
fn record_without_a_target_names_every_way_to_give_one() {
    for verb in ["record", "profile"] {
        clrspy()
            .arg(verb)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("-p PID, -n NAME, or -- COMMAND"));
    }
    clrspy()
        .args(["record", "--list-profiles"])
        .assert()
        .success();
}

#[test]
fn alloc_text_shows_the_allocating_stacks_and_piped_names_stay_whole() {
    let out = clrspy()
        .args(["report", &path(OBJVER4), "alloc", "--top", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Allocating stacks"), "{text}");
    assert!(text.contains("      System.Xml.XmlWriter.Create"), "{text}");
    // Piped, nothing is shortened: the long overloads are whole. (--top 100: since the
    // estimate counts runnable time as waiting, this overload ranks lower among the waits.)
    let out = clrspy()
        .args(["report", &path(OBJVER4), "waits", "--top", "100"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('…'), "{text}");
    assert!(
        text.contains("System.Text.Encoding+DefaultDecoder.GetChars(unsigned int8[],int32,int32,wchar[],int32,bool)"),
        "{text}"
    );
}

#[test]
fn chromium_names_the_process_after_its_program() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    clrspy()
        .args([
            "convert",
            &path("eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip"),
            "--to",
            "chromium",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let name = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].clone());
    assert_eq!(name, Some("arraytypesapp (pid 26240)".into()));
}

#[test]
fn html_flame_graph_box_is_as_tall_as_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let (html, svg) = (dir.path().join("r.html"), dir.path().join("f.svg"));
    for (to, out) in [("html", &html), ("flamegraph", &svg)] {
        clrspy()
            .args(["convert", &path(OBJVER4), "--to", to, "-o"])
            .arg(out)
            .assert()
            .success();
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    let tag = &svg[svg.find("<svg").unwrap()..];
    let h: u32 = tag[tag.find(" height=\"").unwrap() + 9..]
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(h > 300, "a deep graph: {h}");
    let page = std::fs::read_to_string(&html).unwrap();
    // As tall as the graph it holds (drawn root first, about as tall as the file's) up to
    // 900 px (a taller one scrolls in its frame): its labelled root shows at the frame's top.
    let frame = &page[page.find("<iframe id=flamegraph ").unwrap()..];
    let svg_at = frame.find("&lt;svg ").unwrap();
    let inner: u32 = frame[svg_at..][frame[svg_at..].find(" height=&quot;").unwrap() + 14..]
        .split("&quot;")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(inner.abs_diff(h) < 20, "{inner} vs {h}");
    assert!(
        frame.starts_with(&format!(
            "<iframe id=flamegraph title=\"flame graph\" style=\"height:{}px\"",
            (inner + 8).min(900)
        )),
        "the frame is as tall as the graph, up to 900 px"
    );
    let root = frame.find("&lt;title&gt;all threads: CPU").unwrap();
    let y = |at: usize| -> f64 {
        let r = &frame[at..];
        let r = &r[r.find("y=&quot;").unwrap() + 8..];
        r[..r.find("&quot;").unwrap()].parse().unwrap()
    };
    let root_y = y(root);
    let first_bar = frame.find("&lt;title&gt;").unwrap();
    assert!(root_y <= y(first_bar), "the root is the top bar");
}

#[test]
fn a_filter_that_matches_nothing_says_so_instead_of_advising_another_recording() {
    let t = path("only_managed_samples.nettrace.zip");
    for extra in [
        &["cpu", "--from", "500s"][..],
        &["cpu", "--from", "10s", "--to", "10.1s", "--thread", "1"][..],
        &["cpu", "--focus", "NoSuchMethod"][..],
        &["summary", "--thread", "1"][..],
    ] {
        let out = clrspy().arg("report").arg(&t).args(extra).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("window or filter"),
            "{extra:?} says why it is empty:\n{text}"
        );
        assert!(
            !text.contains("record with"),
            "{extra:?}: the trace has samples, no new recording is needed:\n{text}"
        );
        assert!(!text.contains("-0.0"), "{text}");
    }
}
