use super::*;

fn s(name: &str, v: &str) -> Field {
    Field::new(name.to_string(), Value::String(v.to_string()))
}

fn f(name: &str, v: f64) -> Field {
    Field::new(name.to_string(), Value::F64(v))
}

/// An `EventCounters` payload as the runtime lays it out: an unnamed object holding `Payload`.
fn event_counters(payload: Vec<Field>) -> Vec<Field> {
    vec![Field::new(
        String::new(),
        Value::Object(vec![Field::new(
            "Payload".to_string(),
            Value::Object(payload),
        )]),
    )]
}

#[test]
fn mean_counter() {
    let fields = event_counters(vec![
        s("Name", "cpu-usage"),
        s("DisplayName", "CPU Usage"),
        f("Mean", 12.5),
        f("StandardDeviation", 0.0),
        Field::new("Count".to_string(), Value::I32(1)),
        f("Min", 12.5),
        f("Max", 12.5),
        Field::new("IntervalSec".to_string(), Value::F32(1.0)),
        s("Series", "Interval=1000"),
        s("CounterType", "Mean"),
        s("Metadata", ""),
        s("DisplayUnits", "%"),
    ]);
    let c = EventCounter::parse(&fields).unwrap();
    assert_eq!(c.name, "cpu-usage");
    assert_eq!(c.kind, EventCounterKind::Mean);
    assert_eq!(c.value, 12.5);
    assert_eq!(c.units, "%");
    assert_eq!(c.interval_sec, 1.0);
    assert_eq!(c.count, Some(1.0));
}

#[test]
fn sum_counter_reads_increment() {
    let fields = event_counters(vec![
        s("Name", "exception-count"),
        s("DisplayName", "Exception Count"),
        s("DisplayRateTimeScale", "00:00:01"),
        f("Increment", 3.0),
        Field::new("IntervalSec".to_string(), Value::F32(0.998)),
        s("Metadata", ""),
        s("Series", "Interval=1000"),
        s("CounterType", "Sum"),
        s("DisplayUnits", ""),
    ]);
    let c = EventCounter::parse(&fields).unwrap();
    assert_eq!(c.kind, EventCounterKind::Sum);
    assert_eq!(c.value, 3.0);
    assert!((c.interval_sec - 0.998).abs() < 1e-6);
}

#[test]
fn event_counters_without_name_or_value_fail() {
    let e = EventCounter::parse(&event_counters(vec![f("Mean", 1.0)])).unwrap_err();
    assert!(matches!(
        e,
        CounterError::Missing {
            field: "Payload",
            ..
        }
    ));
    let e = EventCounter::parse(&event_counters(vec![
        s("Name", "x"),
        s("CounterType", "Mean"),
    ]))
    .unwrap_err();
    assert!(matches!(e, CounterError::Missing { field: "Mean", .. }));
    let e =
        EventCounter::parse(&event_counters(vec![s("Name", "x"), s("Mean", "abc")])).unwrap_err();
    assert!(matches!(e, CounterError::Bad { field: "Mean", .. }));
}

fn instrument_fields(session: &str) -> Vec<Field> {
    vec![
        s("sessionId", session),
        s("meterName", "Workloads.Meters"),
        s("meterVersion", ""),
        s("instrumentName", "work.items"),
        s("unit", "{item}"),
        s("tags", "kind=a,shard=2"),
    ]
}

#[test]
fn counter_rate_v1_and_v2() {
    let mut fields = instrument_fields("s1");
    fields.push(s("rate", "250"));
    fields.push(s("value", "1000"));
    let Some(MetricEvent::Value(v)) =
        MetricEvent::parse("CounterRateValuePublished", &fields).unwrap()
    else {
        panic!("not a value");
    };
    assert_eq!(v.kind, MeterKind::Rate);
    assert_eq!(v.rate, Some(250.0));
    assert_eq!(v.value, Some(1000.0));
    assert_eq!(v.instrument.meter, "Workloads.Meters");
    assert_eq!(v.instrument.unit, "{item}");
    assert_eq!(
        v.tags,
        vec![("kind".into(), "a".into()), ("shard".into(), "2".into())]
    );
    // v2 adds trailing fields; v0 has no `value`; an empty rate is no measurement.
    let mut v2 = instrument_fields("s1");
    v2.push(s("rate", ""));
    v2.push(s("value", "1000"));
    v2.push(Field::new("instrumentId".to_string(), Value::I32(7)));
    let Some(MetricEvent::Value(v)) = MetricEvent::parse("CounterRateValuePublished", &v2).unwrap()
    else {
        panic!("not a value");
    };
    assert_eq!(v.rate, None);
    let mut v0 = instrument_fields("s1");
    v0.push(s("rate", "1.5"));
    let Some(MetricEvent::Value(v)) = MetricEvent::parse("CounterRateValuePublished", &v0).unwrap()
    else {
        panic!("not a value");
    };
    assert_eq!((v.rate, v.value), (Some(1.5), None));
}

/// The runtime declares the pool's thread count and queue length as observable counters:
/// they are levels, shown as their value (the count there now), never as a rate; any counter
/// whose increment is negative is one too.
#[test]
fn levels_declared_as_counters_are_levels() {
    let level = |meter: &str, name: &str, rate: &str, value: &str| {
        let mut f = vec![
            s("sessionId", "s"),
            s("meterName", meter),
            s("meterVersion", ""),
            s("instrumentName", name),
            s("unit", "{thread}"),
            s("tags", ""),
            s("rate", rate),
            s("value", value),
        ];
        f.push(Field::new("instrumentId".to_string(), Value::I32(3)));
        match MetricEvent::parse("CounterRateValuePublished", &f).unwrap() {
            Some(MetricEvent::Value(v)) => (v.kind, v.rate, v.value),
            _ => panic!("not a value"),
        }
    };
    let updown = MeterKind::UpDown;
    assert_eq!(
        level(
            "System.Runtime",
            "dotnet.thread_pool.thread.count",
            "4",
            "56"
        ),
        (updown, None, Some(56.0))
    );
    assert_eq!(
        level(
            "System.Runtime",
            "dotnet.thread_pool.queue.length",
            "-45",
            "3"
        ),
        (updown, None, Some(3.0))
    );
    assert_eq!(
        level("Shop.Meters", "orders.pending", "-2", "7"),
        (updown, None, Some(7.0))
    );
    // A real counter stays a rate (the pool's completed work items).
    assert_eq!(
        level(
            "System.Runtime",
            "dotnet.thread_pool.work_item.count",
            "120",
            "9000"
        ),
        (MeterKind::Rate, Some(120.0), Some(9000.0))
    );
    assert!(is_level("System.Runtime", "dotnet.timer.count"));
}

#[test]
fn gauge_and_updown() {
    let mut g = instrument_fields("s");
    g.push(s("lastValue", "42.25"));
    let Some(MetricEvent::Value(v)) = MetricEvent::parse("GaugeValuePublished", &g).unwrap() else {
        panic!()
    };
    assert_eq!((v.kind, v.value), (MeterKind::Gauge, Some(42.25)));
    let mut u = instrument_fields("s");
    u.push(s("rate", "-2"));
    u.push(s("value", "5"));
    let Some(MetricEvent::Value(v)) =
        MetricEvent::parse("UpDownCounterRateValuePublished", &u).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (v.kind, v.rate, v.value),
        (MeterKind::UpDown, Some(-2.0), Some(5.0))
    );
}

#[test]
fn histogram_quantiles_count_sum() {
    let mut h = instrument_fields("s");
    h.push(s("quantiles", "0.5=500.5;0.95=950;0.99=990.25"));
    h.push(Field::new("count".to_string(), Value::I32(1000)));
    h.push(f("sum", 500500.0));
    let Some(MetricEvent::Histogram(v)) =
        MetricEvent::parse("HistogramValuePublished", &h).unwrap()
    else {
        panic!()
    };
    assert_eq!(v.quantile(0.5), Some(500.5));
    assert_eq!(v.quantile(0.95), Some(950.0));
    assert_eq!(v.quantile(0.99), Some(990.25));
    assert_eq!(v.count, Some(1000));
    assert_eq!(v.sum, Some(500500.0));
    let mut bad = instrument_fields("s");
    bad.push(s("quantiles", "0.5=x"));
    assert!(MetricEvent::parse("HistogramValuePublished", &bad).is_err());
}

#[test]
fn collection_interval_times() {
    let fields = vec![
        s("sessionId", "abc"),
        s("intervalStartTime", "2026-11-27T08:58:53.0000000Z"),
        s("intervalEndTime", "2026-11-27T08:58:54.2500000Z"),
    ];
    let Some(MetricEvent::CollectionStop(i)) =
        MetricEvent::parse("CollectionStop", &fields).unwrap()
    else {
        panic!()
    };
    assert_eq!(i.session_id, "abc");
    assert_eq!(i.end_unix_ns - i.start_unix_ns, 1_250_000_000);
    assert_eq!(
        nettrace::format_unix_ns(i.start_unix_ns),
        "2026-11-27T08:58:53.000000Z"
    );
    let bad = vec![s("sessionId", "abc"), s("intervalStartTime", "yesterday")];
    assert!(MetricEvent::parse("CollectionStart", &bad).is_err());
}

#[test]
fn limits_errors_and_unknown() {
    let e = MetricEvent::parse("TimeSeriesLimitReached", &[s("sessionId", "q")])
        .unwrap()
        .unwrap();
    assert_eq!(e.session_id(), "q");
    let e = MetricEvent::parse("Error", &[s("sessionId", "q"), s("errorMessage", "boom")]).unwrap();
    assert!(matches!(e, Some(MetricEvent::Error { message, .. }) if message == "boom"));
    assert_eq!(MetricEvent::parse("SomethingNew", &[]).unwrap(), None);
    // A value event without its instrument is an error, not a panic.
    assert!(MetricEvent::parse("GaugeValuePublished", &[s("sessionId", "q")]).is_err());
}

#[test]
fn tags_and_quantiles_edge_cases() {
    assert!(parse_tags("").is_empty());
    assert_eq!(parse_tags("a"), vec![("a".into(), String::new())]);
    assert_eq!(parse_tags("a=b=c"), vec![("a".into(), "b=c".into())]);
    assert_eq!(parse_quantiles(""), Some(vec![]));
    assert_eq!(parse_quantiles("0.5"), None);
}

proptest::proptest! {
    #[test]
    fn parsing_never_panics(a in ".*", b in ".*") {
        let _ = parse_quantiles(&a);
        let _ = parse_tags(&b);
        let fields = vec![s("sessionId", &a), s("meterName", &b), s("instrumentName", &a),
            s("rate", &b), s("quantiles", &a), s("intervalStartTime", &b), s("intervalEndTime", &a)];
        for name in ["CollectionStart", "CounterRateValuePublished", "HistogramValuePublished"] {
            let _ = MetricEvent::parse(name, &fields);
        }
    }
}
