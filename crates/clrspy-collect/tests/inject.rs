//! The splicer on real runtime traces: fed in random pieces with clrspy's events pushed in
//! between, the output holds every original event unchanged and in order, plus clrspy's events,
//! and reads cleanly with no new lost events. Unrecognised and cut streams pass through.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::PathBuf;

use clrspy_collect::inject::{
    Injected, Splicer, CAPTURE_THREAD, FIRST_METADATA_ID, FIRST_STACK_ID, NO_THREAD,
};
use proptest::prelude::*;

fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../nettrace/tests/data")
        .join(name);
    let raw = std::fs::read(&p).unwrap();
    if name.ends_with(".zip") {
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
        let mut f = z.by_index(0).unwrap();
        let mut out = Vec::new();
        f.read_to_end(&mut out).unwrap();
        out
    } else {
        raw
    }
}

/// Every event as (provider, id, thread, timestamp, payload); lost events; ended cleanly;
/// then clrspy's events (its capture thread's) as (the same, stack id, stack).
type Summary = (
    Vec<(String, u32, u64, i64, Vec<u8>)>,
    u64,
    bool,
    Vec<(String, u32, u64, i64, Vec<u8>, u32, Vec<u64>)>,
);

fn read_all(bytes: &[u8]) -> Summary {
    let mut r = nettrace::TraceReader::new(bytes).unwrap();
    let mut evs = Vec::new();
    let mut ours = Vec::new();
    while let Ok(Some(e)) = r.next_event() {
        let row = (
            e.provider().to_string(),
            e.event_id(),
            e.thread_id,
            e.timestamp,
            e.payload.to_vec(),
        );
        if e.capture_thread_id == Some(CAPTURE_THREAD) {
            ours.push((
                row.0,
                row.1,
                row.2,
                row.3,
                row.4,
                e.stack_id,
                e.stack.ips().collect(),
            ));
        } else {
            evs.push(row);
        }
    }
    let s = r.stats();
    (evs, s.dropped_events, s.ended_cleanly, ours)
}

fn splice(trace: &[u8], cuts: &[usize], ts: u64) -> (Vec<u8>, u64) {
    let mut s = Splicer::new(Vec::new());
    // Queued before any runtime byte: written after the first block boundary.
    s.push(
        ts,
        Injected::SamplerInfo {
            interval_ms: 20,
            source: "schedstat".into(),
        },
    );
    let mut at = 0;
    let mut k = 0u64;
    for &c in cuts {
        let end = (at + c).min(trace.len());
        s.write_runtime(&trace[at..end]).unwrap();
        at = end;
        k += 1;
        s.push(ts + k, Injected::Tick);
        s.push(
            ts + k,
            Injected::ThreadCpu {
                tid: 77,
                cpu_ns: k * 1000,
                runqueue_ns: Some(k * 10),
                state: b'R',
            },
        );
        if k == 1 {
            s.push(
                ts,
                Injected::ThreadName {
                    tid: 77,
                    name: "worker (1)".into(),
                },
            );
            s.push(
                ts,
                Injected::ModuleMap {
                    start: 0x1000,
                    end: 0x2000,
                    offset: 0,
                    path: "/x/libcoreclr.so".into(),
                },
            );
        }
        if k == 2 {
            // Drained late: stamped before what was written already.
            s.push(
                ts,
                Injected::KernelSample {
                    tid: 77,
                    stack: vec![0x1010, 0x1F00],
                    managed: vec![0x1F00],
                },
            );
        }
        s.inject().unwrap();
        if at >= trace.len() {
            break;
        }
    }
    if at < trace.len() {
        s.write_runtime(&trace[at..]).unwrap();
    }
    let spliced = s.spliced;
    (s.into_inner().unwrap(), spliced)
}

fn check(name: &str, cuts: &[usize]) {
    let trace = data(name);
    let (orig, dropped, clean, _) = read_all(&trace);
    let first_ts = orig.first().map(|e| e.3).unwrap_or(0).max(0) as u64;
    let (out, spliced) = splice(&trace, cuts, first_ts);
    let (theirs, dropped2, clean2, ours) = read_all(&out);
    assert_eq!(
        theirs.len(),
        orig.len(),
        "{name}: runtime events lost or added"
    );
    assert!(theirs == orig, "{name}: runtime events changed");
    assert_eq!(dropped2, dropped, "{name}: splicing made events look lost");
    assert_eq!(clean2, clean, "{name}");
    // Every event pushed, and each kernel stack once before the sample that uses it.
    let stacks: Vec<_> = ours
        .iter()
        .filter(|e| e.0 == "clrspy" && e.1 == 16)
        .collect();
    assert_eq!((ours.len() - stacks.len()) as u64, spliced, "{name}");
    // On no thread (other tools' sample views must not count them as a thread's samples),
    // but for the kernel's samples: those are the thread's samples.
    let samples: Vec<_> = ours
        .iter()
        .filter(|e| e.0 == clr_events::SAMPLE_PROFILER_PROVIDER)
        .collect();
    assert!(
        ours.iter()
            .filter(|e| e.0 != clr_events::SAMPLE_PROFILER_PROVIDER)
            .all(|e| e.2 == NO_THREAD),
        "{name}: a clrspy event on a thread"
    );
    // One capture thread: its timestamps never decrease.
    assert!(
        ours.windows(2).all(|w| w[0].3 <= w[1].3),
        "{name}: clrspy's timestamps go back"
    );
    if let Some(k) = samples.first() {
        // The runtime's `ThreadSample`: on its thread, "managed" (on a CPU), its stack block
        // holding the managed frames, the whole stack in a `KernelStack` of the same id.
        assert_eq!(
            (k.1, k.2, k.4.as_slice()),
            (0, 77, &2u32.to_le_bytes()[..]),
            "{name}"
        );
        assert!(k.5 >= FIRST_STACK_ID, "{name}");
        assert_eq!(k.6, [0x1F00], "{name}");
        let whole = stacks
            .iter()
            .find(|s| clr_events::clrspy::KernelStack::parse(&s.4).unwrap().id == k.5)
            .expect("the sample's whole stack");
        let frames = clr_events::clrspy::KernelStack::parse(&whole.4)
            .unwrap()
            .frames;
        let ips: Vec<u64> = nettrace::Stack::new(frames, 8).ips().collect();
        assert_eq!(ips, [0x1010, 0x1F00], "{name}");
        assert!(whole.3 <= k.3, "{name}: the stack comes first");
    }
    if clean {
        assert!(spliced > 0, "{name}: nothing spliced into a whole trace");
        assert!(ours.iter().any(|e| e.1 == 3), "{name}: SamplerInfo missing");
    }
}

#[test]
fn real_traces_keep_every_event_and_gain_ours() {
    for name in [
        "perf.nettrace",
        "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
        "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
        "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
        "only_managed_samples.nettrace.zip",
    ] {
        check(name, &[65536; 10_000]);
        check(name, &[1, 3, 7, 100, 4095, 13, 64 * 1024 + 1, 2, 9999]);
        // Readings between chunks reach the file.
        let trace = data(name);
        if trace.len() > 200_000 {
            let (out, _) = splice(&trace, &[65536; 10_000], 0);
            let (_, _, _, got) = read_all(&out);
            assert!(
                got.iter().any(|e| e.0 == "clrspy"
                    && e.1 == 1
                    && e.4.get(..4) == Some(&77u32.to_le_bytes()[..])),
                "{name}"
            );
        }
    }
    // One byte at a time through a small trace.
    check(
        "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
        &[1; 1 << 20],
    );
}

#[test]
fn a_cut_trace_is_passed_through_up_to_the_cut() {
    let trace = data("trace.nettrace"); // truncated inside an event block
    let (out, _) = splice(&trace, &[50_000; 1000], 0);
    let (orig, _, _, _) = read_all(&trace);
    let (theirs, _, clean, _) = read_all(&out);
    assert!(!clean);
    assert_eq!(theirs, orig);
}

#[test]
fn an_event_queued_at_the_end_goes_in_before_the_end_marker() {
    let trace = data("perf.nettrace");
    let (orig, _, clean, _) = read_all(&trace);
    assert!(clean);
    let mut s = Splicer::new(Vec::new());
    s.write_runtime(&trace).unwrap();
    // After the runtime's end: an ordinary push is dropped, one for the end goes in.
    s.push(5, Injected::Tick);
    s.push_at_end(
        7,
        Injected::Trigger {
            trigger: "exit".into(),
            reason: "the target exited".into(),
            provider: String::new(),
            event: String::new(),
            event_timestamp: 0,
            after_ms: 0,
        },
    );
    s.end().unwrap();
    assert_eq!(s.spliced, 1);
    let (theirs, dropped, clean, ours) = read_all(&s.into_inner().unwrap());
    assert!(clean);
    assert_eq!(dropped, 0);
    assert_eq!(theirs.len(), orig.len());
    assert_eq!(ours.len(), 1);
    assert_eq!((ours[0].0.as_str(), ours[0].1), ("clrspy", 9));
}

#[test]
fn unrecognised_streams_pass_through_byte_for_byte() {
    for bytes in [
        b"!FastSerialization.1 not a nettrace".to_vec(),
        b"Nettrace\x00\x00\x00\x00\x06\x00\x00\x00".to_vec(), // V6 preamble
        vec![0u8; 1000],
    ] {
        let mut s = Splicer::new(Vec::new());
        s.write_runtime(&bytes).unwrap();
        s.push(1, Injected::Tick);
        s.inject().unwrap();
        assert_eq!(s.into_inner().unwrap(), bytes);
    }
}

#[test]
fn metadata_ids_stay_clear_of_the_runtimes() {
    let trace = data("perf.nettrace");
    let (out, _) = splice(&trace, &[8192; 1000], 0);
    let mut r = nettrace::TraceReader::new(&out).unwrap();
    let mut ours = 0;
    while let Ok(Some(e)) = r.next_event() {
        if e.capture_thread_id == Some(CAPTURE_THREAD) {
            ours += 1;
            assert!(e.metadata.metadata_id >= FIRST_METADATA_ID);
        } else {
            assert!(e.metadata.metadata_id < FIRST_METADATA_ID);
        }
    }
    assert!(ours > 0);
}

fn read_all_lenient(bytes: &[u8]) -> usize {
    match nettrace::TraceReader::new(bytes) {
        Ok(mut r) => {
            let mut n = 0;
            while let Ok(Some(_)) = r.next_event() {
                n += 1;
            }
            n
        }
        Err(_) => 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_chunking_of_a_real_trace(cuts in proptest::collection::vec(1usize..20_000, 1..200)) {
        check("perf.nettrace", &cuts);
    }

    #[test]
    fn damaged_input_never_panics(flips in proptest::collection::vec((0usize..370_000, any::<u8>()), 1..8)) {
        let mut trace = data("perf.nettrace");
        for (at, v) in flips {
            if at < trace.len() {
                trace[at] = v;
            }
        }
        let (out, _) = splice(&trace, &[4096; 200], 0);
        // Whatever came in went out (plus our objects); reading it never panics.
        prop_assert!(out.len() >= trace.len());
        let _ = read_all_lenient(&out);
    }
}
