//! Format corners with hand-built bytes: a NetPerf (v3) trace with inline metadata and stacks,
//! V6 blocks the writer does not produce (RemoveThread, unknown kinds), and V6 payload types.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nettrace::{
    BlockKind, EventMetadata, EventRecord, FieldDesc, FieldType, FormatVersion, TraceReader,
    TraceWriter, Value, WriterOptions,
};

fn utf16z(s: &str) -> Vec<u8> {
    let mut v: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    v.extend_from_slice(&[0, 0]);
    v
}

fn fs_type(name: &str, version: i32) -> Vec<u8> {
    let mut t = vec![4u8, 1];
    t.extend_from_slice(&version.to_le_bytes());
    t.extend_from_slice(&version.to_le_bytes());
    t.extend_from_slice(&(name.len() as u32).to_le_bytes());
    t.extend_from_slice(name.as_bytes());
    t.push(6);
    t
}

/// One NetPerf event blob: header, payload, inline stack; padded to 4 bytes.
fn v3_event(meta_id: u32, thread: u32, ts: i64, payload: &[u8], stack: &[u64]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&meta_id.to_le_bytes());
    body.extend_from_slice(&thread.to_le_bytes());
    body.extend_from_slice(&ts.to_le_bytes());
    body.extend_from_slice(&[0u8; 32]);
    body.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    body.extend_from_slice(payload);
    body.extend_from_slice(&((stack.len() * 8) as u32).to_le_bytes());
    for ip in stack {
        body.extend_from_slice(&ip.to_le_bytes());
    }
    while !(body.len() + 4).is_multiple_of(4) {
        body.push(0);
    }
    let mut out = (body.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn netperf() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&20u32.to_le_bytes());
    f.extend_from_slice(b"!FastSerialization.1");
    f.push(4);
    f.extend_from_slice(&fs_type("Microsoft.DotNet.Runtime.EventPipeFile", 3));
    for v in [2018u16, 6, 0, 1, 12, 0, 0, 0] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&100i64.to_le_bytes()); // sync ticks
    f.extend_from_slice(&10_000_000i64.to_le_bytes()); // 100 ns ticks
    for v in [8i32, 77, 4, 1_000_000] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.push(6);
    // Metadata for id 1 (inline, metadata id 0), then two events.
    let mut meta = Vec::new();
    meta.extend_from_slice(&1u32.to_le_bytes());
    meta.extend_from_slice(&utf16z("Old-Source"));
    meta.extend_from_slice(&5u32.to_le_bytes());
    meta.extend_from_slice(&utf16z("Hello"));
    meta.extend_from_slice(&0u64.to_le_bytes());
    meta.extend_from_slice(&0u32.to_le_bytes());
    meta.extend_from_slice(&4u32.to_le_bytes());
    meta.extend_from_slice(&1u32.to_le_bytes()); // one field
    meta.extend_from_slice(&9u32.to_le_bytes()); // Int32
    meta.extend_from_slice(&utf16z("n"));
    let mut events = v3_event(0, 0, 0, &meta, &[]);
    events.extend(v3_event(
        1,
        42,
        1100,
        &7i32.to_le_bytes(),
        &[0x1000, 0x2000],
    ));
    events.extend(v3_event(1, 43, 1200, &8i32.to_le_bytes(), &[]));
    f.push(4);
    f.extend_from_slice(&fs_type("EventBlock", 1));
    f.extend_from_slice(&(events.len() as u32).to_le_bytes());
    while !f.len().is_multiple_of(4) {
        f.push(0);
    }
    f.extend_from_slice(&events);
    f.push(6);
    f.push(1); // end of stream
    f
}

#[test]
fn netperf_v3_reads_with_inline_metadata_and_stacks() {
    let f = netperf();
    let mut r = TraceReader::new(&f).unwrap();
    assert_eq!(r.header().format, FormatVersion::NetPerf3);
    assert_eq!(r.header().process_id, Some(77));
    assert_eq!(r.header().cpu_count, Some(4));
    let e = r.next_event().unwrap().unwrap();
    assert_eq!(e.provider(), "Old-Source");
    assert_eq!(e.metadata_name(), "Hello");
    assert_eq!(e.thread_id, 42);
    assert_eq!(e.capture_thread_id, None);
    assert_eq!(e.timestamp_ns(), 100_000);
    assert_eq!(e.stack.ips().collect::<Vec<_>>(), vec![0x1000, 0x2000]);
    assert_eq!(e.decode_with_metadata().fields[0].value, Value::I32(7));
    let e = r.next_event().unwrap().unwrap();
    assert_eq!(e.thread_id, 43);
    assert!(e.stack.is_empty());
    assert!(r.next_event().unwrap().is_none());
    assert!(r.stats().ended_cleanly);
    assert_eq!(r.stats().events, 2);
    // Every cut of it is an error or a prefix, never a panic.
    for cut in 0..f.len() {
        if let Ok(mut r) = TraceReader::new(&f[..cut]) {
            while let Ok(Some(_)) = r.next_event() {}
        }
    }
}

#[test]
fn the_scanner_frames_netperf_one_byte_at_a_time() {
    let f = netperf();
    let mut sc = nettrace::Scanner::new();
    let mut items = Vec::new();
    for b in f.chunks(1) {
        let step = sc.feed(b).unwrap();
        assert_eq!(step.consumed, 1);
        items.extend(step.item);
    }
    assert_eq!(sc.format(), Some(FormatVersion::NetPerf3));
    assert_eq!(sc.header().and_then(|h| h.process_id), Some(77));
    let kinds: Vec<_> = items
        .iter()
        .map(|i| match i {
            nettrace::Item::Header { trace, .. } => (trace.kind, trace.version),
            nettrace::Item::Block(b) => (b.kind, b.version),
            _ => (BlockKind::EndOfStream, 0),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (BlockKind::Trace, 3),
            (BlockKind::Event, 1),
            (BlockKind::EndOfStream, 0)
        ]
    );
    assert_eq!(items[2].end(), f.len() as u64);
}

fn v6_with_one_event() -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
    let id = w
        .define(&EventMetadata {
            provider: "P".into(),
            event_id: 1,
            ..Default::default()
        })
        .unwrap();
    w.write(&EventRecord {
        metadata_id: id,
        thread_id: 9,
        capture_thread_id: 9,
        timestamp: 5,
        ..Default::default()
    })
    .unwrap();
    w.finish().unwrap()
}

fn v6_block(kind: u8, data: &[u8]) -> Vec<u8> {
    let mut b = ((data.len() as u32) | (u32::from(kind) << 24))
        .to_le_bytes()
        .to_vec();
    b.extend_from_slice(data);
    b
}

#[test]
fn v6_unknown_blocks_are_skipped_and_remove_thread_is_read() {
    let f = v6_with_one_event();
    // After the 20-byte stream header comes the Trace block: splice blocks in after it.
    let trace_len = u32::from_le_bytes([f[20], f[21], f[22], f[23]]) as usize & 0xff_ffff;
    let at = 20 + 4 + trace_len;
    let mut g = f[..at].to_vec();
    g.extend(v6_block(42, b"future data"));
    g.extend_from_slice(&f[at..]);
    let end = g.len() - 4; // before the end-of-stream block
    let mut h = g[..end].to_vec();
    h.extend(v6_block(7, &[1, 1])); // RemoveThread: index 1, sequence 1
    h.extend_from_slice(&g[end..]);
    let mut r = TraceReader::new(&h).unwrap();
    let e = r.next_event().unwrap().unwrap();
    assert_eq!(e.thread_id, 9);
    assert!(r.next_event().unwrap().is_none());
    assert_eq!(r.stats().unknown_blocks, 1);
    assert!(r.stats().ended_cleanly);
    assert_eq!(r.stats().dropped_events, 0);
}

#[test]
fn v6_bad_major_version_is_refused() {
    let mut f = v6_with_one_event();
    f[12] = 7;
    let e = TraceReader::new(&f).err().unwrap();
    assert_eq!(e.block, Some(BlockKind::StreamHeader));
    assert!(
        e.to_string().contains("unsupported trace format version 7"),
        "{e}"
    );
}

#[test]
fn v6_payload_types_decode() {
    let fields = vec![
        FieldDesc {
            name: "v".into(),
            ty: FieldType::VarInt,
        },
        FieldDesc {
            name: "u".into(),
            ty: FieldType::VarUInt,
        },
        FieldDesc {
            name: "fixed".into(),
            ty: FieldType::FixedArray(Box::new(FieldType::U16), 2),
        },
        FieldDesc {
            name: "c".into(),
            ty: FieldType::Char8,
        },
        FieldDesc {
            name: "rel".into(),
            ty: FieldType::RelLoc(Box::new(FieldType::U32)),
        },
        FieldDesc {
            name: "data".into(),
            ty: FieldType::DataLoc(Box::new(FieldType::U8)),
        },
    ];
    let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
    let id = w
        .define(&EventMetadata {
            provider: "V6".into(),
            event_id: 2,
            fields: fields.clone(),
            ..Default::default()
        })
        .unwrap();
    let mut p = vec![0x03]; // varint -2
    p.push(0x96);
    p.push(0x01); // varuint 150
    p.extend_from_slice(&[1, 0, 2, 0]);
    p.push(b'x');
    // rel: 8 bytes (two u32) located 8 bytes after the end of this field (offset 12 + 8 = 20)
    p.extend_from_slice(&((8u32 << 16) | 8).to_le_bytes());
    // data: 2 bytes at absolute payload offset 28
    p.extend_from_slice(&((2u32 << 16) | 28).to_le_bytes());
    p.extend_from_slice(&[0xaa; 4]); // gap
    p.extend_from_slice(&5u32.to_le_bytes());
    p.extend_from_slice(&6u32.to_le_bytes());
    assert_eq!(p.len(), 28);
    p.extend_from_slice(&[7, 8]);
    w.write(&EventRecord {
        metadata_id: id,
        thread_id: 1,
        capture_thread_id: 1,
        payload: &p,
        ..Default::default()
    })
    .unwrap();
    let bytes = w.finish().unwrap();
    let mut r = TraceReader::new(&bytes).unwrap();
    let e = r.next_event().unwrap().unwrap();
    assert_eq!(e.metadata.fields, fields);
    let d = e.decode_with_metadata();
    assert_eq!(d.error, None);
    let v: Vec<&Value> = d.fields.iter().map(|f| &f.value).collect();
    assert_eq!(v[0], &Value::I64(-2));
    assert_eq!(v[1], &Value::U64(150));
    assert_eq!(v[2], &Value::Array(vec![Value::U16(1), Value::U16(2)]));
    assert_eq!(v[3], &Value::Char('x'));
    assert_eq!(v[4], &Value::Array(vec![Value::U32(5), Value::U32(6)]));
    assert_eq!(v[5], &Value::Bytes(vec![7, 8]));
}

/// (provider, event id, thread, timestamp, stack, payload) of every event read before the
/// reader stops.
type Seen = (String, u32, u64, i64, Vec<u64>, Vec<u8>);
fn seen(bytes: &[u8]) -> Vec<Seen> {
    let mut out = Vec::new();
    let Ok(mut r) = TraceReader::new(bytes) else {
        return out;
    };
    let _ = r.for_each_event(|e| {
        out.push((
            e.provider().to_string(),
            e.event_id(),
            e.thread_id,
            e.timestamp,
            e.stack.ips().collect(),
            e.payload.to_vec(),
        ));
        true
    });
    out
}

/// `nettrace::repair` of `input` into a scratch file; the file's bytes.
fn repaired(input: &[u8], name: &str) -> (nettrace::Repair, Vec<u8>) {
    use std::io::{Read, Seek, SeekFrom};
    let path = std::env::temp_dir().join(format!("nettrace-{name}-{}", std::process::id()));
    let mut f = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let r = nettrace::repair(input, &mut f).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    (r, out)
}

#[test]
fn repair_converts_netperf_to_nettrace_keeping_every_event() {
    let f = netperf();
    let (r, out) = repaired(&f, "netperf-whole");
    assert!(r.converted && r.was_whole, "{r:?}");
    assert_eq!(r.format, Some(FormatVersion::NetPerf3));
    assert_eq!(r.output_format, Some(FormatVersion::NetTrace4));
    assert_eq!((r.events_converted, r.cut_at), (2, None));
    let rd = TraceReader::new(&out).unwrap();
    let (a, b) = (TraceReader::new(&f).unwrap(), rd);
    let (ha, hb) = (a.header(), b.header());
    assert_eq!(hb.format, FormatVersion::NetTrace4);
    assert_eq!(hb.sync_time_utc, ha.sync_time_utc);
    assert_eq!(hb.sync_time_ticks, ha.sync_time_ticks);
    assert_eq!(hb.ticks_per_second, ha.ticks_per_second);
    assert_eq!(hb.pointer_size, ha.pointer_size);
    assert_eq!(hb.process_id, ha.process_id);
    assert_eq!(hb.cpu_count, ha.cpu_count);
    assert_eq!(hb.sampling_interval_ns, ha.sampling_interval_ns);
    assert_eq!(seen(&out), seen(&f));
    let mut rd = TraceReader::new(&out).unwrap();
    let e = rd.next_event().unwrap().unwrap();
    assert_eq!(e.metadata_name(), "Hello");
    assert_eq!(e.decode_with_metadata().fields[0].value, Value::I32(7));
    while rd.next_event().unwrap().is_some() {}
    assert!(rd.stats().ended_cleanly);
    assert_eq!(rd.stats().dropped_events, 0);
}

#[test]
fn a_cut_netperf_is_converted_up_to_its_last_whole_event() {
    let f = netperf();
    let mut converted_any = false;
    let header_end = TraceReader::new(&f).unwrap().stats().bytes_read as usize;
    for cut in header_end..f.len() {
        let (r, out) = repaired(&f[..cut], "netperf-cut");
        assert!(r.converted && !r.was_whole, "cut at {cut}: {r:?}");
        let mut rd = TraceReader::new(&out).unwrap();
        while rd.next_event().unwrap().is_some() {}
        assert!(rd.stats().ended_cleanly, "cut at {cut}");
        assert_eq!(seen(&out), seen(&f[..cut]), "cut at {cut}");
        assert!(r.bytes_kept <= cut as u64, "cut at {cut}: {r:?}");
        // Something dropped, or only the end of stream was missing.
        let dropped = r.bytes_kept < cut as u64;
        assert_eq!(r.cut_at, dropped.then_some(r.bytes_kept), "cut at {cut}");
        converted_any |= r.events_converted > 0;
    }
    assert!(converted_any);
}
