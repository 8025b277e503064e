//! Unit tests of the scanner, on traces built with the crate's writer.

use super::*;
use crate::framing::{next_frame, stream_start, Frame};
use crate::testutil::{sample_trace, Flavor};
use crate::TraceReader;

/// Scans `bytes` fed in pieces of the given sizes (cycled); returns the items and the error.
fn scan_in(bytes: &[u8], sizes: &[usize]) -> (Vec<Item>, Option<Error>, Scanner) {
    let mut sc = Scanner::new();
    let mut items = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < bytes.len() {
        let n = sizes[i % sizes.len()].max(1);
        i += 1;
        let mut input = &bytes[at..(at + n).min(bytes.len())];
        at += input.len();
        while !input.is_empty() {
            match sc.feed(input) {
                Ok(step) => {
                    assert!(step.consumed > 0, "no progress at {}", sc.offset());
                    assert!(step.consumed <= input.len());
                    input = &input[step.consumed..];
                    items.extend(step.item);
                }
                Err(e) => return (items, Some(e), sc),
            }
        }
    }
    (items, None, sc)
}

/// The blocks as the readers' framing sees them, for comparison.
fn frames(bytes: &[u8]) -> Vec<(BlockKind, u64, u64, u64)> {
    let start = stream_start(bytes).unwrap().unwrap();
    let mut at = start.consumed;
    let mut out = Vec::new();
    loop {
        match next_frame(start.framing, &bytes[at..], at as u64).unwrap() {
            Frame::Block {
                kind,
                start: s,
                len,
                total,
                ..
            } => {
                out.push((kind, (at + s) as u64, len as u64, (at + total) as u64));
                at += total;
            }
            Frame::End { total } => {
                out.push((BlockKind::EndOfStream, at as u64, 0, (at + total) as u64));
                return out;
            }
            Frame::NeedMore { .. } => panic!("whole trace is short"),
        }
    }
}

fn as_frames(items: &[Item]) -> Vec<(BlockKind, u64, u64, u64)> {
    items
        .iter()
        .map(|i| match i {
            Item::Header { trace, .. } | Item::Block(trace) => (
                trace.kind,
                trace.payload_offset,
                trace.payload_len,
                trace.end,
            ),
            Item::End { offset, end } => (BlockKind::EndOfStream, *offset, 0, *end),
        })
        .collect()
}

#[test]
fn items_match_the_readers_framing_and_tile_the_stream() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (items, err, sc) = scan_in(&bytes, &[bytes.len()]);
        assert_eq!(err, None, "{flavor:?}");
        assert!(sc.is_ended());
        assert_eq!(as_frames(&items), frames(&bytes), "{flavor:?}");
        // Items follow each other with no gap, from 0 to the last byte.
        let mut at = 0;
        for it in &items {
            assert_eq!(it.offset(), at, "{flavor:?}");
            at = it.end();
        }
        assert_eq!(at, bytes.len() as u64);
        let Item::Header { format, trace } = items[0] else {
            panic!("header first");
        };
        assert_eq!(format, flavor.format());
        assert_eq!(trace.kind, BlockKind::Trace);
        assert!(matches!(items.last(), Some(Item::End { .. })));
        let kinds: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                Item::Block(b) => Some(b.kind),
                _ => None,
            })
            .collect();
        for k in [
            BlockKind::Metadata,
            BlockKind::Stack,
            BlockKind::Event,
            BlockKind::SequencePoint,
        ] {
            assert!(kinds.contains(&k), "{flavor:?}: no {k}");
        }
        for it in &items {
            if let Item::Block(b) = it {
                assert_eq!(b.is_metadata(), b.kind == BlockKind::Metadata);
                assert_eq!(b.is_event(), b.kind == BlockKind::Event);
                assert_eq!(b.is_stack(), b.kind == BlockKind::Stack);
                assert_eq!(b.is_sequence_point(), b.kind == BlockKind::SequencePoint);
                assert!(b.payload_range().end <= b.end && b.offset < b.payload_offset);
                assert_eq!(b.len(), b.end - b.offset);
                if flavor.format() != FormatVersion::NetTrace6 {
                    // The payload is 4-byte aligned; the end tag follows it.
                    assert_eq!(b.payload_offset % 4, 0);
                    assert_eq!(bytes[b.end as usize - 1], 6);
                    assert_eq!(b.end, b.payload_range().end + 1);
                } else {
                    assert_eq!(b.end, b.payload_range().end);
                }
            }
        }
        let h = sc.header().unwrap();
        assert_eq!(h.pointer_size, 8);
        assert_eq!(h.process_id, Some(4242));
    }
}

#[test]
fn every_chunking_gives_the_same_items() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (want, _, _) = scan_in(&bytes, &[bytes.len()]);
        for n in 1..=70 {
            let (got, err, _) = scan_in(&bytes, &[n]);
            assert_eq!(err, None);
            assert_eq!(got, want, "{flavor:?} in pieces of {n}");
        }
        let mut seed = 7u64;
        for _ in 0..50 {
            let sizes: Vec<usize> = (0..64)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    1 + (seed >> 33) as usize % 300
                })
                .collect();
            let (got, err, _) = scan_in(&bytes, &sizes);
            assert_eq!(err, None);
            assert_eq!(got, want, "{flavor:?} in pieces {sizes:?}");
        }
    }
}

#[test]
fn a_cut_stream_asks_for_more_and_repairs_at_the_last_whole_block() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (all, _, _) = scan_in(&bytes, &[bytes.len()]);
        for cut in 0..bytes.len() {
            let (items, err, sc) = scan_in(&bytes[..cut], &[cut.max(1)]);
            assert_eq!(err, None, "{flavor:?} cut at {cut}");
            assert!(!sc.is_ended());
            assert_eq!(sc.offset(), cut as u64);
            assert_eq!(items[..], all[..items.len()], "{flavor:?} cut at {cut}");
            if let Some(b) = sc.current() {
                assert!(b.offset < cut as u64 && cut as u64 <= b.end);
            }
            // Repair: keep whole blocks, end the stream.
            let Some(last) = items.last() else {
                assert!((cut as u64) < all[0].end(), "no header after {cut} bytes");
                continue;
            };
            let mut fixed = bytes[..last.end() as usize].to_vec();
            fixed.extend_from_slice(end_of_stream(sc.format().unwrap()));
            let mut r = TraceReader::new(&fixed).unwrap();
            while let Some(_ev) = r.next_event().unwrap() {}
            assert!(r.stats().ended_cleanly, "{flavor:?} repaired at {cut}");
        }
    }
}

#[test]
fn malformed_bytes_give_an_error_with_the_offset_and_it_sticks() {
    let bytes = sample_trace(Flavor::V5Compressed);
    let (items, _, _) = scan_in(&bytes, &[bytes.len()]);
    let Some(Item::Block(b)) = items.get(2) else {
        panic!("no second block");
    };
    let mut bad = bytes.clone();
    bad[b.end as usize - 1] = 9; // its end tag
    for n in [1, 5, bad.len()] {
        let (got, err, mut sc) = scan_in(&bad, &[n]);
        let err = err.expect("an error");
        assert_eq!(err.offset, b.end - 1);
        assert_eq!(err.block, Some(b.kind));
        assert!(matches!(
            err.kind,
            ErrorKind::UnexpectedTag { found: 9, .. }
        ));
        assert_eq!(got.len(), 2);
        assert_eq!(sc.feed(&[6]), Err(err.clone()));
        assert_eq!(sc.feed(&[]), Err(err));
    }
    // Not a trace at all.
    let (_, err, _) = scan_in(b"hello, world", &[3]);
    assert_eq!(
        err.map(|e| (e.offset, e.kind)),
        Some((0, ErrorKind::NotATrace))
    );
    // Bytes after the end.
    let mut more = bytes.clone();
    more.push(0);
    let (_, err, _) = scan_in(&more, &[more.len()]);
    let err = err.unwrap();
    assert_eq!(err.kind, ErrorKind::DataAfterEnd);
    assert_eq!(err.offset, bytes.len() as u64);
    // An unknown object type names itself.
    let mut odd = bytes.clone();
    let at = b.offset as usize + 15; // first letter of the type name
    odd[at] = b'X';
    let (_, err, _) = scan_in(&odd, &[4]);
    assert!(matches!(
        err.unwrap().kind,
        ErrorKind::UnknownObjectType { ref name } if name.starts_with('X')
    ));
}

#[test]
fn damaged_bytes_never_panic() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let mut seed = 99u64;
        for _ in 0..300 {
            let mut bad = bytes.clone();
            for _ in 0..3 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let at = (seed >> 33) as usize % bad.len();
                bad[at] = (seed >> 8) as u8;
            }
            for n in [1, 13, bad.len()] {
                let _ = scan_in(&bad, &[n]);
            }
        }
    }
}

#[test]
fn a_scanner_between_blocks_sees_the_same_blocks() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (items, _, sc) = scan_in(&bytes, &[bytes.len()]);
        let format = sc.format().unwrap();
        for from in 1..items.len() {
            let at = items[from].offset();
            let mut tail = Scanner::between_blocks(format, at);
            assert!(tail.at_boundary());
            let mut input = &bytes[at as usize..];
            let mut got = Vec::new();
            while !input.is_empty() {
                let step = tail.feed(input).unwrap();
                input = &input[step.consumed..];
                got.extend(step.item);
            }
            assert_eq!(got[..], items[from..]);
            assert_eq!(tail.header(), None);
        }
    }
}

#[test]
fn boundaries_and_held_bytes() {
    let bytes = sample_trace(Flavor::V5Plain);
    let mut sc = Scanner::new();
    assert!(!sc.at_boundary());
    let mut max_held = 0;
    let mut boundaries = 0;
    for i in 0..bytes.len() {
        let step = sc.feed(&bytes[i..=i]).unwrap();
        assert_eq!(step.consumed, 1);
        max_held = max_held.max(sc.held());
        let ended_a_block = matches!(step.item, Some(Item::Block(_) | Item::Header { .. }));
        assert_eq!(sc.at_boundary(), ended_a_block, "at {i}");
        boundaries += usize::from(ended_a_block);
    }
    assert!(sc.is_ended() && !sc.at_boundary());
    assert!(boundaries > 4);
    // Only a header is ever held: the Trace object with the stream start is the longest.
    // The Trace object (begin tag, type object naming "Trace", 48 bytes of fields, end tag)
    // is the longest thing held; its last byte completes it.
    assert_eq!(max_held, 1 + 20 + 48 + 1 - 1);
}

#[test]
fn end_of_stream_bytes_are_what_the_writer_ends_with() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let tail = end_of_stream(flavor.format());
        assert!(bytes.ends_with(tail), "{flavor:?}");
    }
}

#[test]
fn a_ring_of_the_blocks_after_a_sequence_point_reads_cleanly() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let (items, _, sc) = scan_in(&bytes, &[bytes.len()]);
        let (all, _) = events_of(&bytes);
        let sps: Vec<usize> = (0..items.len())
            .filter(|&i| matches!(items[i], Item::Block(b) if b.is_sequence_point()))
            .collect();
        assert!(sps.len() >= 2, "{flavor:?}: {} sequence points", sps.len());
        for &sp in &sps {
            // Header, every persistent block, everything after the sequence point, the end.
            let mut ring = bytes[..items[0].end() as usize].to_vec();
            let mut kept_events = 0;
            for (i, it) in items.iter().enumerate().skip(1) {
                let Item::Block(b) = it else { continue };
                if i > sp || b.is_persistent() {
                    if i > sp && b.is_event() {
                        kept_events += 1;
                    }
                    ring.extend_from_slice(&bytes[b.offset as usize..b.end as usize]);
                }
            }
            ring.extend_from_slice(end_of_stream(sc.format().unwrap()));
            let (got, stats) = events_of(&ring);
            assert!(stats.ended_cleanly, "{flavor:?} after block {sp}");
            assert!(all.ends_with(&got), "{flavor:?} after block {sp}");
            assert_eq!(
                got.is_empty(),
                kept_events == 0,
                "{flavor:?} after block {sp}"
            );
        }
    }
}

/// (thread, timestamp, stack) of every event, and the stats.
fn events_of(bytes: &[u8]) -> (Vec<(u64, i64, Vec<u64>)>, crate::TraceStats) {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push((e.thread_id, e.timestamp, e.stack.ips().collect()));
    }
    (out, r.stats().clone())
}

#[test]
fn a_v6_end_block_with_data_is_skipped_up_to_a_limit() {
    let mut bytes = sample_trace(Flavor::V6Compressed);
    let at = bytes.len() - 4;
    bytes.truncate(at);
    bytes.extend_from_slice(&3u32.to_le_bytes());
    bytes.extend_from_slice(&[7, 7, 7]);
    for n in [1, 2, bytes.len()] {
        let (items, err, sc) = scan_in(&bytes, &[n]);
        assert_eq!(err, None);
        assert!(sc.is_ended());
        assert_eq!(
            items.last(),
            Some(&Item::End {
                offset: at as u64,
                end: bytes.len() as u64
            })
        );
    }
    let mut big = bytes[..at].to_vec();
    big.extend_from_slice(&(MAX_END_MARKER as u32).to_le_bytes());
    big.resize(at + 4 + MAX_END_MARKER, 0);
    for n in [1, 1000, big.len()] {
        let (_, err, _) = scan_in(&big, &[n]);
        let err = err.unwrap();
        assert_eq!(err.offset, at as u64);
        assert!(matches!(err.kind, ErrorKind::LimitExceeded { .. }));
    }
}
