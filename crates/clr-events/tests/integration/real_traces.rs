//! Every event with a layout in the real traces under `../shared/data/nettrace` decodes
//! completely, with no bytes left over when the trace's event version is one this crate
//! describes exactly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use clr_events::{event_name, layout, Decoded, Value};
use nettrace::TraceReader;

fn data_dirs() -> Vec<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    vec![
        manifest.join("../../../shared/data/nettrace"),
        manifest.join("../nettrace/tests/data"),
    ]
}

fn load(name: &str) -> Vec<u8> {
    let path = data_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "real trace {name} not found in {:?}; the shared test data must be present",
                data_dirs()
            )
        });
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !name.ends_with(".zip") {
        return bytes;
    }
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut f = zip.by_index(0).unwrap();
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    out
}

const TRACES: &[&str] = &[
    "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
    "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
    "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
    "only_managed_samples.nettrace.zip",
    "trace.nettrace",
    "perf.nettrace",
];

#[derive(Default, Debug)]
struct Tally {
    events: u64,
    errors: u64,
    extra: u64,
    first_problem: Option<String>,
}

/// (provider, event id, version).
type Key = (String, u32, u8);

/// Decodes every event of a trace that has a layout; returns per-event tallies and a sample of
/// decoded payloads per (provider, id, version).
fn decode_trace(name: &str) -> (BTreeMap<Key, Tally>, BTreeMap<Key, Decoded>) {
    let bytes = load(name);
    let mut r = TraceReader::new(&bytes).unwrap();
    let ps = r.header().pointer_size;
    let mut tallies: BTreeMap<Key, Tally> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    // trace.nettrace is truncated: the reader stops with an error after its last whole event.
    let _ = r.for_each_event(|e| {
        let Some(l) = layout(e.provider(), e.event_id(), e.version()) else {
            return true;
        };
        let key = (e.provider().to_string(), e.event_id(), e.version());
        let d = l.decode(e.payload, ps);
        let t = tallies.entry(key.clone()).or_default();
        t.events += 1;
        if d.error.is_some() {
            t.errors += 1;
            t.first_problem
                .get_or_insert_with(|| format!("{:?} in {:02x?}", d.error, e.payload));
        } else if d.extra_bytes > 0 && l.version == e.version() {
            t.extra += 1;
            t.first_problem.get_or_insert_with(|| {
                format!("{} extra bytes in {:02x?}", d.extra_bytes, e.payload)
            });
        }
        // Events whose metadata declares fields (EventPipe's ProcessInfo) must decode to the
        // same names and values with our layout.
        if !e.metadata.fields.is_empty() {
            let m = e.decode_with_metadata();
            if m.error.is_none() {
                assert_eq!(m.fields, d.fields, "{name}: {:?}", key);
            }
        }
        samples.entry(key).or_insert(d);
        true
    });
    (tallies, samples)
}

#[test]
fn all_known_events_decode_exactly() {
    let mut total = 0;
    for name in TRACES {
        let (tallies, _) = decode_trace(name);
        for (key, t) in &tallies {
            total += t.events;
            assert!(
                t.errors == 0 && t.extra == 0,
                "{name}: {key:?}: {} of {} events failed, {} had extra bytes; first: {}",
                t.errors,
                t.events,
                t.extra,
                t.first_problem.as_deref().unwrap_or("")
            );
        }
    }
    assert!(total > 150_000, "only {total} events decoded");
}

fn sample<'a>(
    samples: &'a BTreeMap<Key, Decoded>,
    provider: &str,
    id: u32,
    version: u8,
) -> &'a Decoded {
    samples
        .get(&(provider.to_string(), id, version))
        .unwrap_or_else(|| panic!("no {provider}/{id} v{version} in trace"))
}

#[test]
fn linux_trace_values() {
    let (_, s) = decode_trace("perf.nettrace");
    let rt = clr_events::RUNDOWN_PROVIDER;
    let m = sample(&s, rt, 144, 2);
    assert!(!m.str("MethodName").unwrap().is_empty());
    assert_ne!(m.u64("MethodStartAddress"), Some(0));
    let module = sample(&s, rt, 154, 2);
    assert!(module.str("ModuleILPath").unwrap().ends_with(".dll"));
    let info = sample(&s, clr_events::EVENTPIPE_PROVIDER, 1, 1);
    assert_eq!(info.str("OSInformation"), Some("Linux"));
    assert_eq!(info.str("ArchInformation"), Some("x64"));
    let rti = sample(&s, rt, 187, 0);
    assert!(rti.u64("VMMajorVersion").unwrap() >= 5);
    let settings = sample(&s, rt, 10, 0);
    assert!(settings.u64("LOHThreshold").unwrap() > 0);
    assert_eq!(
        event_name(rt, 144, 2),
        Some("Method/DCStopVerbose"),
        "TraceEvent name"
    );
}

#[test]
fn windows_gc_trace_values() {
    let (_, s) = decode_trace("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let rt = clr_events::RUNTIME_PROVIDER;
    let tick = sample(&s, rt, 10, 3);
    assert!(!tick.str("TypeName").unwrap().is_empty());
    assert!(tick.u64("AllocationAmount64").unwrap() > 0);
    let per_heap = sample(&s, rt, 204, 3);
    let gens = per_heap.array("Values").unwrap();
    assert_eq!(gens.len() as u64, per_heap.u64("Count").unwrap());
    assert!(matches!(
        Decoded::field_of(&gens[0], "SizeBefore"),
        Some(Value::Pointer(_))
    ));
    let start = sample(&s, rt, 1, 2);
    assert!(start.u64("Count").unwrap() > 0);
    let sample_ev = sample(&s, clr_events::SAMPLE_PROFILER_PROVIDER, 0, 0);
    assert!(matches!(sample_ev.u64("Type"), Some(1 | 2)));
}

#[test]
fn execution_checkpoints() {
    let (t, s) = decode_trace("eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip");
    let key = (clr_events::RUNDOWN_PROVIDER.to_string(), 300, 0);
    assert_eq!(t[&key].events, 3);
    let d = &s[&key];
    assert!(!d.str("Name").unwrap().is_empty());
    assert!(d.i64("Timestamp").unwrap() > 0);
}
