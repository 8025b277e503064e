use super::*;

#[test]
fn the_rules_file_form_deserializes() {
    let v: Vec<TriggerSpec> = serde_json::from_str(
        r#"[ { "exception": "System.Net.*" }, { "gc_pause_ms": 200 }, "gen2", "exit",
             { "event": "Microsoft-Windows-DotNETRuntime/GC/Start:Depth>=2" },
             { "counter": "cpu-usage>80" } ]"#,
    )
    .unwrap();
    assert_eq!(v[0], TriggerSpec::Exception("System.Net.*".into()));
    assert_eq!(v[1], TriggerSpec::GcPauseMs(200));
    assert_eq!(v[2], TriggerSpec::Gen2);
    assert_eq!(v[3], TriggerSpec::Exit);
    let TriggerSpec::Event(e) = &v[4] else {
        panic!("{:?}", v[4]);
    };
    assert_eq!(e.provider, "Microsoft-Windows-DotNETRuntime");
    assert_eq!(e.event, "GC/Start");
    let f = e.field.as_ref().unwrap();
    assert_eq!(
        (f.name.as_str(), f.op, f.value.as_str()),
        ("Depth", Op::Ge, "2")
    );
    let TriggerSpec::Counter(c) = &v[5] else {
        panic!("{:?}", v[5]);
    };
    assert_eq!(
        (c.name.as_str(), c.op, c.value),
        ("cpu-usage", Op::Gt, 80.0)
    );
    // And back.
    let back = serde_json::to_string(&v).unwrap();
    assert_eq!(serde_json::from_str::<Vec<TriggerSpec>>(&back).unwrap(), v);
    assert!(serde_json::from_str::<TriggerSpec>(r#"{ "counter": "cpu-usage" }"#).is_err());
    // Unit kinds also as objects; a schema for rules files.
    assert_eq!(
        serde_json::from_str::<TriggerSpec>(r#"{ "gen2": null }"#).unwrap(),
        TriggerSpec::Gen2
    );
    let schema = serde_json::to_string(&schemars::schema_for!(TriggerSpec)).unwrap();
    assert!(
        schema.contains("gc_pause_ms") && schema.contains("exception"),
        "{schema}"
    );
}

#[test]
fn the_command_line_form_parses_and_prints_back() {
    for s in [
        "exception=System.Net.*",
        "gc-pause-ms=200",
        "gen2",
        "exit",
        "event=My-Source/Req*:Status==5*",
        "counter=working-set-mb>500",
        "counter=threadpool-queue-length>=10",
    ] {
        let t: TriggerSpec = s.parse().unwrap();
        assert_eq!(t.to_string(), s);
    }
    assert_eq!(
        "gc_pause_ms=200".parse::<TriggerSpec>().unwrap(),
        TriggerSpec::GcPauseMs(200)
    );
    assert_eq!(
        "GC-PAUSE-MS=50ms".parse::<TriggerSpec>().unwrap(),
        TriggerSpec::GcPauseMs(50)
    );
    for bad in [
        "exception",
        "exception=",
        "gc-pause-ms=lots",
        "event=NoSlash",
        "event=P/E:Field",
        "counter=cpu-usage",
        "counter=cpu-usage>x",
        "frobnicate=1",
    ] {
        assert!(bad.parse::<TriggerSpec>().is_err(), "{bad}");
    }
}

#[test]
fn apply_adds_what_the_triggers_need() {
    let mut config = SessionConfig {
        circular_buffer_mb: 64,
        rundown_keyword: 0,
        stackwalk: true,
        providers: vec![Provider {
            name: clr_events::RUNTIME_PROVIDER.into(),
            keywords: 0x1,
            level: 5,
            arguments: None,
        }],
    };
    Triggers::new(vec![
        TriggerSpec::Exception("*".into()),
        TriggerSpec::Counter("cpu-usage>1".parse().unwrap()),
        TriggerSpec::Event("Other/Thing".parse().unwrap()),
    ])
    .apply(&mut config);
    let rt = &config.providers[0];
    assert_eq!((rt.keywords, rt.level), (0x8001, 5));
    let c = config
        .providers
        .iter()
        .find(|p| p.name == COUNTERS_PROVIDER)
        .unwrap();
    assert_eq!(c.arguments.as_deref(), Some("EventCounterIntervalSec=1"));
    assert!(config.providers.iter().any(|p| p.name == "Other"));
}

/// A trace with one event of each kind the triggers read, written with the runtime's layouts.
fn trace() -> Vec<u8> {
    use nettrace::{EventMetadata, EventRecord, FieldDesc, FieldType, TraceWriter, WriterOptions};
    let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
    let rt = |id| EventMetadata {
        provider: clr_events::RUNTIME_PROVIDER.into(),
        event_id: id,
        version: 1,
        ..EventMetadata::default()
    };
    let exc = w.define(&rt(80)).unwrap();
    let gc_start = w.define(&rt(1)).unwrap();
    let suspend = w.define(&rt(9)).unwrap();
    let restart = w.define(&rt(3)).unwrap();
    let mine = w
        .define(&EventMetadata {
            provider: "My-Source".into(),
            event_id: 7,
            event_name: "Request".into(),
            fields: vec![FieldDesc {
                name: "Status".into(),
                ty: FieldType::I32,
            }],
            ..EventMetadata::default()
        })
        .unwrap();
    let s16 = |s: &str, p: &mut Vec<u8>| {
        for u in s.encode_utf16() {
            p.extend_from_slice(&u.to_le_bytes());
        }
        p.extend_from_slice(&[0, 0]);
    };
    let mut e = Vec::new();
    s16("System.Net.Http.HttpRequestException", &mut e);
    s16("refused", &mut e);
    e.extend_from_slice(&0u64.to_le_bytes()); // EIP
    e.extend_from_slice(&0u32.to_le_bytes()); // HRESULT
    e.extend_from_slice(&0u16.to_le_bytes()); // flags
    e.extend_from_slice(&0u16.to_le_bytes()); // ClrInstanceID
    let mut g = Vec::new();
    for v in [3u32, 2, 1, 0] {
        g.extend_from_slice(&v.to_le_bytes()); // Count, Depth, Reason, Type
    }
    g.extend_from_slice(&0u16.to_le_bytes());
    let mut su = Vec::new();
    su.extend_from_slice(&1u32.to_le_bytes());
    su.extend_from_slice(&0u32.to_le_bytes());
    su.extend_from_slice(&0u16.to_le_bytes());
    // A suspension for another reason (2: for shutdown) is no GC pause.
    let mut other = Vec::new();
    other.extend_from_slice(&2u32.to_le_bytes());
    other.extend_from_slice(&0u32.to_le_bytes());
    other.extend_from_slice(&0u16.to_le_bytes());
    let re = 0u16.to_le_bytes().to_vec();
    let st = 503i32.to_le_bytes().to_vec();
    let events: [(u32, i64, &[u8]); 7] = [
        (exc, 1_000, &e),
        (gc_start, 2_000, &g),
        (suspend, 3_000, &su),
        (restart, 3_000 + 250_000_000, &re),
        (mine, 4_000_000_000, &st),
        (suspend, 5_000_000_000, &other),
        (restart, 5_900_000_000, &re),
    ];
    for (id, ts, p) in events {
        w.write(&EventRecord {
            metadata_id: id,
            thread_id: 1,
            timestamp: ts,
            payload: p,
            ..EventRecord::default()
        })
        .unwrap();
    }
    w.finish().unwrap()
}

/// The first trigger `spec` fires on the test trace.
fn fire(spec: &str) -> Option<Fired> {
    let bytes = trace();
    let mut r = nettrace::TraceReader::new(&bytes).unwrap();
    let mut t = Triggers::new(vec![spec.parse().unwrap()]);
    t.after = Duration::from_millis(1);
    let mut c = t.consumer().unwrap();
    while let Some(ev) = r.next_event().unwrap() {
        if let Action::Trigger { fired, after } = c.event(&ev) {
            assert_eq!(after, Duration::from_millis(1));
            return Some(fired);
        }
    }
    None
}

#[test]
fn each_kind_fires_on_its_event() {
    let f = fire("exception=System.Net.*").unwrap();
    assert_eq!(f.event, "Exception/Start");
    assert!(f.reason.contains("HttpRequestException"), "{}", f.reason);
    assert!(fire("exception=System.IO.*").is_none());
    let f = fire("gen2").unwrap();
    assert_eq!((f.event.as_str(), f.timestamp), ("GC/Start", 2_000));
    let f = fire("gc-pause-ms=200").unwrap();
    assert_eq!(f.event, "GC/RestartEEStop");
    assert!(f.reason.contains("250.0 ms"), "{}", f.reason);
    assert!(fire("gc-pause-ms=300").is_none());
    let f = fire("event=My-Source/Request:Status>=500").unwrap();
    assert!(f.reason.contains("Status=503"), "{}", f.reason);
    assert!(fire("event=My-Source/Request:Status<500").is_none());
    assert!(fire("event=Microsoft-Windows-DotNETRuntime/GC/Start:Depth==2").is_some());
    assert!(fire("event=Microsoft-Windows-DotNETRuntime/GC/Start:Depth==1").is_none());
}

#[test]
fn a_consumer_fires_once() {
    let bytes = trace();
    let mut r = nettrace::TraceReader::new(&bytes).unwrap();
    let mut c = Triggers::new(vec!["event=*/*".parse().unwrap()])
        .consumer()
        .unwrap();
    let mut n = 0;
    while let Some(ev) = r.next_event().unwrap() {
        n += usize::from(matches!(c.event(&ev), Action::Trigger { .. }));
    }
    assert_eq!(n, 1);
}

/// A 32-bit target's `Exception/Start`: its EIP is 4 bytes, so the HRESULT after it is read
/// at offset 4 past the strings only with the trace header's pointer size (with 8 it would
/// take the flags and the instance id instead).
#[test]
fn a_four_byte_pointer_trace_decodes_the_fields_after_a_pointer() {
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};
    let opts = WriterOptions {
        pointer_size: 4,
        ..WriterOptions::default()
    };
    let mut w = TraceWriter::new(Vec::new(), opts).unwrap();
    let exc = w
        .define(&EventMetadata {
            provider: clr_events::RUNTIME_PROVIDER.into(),
            event_id: 80,
            version: 1,
            ..EventMetadata::default()
        })
        .unwrap();
    let mut e = Vec::new();
    for s in ["System.InvalidOperationException", "no"] {
        for u in s.encode_utf16() {
            e.extend_from_slice(&u.to_le_bytes());
        }
        e.extend_from_slice(&[0, 0]);
    }
    e.extend_from_slice(&0x1234u32.to_le_bytes()); // EIP, 4 bytes
    e.extend_from_slice(&0x8013_1509u32.to_le_bytes()); // HRESULT
    e.extend_from_slice(&0x10u16.to_le_bytes()); // flags
    e.extend_from_slice(&7u16.to_le_bytes()); // ClrInstanceID
    w.write(&EventRecord {
        metadata_id: exc,
        thread_id: 1,
        timestamp: 1_000,
        payload: &e,
        ..EventRecord::default()
    })
    .unwrap();
    let bytes = w.finish().unwrap();
    let mut r = nettrace::TraceReader::new(&bytes).unwrap();
    let ev = r.next_event().unwrap().unwrap();
    assert_eq!(ev.pointer_size(), 4);
    let hresult = get(&fields(&ev), "ExceptionHRESULT").and_then(Value::as_f64);
    assert_eq!(hresult, Some(f64::from(0x8013_1509u32)));
    assert_eq!(
        crate::thrown_type(&ev).as_deref(),
        Some("System.InvalidOperationException")
    );
    let mut c = Triggers::new(vec![
        "event=Microsoft-Windows-DotNETRuntime/Exception/Start:ExceptionHRESULT==2148734217"
            .parse()
            .unwrap(),
    ])
    .consumer()
    .unwrap();
    assert!(matches!(c.event(&ev), Action::Trigger { .. }));
}
