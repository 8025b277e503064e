use clr_events::counters::{CollectionInterval, Instrument, InstrumentInfo};

use super::*;

const S: i64 = 1_000_000_000;

fn interval(sid: &str, start: i64, end: i64) -> CollectionInterval {
    CollectionInterval {
        session_id: sid.into(),
        start_unix_ns: start,
        end_unix_ns: end,
    }
}

fn instrument(sid: &str, meter: &str, name: &str) -> Instrument {
    Instrument {
        session_id: sid.into(),
        meter: meter.into(),
        meter_version: String::new(),
        name: name.into(),
        unit: "{item}".into(),
    }
}

fn rate(sid: &str, r: Option<f64>) -> MetricEvent {
    MetricEvent::Value(MeterValue {
        instrument: instrument(sid, "M", "items"),
        kind: MeterKind::Rate,
        tags: vec![("k".into(), "v".into())],
        rate: r,
        value: None,
    })
}

fn rows(u: Option<CounterUpdate>) -> Vec<CounterRow> {
    match u {
        Some(CounterUpdate::Rows(r)) => r,
        other => panic!("no rows: {other:?}"),
    }
}

#[test]
fn meter_rows_carry_their_interval_and_other_sessions_are_ignored() {
    let mut s = CounterStream::new("me", CounterSpec::default());
    assert_eq!(
        s.metric(MetricEvent::CollectionStart(interval("me", 0, S))),
        None
    );
    assert_eq!(s.metric(rate("me", Some(5.0))), None);
    assert_eq!(s.metric(rate("other", Some(100.0))), None);
    let r = rows(s.metric(MetricEvent::CollectionStop(interval("me", 0, S))));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].value, CounterValue::Number(5.0));
    assert_eq!((r[0].interval_start_ns, r[0].interval_end_ns), (0, S));
    assert_eq!(r[0].kind, CounterKind::Rate);
    assert_eq!(r[0].tags, vec![("k".to_string(), "v".to_string())]);
    // Another session's interval does not close ours.
    s.metric(MetricEvent::CollectionStart(interval("me", S, 2 * S)));
    s.metric(rate("me", Some(7.0)));
    assert_eq!(
        s.metric(MetricEvent::CollectionStop(interval("other", S, 2 * S))),
        None
    );
    let r = rows(s.metric(MetricEvent::CollectionStop(interval("me", S, 2 * S))));
    assert_eq!(r[0].value, CounterValue::Number(7.0));
}

#[test]
fn an_interval_is_never_handed_out_twice_and_values_outside_one_are_dropped() {
    let mut s = CounterStream::new("me", CounterSpec::default());
    // A value before any CollectionStart has no interval: dropped, not merged into the next.
    s.metric(rate("me", Some(99.0)));
    s.metric(MetricEvent::CollectionStart(interval("me", 0, S)));
    s.metric(rate("me", Some(1.0)));
    assert_eq!(
        rows(s.metric(MetricEvent::CollectionStop(interval("me", 0, S)))).len(),
        1
    );
    // The same interval again (a repeat) gives nothing.
    s.metric(MetricEvent::CollectionStart(interval("me", 0, S)));
    s.metric(rate("me", Some(1.0)));
    assert_eq!(
        s.metric(MetricEvent::CollectionStop(interval("me", 0, S))),
        None
    );
    // A late interval keeps its own times.
    s.metric(MetricEvent::CollectionStart(interval("me", S, 3 * S)));
    s.metric(rate("me", Some(2.0)));
    s.metric(rate("me", None));
    let r = rows(s.metric(MetricEvent::CollectionStop(interval("me", S, 3 * S))));
    assert_eq!(r.len(), 1, "an empty rate is no row");
    assert_eq!(r[0].interval_sec(), 2.0);
}

#[test]
fn histograms_keep_count_sum_and_percentiles() {
    let mut s = CounterStream::new("me", CounterSpec::default());
    s.metric(MetricEvent::CollectionStart(interval("me", 0, S)));
    s.metric(MetricEvent::Histogram(HistogramValue {
        instrument: instrument("me", "M", "lat"),
        tags: vec![],
        quantiles: vec![(0.5, 500.0), (0.95, 950.0), (0.99, 990.0)],
        count: Some(1000),
        sum: Some(500_500.0),
    }));
    let r = rows(s.metric(MetricEvent::CollectionStop(interval("me", 0, S))));
    assert_eq!(
        r[0].value,
        CounterValue::Histogram(HistogramSummary {
            count: 1000,
            sum: 500_500.0,
            p50: Some(500.0),
            p95: Some(950.0),
            p99: Some(990.0)
        })
    );
    assert_eq!(r[0].number(), Some(500.0));
}

fn ec(name: &str, v: f64, interval: f64, sum: bool) -> EventCounter {
    EventCounter {
        name: name.into(),
        display_name: String::new(),
        units: "%".into(),
        kind: if sum {
            EventCounterKind::Sum
        } else {
            EventCounterKind::Mean
        },
        value: v,
        interval_sec: interval,
        series: String::new(),
        count: None,
        min: None,
        max: None,
        metadata: String::new(),
    }
}

#[test]
fn event_counters_intervals_never_overlap_or_repeat() {
    let spec: CounterSpec = "EventCounters\\System.Runtime".parse().unwrap();
    let mut s = CounterStream::new("me", spec);
    let a = s
        .event_counter("System.Runtime", ec("cpu-usage", 3.0, 1.0, false), 10 * S)
        .unwrap();
    assert_eq!((a.interval_start_ns, a.interval_end_ns), (9 * S, 10 * S));
    assert_eq!(a.kind, CounterKind::Mean);
    // IntervalSec longer than the time since the last row: starts where the last ended.
    let b = s
        .event_counter("System.Runtime", ec("cpu-usage", 4.0, 1.5, false), 11 * S)
        .unwrap();
    assert_eq!(b.interval_start_ns, 10 * S);
    assert!(s
        .event_counter("System.Runtime", ec("cpu-usage", 4.0, 1.0, false), 11 * S)
        .is_none());
    let c = s
        .event_counter(
            "System.Runtime",
            ec("exception-count", 2.0, 1.0, true),
            11 * S,
        )
        .unwrap();
    assert_eq!(c.kind, CounterKind::Rate);
    // Sources the spec does not name are not reported.
    assert!(s
        .event_counter("Other", ec("x", 1.0, 1.0, false), 12 * S)
        .is_none());
}

#[test]
fn a_meter_wins_over_same_named_event_counters_unless_forced() {
    let mut s = CounterStream::new("me", CounterSpec::default());
    assert!(s
        .event_counter("System.Runtime", ec("cpu-usage", 1.0, 1.0, false), S)
        .is_some());
    s.metric(MetricEvent::BeginInstrumentReporting(InstrumentInfo {
        instrument: instrument("me", "System.Runtime", "dotnet.gc.collections"),
        instrument_type: "ObservableCounter`1".into(),
        description: String::new(),
    }));
    assert!(s
        .event_counter("System.Runtime", ec("cpu-usage", 1.0, 1.0, false), 2 * S)
        .is_none());
    let mut forced = CounterStream::new(
        "me",
        "System.Runtime,EventCounters\\System.Runtime"
            .parse()
            .unwrap(),
    );
    forced.metric(MetricEvent::BeginInstrumentReporting(InstrumentInfo {
        instrument: instrument("me", "System.Runtime", "dotnet.gc.collections"),
        instrument_type: String::new(),
        description: String::new(),
    }));
    assert!(forced
        .event_counter("System.Runtime", ec("cpu-usage", 1.0, 1.0, false), S)
        .is_some());
}

#[test]
fn limits_are_said_once() {
    let mut s = CounterStream::new("me", CounterSpec::default());
    let e = || MetricEvent::TimeSeriesLimitReached {
        session_id: "me".into(),
    };
    assert!(matches!(s.metric(e()), Some(CounterUpdate::Note(_))));
    assert_eq!(s.metric(e()), None);
}

#[test]
fn spec_parses_dotnet_counters_syntax() {
    let s: CounterSpec =
        "System.Runtime, Microsoft.AspNetCore.Hosting[http.server.request.duration,http.server.active_requests],EventCounters\\Foo"
            .parse()
            .unwrap();
    assert_eq!(s.sources.len(), 3);
    assert_eq!(s.sources[1].name, "Microsoft.AspNetCore.Hosting");
    assert_eq!(
        s.sources[1].instruments,
        vec![
            "http.server.request.duration",
            "http.server.active_requests"
        ]
    );
    assert!(s.sources[2].event_counters_only);
    assert_eq!(s.sources[2].name, "Foo");
    assert_eq!(
        s.to_string(),
        "System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration,http.server.active_requests],EventCounters\\Foo"
    );
    for bad in [
        "",
        "a,,b",
        "a[",
        "a[]",
        "a]b",
        "a[b]c",
        "[x]",
        "EventCounters\\",
    ] {
        assert!(bad.parse::<CounterSpec>().is_err(), "{bad:?} parsed");
    }
}

#[test]
fn plan_follows_the_runtime_version() {
    let s: CounterSpec = "System.Runtime,M[a,b]".parse().unwrap();
    let p9 = s.plan(Some(10));
    assert_eq!(p9.meters, vec!["System.Runtime", "M\\a", "M\\b"]);
    assert_eq!(p9.event_counter_sources, vec!["M"]);
    assert!(p9.notes[0].contains("EventCounters\\System.Runtime"));
    let p8 = s.plan(Some(8));
    assert_eq!(p8.meters, vec!["M\\a", "M\\b"]);
    assert_eq!(p8.event_counter_sources, vec!["System.Runtime", "M"]);
    let unknown = s.plan(None);
    assert!(unknown.meters.contains(&"System.Runtime".to_string()));
    assert!(unknown
        .event_counter_sources
        .contains(&"System.Runtime".to_string()));
}
