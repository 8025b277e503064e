//! Unit tests of the readers and the decoder, on traces built with the crate's writer.

use std::io::{self, Read};

use super::*;
use crate::scan::{Item, Scanner};
use crate::testutil::{sample_events, sample_trace, Flavor};
use crate::FormatVersion;

/// (provider, id, thread, timestamp, stack, payload) of every event; the error that ended it.
type Seen = (
    Vec<(String, u32, u64, i64, Vec<u64>, Vec<u8>)>,
    Option<Error>,
);

fn read<S: ByteSource>(r: Result<Reader<S>>) -> Seen {
    let mut r = match r {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut out = Vec::new();
    loop {
        match r.next_event() {
            Ok(Some(e)) => out.push((
                e.provider().to_string(),
                e.event_id(),
                e.thread_id,
                e.timestamp,
                e.stack.ips().collect(),
                e.payload.to_vec(),
            )),
            Ok(None) => return (out, None),
            Err(e) => {
                assert_eq!(r.error(), Some(&e));
                assert!(matches!(r.next_event(), Ok(None)), "reading stops for good");
                return (out, Some(e));
            }
        }
    }
}

/// Hands out `n` bytes per read, with an interruption now and then.
struct Trickle<'a> {
    data: &'a [u8],
    n: usize,
    calls: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls.is_multiple_of(7) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let k = self.n.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

/// Fails after `ok` bytes.
struct Broken<'a> {
    data: &'a [u8],
    ok: usize,
}

impl Read for Broken<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::other("disk on fire"));
        }
        let k = self.ok.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        self.ok -= k;
        Ok(k)
    }
}

#[test]
fn header_fields_are_the_writers() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let r = TraceReader::new(&bytes).unwrap();
        let h = r.header();
        let o = flavor.options();
        assert_eq!(h.format, flavor.format());
        assert_eq!(h.pointer_size, o.pointer_size);
        assert_eq!(h.ticks_per_second, o.ticks_per_second);
        assert_eq!(h.sync_time_ticks, o.sync_time_ticks);
        assert_eq!(h.sync_time_utc, o.sync_time_utc);
        assert_eq!(h.process_id, Some(4242));
        assert_eq!(h.cpu_count, Some(3));
        assert_eq!(h.sampling_interval_ns, Some(1_000_000));
        if flavor.format() == FormatVersion::NetTrace6 {
            assert_eq!(h.trace_object_version, 0);
            assert!(h
                .key_values
                .contains(&("ProcessId".to_string(), "4242".to_string())));
        } else {
            assert_eq!(h.trace_object_version, 4);
            assert!(h.key_values.is_empty());
        }
        assert_eq!(h.clock().ns_since_start(500 + 10_000_000), 1_000_000_000);
    }
}

#[test]
fn every_flavor_reads_back_the_same_events() {
    let want: Vec<_> = sample_events()
        .into_iter()
        .map(|(m, thread, ts, stack, payload)| {
            (
                "Test-Provider".to_string(),
                m as u32 + 1,
                thread,
                ts,
                stack,
                payload,
            )
        })
        .collect();
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (got, err) = read(TraceReader::new(&bytes));
        assert_eq!(err, None, "{flavor:?}");
        assert_eq!(got, want, "{flavor:?}");
        let r = {
            let mut r = TraceReader::new(&bytes).unwrap();
            while r.next_event().unwrap().is_some() {}
            r
        };
        let s = r.stats();
        assert!(s.ended_cleanly);
        assert_eq!(s.bytes_read, bytes.len() as u64);
        assert_eq!(s.dropped_events, 0);
    }
}

#[test]
fn the_stream_reader_reads_what_the_slice_reader_reads_in_any_pieces() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let want = read(TraceReader::new(&bytes));
        for n in [1, 2, 3, 5, 64, 1000] {
            let src = Trickle {
                data: &bytes,
                n,
                calls: 0,
            };
            assert_eq!(read(StreamReader::from_read(src)), want, "{flavor:?} {n}");
        }
    }
}

#[test]
fn a_cut_trace_yields_a_prefix_then_a_truncation_error() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (all, _) = read(TraceReader::new(&bytes));
        for cut in 0..bytes.len() {
            let part = &bytes[..cut];
            let (got, err) = read(TraceReader::new(part));
            let err = err.unwrap_or_else(|| panic!("{flavor:?}: no error at cut {cut}"));
            assert!(err.is_truncation(), "{flavor:?} cut {cut}: {err}");
            assert!(err.offset <= cut as u64, "{flavor:?} cut {cut}: {err}");
            assert_eq!(got[..], all[..got.len()], "{flavor:?} cut {cut}");
            let streamed = read(StreamReader::from_read(part));
            assert_eq!(streamed.0, got, "{flavor:?} cut {cut}");
            assert!(streamed.1.is_some_and(|e| e.is_truncation()));
        }
    }
}

#[test]
fn a_read_error_keeps_its_source() {
    let bytes = sample_trace(Flavor::V6Compressed);
    let src = Broken {
        data: &bytes,
        ok: 200,
    };
    let (_, err) = read(StreamReader::from_read(src));
    let err = err.unwrap();
    assert_eq!(err.kind, ErrorKind::Io(io::ErrorKind::Other));
    assert_eq!(err.offset, 200);
    let source = std::error::Error::source(&err).unwrap();
    assert_eq!(source.to_string(), "disk on fire");
    assert!(err.to_string().contains("disk on fire"), "{err}");
}

/// The first event block of a trace.
fn first_event_block(bytes: &[u8]) -> crate::scan::Block {
    let mut sc = Scanner::new();
    let mut input = bytes;
    while !input.is_empty() {
        let step = sc.feed(input).unwrap();
        input = &input[step.consumed..];
        if let Some(Item::Block(b)) = step.item {
            if b.is_event() {
                return b;
            }
        }
    }
    panic!("no event block");
}

#[test]
fn a_bad_block_header_size_is_named_with_its_bounds() {
    let bytes = sample_trace(Flavor::V5Compressed);
    let b = first_event_block(&bytes);
    let mut bad = bytes.clone();
    let p = b.payload_offset as usize;
    bad[p..p + 2].copy_from_slice(&2u16.to_le_bytes());
    let (_, err) = read(TraceReader::new(&bad));
    let err = err.unwrap();
    assert_eq!(err.offset, b.payload_offset);
    assert_eq!(err.block, Some(BlockKind::Event));
    assert_eq!(
        err.kind,
        ErrorKind::SizeOutOfRange {
            what: "block header size",
            found: 2,
            min: 4,
            max: b.payload_len,
        }
    );
}

#[test]
fn an_event_without_metadata_id_is_an_invalid_value() {
    let bytes = sample_trace(Flavor::V5Plain);
    let b = first_event_block(&bytes);
    let p = b.payload_offset as usize;
    let header_size = u16::from_le_bytes([bytes[p], bytes[p + 1]]) as usize;
    let ev = p + header_size;
    let mut bad = bytes.clone();
    // Plain V5 event: size (u32), then metadata id (u32).
    bad[ev + 4..ev + 8].copy_from_slice(&0u32.to_le_bytes());
    let (got, err) = read(TraceReader::new(&bad));
    assert!(got.is_empty());
    let err = err.unwrap();
    assert_eq!(err.offset, ev as u64);
    assert!(matches!(err.kind, ErrorKind::InvalidValue { found: 0, .. }));
}

#[test]
fn damaged_traces_never_panic() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let mut seed = 5u64;
        for _ in 0..300 {
            let mut bad = bytes.clone();
            for _ in 0..2 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let at = (seed >> 33) as usize % bad.len();
                bad[at] ^= 1 << ((seed >> 8) % 8);
            }
            // Both stop with an error or both end cleanly (the incremental reader refuses a
            // damaged block size over its memory limit where the slice reader salvages).
            let (a, ea) = read(TraceReader::new(&bad));
            let (b, eb) = read(StreamReader::from_read(&bad[..]));
            assert_eq!(ea.is_some(), eb.is_some());
            if ea.is_none() {
                assert_eq!(a, b);
            }
        }
    }
}

#[test]
fn metadata_keys_name_one_row_and_are_never_reused() {
    use std::collections::HashMap;
    let bytes = sample_trace(Flavor::ALL[0]);
    let mut seen_keys: Vec<HashMap<u32, u64>> = Vec::new();
    for _ in 0..2 {
        let mut per_id: HashMap<u32, u64> = HashMap::new();
        let mut r = TraceReader::new(&bytes).unwrap();
        r.for_each_event(|ev| {
            let key = ev.metadata_key();
            assert_ne!(key, 0, "every sample event has metadata");
            assert_eq!(*per_id.entry(ev.metadata.metadata_id).or_insert(key), key);
            true
        })
        .unwrap();
        let mut keys: Vec<u64> = per_id.values().copied().collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), per_id.len(), "one key per row");
        seen_keys.push(per_id);
    }
    // A second reader of the same bytes gets keys of its own.
    assert!(seen_keys[0]
        .values()
        .all(|k| !seen_keys[1].values().any(|j| j == k)));
}

/// Each event's brief as the full event path sees it, and the statistics after the pass.
type Briefs = (
    Vec<(u32, u64, u8, bool, i64, u64)>,
    TraceStats,
    Option<Error>,
);

fn briefs_of_events(bytes: &[u8]) -> Briefs {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut out = Vec::new();
    let res = r.for_each_event(|e| {
        out.push((
            e.metadata.metadata_id,
            e.metadata_key(),
            e.version(),
            !e.stack.is_empty(),
            e.timestamp,
            e.offset,
        ));
        true
    });
    (out, r.stats().clone(), res.err())
}

/// The lean pass; asks for the whole event of every `every`-th one (0: never).
fn briefs_of_lean<S: ByteSource>(mut r: Reader<S>, every: usize) -> Briefs {
    let mut out = Vec::new();
    let res = r.for_each_brief(|b, ev| {
        if every != 0 && out.len() % every == 0 {
            match ev {
                None => return BriefAnswer::NeedEvent,
                Some(ev) => assert_eq!(ev.offset, b.offset),
            }
        }
        out.push((
            b.metadata_id,
            b.metadata_key,
            b.version,
            b.has_stack,
            b.timestamp,
            b.offset,
        ));
        BriefAnswer::Done
    });
    (out, r.stats().clone(), res.err())
}

#[test]
fn the_lean_pass_sees_what_the_event_path_sees() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let cut = &bytes[..bytes.len() * 2 / 3];
        for data in [&bytes[..], cut] {
            let want = briefs_of_events(data);
            assert!(!want.0.is_empty(), "{flavor:?}");
            assert!(want.0.iter().any(|b| b.3) && want.0.iter().any(|b| !b.3));
            for every in [0, 1, 3] {
                // Metadata keys differ per reader: compare them as "defined or not".
                let norm = |b: Briefs| {
                    let rows = b.0.into_iter().map(|r| (r.0, r.1 != 0, r.2, r.3, r.4, r.5));
                    (rows.collect::<Vec<_>>(), b.1, b.2)
                };
                let lean = briefs_of_lean(TraceReader::new(data).unwrap(), every);
                assert_eq!(norm(lean), norm(want.clone()), "{flavor:?} every {every}");
                let stream = StreamReader::from_read(Trickle {
                    data,
                    n: 97,
                    calls: 0,
                })
                .unwrap();
                let lean = briefs_of_lean(stream, every);
                assert_eq!(norm(lean), norm(want.clone()), "{flavor:?} stream");
            }
        }
    }
}

#[test]
fn the_lean_pass_stops_when_asked() {
    let bytes = sample_trace(Flavor::V6Compressed);
    let mut r = TraceReader::new(&bytes).unwrap();
    let mut n = 0;
    r.for_each_brief(|_, _| {
        n += 1;
        if n == 5 {
            BriefAnswer::Stop
        } else {
            BriefAnswer::Done
        }
    })
    .unwrap();
    assert_eq!(n, 5);
    assert_eq!(r.stats().events, 5);
}

/// Every event's header fields, stack and payload, the error and the statistics, read with
/// the compressed-header fast path on or off (metadata keys differ between two reads: ids are
/// compared).
fn read_all(bytes: &[u8], checked_only: bool) -> (Vec<String>, Option<Error>, TraceStats) {
    let mut r = match TraceReader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e), TraceStats::default()),
    };
    r.dec.test_checked_only = checked_only;
    let mut out = Vec::new();
    let res = r.for_each_event(|e| {
        out.push(format!(
            "{} {} {:?} {} {} {} {:?} {} {} {:?} {:?} {:?} {:?} {:?}",
            e.metadata.metadata_id,
            e.offset,
            e.processor,
            e.sequence_number,
            e.thread_index,
            e.timestamp,
            e.capture_thread_id,
            e.stack_id,
            e.is_sorted,
            e.activity_id,
            e.related_activity_id,
            e.labels.map(|l| l.version),
            e.stack.ips().collect::<Vec<_>>(),
            e.payload,
        ));
        true
    });
    (out, res.err(), r.stats().clone())
}

#[test]
fn the_fast_header_path_reads_what_the_checked_path_reads() {
    let mut events = 0;
    for flavor in [Flavor::V5Compressed, Flavor::V6Compressed] {
        // Blocks of 1 KB: most events start 128 bytes or more before their block's end.
        let mut options = flavor.options();
        options.block_size = 1024;
        let mut w = crate::TraceWriter::new(Vec::new(), options).unwrap();
        let ids: Vec<u32> = (0..3)
            .map(|i| {
                let m = EventMetadata {
                    provider: "P".into(),
                    event_id: i,
                    event_name: format!("E{i}"),
                    ..EventMetadata::default()
                };
                w.define(&m).unwrap()
            })
            .collect();
        for i in 0..400u64 {
            let stack: Vec<u64> = (0..i % 4).map(|d| 0x7f00_0000 + d * (i % 7)).collect();
            // Some payloads longer than the fast path's window, so a cut can end one.
            let payload = vec![i as u8; (i % 9 * 29) as usize];
            w.write(&crate::EventRecord {
                metadata_id: ids[(i % 3) as usize],
                thread_id: 1 + i % 2,
                capture_thread_id: 1 + i % 2,
                processor: (i % 3) as u32,
                activity_id: crate::Guid([(i / 5) as u8; 16]),
                timestamp: 1_000 + (i as i64) * (1 + (i as i64 % 5) * 300),
                stack: &stack,
                payload: &payload,
                ..crate::EventRecord::default()
            })
            .unwrap();
        }
        let bytes = w.finish().unwrap();
        let whole = read_all(&bytes, false);
        assert_eq!(whole, read_all(&bytes, true));
        events += whole.0.len();
        // Damaged copies: bytes set to values that end, continue or overflow an integer; a
        // ten-byte integer ending in 1, 2 or 0x7f; cut anywhere.
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed >> 16
        };
        for round in 0..1200 {
            let mut bad = bytes.clone();
            let at = next() as usize % bad.len();
            match round % 3 {
                0 => {
                    for _ in 0..3 {
                        let at = next() as usize % bad.len();
                        let r = next();
                        bad[at] = [0x00, 0x01, 0x7f, 0x80, 0xff, r as u8][(r >> 8) as usize % 6];
                    }
                }
                1 => {
                    let end = (at + 10).min(bad.len());
                    bad[at..end].fill(0xff);
                    bad[end - 1] = [0x01, 0x02, 0x7f][next() as usize % 3];
                }
                _ => bad.truncate(at),
            }
            assert_eq!(read_all(&bad, false), read_all(&bad, true));
        }
    }
    assert_eq!(events, 800);
}
