//! Tests of the registry: what sets of reports need recorded and analysed, and how the
//! summary and the HTML report are composed of the registered reports' sections.

use clrspy_analysis::{Analysis, ModelSet, StackFilter};

use super::sections::{HtmlInput, SummaryInput};
use super::*;

fn runtime(kinds: &[ReportKind]) -> (u64, u32, usize) {
    let p = providers_for(kinds);
    assert_eq!(p[0].name, clr_events::RUNTIME_PROVIDER);
    (p[0].keywords, p[0].level, p.len())
}

#[test]
fn profiles_default_set_is_the_recorded_session_of_before() {
    use ReportKind::*;
    // `clrspy profile` with no report named: cpu, waits, gc, exceptions, contention.
    let p = providers_for(&[Cpu, Waits, Gc, Exceptions, Contention]);
    assert_eq!(p.len(), 2);
    assert_eq!(
        (p[0].keywords, p[0].level),
        (0x18 | 0x0014_C14F_CCBD | 0x1 | 0x8000 | 0x4000, 5)
    );
    assert_eq!(
        (p[1].name.as_str(), p[1].keywords, p[1].level),
        (clr_events::SAMPLE_PROFILER_PROVIDER, 0, 5)
    );
}

#[test]
fn every_report_names_models_of_the_registry() {
    for k in ReportKind::ALL {
        if let Models::Named(names) = k.def().models {
            assert!(ModelSet::named(names).is_ok(), "{}: {:?}", k.name(), names);
        }
    }
    let gc = models_for(&[ReportKind::Gc]);
    assert!(gc.contains(clrspy_analysis::ModelKind::Gc));
    assert!(
        !gc.contains(clrspy_analysis::ModelKind::Cpu),
        "report gc runs no CPU model"
    );
}

#[test]
fn the_summary_runs_the_models_of_its_sections() {
    let summary = models_for(&[ReportKind::Summary]);
    let named = ModelSet::named(&[
        "cpu",
        "alloc",
        "exceptions",
        "contention",
        "gc",
        "threads",
        "http",
        "loader",
        "hangs",
        "requests",
        "lines",
    ]);
    assert_eq!(Ok(summary), named);
}

#[test]
fn each_report_adds_its_keywords() {
    use ReportKind::*;
    assert_eq!(runtime(&[Gc]), (0x19, 4, 1));
    assert_eq!(runtime(&[Alloc]), (0x19, 5, 1));
    assert_eq!(runtime(&[Exceptions]), (0x8018, 4, 1));
    assert_eq!(runtime(&[Contention]), (0x4018, 5, 1));
    assert_eq!(runtime(&[Cpu]), (0x0014_C14F_CCBD | 0x18, 4, 2));
    assert_eq!(runtime(&[Alloc, Exceptions]), (0x8019, 5, 1));
    assert_eq!(runtime(&[]), (0x18, 4, 1));
    assert_eq!(runtime(&[Loader]), (0x1C, 4, 1));
    // Lock waits, the pool, wait handles; samples (the profile `hangs` records the same).
    assert_eq!(runtime(&[Hangs]), (0x400_0001_4018, 5, 2));
}

fn empty() -> Analysis {
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
    Analysis::new(&header, Default::default())
}

#[test]
fn the_summary_is_its_header_then_every_declared_section_in_order() {
    let mut orders: Vec<u32> = ReportKind::ALL
        .into_iter()
        .filter_map(|k| k.def().summary.map(|s| s.order))
        .collect();
    let n = orders.len();
    orders.sort_unstable();
    orders.dedup();
    assert_eq!(orders.len(), n, "two summary sections share an order");

    let a = empty();
    let o = ReportOptions::default();
    let summary = build(ReportKind::Summary, &a, &o).json();
    let keys: Vec<&str> = summary
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let input = SummaryInput::new(&a, &o);
    let mut defs: Vec<SummaryDef> = ReportKind::ALL
        .into_iter()
        .filter_map(|k| k.def().summary)
        .collect();
    defs.sort_by_key(|d| d.order);
    let sections: Vec<&str> = defs
        .iter()
        .flat_map(|d| (d.build)(&input).json().into_iter().map(|(k, _)| k))
        .collect();
    // The summary's JSON as docs/report-json.md lists it: the trace's keys, the findings, the run-queue
    // keys between waits and gc, `next` last.
    assert_eq!(
        sections,
        [
            "findings",
            "cpu",
            "waits",
            "runqueue_ms",
            "thread_cpu_ms",
            "cpu_throttling",
            "gc",
            "alloc",
            "exceptions",
            "contention"
        ]
    );
    let header = keys.len() - sections.len() - 1;
    assert_eq!(keys[header..keys.len() - 1], sections[..]);
    assert_eq!(keys[..2], ["trace", "duration_ms"]);
    assert_eq!(keys.last(), Some(&"next"));
}

#[test]
fn html_sections_have_places_of_their_own() {
    let a = empty();
    let filter = StackFilter::default();
    let input = HtmlInput {
        a: &a,
        filter: &filter,
    };
    let mut facts = Vec::new();
    let mut parts = vec![crate::html::FLAME_GRAPHS];
    for def in ReportKind::ALL.into_iter().filter_map(|k| k.def().html) {
        let s = (def.build)(&input);
        facts.extend(s.facts.iter().map(|f| f.order));
        parts.extend(s.parts.iter().map(|p| p.order));
    }
    for v in [&mut facts, &mut parts] {
        let n = v.len();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), n, "two HTML sections share a place: {v:?}");
    }
    assert_eq!(facts.len(), 6);
}

#[test]
fn every_reports_providers_parse_and_rows_name_its_models() {
    for k in ReportKind::ALL {
        let n = k.needs();
        assert!(
            clr_events::provider_spec::parse_providers(n.providers).is_ok(),
            "{}: {}",
            k.name(),
            n.providers
        );
        if let Some(p) = n.profile {
            assert!(clr_events::profiles::find_profile(p).is_some(), "{p}");
        }
        if let (Some(m), Models::Named(names)) = (k.def().rows, k.def().models) {
            assert!(
                names.contains(&m),
                "{}: {m} is not among its models",
                k.name()
            );
        }
    }
}

#[test]
fn requests_without_requests_name_the_profile_that_records_them() {
    let a = empty();
    let r = super::requests::build(&a, &ReportOptions::default());
    assert_eq!((r.started, r.finished), (0, 0));
    assert_eq!(r.missing.len(), 1);
    assert!(
        r.missing[0].contains("clrspy record --profile aspnet"),
        "{:?}",
        r.missing
    );
    // Nothing in the summary or the HTML report for a trace without requests.
    let input = SummaryInput::new(&a, &ReportOptions::default());
    let section = (super::requests::REPORT.summary.unwrap().build)(&input);
    assert!(section.json().is_empty());
    let mut text = Vec::new();
    section
        .write_text(&mut text, &TextStyle::default())
        .unwrap();
    assert!(text.is_empty());
}

#[test]
fn requests_jsonl_is_for_the_reports_that_list_requests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.jsonl");
    let e = rows_file(ReportKind::Cpu, &path).err().unwrap();
    assert!(
        e.contains("http and requests") && e.contains("`cpu`"),
        "{e}"
    );
    assert!(!path.exists(), "nothing made for a report without rows");
    let e = rows_file(ReportKind::Http, &dir.path().join("no/such/dir/rows.jsonl"))
        .err()
        .unwrap();
    assert!(e.starts_with("cannot create"), "{e}");
    let sink = rows_file(ReportKind::Requests, &path).unwrap();
    assert_eq!(sink.model, "requests");
    assert_eq!(finish_rows(&sink, &path), Ok(0));
}
