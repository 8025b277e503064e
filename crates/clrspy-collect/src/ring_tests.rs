use super::*;
use crate::sink::ByteSink;

/// A test trace, cut after its last whole block and ended (trace.nettrace stops inside one).
fn data(name: &str) -> Vec<u8> {
    let mut d = std::fs::read(format!(
        "{}/../nettrace/tests/data/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut s = Scanner::new();
    let mut end = 0;
    let mut ended = false;
    let _ = s.feed_all(&d, |i| {
        end = i.end();
        ended |= matches!(i, Item::End { .. });
    });
    if !ended {
        d.truncate(end as usize);
        d.extend_from_slice(nettrace::end_of_stream(s.format().unwrap()));
    }
    d
}

/// (provider, event id, timestamp, thread, stack) of every event.
type Ev = (String, u32, i64, u64, Vec<u64>);

/// The events of a trace; `whole`: it must read to its end without error (the test data's
/// trace.nettrace is cut in its last block).
fn events_of(bytes: &[u8], whole: bool) -> Vec<Ev> {
    let mut r = nettrace::TraceReader::new(bytes).unwrap();
    let mut out = Vec::new();
    loop {
        let e = match r.next_event() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(_) if !whole => break,
            Err(e) => panic!("{e}"),
        };
        if ring_note(&e).is_some() {
            // The ring's own note (checked by `ring`), not one of the stream's events.
            continue;
        }
        out.push((
            e.provider().to_string(),
            e.event_id(),
            e.timestamp,
            e.thread_id,
            e.stack.ips().collect(),
        ));
    }
    assert!(!whole || r.stats().ended_cleanly);
    out
}

/// clrspy's `Ring` event, if `e` is one.
fn ring_note(e: &nettrace::Event<'_>) -> Option<clr_events::clrspy::Ring> {
    use clr_events::clrspy::{ids, Ring, PROVIDER};
    (e.provider() == PROVIDER && e.event_id() == ids::RING).then(|| Ring::parse(e.payload).unwrap())
}

/// The `Ring` events of a trace.
fn ring_notes(bytes: &[u8]) -> Vec<clr_events::clrspy::Ring> {
    let mut r = nettrace::TraceReader::new(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.extend(ring_note(&e));
    }
    out
}

fn events(bytes: &[u8]) -> Vec<Ev> {
    events_of(bytes, true)
}

fn original(bytes: &[u8]) -> Vec<Ev> {
    events_of(bytes, true)
}

/// The largest block of a trace, and its kinds counted.
fn blocks(bytes: &[u8]) -> (u64, u64) {
    let mut s = Scanner::new();
    let (mut max, mut sps) = (0, 0);
    s.feed_all(bytes, |i| {
        if let Item::Block(b) = i {
            max = max.max(b.len());
            sps += u64::from(b.is_sequence_point());
        }
    })
    .unwrap();
    (max, sps)
}

/// `bytes` through a ring of `budget` bytes, written `piece` bytes at a time: the file, the
/// ring's statistics; checks the `Ring` event the file ends with (a stream cut inside a block
/// has none: nothing can be spliced after it; nor has V6, which clrspy does not splice into).
fn ring(bytes: &[u8], budget: u64, piece: usize, tag: &str) -> (Vec<u8>, RingStats) {
    ring_stopped(bytes, budget, piece, None, tag)
}

/// As [`ring`], the sink told the runtime was asked to stop once `stop_at` bytes were written.
fn ring_stopped(
    bytes: &[u8],
    budget: u64,
    piece: usize,
    stop_at: Option<usize>,
    tag: &str,
) -> (Vec<u8>, RingStats) {
    let dir = std::env::temp_dir().join(format!("clrspy-ring-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.nettrace");
    let mut sink = RingSink::create(&path, budget).unwrap();
    for (i, p) in bytes.chunks(piece).enumerate() {
        if stop_at.is_some_and(|at| i * piece >= at) {
            sink.stopping();
        }
        sink.write(p).unwrap();
        sink.flush().unwrap();
        assert!(!sink.wants_splices() || sink.bytes() <= budget.max(sink.bytes()));
    }
    let report = sink.finish().unwrap();
    let out = std::fs::read(&path).unwrap();
    assert_eq!(report.bytes, out.len() as u64);
    assert!(!dir.join("t.nettrace.ring").exists(), "chunks left behind");
    let stats = sink.stats();
    let _ = std::fs::remove_dir_all(&dir);
    let mut sc = Scanner::new();
    let _ = sc.feed_all(bytes, |_| {});
    let v6 = sc.format() == Some(nettrace::FormatVersion::NetTrace6);
    if report.closed_by_clrspy.is_none() && !out.is_empty() && !v6 {
        // The last event says what the ring was given and dropped (before its own block).
        let notes = ring_notes(&out);
        assert_eq!(notes.len(), 1, "{tag}: {notes:?}");
        let n = notes[0];
        // Only the runtime's bytes came before it here, all but the end marker (held back to
        // go after it).
        let mut end = bytes.len() as u64;
        let _ = Scanner::new().feed_all(bytes, |i| {
            if matches!(i, Item::End { .. }) {
                end = i.offset();
            }
        });
        assert_eq!(n.received_bytes, end, "{tag}");
        assert_eq!(n.budget_bytes, budget, "{tag}");
        assert!(
            n.received_bytes <= stats.received && n.received_bytes > 0,
            "{tag}"
        );
        assert!(n.dropped_blocks <= stats.dropped_blocks, "{tag}");
        assert_eq!(n.dropped_blocks == 0, stats.dropped_blocks == 0, "{tag}");
    }
    (out, stats)
}

/// `sub`'s events are a subsequence of `all`'s, ending with the same event.
fn is_tail_subsequence(sub: &[Ev], all: &[Ev]) -> bool {
    let mut it = all.iter();
    sub.iter().all(|e| it.any(|a| a == e)) && sub.last() == all.last()
}

#[test]
fn buffer_sizes_are_whole_megabytes_from_1mb_to_64gb() {
    assert_eq!(parse_buffer_size("256"), Ok(256));
    assert_eq!(parse_buffer_size("1GB"), Ok(1024));
    assert_eq!(parse_buffer_size("64GB"), Ok(1 << 16));
    for bad in ["0", "1.5", "512KB", "65GB", "lots"] {
        let e = parse_buffer_size(bad).unwrap_err();
        assert!(e.contains(bad), "{bad}: {e}");
    }
}

#[test]
fn sizes_parse() {
    assert_eq!(parse_ring_size("64MB"), Ok(64 << 20));
    assert_eq!(parse_ring_size("100000"), Ok(100_000));
    assert_eq!(parse_ring_size("64KB"), Ok(64 << 10));
    for bad in ["", "MB", "12XB", "1KB", "65535", "-5MB", "1e30GB"] {
        assert!(parse_ring_size(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_ring_larger_than_the_trace_keeps_every_event() {
    for name in ["perf.nettrace", "trace.nettrace"] {
        let d = data(name);
        let (out, stats) = ring(&d, 1 << 30, 4096, "big");
        let (a, b) = (events(&out), original(&d));
        let first_diff = a.iter().zip(&b).position(|(x, y)| x != y);
        assert!(
            a.len() == b.len() && first_diff.is_none(),
            "{name}: {} vs {} events, first difference at {first_diff:?}",
            a.len(),
            b.len()
        );
        assert_eq!(stats.dropped_blocks, 0);
        // The stream, then the ring's own note (checked by `ring`).
        assert!(stats.received > d.len() as u64);
    }
}

#[test]
fn a_small_ring_keeps_the_newest_events_with_their_stacks() {
    let d = data("trace.nettrace");
    let all = original(&d);
    let (max_block, sps) = blocks(&d);
    assert!(sps > 1, "the test trace needs sequence points");
    for budget in [2_000_000u64, 600_000, 150_000] {
        let (out, stats) = ring(&d, budget, 65_536, &budget.to_string());
        let kept = events(&out);
        assert!(stats.dropped_blocks > 0, "budget {budget}");
        assert!(kept.len() < all.len(), "budget {budget}");
        assert!(
            is_tail_subsequence(&kept, &all),
            "budget {budget}: events differ from the original's (stacks lost?)"
        );
        assert!(
            kept.iter().any(|e| !e.4.is_empty()),
            "budget {budget}: no stacks kept"
        );
        eprintln!(
            "budget {budget}: {} bytes, {} of {} events, max block {max_block}",
            out.len(),
            kept.len(),
            all.len()
        );
    }
}

#[test]
fn what_arrives_after_the_stop_is_kept_beyond_the_budget() {
    // The rundown comes after the stop: a ring must not drop the window it kept for it.
    let d = data("trace.nettrace");
    let (max_block, _) = blocks(&d);
    let budget = 150_000;
    let piece = 10_000;
    let at = d.len() * 6 / 10 / piece * piece;
    let (plain, plain_stats) = ring(&d, budget, piece, "nostop");
    let (out, stats) = ring_stopped(&d, budget, piece, Some(at), "stop");
    // Kept to the minimum before the stop: what remains is what came after it.
    let (after, _) = ring_stopped(&d, 1, piece, Some(at), "stop-tiny");
    let (all, kept, after) = (original(&d), events(&out), events(&after));
    assert!(is_tail_subsequence(&kept, &all));
    assert!(!after.is_empty());
    assert_eq!(&kept[kept.len() - after.len()..], &after[..]);
    // The window before the stop is the budget's worth, as without a stop.
    assert!(kept.len() > after.len() && kept.len() > events(&plain).len());
    assert!(plain.len() as u64 <= budget + max_block);
    assert!(out.len() as u64 > budget + max_block);
    assert!(
        stats.after_stop_bytes >= (d.len() - at) as u64 && stats.after_stop_bytes < d.len() as u64,
        "{stats:?}"
    );
    assert!(stats.dropped_blocks > 0 && stats.dropped_blocks < plain_stats.dropped_blocks);
    assert_eq!(plain_stats.after_stop_bytes, 0);
}

/// A trace of `n` events of provider `App`, then `rundown` events of the rundown provider
/// (whose metadata the writer defines at its first event, as the runtime does at a session's
/// end), each event with a 200-byte payload.
fn app_then_rundown(format: nettrace::WriteFormat, n: usize, rundown: usize) -> Vec<u8> {
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};
    let options = WriterOptions {
        format,
        ..WriterOptions::default()
    };
    let mut w = TraceWriter::new(Vec::new(), options).unwrap();
    let app = w
        .define(&EventMetadata {
            provider: "App".into(),
            event_id: 1,
            ..EventMetadata::default()
        })
        .unwrap();
    let payload = vec![7u8; 200];
    let mut ts = 0i64;
    let write = |w: &mut TraceWriter<Vec<u8>>, m: u32, ts: i64| {
        w.write(&EventRecord {
            metadata_id: m,
            thread_id: 1,
            capture_thread_id: 1,
            timestamp: ts,
            payload: &payload,
            ..EventRecord::default()
        })
        .unwrap();
    };
    for _ in 0..n {
        ts += 1000;
        write(&mut w, app, ts);
    }
    let rd = w
        .define(&EventMetadata {
            provider: "Microsoft-Windows-DotNETRuntimeRundown".into(),
            event_id: 144,
            ..EventMetadata::default()
        })
        .unwrap();
    for _ in 0..rundown {
        ts += 1000;
        write(&mut w, rd, ts);
    }
    w.finish().unwrap()
}

#[test]
fn a_rundown_the_target_started_is_kept_too() {
    // A target that exits ends its session itself and nobody tells the ring to stop; the
    // rundown provider's metadata, defined when its first event comes, says it.
    // The runtime's NetTrace 4 framing names providers in UTF-16, V6 in UTF-8.
    for format in [nettrace::WriteFormat::V5, nettrace::WriteFormat::V6] {
        let d = app_then_rundown(format, 20_000, 3_000);
        let is_rundown = |e: &Ev| e.0 == "Microsoft-Windows-DotNETRuntimeRundown";
        let all = original(&d);
        let (out, stats) = ring(&d, 300_000, 8192, "self-ended");
        let kept = events(&out);
        assert!(
            stats.dropped_blocks > 0 && stats.after_stop_bytes > 0,
            "{format:?}: {stats:?}"
        );
        assert_eq!(kept.iter().filter(|e| is_rundown(e)).count(), 3_000);
        assert!(is_tail_subsequence(&kept, &all));
        // The window before it is the budget's worth, as without a rundown: about 300 KB of
        // 200-byte events, not the few the rundown would have left.
        let app = kept.iter().filter(|e| !is_rundown(e)).count();
        assert!(app > 1_000, "{format:?}: {app} app events kept");
    }
}

#[test]
fn the_bound_is_the_budget_plus_one_block_when_stacks_fit() {
    let d = data("trace.nettrace");
    let (max_block, _) = blocks(&d);
    let budget = 1_000_000;
    let (out, _) = ring(&d, budget, 100_000, "bound");
    assert!(
        out.len() as u64 <= budget + max_block,
        "{} > {budget} + {max_block}",
        out.len()
    );
}

#[test]
fn a_stream_that_never_started_leaves_an_empty_file() {
    let (out, _) = ring(b"Nettr", 100_000, 2, "empty");
    assert!(out.is_empty());
}

#[test]
fn a_cut_stream_is_closed_after_its_last_whole_block() {
    let d = data("trace.nettrace");
    let cut = &d[..d.len() * 2 / 3];
    let (out, _) = ring(cut, 500_000, 1000, "cut");
    let mut r = nettrace::TraceReader::new(&out).unwrap();
    let mut n = 0;
    while r.next_event().unwrap().is_some() {
        n += 1;
    }
    assert!(n > 0);
    assert!(r.stats().ended_cleanly);
}

/// A trace written by nettrace's writer in `format`: small blocks, a sequence point every 4,
/// events on 3 threads with 5 distinct stacks (interned once per sequence-point interval), and
/// on a fourth thread during the first 300 only.
fn written(format: nettrace::WriteFormat) -> Vec<u8> {
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};
    let opts = WriterOptions {
        format,
        block_size: 2048,
        blocks_per_sequence_point: 4,
        ..WriterOptions::default()
    };
    let mut w = TraceWriter::new(Vec::new(), opts).unwrap();
    let id = w
        .define(&EventMetadata {
            provider: "Ring-Test".into(),
            event_id: 1,
            event_name: "Tick".into(),
            ..EventMetadata::default()
        })
        .unwrap();
    let stacks: Vec<Vec<u64>> = (0..5u64)
        .map(|k| (0..=k).map(|f| 0x7f00_0000 + k * 0x100 + f).collect())
        .collect();
    for i in 0..20_000u64 {
        let payload = i.to_le_bytes();
        if i < 300 {
            // A thread busy only at the start: sequence points name it ever after.
            w.write(&EventRecord {
                metadata_id: id,
                thread_id: 999,
                capture_thread_id: 999,
                timestamp: i as i64 * 1000,
                payload: &payload,
                stack: &stacks[0],
                ..EventRecord::default()
            })
            .unwrap();
        }
        w.write(&EventRecord {
            metadata_id: id,
            thread_id: 100 + i % 3,
            timestamp: i as i64 * 1000,
            payload: &payload,
            stack: &stacks[(i % 5) as usize],
            ..EventRecord::default()
        })
        .unwrap();
    }
    w.finish().unwrap()
}

/// The reader's statistics after reading every event.
fn read_stats(bytes: &[u8]) -> nettrace::TraceStats {
    let mut r = nettrace::TraceReader::new(bytes).unwrap();
    while r.next_event().unwrap().is_some() {}
    r.stats().clone()
}

#[test]
fn both_framings_keep_stacks_across_sequence_points() {
    for format in [nettrace::WriteFormat::V5, nettrace::WriteFormat::V6] {
        let d = written(format);
        assert_eq!(read_stats(&d).dropped_events, 0, "{format:?}");
        let all = events(&d);
        let (_, sps) = blocks(&d);
        assert!(sps > 10, "{format:?}: {sps} sequence points");
        // Budgets that leave the front anywhere inside an interval.
        for budget in (20_000..60_000).step_by(997) {
            let (out, stats) = ring(&d, budget, 777, &format!("{format:?}-{budget}"));
            let kept = events(&out);
            let what = format!("{format:?}, budget {budget}");
            assert!(
                stats.dropped_blocks > 0 && kept.len() < all.len() / 2,
                "{what}"
            );
            assert!(is_tail_subsequence(&kept, &all), "{what}");
            assert!(kept.iter().all(|e| !e.4.is_empty()), "{what}: a stack lost");
            // The gap the ring leaves (the early thread's events, named by the sequence
            // points kept) is at the trace's start: not a runtime loss.
            let st = read_stats(&out);
            assert!(st.dropped_events > 0, "{what}");
            assert_eq!(st.dropped_events, st.dropped_at_start, "{what}");
            assert!(out.len() as u64 <= budget + 2200, "{what}: {}", out.len());
        }
    }
}

/// The names clrspy spliced in early go with the oldest blocks; a ring that dropped them
/// writes them again at the end, so the kept window's threads keep their names and roles.
#[test]
fn a_ring_that_dropped_blocks_keeps_the_thread_names_and_inlinings() {
    use clr_events::clrspy::{ids, Inlined, ThreadName, PROVIDER};
    let d = data("trace.nettrace");
    let dir = std::env::temp_dir().join(format!("clrspy-ring-{}-names", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.nettrace");
    let mut sink = RingSink::create(&path, 150_000).unwrap();
    let (head, tail) = d.split_at(d.len() / 8);
    sink.write(head).unwrap();
    sink.splice(
        crate::procstat::monotonic_ns(),
        &Injected::ThreadName {
            tid: 77,
            name: ".NET Finalizer".into(),
        },
    );
    sink.splice(
        crate::procstat::monotonic_ns(),
        &Injected::Inlined {
            method: "dynamicClass.lambda_method3".into(),
            inlinee: "App.HomeController.Index".into(),
        },
    );
    sink.flush().unwrap();
    for p in tail.chunks(65_536) {
        sink.write(p).unwrap();
        sink.flush().unwrap();
    }
    sink.finish().unwrap();
    let out = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(sink.stats().dropped_blocks > 0);
    let mut r = nettrace::TraceReader::new(&out[..]).unwrap();
    let (mut names, mut inlined) = (Vec::new(), Vec::new());
    while let Some(e) = r.next_event().unwrap() {
        if e.provider() == PROVIDER && e.event_id() == ids::THREAD_NAME {
            let n = ThreadName::parse(e.payload).unwrap();
            names.push(n.name.to_string_lossy());
        }
        if e.provider() == PROVIDER && e.event_id() == ids::INLINED {
            inlined.push(Inlined::parse(e.payload).unwrap().inlinee.to_string_lossy());
        }
    }
    assert_eq!(names, [".NET Finalizer"]);
    assert_eq!(inlined, ["App.HomeController.Index"]);
}
