//! The counters views on a real trace of .NET 10 (see tests/data/README.md): every counter
//! event reads, and what it says matches what the workload did.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::PathBuf;

use clr_events::counters::{EventCounter, MeterKind, MetricEvent, METRICS_PROVIDER};

fn trace() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/counters-net10-meters.nettrace.zip");
    let bytes = std::fs::read(path).unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut f = zip.by_index(0).unwrap();
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    out
}

#[test]
fn every_counter_event_of_a_real_trace_reads() {
    let bytes = trace();
    let mut reader = nettrace::TraceReader::new(&bytes).unwrap();
    let (mut starts, mut stops, mut items, mut histograms, mut event_counters) = (0, 0, 0.0, 0, 0);
    let mut interval_lengths = Vec::new();
    let mut runtime_meter = 0;
    let mut own_session_error = 0;
    reader
        .for_each_event(|ev| {
            if ev.provider() == METRICS_PROVIDER {
                let m = MetricEvent::from_event(ev)
                    .unwrap_or_else(|e| panic!("{}: {e}", ev.metadata_name()))
                    .unwrap_or_else(|| panic!("{} has no view", ev.metadata_name()));
                match m {
                    MetricEvent::CollectionStart(_) => starts += 1,
                    MetricEvent::CollectionStop(i) => {
                        stops += 1;
                        assert_eq!(i.session_id, "t1");
                        interval_lengths.push(i.end_unix_ns - i.start_unix_ns);
                    }
                    MetricEvent::Value(v) if v.instrument.name == "workloads.items" => {
                        assert_eq!(v.kind, MeterKind::Rate);
                        assert_eq!(v.instrument.unit, "{item}");
                        assert_eq!(v.tags.len(), 1);
                        assert_eq!(v.tags[0].0, "shard");
                        items += v.rate.unwrap_or(0.0);
                    }
                    MetricEvent::Value(v) => {
                        assert_eq!(v.instrument.meter, "System.Runtime");
                        assert!(v.instrument.name.starts_with("dotnet."));
                        runtime_meter += 1;
                    }
                    MetricEvent::Histogram(h) => {
                        assert_eq!(h.instrument.name, "workloads.latency");
                        if h.count.unwrap_or(0) > 0 {
                            let p50 = h.quantile(0.5).unwrap();
                            let p99 = h.quantile(0.99).unwrap();
                            assert!((475.0..=525.0).contains(&p50), "{h:?}");
                            assert!((975.0..=1000.0).contains(&p99), "{h:?}");
                            assert_eq!(h.sum, Some(h.count.unwrap() as f64 * 500.5));
                        }
                        histograms += 1;
                    }
                    MetricEvent::MultipleSessionsNotSupported { running_session_id } => {
                        assert_eq!(running_session_id, "t1");
                        own_session_error += 1;
                    }
                    _ => {}
                }
            } else if ev.metadata_name() == "EventCounters" {
                let c = EventCounter::from_event(ev).unwrap().unwrap();
                assert!(!c.name.is_empty());
                assert!((c.interval_sec - 1.0).abs() < 0.2, "{c:?}");
                event_counters += 1;
            }
            true
        })
        .unwrap();
    assert_eq!(items, 192.0, "the workload printed meters total=192");
    assert_eq!(starts, stops);
    assert!(stops >= 5);
    assert!(interval_lengths
        .iter()
        .all(|&l| (l - 1_000_000_000).abs() < 1_000_000));
    assert!(histograms >= 3);
    assert!(runtime_meter > 50);
    assert_eq!(own_session_error, 1);
    assert!(event_counters > 100);
}
