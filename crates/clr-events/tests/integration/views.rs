//! The typed views agree with the generic layout decoder on every event of the real traces
//! that has a view: same numbers, same strings, and a view fails exactly where the decoder
//! finds the payload short.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::PathBuf;

use clr_events::runtime::{
    ids, AllocationTick, ContentionStart, ContentionStop, ExceptionCatch, ExceptionThrown, GcEnd,
    GcHeapStats, GcStart, GcSuspendEe, MethodLoad, R2rEntryPoint, ThreadPoolAdjustment,
    ThreadPoolWorkerThread,
};
use clr_events::{known_provider, layout_for, Decoded, KnownProvider};
use nettrace::TraceReader;

fn load(name: &str) -> Vec<u8> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = [
        manifest.join("../../../shared/data/nettrace"),
        manifest.join("../nettrace/tests/data"),
    ]
    .into_iter()
    .map(|d| d.join(name))
    .find(|p| p.exists())
    .unwrap_or_else(|| panic!("real trace {name} not found; the shared test data must be present"));
    let bytes = std::fs::read(&path).unwrap();
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
    "only_managed_samples.nettrace.zip",
    "trace.nettrace",
    "perf.nettrace",
];

fn s(d: &Decoded, f: &str) -> String {
    d.str(f).unwrap().to_string()
}

fn u(d: &Decoded, f: &str) -> u64 {
    d.u64(f).unwrap()
}

/// Checks one event's view against the decoded fields; false when no view covers it.
fn check(k: KnownProvider, id: u32, v: u8, p: &[u8], ps: u8, d: &Decoded) -> bool {
    use KnownProvider::{Rundown, Runtime};
    match (k, id) {
        (Runtime, ids::METHOD_LOAD_VERBOSE | ids::METHOD_UNLOAD_VERBOSE) | (Rundown, 143 | 144) => {
            let m = MethodLoad::parse_event(k, id, p, v, ps).unwrap();
            assert_eq!(m.method_id, u(d, "MethodID"));
            assert_eq!(m.start, u(d, "MethodStartAddress"));
            assert_eq!(u64::from(m.size), u(d, "MethodSize"));
            assert_eq!(m.namespace.to_string(), s(d, "MethodNamespace"));
            assert_eq!(m.name.to_string_lossy(), s(d, "MethodName"));
            assert_eq!(m.signature.to_string(), s(d, "MethodSignature"));
        }
        (Runtime, ids::R2R_GET_ENTRY_POINT) => {
            let e = R2rEntryPoint::parse(p, v, ps).unwrap();
            assert_eq!(
                (e.method_id, e.entry_point),
                (u(d, "MethodID"), u(d, "EntryPoint"))
            );
            assert_eq!(e.name.to_string(), s(d, "MethodName"));
        }
        (Runtime, ids::GC_START) => {
            let g = GcStart::parse(p, v, ps).unwrap();
            assert_eq!(u64::from(g.count), u(d, "Count"));
            assert_eq!(u64::from(g.depth), u(d, "Depth"));
            assert_eq!(u64::from(g.reason.to_u32()), u(d, "Reason"));
            assert_eq!(u64::from(g.kind.to_u32()), u(d, "Type"));
        }
        (Runtime, ids::GC_STOP) => {
            let g = GcEnd::parse(p, v, ps).unwrap();
            assert_eq!(u64::from(g.count), u(d, "Count"));
        }
        (Runtime, ids::GC_HEAP_STATS) => {
            let h = GcHeapStats::parse(p, v, ps).unwrap();
            for i in 0..4 {
                assert_eq!(h.generation_sizes[i], u(d, &format!("GenerationSize{i}")));
                assert_eq!(h.promoted[i], u(d, &format!("TotalPromotedSize{i}")));
            }
            assert_eq!(h.generation_sizes[4], d.u64("GenerationSize4").unwrap_or(0));
        }
        (Runtime, ids::GC_SUSPEND_EE_START) => {
            let e = GcSuspendEe::parse(p, v, ps).unwrap();
            assert_eq!(u64::from(e.reason.to_u32()), u(d, "Reason"));
        }
        (Runtime, ids::GC_ALLOCATION_TICK) => {
            let t = AllocationTick::parse(p, v, ps).unwrap();
            let amount = d
                .u64("AllocationAmount64")
                .unwrap_or(u(d, "AllocationAmount"));
            assert_eq!(t.amount, amount);
            assert_eq!(u64::from(t.kind.to_u32()), u(d, "AllocationKind"));
            assert_eq!(
                t.type_name.map(|n| n.to_string()),
                d.str("TypeName").map(String::from)
            );
            assert_eq!(t.address, d.u64("Address"));
            assert_eq!(t.object_size, d.u64("ObjectSize"));
        }
        (Runtime, ids::EXCEPTION_START) => {
            let e = ExceptionThrown::parse(p, v, ps).unwrap();
            assert_eq!(
                e.exception_type.map(|n| n.to_string()),
                d.str("ExceptionType").map(String::from)
            );
            assert_eq!(
                e.message.map(|n| n.to_string()),
                d.str("ExceptionMessage").map(String::from)
            );
        }
        (Runtime, ids::EXCEPTION_CATCH_START) => {
            let e = ExceptionCatch::parse(p, v, ps).unwrap();
            assert_eq!(e.method_name.to_string(), s(d, "MethodName"));
        }
        (Runtime, ids::CONTENTION_START) => {
            let c = ContentionStart::parse(p, v, ps).unwrap();
            assert_eq!(c.lock_id, d.u64("LockID"));
        }
        (Runtime, ids::CONTENTION_STOP) => {
            let c = ContentionStop::parse(p, v, ps).unwrap();
            assert_eq!(c.duration_ns, d.f64("DurationNs"));
        }
        (Runtime, ids::TP_WORKER_START | ids::TP_WORKER_STOP | ids::TP_WORKER_WAIT) => {
            let w = ThreadPoolWorkerThread::parse(id, p, v, ps).unwrap();
            assert_eq!(u64::from(w.active), u(d, "ActiveWorkerThreadCount"));
        }
        (Runtime, ids::TP_ADJUSTMENT) => {
            let a = ThreadPoolAdjustment::parse(p, v, ps).unwrap();
            assert_eq!(u64::from(a.new_worker_count), u(d, "NewWorkerThreadCount"));
            assert_eq!(u64::from(a.reason.to_u32()), u(d, "Reason"));
        }
        _ => return false,
    }
    true
}

#[test]
fn views_agree_with_the_decoder_on_real_traces() {
    let mut checked = 0u64;
    for name in TRACES {
        let bytes = load(name);
        let mut r = TraceReader::new(&bytes).unwrap();
        let ps = r.header().pointer_size;
        // trace.nettrace is cut: the reader stops with an error after its last whole event.
        let _ = r.for_each_event(|e| {
            let Some(k) = known_provider(e.provider()) else {
                return true;
            };
            let Some(l) = layout_for(k, e.event_id(), e.version()) else {
                return true;
            };
            let d = l.decode(e.payload, ps);
            if d.error.is_none() && check(k, e.event_id(), e.version(), e.payload, ps, &d) {
                checked += 1;
            }
            true
        });
    }
    // The traces hold thousands of method, GC and allocation events.
    assert!(checked > 10_000, "only {checked} events had views");
}

#[test]
fn a_view_fails_exactly_where_the_payload_is_short() {
    let bytes = load("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let mut r = TraceReader::new(&bytes).unwrap();
    let ps = r.header().pointer_size;
    let mut seen = 0;
    let _ = r.for_each_event(|e| {
        if e.provider() != clr_events::RUNTIME_PROVIDER || e.event_id() != ids::GC_ALLOCATION_TICK {
            return true;
        }
        seen += 1;
        for cut in 0..e.payload.len() {
            let err = AllocationTick::parse(&e.payload[..cut], e.version(), ps).unwrap_err();
            assert_eq!(err.event, "GC/AllocationTick");
        }
        seen < 20
    });
    assert_eq!(seen, 20);
}

mod properties {
    use clr_events::clrspy::{ModuleMap, SamplerInfo, ThreadCpu, ThreadName};
    use clr_events::heapdump::{
        GcBulkEdge, GcBulkMovedObjectRanges, GcBulkNode, GcBulkRootEdge, GcBulkRootStaticVar,
        GcBulkSurvivingObjectRanges, GcBulkType,
    };
    use clr_events::runtime::*;
    use proptest::prelude::*;

    proptest! {
        /// clrspy's events read back what was written.
        #[test]
        fn clrspy_events_round_trip(
            tid in any::<u32>(),
            cpu in any::<u64>(),
            state in any::<u16>(),
            runq in proptest::option::of(0..u64::MAX),
            name in "\\PC{0,40}",
            start in any::<u64>(),
            len in any::<u64>(),
        ) {
            let mut p = Vec::new();
            let r = ThreadCpu { thread_id: tid, cpu_ns: cpu, state, runqueue_ns: runq };
            r.encode(&mut p);
            prop_assert_eq!(ThreadCpu::parse(&p).unwrap(), r);
            // Strings end at their first NUL, as on the wire.
            let text: String = name.chars().take_while(|&c| c != '\0').collect();
            p.clear();
            ThreadName::encode(tid, &text, &mut p);
            let t = ThreadName::parse(&p).unwrap();
            prop_assert_eq!((t.thread_id, t.name.to_string()), (tid, text.clone()));
            p.clear();
            SamplerInfo::encode(tid, &text, &mut p);
            prop_assert!(SamplerInfo::parse(&p).unwrap().source.eq_str(&text));
            p.clear();
            ModuleMap::encode(start, start.wrapping_add(len), len, &text, &mut p);
            let m = ModuleMap::parse(&p).unwrap();
            prop_assert_eq!((m.start, m.offset, m.path.to_string_lossy()), (start, len, text));
        }

        /// No bytes make a view panic, and the bulk iterators end within the payload's size.
        #[test]
        fn views_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), version in 0u8..5, wide in any::<bool>()) {
            let ps = if wide { 8 } else { 4 };
            let b = &bytes[..];
            let _ = MethodLoad::parse(b, version, ps);
            let _ = R2rEntryPoint::parse(b, version, ps);
            let _ = GcStart::parse(b, version, ps);
            let _ = GcEnd::parse(b, version, ps);
            let _ = GcHeapStats::parse(b, version, ps);
            let _ = GcSuspendEe::parse(b, version, ps);
            let _ = GcRestartEeEnd::parse(b, version, ps);
            let _ = AllocationTick::parse(b, version, ps);
            let _ = ExceptionThrown::parse(b, version, ps);
            let _ = ExceptionCatch::parse(b, version, ps);
            let _ = ContentionStart::parse(b, version, ps);
            let _ = ContentionStop::parse(b, version, ps);
            let _ = ThreadPoolWorkerThread::parse(ids::TP_WORKER_START, b, version, ps);
            let _ = ThreadPoolAdjustment::parse(b, version, ps);
            let limit = bytes.len() + 1;
            if let Ok(v) = GcBulkNode::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            if let Ok(v) = GcBulkEdge::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            if let Ok(v) = GcBulkType::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            if let Ok(v) = GcBulkRootEdge::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            if let Ok(v) = GcBulkRootStaticVar::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            if let Ok(v) = GcBulkMovedObjectRanges::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            if let Ok(v) = GcBulkSurvivingObjectRanges::parse(b, version, ps) { prop_assert!(v.values.count() <= limit); }
            let _ = ThreadCpu::parse(b);
            let _ = ThreadName::parse(b);
            let _ = ModuleMap::parse(b);
        }
    }
}
