use super::*;
use clrspy_analysis::counters::HistogramSummary;

fn row(provider: &str, name: &str, kind: CounterKind, tags: &[(&str, &str)], v: f64) -> CounterRow {
    CounterRow {
        interval_start_ns: 0,
        interval_end_ns: 5_000_000_000,
        provider: provider.into(),
        name: name.into(),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        kind,
        unit: "{collection}".into(),
        value: CounterValue::Number(v),
    }
}

fn target(pid: u32, name: &str, container: Option<&str>) -> Target {
    Target {
        pid,
        name: name.into(),
        container_id: container.map(str::to_string),
    }
}

/// Every sample line's name is valid and each family has exactly one HELP and TYPE, before
/// its samples.
fn check_valid(text: &str) {
    let mut typed: Vec<(String, String)> = Vec::new();
    let mut helped = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(helped.insert(name.to_string()), "two HELP lines for {name}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (name, kind) = (it.next().unwrap(), it.next().unwrap());
            assert!(["counter", "gauge", "summary"].contains(&kind), "{line}");
            assert!(
                typed.iter().all(|(n, _)| n != name),
                "two TYPE lines for {name}"
            );
            typed.push((name.into(), kind.into()));
        } else {
            let name: String = line
                .chars()
                .take_while(|c| *c != '{' && *c != ' ')
                .collect();
            assert!(
                name.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_'),
                "{line}"
            );
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                "{line}"
            );
            let (fam, kind) = typed.last().expect("a sample before any TYPE");
            assert!(name.starts_with(fam.as_str()), "{name} under {fam}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "{line}");
            }
        }
    }
}

#[test]
fn counters_accumulate_gauges_keep_the_latest_with_target_labels() {
    let mut s = Series::bounded(100);
    let gc = |v| {
        row(
            "System.Runtime",
            "dotnet.gc.collections",
            CounterKind::Rate,
            &[("gc.heap.generation", "gen0")],
            v,
        )
    };
    let cpu = |v| row("System.Runtime", "cpu-usage", CounterKind::Mean, &[], v);
    assert_eq!(s.add(&[gc(3.0), cpu(12.5)]), 0);
    assert_eq!(s.add(&[gc(4.0), cpu(7.0)]), 0);
    assert_eq!(s.len(), 2);
    let t = target(42, "Workloads", Some("abc"));
    let text = render([(Some(&t), &s)], &[]);
    check_valid(&text);
    assert!(text.contains(
        "# TYPE system_runtime_dotnet_gc_collections_total counter\n\
         system_runtime_dotnet_gc_collections_total{pid=\"42\",process=\"Workloads\",container_id=\"abc\",gc_heap_generation=\"gen0\"} 7\n"
    ), "{text}");
    assert!(
        text.contains(
            "# TYPE system_runtime_cpu_usage gauge\n\
         system_runtime_cpu_usage{pid=\"42\",process=\"Workloads\",container_id=\"abc\"} 7\n"
        ),
        "{text}"
    );
    assert!(text.contains(
        "# HELP system_runtime_dotnet_gc_collections_total System.Runtime dotnet.gc.collections ({collection})\n"
    ));
}

#[test]
fn families_merge_across_processes_with_one_help_and_type() {
    let mut a = Series::bounded(10);
    let mut b = Series::bounded(10);
    a.add(&[row(
        "System.Runtime",
        "cpu-usage",
        CounterKind::Mean,
        &[],
        1.0,
    )]);
    b.add(&[row(
        "System.Runtime",
        "cpu-usage",
        CounterKind::Mean,
        &[],
        2.0,
    )]);
    let (ta, tb) = (target(1, "a", None), target(2, "b", None));
    let text = render([(Some(&ta), &a), (Some(&tb), &b)], &[]);
    check_valid(&text);
    assert_eq!(
        text.matches("# TYPE system_runtime_cpu_usage gauge")
            .count(),
        1
    );
    assert!(text.contains("system_runtime_cpu_usage{pid=\"1\",process=\"a\"} 1\n"));
    assert!(text.contains("system_runtime_cpu_usage{pid=\"2\",process=\"b\"} 2\n"));
}

#[test]
fn label_values_are_escaped_and_names_made_valid() {
    let mut s = Series::bounded(10);
    s.add(&[row(
        "My-Meter",
        "9 requests/s",
        CounterKind::Gauge,
        &[
            ("route", "a\"b\\c\nd"),
            ("pid", "7"),
            ("__x", "y"),
            ("1st", "z"),
        ],
        1.5,
    )]);
    let t = target(3, "we\"ird\\name", None);
    let text = render([(Some(&t), &s)], &[]);
    check_valid(&text);
    assert!(text.contains(
        "my_meter__9_requests_s{pid=\"3\",process=\"we\\\"ird\\\\name\",route=\"a\\\"b\\\\c\\nd\",exported_pid=\"7\",exported_x=\"y\",_1st=\"z\"} 1.5\n"
    ), "{text}");
    assert_eq!(label_name("process"), "exported_process");
    assert_eq!(label_name("http.route"), "http_route");
}

#[test]
fn histograms_are_summaries() {
    let mut s = Series::bounded(10);
    let h = |count, sum, p50| CounterRow {
        value: CounterValue::Histogram(HistogramSummary {
            count,
            sum,
            p50,
            p95: Some(0.9),
            p99: None,
        }),
        ..row(
            "Microsoft.AspNetCore.Hosting",
            "http.server.request.duration",
            CounterKind::Histogram,
            &[],
            0.0,
        )
    };
    s.add(&[h(3, 0.3, Some(0.1))]);
    s.add(&[h(2, 0.5, Some(0.2))]);
    let t = target(5, "web", None);
    let text = render([(Some(&t), &s)], &[]);
    check_valid(&text);
    let n = "microsoft_aspnetcore_hosting_http_server_request_duration";
    assert!(text.contains(&format!("# TYPE {n} summary\n")));
    assert!(text.contains(&format!(
        "{n}{{pid=\"5\",process=\"web\",quantile=\"0.5\"}} 0.2\n"
    )));
    assert!(text.contains(&format!(
        "{n}{{pid=\"5\",process=\"web\",quantile=\"0.99\"}} NaN\n"
    )));
    assert!(text.contains(&format!("{n}_sum{{pid=\"5\",process=\"web\"}} 0.8\n")));
    assert!(text.contains(&format!("{n}_count{{pid=\"5\",process=\"web\"}} 5\n")));
}

#[test]
fn series_beyond_the_bound_are_dropped_and_counted() {
    let mut s = Series::bounded(3);
    let rows: Vec<CounterRow> = (0..5)
        .map(|i| {
            let v = i.to_string();
            row(
                "M",
                "requests",
                CounterKind::Rate,
                &[("route", v.as_str())],
                1.0,
            )
        })
        .collect();
    assert_eq!(s.add(&rows), 2);
    assert_eq!(s.len(), 3);
    // Known series still update; new ones still drop.
    assert_eq!(s.add(&rows), 2);
    let t = target(9, "p", None);
    let text = render([(Some(&t), &s)], &[]);
    assert!(text.contains("m_requests_total{pid=\"9\",process=\"p\",route=\"0\"} 2\n"));
    assert!(!text.contains("route=\"3\""));
    // A name another type holds is dropped too.
    let mut s = Series::bounded(10);
    s.add(&[row("M", "x", CounterKind::Gauge, &[], 1.0)]);
    assert_eq!(s.add(&[row("M", "x", CounterKind::Histogram, &[], 1.0)]), 1);
}

#[test]
fn own_figures_follow_with_their_labels() {
    let own = [
        Figure {
            name: "clrspy_agent_sessions_open",
            kind: MetricType::Gauge,
            help: "Counters sessions open.",
            series: vec![(String::new(), 2.0)],
        },
        Figure {
            name: "clrspy_agent_requests_total",
            kind: MetricType::Counter,
            help: "Requests served.",
            series: vec![("route=\"/metrics\",code=\"200\"".into(), 4.0)],
        },
    ];
    let text = render(std::iter::empty(), &own);
    check_valid(&text);
    assert_eq!(
        text,
        "# HELP clrspy_agent_sessions_open Counters sessions open.\n\
         # TYPE clrspy_agent_sessions_open gauge\n\
         clrspy_agent_sessions_open 2\n\
         # HELP clrspy_agent_requests_total Requests served.\n\
         # TYPE clrspy_agent_requests_total counter\n\
         clrspy_agent_requests_total{route=\"/metrics\",code=\"200\"} 4\n"
    );
}
