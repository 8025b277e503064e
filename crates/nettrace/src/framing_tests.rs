//! Unit tests of the framing functions, on traces built with the crate's writer.

use super::*;
use crate::scan::{Item, Scanner};
use crate::testutil::{sample_trace, Flavor};

fn items(bytes: &[u8]) -> Vec<Item> {
    let mut sc = Scanner::new();
    let mut input = bytes;
    let mut out = Vec::new();
    while !input.is_empty() {
        let step = sc.feed(input).unwrap();
        input = &input[step.consumed..];
        out.extend(step.item);
    }
    out
}

#[test]
fn stream_start_waits_for_the_whole_header_then_names_the_format() {
    for (flavor, consumed) in [(Flavor::V5Compressed, 32), (Flavor::V6Plain, 20)] {
        let bytes = sample_trace(flavor);
        for n in 0..consumed {
            assert!(stream_start(&bytes[..n]).unwrap().is_none(), "{n}");
        }
        let s = stream_start(&bytes[..consumed]).unwrap().unwrap();
        assert_eq!(s.consumed, consumed);
        assert_eq!(s.format(), flavor.format());
        assert!(!s.netperf);
    }
    // NetPerf: no magic.
    let mut np = 20u32.to_le_bytes().to_vec();
    np.extend_from_slice(FS_SIGNATURE);
    let s = stream_start(&np).unwrap().unwrap();
    assert_eq!((s.consumed, s.format()), (24, FormatVersion::NetPerf3));
}

#[test]
fn stream_start_rejects_junk_and_other_versions() {
    let e = stream_start(b"Nettracf").unwrap_err();
    assert_eq!((e.offset, e.kind), (0, ErrorKind::NotATrace));
    let e = stream_start(b"Nettrace\x14\0\0\0!FastSerialization.2").unwrap_err();
    assert_eq!((e.offset, e.kind), (8, ErrorKind::NotATrace));
    let mut v7 = b"Nettrace".to_vec();
    for x in [0u32, 7, 0] {
        v7.extend_from_slice(&x.to_le_bytes());
    }
    let e = stream_start(&v7).unwrap_err();
    assert_eq!((e.offset, e.kind), (12, ErrorKind::UnsupportedVersion(7)));
    assert_eq!(e.block, Some(BlockKind::StreamHeader));
}

#[test]
fn header_needs_are_exact_so_a_scanner_never_holds_payload_bytes() {
    for flavor in Flavor::ALL {
        let bytes = sample_trace(flavor);
        let framing = stream_start(&bytes).unwrap().unwrap().framing;
        for it in items(&bytes).iter().skip(1) {
            let (at, header_len) = match it {
                Item::Block(b) => (b.offset, b.payload_offset - b.offset),
                _ => (it.offset(), it.end() - it.offset()),
            };
            let at = at as usize;
            for p in 0..header_len as usize {
                let h = block_head(framing, &bytes[at..at + p], at as u64).unwrap();
                let Head::Need(n) = h else {
                    panic!("{flavor:?}: a header from {p} of {header_len} bytes: {h:?}");
                };
                assert!(n > p && n as u64 <= header_len, "{flavor:?}: {n} after {p}");
            }
        }
    }
}

#[test]
fn a_partial_block_reports_its_header() {
    let bytes = sample_trace(Flavor::V5Compressed);
    let all = items(&bytes);
    let Some(Item::Block(b)) = all.get(1) else {
        panic!("no block");
    };
    let at = b.offset as usize;
    let cut = &bytes[at..b.end as usize - 1];
    let f = next_frame(Framing::FastSerialization, cut, b.offset).unwrap();
    assert_eq!(
        f,
        Frame::NeedMore {
            needed: b.len() as usize,
            partial: Some((
                b.kind,
                (b.payload_offset - b.offset) as usize,
                b.payload_len as usize
            )),
        }
    );
    let whole = &bytes[at..b.end as usize];
    assert!(matches!(
        next_frame(Framing::FastSerialization, whole, b.offset).unwrap(),
        Frame::Block { kind, total, .. } if kind == b.kind && total as u64 == b.len()
    ));
}

#[test]
fn trace_fields_are_checked() {
    let bytes = sample_trace(Flavor::V5Plain);
    let all = items(&bytes);
    let Item::Header { trace, .. } = all[0] else {
        panic!("no header");
    };
    let start = stream_start(&bytes).unwrap().unwrap();
    let p = trace.payload_offset as usize;
    // Pointer size (after SYSTEMTIME and two i64).
    let mut bad = bytes.clone();
    bad[p + 32] = 5;
    let e = trace_block(&start, &bad[start.consumed..], start.consumed as u64).unwrap_err();
    assert_eq!(e.offset, trace.payload_offset + 32);
    assert_eq!(
        e.kind,
        ErrorKind::InvalidValue {
            what: "pointer size",
            found: 5,
            expected: "4 or 8"
        }
    );
    // A block before the Trace object.
    let Some(Item::Block(b)) = all.get(1) else {
        panic!("no block");
    };
    let e = trace_block(&start, &bytes[b.offset as usize..], b.offset).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TraceNotFirst { found: b.kind });
}
