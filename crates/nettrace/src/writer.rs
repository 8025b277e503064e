//! Writing NetTrace V5 (FastSerialization objects) and V6 (block headers) traces: metadata rows,
//! events with compressed headers, interned stacks, sequence points, V6 thread rows and label
//! lists. Used for round-trip tests and to build large benchmark inputs; TraceEvent reads what it
//! writes.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::metadata::{EventMetadata, FieldDesc, FieldType};
use crate::value::{Guid, SystemTime};

/// Which format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteFormat {
    /// NetTrace V5: FastSerialization objects, UTF-16 metadata (with V5 tags when needed).
    V5,
    /// NetTrace V6: block headers, thread and label-list blocks.
    V6,
}

/// Trace-wide facts to write.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// Format.
    pub format: WriteFormat,
    /// Session start (UTC).
    pub sync_time_utc: SystemTime,
    /// Clock value at `sync_time_utc`.
    pub sync_time_ticks: i64,
    /// Ticks per second.
    pub ticks_per_second: i64,
    /// Pointer size of stack addresses (4 or 8).
    pub pointer_size: u8,
    /// Process id.
    pub process_id: u32,
    /// Logical CPU count.
    pub cpu_count: u32,
    /// Expected sampling interval in ns.
    pub sampling_interval_ns: u32,
    /// Use compressed event headers (what the runtime writes). `false` writes the fixed layout.
    pub compressed_headers: bool,
    /// Event block size before it is flushed (bytes of event data).
    pub block_size: usize,
    /// Event blocks between sequence points.
    pub blocks_per_sequence_point: u32,
    /// The first metadata id [`TraceWriter::define`] hands out (ids count up from it). Events
    /// spliced into another trace choose ids far from that trace's own.
    pub first_metadata_id: u32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            format: WriteFormat::V6,
            sync_time_utc: SystemTime {
                year: 2026,
                month: 1,
                day_of_week: 4,
                day: 1,
                ..SystemTime::default()
            },
            sync_time_ticks: 0,
            ticks_per_second: 1_000_000_000,
            pointer_size: 8,
            process_id: 1,
            cpu_count: 1,
            sampling_interval_ns: 1_000_000,
            compressed_headers: true,
            block_size: 64 * 1024,
            blocks_per_sequence_point: 16,
            first_metadata_id: 1,
        }
    }
}

/// One event to write.
#[derive(Clone, Copy, Debug, Default)]
pub struct EventRecord<'a> {
    /// Metadata id returned by [`TraceWriter::define`].
    pub metadata_id: u32,
    /// OS thread the event describes.
    pub thread_id: u64,
    /// OS thread that captured it (usually `thread_id`).
    pub capture_thread_id: u64,
    /// Processor number.
    pub processor: u32,
    /// Timestamp in ticks. Must not decrease within a capture thread.
    pub timestamp: i64,
    /// Activity id.
    pub activity_id: Guid,
    /// Related activity id.
    pub related_activity_id: Guid,
    /// Stack, innermost frame first (empty for none).
    pub stack: &'a [u64],
    /// Payload bytes.
    pub payload: &'a [u8],
    /// The "sorted" hint.
    pub is_sorted: bool,
}

#[derive(Clone, Copy, Default)]
struct PrevHeader {
    metadata_id: u32,
    sequence: u32,
    capture_thread: u64,
    processor: u32,
    thread: u64,
    stack_id: u32,
    timestamp: i64,
    activity: Guid,
    related: Guid,
    label_list: u32,
    payload_size: u32,
}

/// Writes a trace to any `io::Write`. Call [`TraceWriter::finish`] to write the end marker.
pub struct TraceWriter<W: Write> {
    out: W,
    opts: WriterOptions,
    written: u64,
    next_metadata_id: u32,
    pending_metadata: Vec<Vec<u8>>,
    events: Vec<u8>,
    prev: PrevHeader,
    min_ts: i64,
    max_ts: i64,
    stacks: HashMap<Vec<u64>, u32>,
    pending_stacks: Vec<(u32, Vec<u64>)>,
    next_stack_id: u32,
    seq: HashMap<u64, u32>,
    thread_index: HashMap<u64, u64>,
    pending_threads: Vec<(u64, u64)>,
    labels: HashMap<(Guid, Guid), u32>,
    pending_labels: Vec<(u32, Guid, Guid)>,
    next_label: u32,
    blocks_since_sp: u32,
    last_ts: i64,
}

fn put_varu64(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn put_utf16z(out: &mut Vec<u8>, s: &str) {
    for u in s.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&[0, 0]);
}

fn put_utf8(out: &mut Vec<u8>, s: &str) {
    put_varu64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_system_time(out: &mut Vec<u8>, t: &SystemTime) {
    for v in [
        t.year,
        t.month,
        t.day_of_week,
        t.day,
        t.hour,
        t.minute,
        t.second,
        t.millisecond,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

fn type_code(t: &FieldType) -> u8 {
    match t {
        FieldType::Object(_) => 1,
        FieldType::Bool32 => 3,
        FieldType::Char16 => 4,
        FieldType::I8 => 5,
        FieldType::U8 => 6,
        FieldType::I16 => 7,
        FieldType::U16 => 8,
        FieldType::I32 => 9,
        FieldType::U32 => 10,
        FieldType::I64 => 11,
        FieldType::U64 => 12,
        FieldType::F32 => 13,
        FieldType::F64 => 14,
        FieldType::Decimal => 15,
        FieldType::DateTime => 16,
        FieldType::Guid => 17,
        FieldType::String16 => 18,
        FieldType::Array(_) => 19,
        FieldType::VarInt => 20,
        FieldType::VarUInt => 21,
        FieldType::FixedArray(..) => 22,
        FieldType::Char8 => 23,
        FieldType::RelLoc(_) => 24,
        FieldType::DataLoc(_) => 25,
    }
}

fn has_array(fields: &[FieldDesc]) -> bool {
    fields.iter().any(|f| match &f.ty {
        FieldType::Array(_) => true,
        FieldType::Object(inner) => has_array(inner),
        _ => false,
    })
}

fn v5_only_types(t: &FieldType) -> io::Result<()> {
    match t {
        FieldType::VarInt
        | FieldType::VarUInt
        | FieldType::FixedArray(..)
        | FieldType::Char8
        | FieldType::RelLoc(_)
        | FieldType::DataLoc(_) => Err(invalid("V6-only field type in a V5 trace")),
        FieldType::Array(e) => v5_only_types(e),
        FieldType::Object(fs) => fs.iter().try_for_each(|f| v5_only_types(&f.ty)),
        _ => Ok(()),
    }
}

fn v1_fields(out: &mut Vec<u8>, fields: &[FieldDesc]) {
    out.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    for f in fields {
        out.extend_from_slice(&u32::from(type_code(&f.ty)).to_le_bytes());
        if let FieldType::Object(inner) = &f.ty {
            v1_fields(out, inner);
        }
        put_utf16z(out, &f.name);
    }
}

fn v2_type(out: &mut Vec<u8>, t: &FieldType) {
    out.extend_from_slice(&u32::from(type_code(t)).to_le_bytes());
    match t {
        FieldType::Array(e) => v2_type(out, e),
        FieldType::Object(inner) => v2_fields(out, inner),
        _ => {}
    }
}

fn v2_fields(out: &mut Vec<u8>, fields: &[FieldDesc]) {
    out.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    for f in fields {
        let mut body = Vec::new();
        put_utf16z(&mut body, &f.name);
        v2_type(&mut body, &f.ty);
        out.extend_from_slice(&((body.len() + 4) as u32).to_le_bytes());
        out.extend_from_slice(&body);
    }
}

fn v6_type(out: &mut Vec<u8>, t: &FieldType) {
    out.push(type_code(t));
    match t {
        FieldType::Array(e) | FieldType::RelLoc(e) | FieldType::DataLoc(e) => v6_type(out, e),
        FieldType::FixedArray(e, n) => {
            v6_type(out, e);
            out.extend_from_slice(&n.to_le_bytes());
        }
        FieldType::Object(inner) => v6_fields(out, inner),
        _ => {}
    }
}

fn v6_fields(out: &mut Vec<u8>, fields: &[FieldDesc]) {
    out.extend_from_slice(&(fields.len() as u16).to_le_bytes());
    for f in fields {
        let mut body = Vec::new();
        put_utf8(&mut body, &f.name);
        v6_type(&mut body, &f.ty);
        out.extend_from_slice(&(body.len() as u16).to_le_bytes());
        out.extend_from_slice(&body);
    }
}

impl<W: Write> TraceWriter<W> {
    /// Writes the stream header and Trace block.
    pub fn new(out: W, opts: WriterOptions) -> io::Result<Self> {
        if opts.pointer_size != 4 && opts.pointer_size != 8 {
            return Err(invalid("pointer size must be 4 or 8"));
        }
        let mut w = TraceWriter {
            out,
            written: 0,
            next_metadata_id: opts.first_metadata_id.max(1),
            pending_metadata: Vec::new(),
            events: Vec::new(),
            prev: PrevHeader::default(),
            min_ts: i64::MAX,
            max_ts: i64::MIN,
            stacks: HashMap::new(),
            pending_stacks: Vec::new(),
            next_stack_id: 1,
            seq: HashMap::new(),
            thread_index: HashMap::new(),
            pending_threads: Vec::new(),
            labels: HashMap::new(),
            pending_labels: Vec::new(),
            next_label: 1,
            blocks_since_sp: 0,
            last_ts: i64::MIN,
            opts,
        };
        let o = w.opts.clone();
        let mut trace = Vec::new();
        put_system_time(&mut trace, &o.sync_time_utc);
        trace.extend_from_slice(&o.sync_time_ticks.to_le_bytes());
        trace.extend_from_slice(&o.ticks_per_second.to_le_bytes());
        trace.extend_from_slice(&u32::from(o.pointer_size).to_le_bytes());
        match o.format {
            WriteFormat::V5 => {
                let mut h = b"Nettrace".to_vec();
                h.extend_from_slice(&20u32.to_le_bytes());
                h.extend_from_slice(b"!FastSerialization.1");
                w.raw(&h)?;
                trace.extend_from_slice(&o.process_id.to_le_bytes());
                trace.extend_from_slice(&o.cpu_count.to_le_bytes());
                trace.extend_from_slice(&o.sampling_interval_ns.to_le_bytes());
                let mut obj = vec![5u8];
                obj.extend_from_slice(&Self::fs_type("Trace", 4));
                obj.extend_from_slice(&trace);
                obj.push(6);
                w.raw(&obj)?;
            }
            WriteFormat::V6 => {
                let mut h = b"Nettrace".to_vec();
                h.extend_from_slice(&0u32.to_le_bytes());
                h.extend_from_slice(&6u32.to_le_bytes());
                h.extend_from_slice(&0u32.to_le_bytes());
                w.raw(&h)?;
                let kv = [
                    ("HardwareThreadCount", o.cpu_count.to_string()),
                    ("ProcessId", o.process_id.to_string()),
                    (
                        "ExpectedCPUSamplingRate",
                        o.sampling_interval_ns.to_string(),
                    ),
                ];
                trace.extend_from_slice(&(kv.len() as u32).to_le_bytes());
                for (k, v) in kv {
                    put_utf8(&mut trace, k);
                    put_utf8(&mut trace, &v);
                }
                w.block_v6(1, &trace)?;
            }
        }
        Ok(w)
    }

    /// The output written so far (for callers that move the bytes elsewhere as they come).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn fs_type(name: &str, version: i32) -> Vec<u8> {
        let mut t = vec![5u8, 1];
        t.extend_from_slice(&version.to_le_bytes());
        t.extend_from_slice(&version.to_le_bytes());
        t.extend_from_slice(&(name.len() as u32).to_le_bytes());
        t.extend_from_slice(name.as_bytes());
        t.push(6);
        t
    }

    fn block_v6(&mut self, kind: u8, data: &[u8]) -> io::Result<()> {
        if data.len() > 0x00ff_ffff {
            return Err(invalid("V6 block over 16 MB"));
        }
        let x = (data.len() as u32) | (u32::from(kind) << 24);
        self.raw(&x.to_le_bytes())?;
        self.raw(data)
    }

    fn block_fs(&mut self, name: &str, data: &[u8]) -> io::Result<()> {
        let mut head = vec![5u8];
        head.extend_from_slice(&Self::fs_type(name, 2));
        head.extend_from_slice(&(data.len() as u32).to_le_bytes());
        let after = self.written + head.len() as u64;
        let pad = ((4 - after % 4) % 4) as usize;
        head.resize(head.len() + pad, 0);
        self.raw(&head)?;
        self.raw(data)?;
        self.raw(&[6])
    }

    fn block(&mut self, kind: u8, fs_name: &str, data: &[u8]) -> io::Result<()> {
        match self.opts.format {
            WriteFormat::V5 => self.block_fs(fs_name, data),
            WriteFormat::V6 => self.block_v6(kind, data),
        }
    }

    /// Defines a kind of event; returns its metadata id. `metadata_id` in `meta` is ignored.
    pub fn define(&mut self, meta: &EventMetadata) -> io::Result<u32> {
        let id = self.next_metadata_id;
        self.next_metadata_id += 1;
        let mut row = Vec::new();
        match self.opts.format {
            WriteFormat::V5 => {
                meta.fields.iter().try_for_each(|f| v5_only_types(&f.ty))?;
                row.extend_from_slice(&id.to_le_bytes());
                put_utf16z(&mut row, &meta.provider);
                row.extend_from_slice(&meta.event_id.to_le_bytes());
                put_utf16z(&mut row, &meta.event_name);
                row.extend_from_slice(&meta.keywords.to_le_bytes());
                row.extend_from_slice(&u32::from(meta.version).to_le_bytes());
                row.extend_from_slice(&u32::from(meta.level).to_le_bytes());
                let arrays = has_array(&meta.fields);
                if arrays {
                    v1_fields(&mut row, &[]);
                } else {
                    v1_fields(&mut row, &meta.fields);
                }
                if meta.opcode != 0 {
                    row.extend_from_slice(&1u32.to_le_bytes());
                    row.push(1);
                    row.push(meta.opcode);
                }
                if arrays {
                    let mut p = Vec::new();
                    v2_fields(&mut p, &meta.fields);
                    row.extend_from_slice(&(p.len() as u32).to_le_bytes());
                    row.push(2);
                    row.extend_from_slice(&p);
                }
            }
            WriteFormat::V6 => {
                put_varu64(&mut row, id.into());
                put_utf8(&mut row, &meta.provider);
                put_varu64(&mut row, meta.event_id.into());
                put_utf8(&mut row, &meta.event_name);
                v6_fields(&mut row, &meta.fields);
                let mut opt = Vec::new();
                if meta.opcode != 0 {
                    opt.extend_from_slice(&[1, meta.opcode]);
                }
                if meta.keywords != 0 {
                    opt.push(3);
                    opt.extend_from_slice(&meta.keywords.to_le_bytes());
                }
                if meta.level != 0 {
                    opt.extend_from_slice(&[8, meta.level]);
                }
                if meta.version != 0 {
                    opt.extend_from_slice(&[9, meta.version]);
                }
                row.extend_from_slice(&(opt.len() as u16).to_le_bytes());
                row.extend_from_slice(&opt);
                if row.len() > u16::MAX as usize {
                    return Err(invalid("metadata row over 64 KB"));
                }
            }
        }
        self.pending_metadata.push(row);
        Ok(id)
    }

    fn flush_metadata(&mut self) -> io::Result<()> {
        if self.pending_metadata.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.pending_metadata);
        let mut data = Vec::new();
        match self.opts.format {
            WriteFormat::V5 => {
                // Header, then each row as an event blob with metadata id 0, in compressed form
                // as the runtime writes it: flags (payload size present), timestamp delta 0,
                // payload size, payload.
                data.extend_from_slice(&20u16.to_le_bytes());
                data.extend_from_slice(&1u16.to_le_bytes());
                data.extend_from_slice(&[0u8; 16]);
                for r in rows {
                    data.push(128);
                    data.push(0);
                    put_varu64(&mut data, r.len() as u64);
                    data.extend_from_slice(&r);
                }
                self.block_fs("MetadataBlock", &data)
            }
            WriteFormat::V6 => {
                data.extend_from_slice(&0u16.to_le_bytes());
                for r in rows {
                    data.extend_from_slice(&(r.len() as u16).to_le_bytes());
                    data.extend_from_slice(&r);
                }
                self.block_v6(3, &data)
            }
        }
    }

    fn stack_id(&mut self, stack: &[u64]) -> u32 {
        if stack.is_empty() {
            return 0;
        }
        if let Some(&id) = self.stacks.get(stack) {
            return id;
        }
        let id = self.next_stack_id;
        self.next_stack_id += 1;
        self.stacks.insert(stack.to_vec(), id);
        self.pending_stacks.push((id, stack.to_vec()));
        id
    }

    fn thread_idx(&mut self, tid: u64) -> u64 {
        if self.opts.format == WriteFormat::V5 {
            return tid;
        }
        if let Some(&i) = self.thread_index.get(&tid) {
            return i;
        }
        let i = self.thread_index.len() as u64 + 1;
        self.thread_index.insert(tid, i);
        self.pending_threads.push((i, tid));
        i
    }

    fn label_id(&mut self, a: Guid, r: Guid) -> u32 {
        if a.is_zero() && r.is_zero() {
            return 0;
        }
        if let Some(&id) = self.labels.get(&(a, r)) {
            return id;
        }
        let id = self.next_label;
        self.next_label += 1;
        self.labels.insert((a, r), id);
        self.pending_labels.push((id, a, r));
        id
    }

    /// Appends an event.
    pub fn write(&mut self, e: &EventRecord<'_>) -> io::Result<()> {
        let stack_id = self.stack_id(e.stack);
        self.write_event(e, stack_id)
    }

    /// Writes an event whose stack is `stack_id`, one the caller gave with
    /// [`TraceWriter::stacks_at`] since the last sequence point (`e.stack` is not looked at;
    /// 0 for none).
    pub fn write_with_stack_id(&mut self, e: &EventRecord<'_>, stack_id: u32) -> io::Result<()> {
        self.write_event(e, stack_id)
    }

    /// Queues stacks with ids of the caller's choosing, `first_id` and up (innermost frame
    /// first), for the next stack block: events written after refer to them by id
    /// ([`TraceWriter::write_with_stack_id`]) until the next sequence point. The ids must not
    /// be ones [`TraceWriter::write`] hands out (it counts up from 1).
    pub fn stacks_at(&mut self, first_id: u32, stacks: &[&[u64]]) {
        for (k, ips) in stacks.iter().enumerate() {
            self.pending_stacks
                .push((first_id.wrapping_add(k as u32), ips.to_vec()));
        }
    }

    fn write_event(&mut self, e: &EventRecord<'_>, stack_id: u32) -> io::Result<()> {
        if e.metadata_id < self.opts.first_metadata_id.max(1)
            || e.metadata_id >= self.next_metadata_id
        {
            return Err(invalid(format!(
                "metadata id {} was not defined",
                e.metadata_id
            )));
        }
        let thread = self.thread_idx(e.thread_id);
        let capture = self.thread_idx(e.capture_thread_id);
        let seq = {
            let s = self.seq.entry(e.capture_thread_id).or_insert(0);
            *s = s.wrapping_add(1);
            *s
        };
        let v6 = self.opts.format == WriteFormat::V6;
        let label = if v6 {
            self.label_id(e.activity_id, e.related_activity_id)
        } else {
            0
        };
        let ev = &mut self.events;
        let p = self.prev;
        if self.opts.compressed_headers {
            let mut flags = 0u8;
            let mut body = Vec::with_capacity(32);
            if e.metadata_id != p.metadata_id {
                flags |= 1;
                put_varu64(&mut body, e.metadata_id.into());
            }
            if capture != p.capture_thread
                || e.processor != p.processor
                || seq != p.sequence.wrapping_add(1)
            {
                flags |= 2;
                put_varu64(
                    &mut body,
                    seq.wrapping_sub(p.sequence).wrapping_sub(1).into(),
                );
                put_varu64(&mut body, capture);
                put_varu64(&mut body, e.processor.into());
            }
            if thread != p.thread {
                flags |= 4;
                put_varu64(&mut body, thread);
            }
            if stack_id != p.stack_id {
                flags |= 8;
                put_varu64(&mut body, stack_id.into());
            }
            put_varu64(&mut body, e.timestamp.wrapping_sub(p.timestamp) as u64);
            if v6 {
                if label != p.label_list {
                    flags |= 16;
                    put_varu64(&mut body, label.into());
                }
            } else {
                if e.activity_id != p.activity {
                    flags |= 16;
                    body.extend_from_slice(&e.activity_id.0);
                }
                if e.related_activity_id != p.related {
                    flags |= 32;
                    body.extend_from_slice(&e.related_activity_id.0);
                }
            }
            if e.is_sorted {
                flags |= 64;
            }
            if e.payload.len() as u32 != p.payload_size {
                flags |= 128;
                put_varu64(&mut body, e.payload.len() as u64);
            }
            ev.push(flags);
            ev.extend_from_slice(&body);
            ev.extend_from_slice(e.payload);
        } else {
            let mut h = Vec::with_capacity(80);
            let meta = e.metadata_id | if e.is_sorted { 0x8000_0000 } else { 0 };
            h.extend_from_slice(&meta.to_le_bytes());
            h.extend_from_slice(&seq.to_le_bytes());
            h.extend_from_slice(&thread.to_le_bytes());
            h.extend_from_slice(&capture.to_le_bytes());
            h.extend_from_slice(&e.processor.to_le_bytes());
            h.extend_from_slice(&stack_id.to_le_bytes());
            h.extend_from_slice(&e.timestamp.to_le_bytes());
            if v6 {
                h.extend_from_slice(&label.to_le_bytes());
            } else {
                h.extend_from_slice(&e.activity_id.0);
                h.extend_from_slice(&e.related_activity_id.0);
            }
            h.extend_from_slice(&(e.payload.len() as u32).to_le_bytes());
            // No padding after the payload: the V5 text describes 4-byte alignment, but the
            // runtime only ever writes compressed headers and TraceEvent, the reference
            // reader, reads the next event right after the payload.
            let size = h.len() + e.payload.len();
            ev.extend_from_slice(&(size as u32).to_le_bytes());
            ev.extend_from_slice(&h);
            ev.extend_from_slice(e.payload);
        }
        self.prev = PrevHeader {
            metadata_id: e.metadata_id,
            sequence: seq,
            capture_thread: capture,
            processor: e.processor,
            thread,
            stack_id,
            timestamp: e.timestamp,
            activity: e.activity_id,
            related: e.related_activity_id,
            label_list: label,
            payload_size: e.payload.len() as u32,
        };
        self.min_ts = self.min_ts.min(e.timestamp);
        self.max_ts = self.max_ts.max(e.timestamp);
        self.last_ts = self.last_ts.max(e.timestamp);
        if self.events.len() >= self.opts.block_size {
            self.flush_events()?;
        }
        Ok(())
    }

    /// Writes buffered events (with the metadata, stacks, threads and labels they need), and a
    /// sequence point every `blocks_per_sequence_point` event blocks.
    pub fn flush_events(&mut self) -> io::Result<()> {
        self.flush_event_block()?;
        if self.blocks_since_sp >= self.opts.blocks_per_sequence_point {
            self.sequence_point()?;
        }
        Ok(())
    }

    fn flush_event_block(&mut self) -> io::Result<()> {
        self.flush_metadata()?;
        if self.events.is_empty() {
            return Ok(());
        }
        if !self.pending_threads.is_empty() {
            let mut data = Vec::new();
            for (idx, tid) in std::mem::take(&mut self.pending_threads) {
                let mut row = Vec::new();
                put_varu64(&mut row, idx);
                row.push(2);
                put_varu64(&mut row, self.opts.process_id.into());
                row.push(3);
                put_varu64(&mut row, tid);
                data.extend_from_slice(&(row.len() as u16).to_le_bytes());
                data.extend_from_slice(&row);
            }
            self.block_v6(6, &data)?;
        }
        if !self.pending_labels.is_empty() {
            let labels = std::mem::take(&mut self.pending_labels);
            let mut data = Vec::new();
            data.extend_from_slice(&labels[0].0.to_le_bytes());
            data.extend_from_slice(&(labels.len() as u32).to_le_bytes());
            for (_, a, r) in labels {
                data.push(1);
                data.extend_from_slice(&a.0);
                data.push(2 | 0x80);
                data.extend_from_slice(&r.0);
            }
            self.block_v6(8, &data)?;
        }
        // A stack block holds consecutive ids: one block per run of them.
        let stacks = std::mem::take(&mut self.pending_stacks);
        let ps = self.opts.pointer_size as usize;
        let mut rest = stacks.as_slice();
        while let Some((first, _)) = rest.first() {
            let run = rest
                .iter()
                .enumerate()
                .take_while(|(k, (id, _))| *id == first.wrapping_add(*k as u32))
                .count();
            let mut data = Vec::new();
            data.extend_from_slice(&first.to_le_bytes());
            data.extend_from_slice(&(run as u32).to_le_bytes());
            for (_, ips) in &rest[..run] {
                data.extend_from_slice(&((ips.len() * ps) as u32).to_le_bytes());
                for ip in ips {
                    data.extend_from_slice(&ip.to_le_bytes()[..ps]);
                }
            }
            self.block(5, "StackBlock", &data)?;
            rest = &rest[run..];
        }
        let mut data = Vec::with_capacity(20 + self.events.len());
        data.extend_from_slice(&20u16.to_le_bytes());
        data.extend_from_slice(&u16::from(self.opts.compressed_headers).to_le_bytes());
        data.extend_from_slice(&self.min_ts.to_le_bytes());
        data.extend_from_slice(&self.max_ts.to_le_bytes());
        data.extend_from_slice(&self.events);
        self.events.clear();
        self.prev = PrevHeader::default();
        self.min_ts = i64::MAX;
        self.max_ts = i64::MIN;
        self.block(2, "EventBlock", &data)?;
        self.blocks_since_sp += 1;
        Ok(())
    }

    /// Flushes events and writes a sequence point (resets the stack and label tables).
    pub fn sequence_point(&mut self) -> io::Result<()> {
        self.flush_event_block()?;
        let mut data = Vec::new();
        let ts = if self.last_ts == i64::MIN {
            0
        } else {
            self.last_ts
        };
        data.extend_from_slice(&ts.to_le_bytes());
        let mut threads: Vec<(u64, u32)> = self.seq.iter().map(|(&t, &s)| (t, s)).collect();
        threads.sort_unstable();
        match self.opts.format {
            WriteFormat::V5 => {
                data.extend_from_slice(&(threads.len() as u32).to_le_bytes());
                for (t, s) in threads {
                    data.extend_from_slice(&t.to_le_bytes());
                    data.extend_from_slice(&s.to_le_bytes());
                }
                self.block_fs("SPBlock", &data)?;
            }
            WriteFormat::V6 => {
                data.extend_from_slice(&0u32.to_le_bytes());
                data.extend_from_slice(&(threads.len() as u32).to_le_bytes());
                for (t, s) in threads {
                    let idx = self.thread_index.get(&t).copied().unwrap_or(t);
                    put_varu64(&mut data, idx);
                    put_varu64(&mut data, s.into());
                }
                self.block_v6(4, &data)?;
            }
        }
        self.stacks.clear();
        self.next_stack_id = 1;
        self.labels.clear();
        self.next_label = 1;
        self.blocks_since_sp = 0;
        Ok(())
    }

    /// Flushes everything, writes a final sequence point and the end-of-stream marker.
    pub fn finish(mut self) -> io::Result<W> {
        self.sequence_point()?;
        match self.opts.format {
            WriteFormat::V5 => self.raw(&[1])?,
            WriteFormat::V6 => self.block_v6(0, &[])?,
        }
        self.out.flush()?;
        Ok(self.out)
    }
}
