//! The real traces in tests/data: every one reads completely (the truncated one up to the cut,
//! with a truncation report), and damaged copies never make the reader panic or hang.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use nettrace::{FormatVersion, TraceReader};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Loads a trace, unzipping `.zip` files (each holds one trace).
pub fn load(name: &str) -> Vec<u8> {
    let path = data_dir().join(name);
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

type Counts = BTreeMap<(String, u32, u8), u64>;

fn count(bytes: &[u8]) -> (Counts, Result<(), nettrace::Error>, nettrace::TraceStats) {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut counts = Counts::new();
    let res = r.for_each_event(|e| {
        *counts
            .entry((e.provider().to_string(), e.event_id(), e.version()))
            .or_default() += 1;
        true
    });
    (counts, res, r.stats().clone())
}

/// Counts per (provider, event id, version) that TraceEvent 4.0.0 reported for each trace.
fn expected() -> Expected {
    load_expected(&data_dir().join("expected-counts.json"))
}

#[test]
fn every_real_trace_reads_completely_and_matches_traceevent() {
    let expected = expected();
    for name in TRACES {
        let bytes = load(name);
        let (counts, res, stats) = count(&bytes);
        let total: u64 = counts.values().sum();
        assert_eq!(total, stats.events, "{name}");
        if *name == "trace.nettrace" {
            let e = res.expect_err("trace.nettrace is truncated");
            assert!(e.to_string().contains("truncated"), "{e}");
            assert!(!stats.ended_cleanly);
            assert!(stats.bytes_read > 4_000_000, "{}", stats.bytes_read);
        } else {
            res.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(stats.ended_cleanly, "{name}");
            assert_eq!(stats.bytes_read, bytes.len() as u64, "{name}");
        }
        let want = expected
            .get(*name)
            .unwrap_or_else(|| panic!("no expected counts for {name}"));
        for (key, n) in want {
            let got = counts.get(key).copied().unwrap_or(0);
            assert!(
                got == *n || (*name == "trace.nettrace" && got >= *n),
                "{name}: {key:?} TraceEvent counts {n}, we count {got}"
            );
        }
        for (key, n) in &counts {
            if !want.contains_key(key) {
                panic!("{name}: we count {n} of {key:?}, TraceEvent none");
            }
        }
    }
}

#[test]
fn headers_of_real_traces() {
    let b = load("perf.nettrace");
    let r = TraceReader::new(&b).unwrap();
    let h = r.header();
    assert_eq!(h.format, FormatVersion::NetTrace4);
    assert_eq!(h.pointer_size, 8);
    assert_eq!(h.process_id, Some(502_728));
    assert_eq!(h.cpu_count, Some(8));
    assert_eq!(h.ticks_per_second, 1_000_000_000);
    assert_eq!(h.sync_time_utc.year, 2024);

    let b = load("eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip");
    let (_, res, stats) = count(&b);
    res.unwrap();
    assert!(stats.v5_metadata_tags);
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Hands out a few bytes per read, like a slow socket.
struct Trickle<'a>(&'a [u8], usize);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Reads damaged bytes with the slice reader and the incremental reader: both must stop
/// without panicking, after the same number of events.
fn read_damaged(bytes: &[u8]) -> u64 {
    let n = read_damaged_slice(bytes);
    let mut m = 0u64;
    let stream_err = match nettrace::StreamReader::from_read(Trickle(bytes, 4093)) {
        Ok(mut r) => loop {
            match r.next_event() {
                Ok(Some(_)) => m += 1,
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        },
        Err(e) => Some(e),
    };
    let slice_err = TraceReader::new(bytes).err().or_else(|| {
        let mut r = TraceReader::new(bytes).ok()?;
        loop {
            match r.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(e) => return Some(e),
            }
        }
    });
    assert_eq!(n, m, "slice and stream readers disagree on event count");
    // Both stop with an error or both end cleanly. (The errors may differ: the incremental reader
    // refuses a block declared larger than it will buffer before seeing that the data is short.)
    assert_eq!(
        slice_err.is_some(),
        stream_err.is_some(),
        "{slice_err:?} vs {stream_err:?}"
    );
    n
}

fn read_damaged_slice(bytes: &[u8]) -> u64 {
    let Ok(mut r) = TraceReader::new(bytes) else {
        return 0;
    };
    let mut n = 0u64;
    loop {
        match r.next_event() {
            Ok(Some(e)) => {
                // Touch everything an event exposes.
                let _ = (
                    e.provider(),
                    e.version(),
                    e.timestamp_ns(),
                    e.stack.ips().count(),
                );
                let _ = e.decode_with_metadata();
                n += 1;
                assert!(n <= bytes.len() as u64, "more events than bytes: a loop");
            }
            Ok(None) => break,
            Err(_) => {
                // Stopped for good.
                assert!(matches!(r.next_event(), Ok(None)));
                break;
            }
        }
    }
    n
}

#[test]
fn damaged_real_traces_never_panic_or_hang() {
    let traces: Vec<Vec<u8>> = [
        "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
        "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
        "only_managed_samples.nettrace.zip",
        "perf.nettrace",
    ]
    .iter()
    .map(|n| load(n))
    .collect();
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut cases = 0;
    for round in 0..600 {
        let orig = &traces[round % traces.len()];
        let mut b = orig.clone();
        match rng.below(4) {
            0 => {
                // flip a few bytes
                for _ in 0..1 + rng.below(8) {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
            }
            1 => {
                let i = rng.below(b.len());
                let n = 1 + rng.below(16);
                for k in 0..n {
                    b.insert(i, (rng.next() >> (k % 8)) as u8);
                }
            }
            2 => {
                let i = rng.below(b.len());
                let n = (1 + rng.below(64)).min(b.len() - i);
                b.drain(i..i + n);
            }
            _ => {
                let i = rng.below(b.len());
                b.truncate(i);
            }
        }
        read_damaged(&b);
        cases += 1;
    }
    // Every truncation point of the small trace, and a sweep over the large ones.
    let small = &traces[1];
    for cut in 0..small.len() {
        read_damaged(&small[..cut]);
        cases += 1;
    }
    let big = &traces[3];
    for cut in (0..big.len()).step_by(997) {
        let full = read_damaged(&big[..cut]);
        cases += 1;
        let _ = full;
    }
    assert!(cases > 1500);
}

#[test]
fn truncation_keeps_every_complete_event() {
    // Cutting a trace anywhere yields a prefix of the events of the whole trace.
    let b = load("only_managed_samples.nettrace.zip");
    let all = read_damaged(&b);
    let mut last = 0;
    for cut in (1000..b.len()).step_by(b.len() / 50) {
        let n = read_damaged(&b[..cut]);
        assert!(n >= last, "cut {cut}: {n} < {last}");
        assert!(n <= all);
        last = n;
    }
}

type Expected = BTreeMap<String, BTreeMap<(String, u32, u8), u64>>;

/// Reads `{"<trace>": {"per_event": [{"provider", "event_id", "version", "count"}, ...]}, ...}`.
fn load_expected(path: &std::path::Path) -> Expected {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (make it with bench/compare.sh --update-expected)",
            path.display()
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Expected::new();
    for (trace, body) in v.as_object().unwrap() {
        let m = out.entry(trace.clone()).or_default();
        for e in body["per_event"].as_array().unwrap() {
            m.insert(
                (
                    e["provider"].as_str().unwrap().to_string(),
                    e["event_id"].as_u64().unwrap() as u32,
                    e["version"].as_u64().unwrap() as u8,
                ),
                e["count"].as_u64().unwrap(),
            );
        }
    }
    out
}

/// Each event's (metadata id, version, has a stack, timestamp, offset) by the full event path
/// and by the lean pass, and the statistics after each: the same on every real trace.
#[test]
fn the_lean_pass_matches_the_event_path_on_real_traces() {
    let mut with_stacks = 0;
    for name in TRACES {
        let bytes = load(name);
        let mut r = TraceReader::new(&bytes).unwrap();
        let mut full = Vec::new();
        let res_full = r.for_each_event(|e| {
            let fact = (e.metadata.metadata_id, e.version(), !e.stack.is_empty());
            full.push((fact, e.timestamp, e.offset));
            true
        });
        let stats_full = r.stats().clone();
        let mut r = TraceReader::new(&bytes).unwrap();
        let mut lean = Vec::new();
        let res_lean = r.for_each_brief(|b, _| {
            lean.push((
                (b.metadata_id, b.version, b.has_stack),
                b.timestamp,
                b.offset,
            ));
            nettrace::BriefAnswer::Done
        });
        assert_eq!(lean, full, "{name}");
        assert_eq!(r.stats(), &stats_full, "{name}");
        assert_eq!(res_lean.err(), res_full.err(), "{name}");
        with_stacks += full.iter().filter(|f| f.0 .2).count();
    }
    assert!(with_stacks > 0, "some real trace has events with stacks");
}
