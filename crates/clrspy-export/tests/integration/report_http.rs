//! The `http` report on the http-client workload's trace (crates/clrspy/tests/data/README.md
//! says how it was recorded): its JSON keys and counts, its text at 100 columns, the rows it
//! streams, and what it says on a trace without HTTP events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use clrspy_analysis::rows::RowSink;
use clrspy_analysis::trace_file::OpenTrace;
use clrspy_analysis::{Analysis, Options};
use clrspy_export::report::{self, ReportKind, ReportOptions, TextStyle};

fn analysed(name: &str, rows: Option<RowSink>) -> Analysis {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data")
        .join(name);
    let trace = OpenTrace::open(&path).unwrap();
    let mut reader = trace.reader().unwrap();
    let options = Options {
        models: report::models_for(&[ReportKind::Http]),
        rows,
        ..Options::default()
    };
    Analysis::run(&mut reader, options, &mut |_| ()).unwrap()
}

fn text(a: &Analysis, top: usize) -> String {
    let r = report::build(
        ReportKind::Http,
        a,
        &ReportOptions {
            top,
            ..ReportOptions::default()
        },
    );
    let mut out = Vec::new();
    let style = TextStyle {
        width: 100,
        ..TextStyle::default()
    };
    r.write_text(&mut out, &style).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn hosts_errors_pool_and_slowest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rows.jsonl");
    let sink = RowSink::new("http", Box::new(std::fs::File::create(&file).unwrap()));
    let a = analysed("httpclient-net.nettrace.zip", Some(sink.clone()));
    assert_eq!(sink.finish().unwrap(), 25);

    let r = report::build(
        ReportKind::Http,
        &a,
        &ReportOptions {
            top: 3,
            ..ReportOptions::default()
        },
    );
    let j = r.json();
    assert_eq!(j["requests"], 25);
    assert_eq!(j["failed"], 8);
    assert_eq!(j["slowest"].as_array().unwrap().len(), 3);
    let main = &j["hosts"][0];
    assert_eq!(main["host"], "http://127.0.0.1:43647");
    assert_eq!(
        main["statuses"],
        serde_json::json!({"-1": 1, "200": 16, "500": 3})
    );
    assert_eq!(main["pool_exhausted"], true);
    assert_eq!(main["waited_for_connection"], 3);
    assert_eq!(main["error_kinds"][0]["kind"], "5xx");
    assert_eq!(main["error_kinds"][0]["messages"][0]["name"], "status 500");
    assert_eq!(j["slowest"][0]["queue_ms"], 300.8785);

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 25);
    let keys: Vec<&str> = lines[0]
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
            "host",
            "path",
            "status",
            "duration_ms",
            "queue_ms",
            "dns_ms",
            "tls_ms",
            "error"
        ]
    );
    let refused = lines.iter().filter(|l| l["status"] == -1).count();
    assert_eq!(refused, 5);

    let t = text(&a, 5);
    assert!(t.starts_with("HTTP requests (outgoing): 25 to 5 hosts, 8 failed (5xx 3, refused 2, dns 1, timeout 1, tls 1)"), "{t}");
    assert!(
        t.contains("Pool exhausted: http://127.0.0.1:43647\n    3 requests waited"),
        "{t}"
    );
    assert!(
        t.contains("The SSL connection could not be established"),
        "{t}"
    );
    for line in t.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
}

#[test]
fn a_trace_without_http_events_says_what_to_record() {
    let a = analysed("webapp-net.nettrace.zip", None);
    let t = text(&a, 5);
    assert_eq!(
        t,
        "HTTP requests (outgoing): 0 to 0 hosts\n  This trace has no outgoing HTTP requests (System.Net.Http events): record them with `clrspy record --profile net` (attach with -p PID, or -- COMMAND).\n"
    );
}

#[test]
fn the_net_profile_records_what_the_report_reads() {
    use clr_events::provider_spec::parse_providers;
    let needs = ReportKind::Http.needs();
    assert_eq!(needs.profile, Some("net"));
    let profile = clr_events::profiles::find_profile("net").unwrap();
    let have = parse_providers(profile.providers).unwrap();
    let want = parse_providers(needs.providers).unwrap();
    assert_eq!(want.len(), 5);
    for w in &want {
        let h = have
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(&w.name))
            .unwrap_or_else(|| panic!("the net profile lacks {}", w.name));
        assert_eq!(h.keywords & w.keywords, w.keywords, "{}", w.name);
        assert!(h.level >= w.level, "{}", w.name);
    }
}

#[test]
fn html_has_a_host_table_only_when_there_are_requests() {
    use clrspy_analysis::StackFilter;
    use clrspy_export::report::sections::HtmlInput;
    let html = ReportKind::Http.def().html.unwrap().build;
    let filter = StackFilter::default();
    let a = analysed("httpclient-net.nettrace.zip", None);
    let s = html(&HtmlInput {
        a: &a,
        filter: &filter,
    });
    assert_eq!(s.facts.len(), 1);
    assert_eq!(
        (s.facts[0].order, s.facts[0].value.as_str()),
        (82, "25 (8 failed)")
    );
    assert_eq!(s.parts[0].order, 82);
    assert!(s.parts[0].html.contains(
        "<td>https://127.0.0.1:43647</td><td class=n>1</td><td class=n>1</td><td>tls 1</td>"
    ));
    let none = analysed("webapp-net.nettrace.zip", None);
    let s = html(&HtmlInput {
        a: &none,
        filter: &filter,
    });
    assert!(s.facts.is_empty() && s.parts.is_empty());
}
