//! The framing scanner on the real traces in tests/data: fed in pieces of any size, its items
//! tile the file and agree with the reader; the truncated trace is repaired at its last whole
//! block into one that reads cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::PathBuf;

use nettrace::{end_of_stream, BlockKind, Item, Scanner, TraceReader};

fn load(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
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

/// Scans `bytes` in pieces whose sizes come from `next_size`.
fn scan(bytes: &[u8], mut next_size: impl FnMut() -> usize) -> (Vec<Item>, Scanner) {
    let mut sc = Scanner::new();
    let mut items = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + next_size().max(1)).min(bytes.len());
        let mut input = &bytes[at..end];
        at = end;
        while !input.is_empty() {
            let step = sc.feed(input).unwrap_or_else(|e| panic!("at {at}: {e}"));
            input = &input[step.consumed..];
            items.extend(step.item);
        }
    }
    (items, sc)
}

#[test]
fn items_tile_every_real_trace_in_any_pieces() {
    for name in TRACES {
        let bytes = load(name);
        let (items, sc) = scan(&bytes, || 64 * 1024);
        let mut at = 0;
        for it in &items {
            assert_eq!(it.offset(), at, "{name}");
            at = it.end();
        }
        let mut reader = TraceReader::new(&bytes).unwrap();
        while let Ok(Some(_)) = reader.next_event() {}
        assert_eq!(sc.header(), Some(reader.header()), "{name}");
        if reader.stats().ended_cleanly {
            assert!(sc.is_ended(), "{name}");
            assert_eq!(at, bytes.len() as u64, "{name}");
            assert_eq!(reader.stats().bytes_read, at, "{name}");
        } else {
            // The truncated trace: the scanner waits inside its last (event) block.
            let cur = sc.current().copied().expect("a block in progress");
            assert_eq!(cur.kind, BlockKind::Event, "{name}");
            assert_eq!(cur.offset, at, "{name}");
            assert!(cur.end > bytes.len() as u64, "{name}");
        }
        let mut seed = name.len() as u64;
        let (again, _) = scan(&bytes, || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            [1, 3, 17, 4096, 70_000][(seed >> 40) as usize % 5]
        });
        assert_eq!(again, items, "{name}");
    }
}

#[test]
fn the_truncated_trace_is_repaired_at_its_last_whole_block() {
    let bytes = load("trace.nettrace");
    let (items, sc) = scan(&bytes, || 1 << 20);
    let last = items.last().unwrap().end() as usize;
    let mut fixed = bytes[..last].to_vec();
    fixed.extend_from_slice(end_of_stream(sc.format().unwrap()));
    let mut r = TraceReader::new(&fixed).unwrap();
    let mut n = 0u64;
    while r.next_event().unwrap().is_some() {
        n += 1;
    }
    assert!(r.stats().ended_cleanly);
    // Everything but the cut block's events is kept.
    let mut orig = TraceReader::new(&bytes).unwrap();
    let mut all = 0u64;
    while let Ok(Some(_)) = orig.next_event() {
        all += 1;
    }
    assert!(n > 0 && n <= all, "{n} of {all}");
}

/// Scans in pieces of the given sizes (cycled); stops at the first error.
fn scan_result(bytes: &[u8], sizes: &[usize]) -> (Vec<Item>, Option<nettrace::Error>) {
    let mut sc = Scanner::new();
    let mut items = Vec::new();
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + n.max(1)).min(bytes.len());
        let mut input = &bytes[at..end];
        at = end;
        while !input.is_empty() {
            match sc.feed(input) {
                Ok(step) => {
                    input = &input[step.consumed..];
                    items.extend(step.item);
                }
                Err(e) => return (items, Some(e)),
            }
        }
    }
    (items, None)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Damaged or not, a trace scanned in any pieces gives the same items and the same error
    /// as scanned whole.
    #[test]
    fn pieces_do_not_change_what_is_found(
        flips in proptest::collection::vec((0usize..370_000, proptest::prelude::any::<u8>()), 0..6),
        sizes in proptest::collection::vec(1usize..5000, 1..50),
    ) {
        let mut bytes = load("perf.nettrace");
        for (at, v) in flips {
            if at < bytes.len() {
                bytes[at] = v;
            }
        }
        let whole = scan_result(&bytes, &[bytes.len()]);
        let pieces = scan_result(&bytes, &sizes);
        proptest::prop_assert_eq!(pieces, whole);
    }
}
