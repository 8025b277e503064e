//! Writer → reader round trips: random traces written as V5 and V6 (compressed and plain
//! headers, 4- and 8-byte pointers) read back identically.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nettrace::{
    EventMetadata, EventRecord, FieldDesc, FieldType, Guid, TraceReader, TraceWriter, Value,
    WriteFormat, WriterOptions,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Ev {
    meta: usize,
    thread: u64,
    capture: u64,
    processor: u32,
    dt: u32,
    stack: Vec<u64>,
    payload: Vec<u8>,
    activity: [u8; 16],
    sorted: bool,
}

fn ev_strategy(n_meta: usize, ptr64: bool) -> impl Strategy<Value = Ev> {
    let ip = if ptr64 {
        any::<u64>().boxed()
    } else {
        any::<u32>().prop_map(u64::from).boxed()
    };
    (
        0..n_meta,
        prop_oneof![Just(1u64), Just(2u64), 3u64..1_000_000],
        prop_oneof![Just(1u64), 1u64..5],
        0u32..64,
        0u32..10_000,
        prop::collection::vec(ip, 0..20),
        prop::collection::vec(any::<u8>(), 0..200),
        prop_oneof![Just([0u8; 16]), any::<[u8; 16]>()],
        any::<bool>(),
    )
        .prop_map(
            |(meta, thread, capture, processor, dt, stack, payload, activity, sorted)| Ev {
                meta,
                thread,
                capture,
                processor,
                dt,
                stack,
                payload,
                activity,
                sorted,
            },
        )
}

fn metas() -> Vec<EventMetadata> {
    vec![
        EventMetadata {
            provider: "Microsoft-Windows-DotNETRuntime".into(),
            event_id: 1,
            version: 2,
            level: 4,
            keywords: 1,
            ..Default::default()
        },
        EventMetadata {
            provider: "My-Source".into(),
            event_id: 7,
            event_name: "Tick".into(),
            version: 0,
            level: 5,
            keywords: 0xf00,
            opcode: 1,
            fields: vec![
                FieldDesc {
                    name: "n".into(),
                    ty: FieldType::I32,
                },
                FieldDesc {
                    name: "s".into(),
                    ty: FieldType::String16,
                },
            ],
            ..Default::default()
        },
        EventMetadata {
            provider: "My-Source".into(),
            event_id: 8,
            event_name: "Arr".into(),
            level: 5,
            fields: vec![FieldDesc {
                name: "a".into(),
                ty: FieldType::Array(Box::new(FieldType::U16)),
            }],
            ..Default::default()
        },
    ]
}

fn roundtrip(events: &[Ev], format: WriteFormat, compressed: bool, ptr: u8, block_size: usize) {
    let metas = metas();
    let opts = WriterOptions {
        format,
        compressed_headers: compressed,
        pointer_size: ptr,
        block_size,
        blocks_per_sequence_point: 3,
        process_id: 4242,
        ..WriterOptions::default()
    };
    let mut w = TraceWriter::new(Vec::new(), opts).unwrap();
    let ids: Vec<u32> = metas.iter().map(|m| w.define(m).unwrap()).collect();
    let mut ts = 1_000i64;
    let mut times = Vec::new();
    for e in events {
        ts += i64::from(e.dt);
        times.push(ts);
        w.write(&EventRecord {
            metadata_id: ids[e.meta],
            thread_id: e.thread,
            capture_thread_id: e.capture,
            processor: e.processor,
            timestamp: ts,
            activity_id: Guid(e.activity),
            related_activity_id: Guid::ZERO,
            stack: &e.stack,
            payload: &e.payload,
            is_sorted: e.sorted,
        })
        .unwrap();
    }
    let bytes = w.finish().unwrap();
    let mut r = TraceReader::new(&bytes).unwrap();
    assert_eq!(r.header().pointer_size, ptr);
    assert_eq!(r.header().process_id, Some(4242));
    let mut i = 0;
    while let Some(ev) = r.next_event().unwrap() {
        let e = &events[i];
        let m = &metas[e.meta];
        assert_eq!(ev.provider(), m.provider);
        assert_eq!(ev.event_id(), m.event_id);
        assert_eq!(ev.metadata_name(), m.event_name);
        assert_eq!(ev.version(), m.version);
        assert_eq!(ev.level(), m.level);
        assert_eq!(ev.keywords(), m.keywords);
        assert_eq!(ev.opcode(), m.opcode);
        assert_eq!(ev.metadata.fields, m.fields);
        assert_eq!(ev.timestamp, times[i]);
        assert_eq!(ev.thread_id, e.thread);
        assert_eq!(ev.capture_thread_id, Some(e.capture));
        assert_eq!(ev.processor, Some(e.processor));
        assert_eq!(ev.is_sorted, e.sorted);
        assert_eq!(ev.activity_id, Guid(e.activity));
        assert_eq!(ev.payload, &e.payload[..]);
        assert_eq!(ev.stack.ips().collect::<Vec<_>>(), e.stack);
        i += 1;
    }
    assert_eq!(i, events.len());
    assert!(r.stats().ended_cleanly);
    assert_eq!(r.stats().dropped_events, 0);
    assert_eq!(r.stats().missing_stacks, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn v6_compressed(events in prop::collection::vec(ev_strategy(3, true), 0..300)) {
        roundtrip(&events, WriteFormat::V6, true, 8, 2048);
    }

    #[test]
    fn v6_plain_32bit(events in prop::collection::vec(ev_strategy(3, false), 0..200)) {
        roundtrip(&events, WriteFormat::V6, false, 4, 4096);
    }

    #[test]
    fn v5_compressed(events in prop::collection::vec(ev_strategy(3, true), 0..300)) {
        roundtrip(&events, WriteFormat::V5, true, 8, 1024);
    }

    #[test]
    fn v5_plain_32bit(events in prop::collection::vec(ev_strategy(3, false), 0..200)) {
        roundtrip(&events, WriteFormat::V5, false, 4, 4096);
    }
}

#[test]
fn self_describing_payload_decodes() {
    let metas = metas();
    for format in [WriteFormat::V5, WriteFormat::V6] {
        let mut w = TraceWriter::new(
            Vec::new(),
            WriterOptions {
                format,
                ..Default::default()
            },
        )
        .unwrap();
        let id = w.define(&metas[1]).unwrap();
        let arr = w.define(&metas[2]).unwrap();
        let mut p = 42i32.to_le_bytes().to_vec();
        for u in "hello".encode_utf16() {
            p.extend_from_slice(&u.to_le_bytes());
        }
        p.extend_from_slice(&[0, 0]);
        w.write(&EventRecord {
            metadata_id: id,
            thread_id: 1,
            capture_thread_id: 1,
            timestamp: 5,
            payload: &p,
            ..Default::default()
        })
        .unwrap();
        let a = [2u8, 0, 7, 0, 9, 0];
        w.write(&EventRecord {
            metadata_id: arr,
            thread_id: 1,
            capture_thread_id: 1,
            timestamp: 6,
            payload: &a,
            ..Default::default()
        })
        .unwrap();
        let bytes = w.finish().unwrap();
        let mut r = TraceReader::new(&bytes).unwrap();
        let ev = r.next_event().unwrap().unwrap();
        let d = ev.decode_with_metadata();
        assert_eq!(d.fields[0].value, Value::I32(42));
        assert_eq!(d.fields[1].value, Value::String("hello".into()));
        let ev = r.next_event().unwrap().unwrap();
        let d = ev.decode_with_metadata();
        assert_eq!(
            d.fields[0].value,
            Value::Array(vec![Value::U16(7), Value::U16(9)])
        );
        assert!(r.next_event().unwrap().is_none());
        if format == WriteFormat::V5 {
            assert!(r.stats().v5_metadata_tags);
        }
    }
}

#[test]
fn stream_reader_matches_slice_reader() {
    let events: Vec<Ev> = (0..5000u64)
        .map(|i| Ev {
            meta: (i % 3) as usize,
            thread: i % 7,
            capture: i % 7,
            processor: 0,
            dt: 3,
            stack: (0..(i % 9)).collect(),
            payload: vec![i as u8; (i % 50) as usize],
            activity: [0; 16],
            sorted: false,
        })
        .collect();
    for format in [WriteFormat::V5, WriteFormat::V6] {
        let metas = metas();
        let mut w = TraceWriter::new(
            Vec::new(),
            WriterOptions {
                format,
                block_size: 3000,
                ..Default::default()
            },
        )
        .unwrap();
        let ids: Vec<u32> = metas.iter().map(|m| w.define(m).unwrap()).collect();
        for (i, e) in events.iter().enumerate() {
            w.write(&EventRecord {
                metadata_id: ids[e.meta],
                thread_id: e.thread,
                capture_thread_id: e.capture,
                timestamp: i as i64,
                stack: &e.stack,
                payload: &e.payload,
                ..Default::default()
            })
            .unwrap();
        }
        let bytes = w.finish().unwrap();
        // A reader that hands out 7 bytes at a time, like a slow socket.
        struct Trickle<'a>(&'a [u8]);
        impl std::io::Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(7).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut s = nettrace::StreamReader::from_read(Trickle(&bytes)).unwrap();
        let mut r = TraceReader::new(&bytes).unwrap();
        let mut n = 0;
        loop {
            let a = r.next_event().unwrap().map(|e| {
                (
                    e.timestamp,
                    e.thread_id,
                    e.payload.to_vec(),
                    e.stack.ips().collect::<Vec<_>>(),
                )
            });
            let b = s.next_event().unwrap().map(|e| {
                (
                    e.timestamp,
                    e.thread_id,
                    e.payload.to_vec(),
                    e.stack.ips().collect::<Vec<_>>(),
                )
            });
            assert_eq!(a, b);
            if a.is_none() {
                break;
            }
            n += 1;
        }
        assert_eq!(n, events.len());
        assert!(s.stats().ended_cleanly);
    }
}

/// Stacks with ids of the caller's choosing (two runs of consecutive ids, far above the ones
/// the writer hands out) read back under those ids, beside interned ones, and a sequence point
/// ends them as it ends the writer's own.
#[test]
fn stacks_at_chosen_ids_read_back() {
    for format in [WriteFormat::V5, WriteFormat::V6] {
        let opts = WriterOptions {
            format,
            ..WriterOptions::default()
        };
        let mut w = TraceWriter::new(Vec::new(), opts).unwrap();
        let id = w.define(&metas()[0]).unwrap();
        let base = 0x4000_0000u32;
        let (a, b, c) = (
            vec![0x10u64, 0x20],
            vec![0x30u64],
            vec![0x40u64, 0x50, 0x60],
        );
        w.stacks_at(base, &[&a, &b]);
        w.stacks_at(base + 7, &[&c]);
        let rec = |ts: i64| EventRecord {
            metadata_id: id,
            thread_id: 5,
            capture_thread_id: 5,
            timestamp: ts,
            payload: &[1, 2, 3, 4],
            ..EventRecord::default()
        };
        w.write_with_stack_id(&rec(10), base + 1).unwrap();
        w.write_with_stack_id(&rec(11), base + 7).unwrap();
        w.write(&EventRecord {
            stack: &[0x99],
            ..rec(12)
        })
        .unwrap();
        w.write_with_stack_id(&rec(13), 0).unwrap();
        let bytes = w.finish().unwrap();
        let mut r = TraceReader::new(&bytes[..]).unwrap();
        let mut seen = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            seen.push((e.stack_id, e.stack.ips().collect::<Vec<u64>>()));
        }
        assert_eq!(
            seen,
            vec![
                (base + 1, b.clone()),
                (base + 7, c.clone()),
                (1, vec![0x99]),
                (0, vec![]),
            ],
            "{format:?}"
        );
    }
}
