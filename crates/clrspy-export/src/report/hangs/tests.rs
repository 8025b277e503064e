//! The `hangs` report on the committed dotnet-trace recording of a deadlock
//! (crates/clrspy/tests/data/README.md): its JSON keys, its text and its HTML table.

use std::path::Path;

use clrspy_analysis::trace_file::OpenTrace;
use clrspy_analysis::{Analysis, ModelSet, Options};

use super::super::sections::HtmlInput;
use super::super::view::{ReportOptions, TextView};
use super::super::TextStyle;
use super::build::build;
use super::view;

fn deadlock() -> Analysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data/dotnet-trace-deadlock.nettrace.zip");
    let trace = OpenTrace::open(&path).unwrap();
    let mut reader = trace.reader().unwrap();
    let options = Options {
        models: ModelSet::named(&["hangs", "threads", "cpu"]).unwrap(),
        ..Options::default()
    };
    Analysis::run(&mut reader, options, &mut |_| ()).unwrap()
}

#[test]
fn a_deadlock_in_json_text_and_html() {
    let a = deadlock();
    let r = build(&a, &ReportOptions::default());
    let v = serde_json::to_value(&r).unwrap();
    let cycle = v["deadlocks"][0].as_array().unwrap();
    assert_eq!(cycle.len(), 2);
    for m in cycle {
        for key in ["thread_id", "thread_name", "waits_for_lock", "holds_lock", "stack"] {
            assert!(m.get(key).is_some(), "{key} missing: {m}");
        }
        // Blocked from about 63 ms to the end (1.26 s): the two waits of the workload.
        let w = m["waiting_ms"].as_f64().unwrap();
        assert!((1_100.0..1_400.0).contains(&w), "{m}");
    }
    assert_eq!(cycle[0]["waits_for_lock"], cycle[1]["holds_lock"]);
    // Both threads are in the cycle, so neither is listed again as blocked; the main
    // thread's Join ended when `--seconds 1` ran out.
    assert_eq!(v["blocked"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["starvation"]["detected"], false);
    assert!(v["in_progress"].is_null());
    assert!(v.get("missing").is_none());

    let mut text = Vec::new();
    let style = TextStyle {
        width: 100,
        bold: false,
    };
    r.write_text(&mut text, &style).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("Deadlocks: 1\n  cycle 1: thread "), "{text}");
    assert!(text.contains("Workloads.Deadlock.TakeAThenB"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");

    let filter = clrspy_analysis::StackFilter::default();
    let html = view::html(&HtmlInput {
        a: &a,
        filter: &filter,
    });
    assert_eq!(html.parts.len(), 1);
    assert_eq!(html.parts[0].order, 84);
    assert_eq!(html.parts[0].html.matches("deadlock 1:").count(), 2);
}

#[test]
fn a_trace_without_its_events_says_what_to_record() {
    let header = nettrace::TraceHeader {
        format: nettrace::FormatVersion::NetTrace4,
        v6_minor: 0,
        trace_object_version: 4,
        sync_time_utc: Default::default(),
        sync_time_ticks: 0,
        ticks_per_second: 1_000_000_000,
        pointer_size: 8,
        process_id: None,
        cpu_count: None,
        sampling_interval_ns: Some(1_000_000),
        key_values: Vec::new(),
    };
    let a = Analysis::new(&header, Default::default());
    let r = build(&a, &ReportOptions::default());
    let m = r.missing.clone().unwrap();
    assert!(m.contains("clrspy record --profile hangs"), "{m}");
    let mut text = Vec::new();
    r.write_text(&mut text, &TextStyle::default()).unwrap();
    assert_eq!(String::from_utf8(text).unwrap(), m + "\n");
}
