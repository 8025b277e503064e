use clrspy_analysis::counters::{CounterKind, HistogramSummary};

use super::*;

const S: i64 = 1_000_000_000;
/// 2026-11-27T09:00:00Z.
const T0: i64 = 1_795_770_000 * S;

fn row(name: &str, kind: CounterKind, value: CounterValue, tags: &[(&str, &str)]) -> CounterRow {
    CounterRow {
        interval_start_ns: T0,
        interval_end_ns: T0 + S + S / 2,
        provider: "Work.Meter".into(),
        name: name.into(),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        kind,
        unit: "ms".into(),
        value,
    }
}

fn hist() -> CounterValue {
    CounterValue::Histogram(HistogramSummary {
        count: 1000,
        sum: 500_500.0,
        p50: Some(500.0),
        p95: Some(950.5),
        p99: None,
    })
}

#[test]
fn csv_quotes_and_keeps_tags_out_of_names() {
    let mut w = CounterWriter::new(Vec::new(), CounterFormat::Csv);
    w.write_rows(&[row(
        "items",
        CounterKind::Rate,
        CounterValue::Number(1234.5),
        &[("route", "/a,b"), ("q", "say \"hi\"")],
    )])
    .unwrap();
    w.write_rows(&[row("lat", CounterKind::Histogram, hist(), &[])])
        .unwrap();
    let text = String::from_utf8(w.into_inner()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert_eq!(
        lines[1],
        "2026-11-27T09:00:00.000000Z,2026-11-27T09:00:01.500000Z,Work.Meter,items,\"route=/a,b;q=say \"\"hi\"\"\",rate,ms,1234.5,,,,,"
    );
    assert_eq!(
        lines[2],
        "2026-11-27T09:00:00.000000Z,2026-11-27T09:00:01.500000Z,Work.Meter,lat,,histogram,ms,,1000,500500,500,950.5,"
    );
    assert_eq!(lines.len(), 3, "the header once");
}

#[test]
fn json_lines_have_the_documented_keys() {
    let mut w = CounterWriter::new(Vec::new(), CounterFormat::JsonLines);
    w.write_rows(&[
        row(
            "g",
            CounterKind::Gauge,
            CounterValue::Number(0.25),
            &[("a", "1")],
        ),
        row("lat", CounterKind::Histogram, hist(), &[]),
        row(
            "nan",
            CounterKind::Mean,
            CounterValue::Number(f64::NAN),
            &[],
        ),
    ])
    .unwrap();
    let text = String::from_utf8(w.into_inner()).unwrap();
    let objs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let keys: Vec<&str> = objs[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "interval_start",
            "interval_end",
            "provider",
            "name",
            "tags",
            "kind",
            "unit",
            "value"
        ]
    );
    assert_eq!(objs[0]["tags"]["a"], "1");
    assert_eq!(objs[0]["value"], 0.25);
    assert_eq!(objs[0]["interval_end"], "2026-11-27T09:00:01.500000Z");
    assert_eq!(objs[1]["kind"], "histogram");
    assert_eq!(objs[1]["value"]["count"], 1000);
    assert_eq!(objs[1]["value"]["p95"], 950.5);
    assert!(objs[1]["value"]["p99"].is_null());
    assert!(objs[2]["value"].is_null());
}

#[test]
fn prometheus_counters_accumulate_and_histograms_are_summaries() {
    let mut w = CounterWriter::new(Vec::new(), CounterFormat::Prometheus);
    let r = |v| {
        row(
            "work.items",
            CounterKind::Rate,
            CounterValue::Number(v),
            &[("http.route", "/x\"y")],
        )
    };
    w.write_rows(&[r(5.0)]).unwrap();
    w.write_rows(&[r(7.0), row("lat", CounterKind::Histogram, hist(), &[])])
        .unwrap();
    let e = w.prometheus_text();
    assert!(
        e.contains("# TYPE work_meter_work_items_total counter\n"),
        "{e}"
    );
    assert!(
        e.contains("work_meter_work_items_total{http_route=\"/x\\\"y\"} 12\n"),
        "{e}"
    );
    assert!(e.contains("# TYPE work_meter_lat summary\n"), "{e}");
    assert!(
        e.contains("work_meter_lat{quantile=\"0.95\"} 950.5\n"),
        "{e}"
    );
    assert!(e.contains("work_meter_lat{quantile=\"0.99\"} NaN\n"), "{e}");
    assert!(e.contains("work_meter_lat_count 1000\n"), "{e}");
    assert_eq!(crate::prometheus::metric_name("9a.b-c"), "_9a_b_c");
}
