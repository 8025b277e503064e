//! Splicing clrspy's own events into the runtime's NetTrace stream as it is written to disk, so
//! a recording stays one self-contained file that TraceEvent and PerfView still open.
//!
//! The runtime's bytes pass through unchanged. The splicer follows the stream's
//! FastSerialization framing (the `Nettrace` magic, the Trace object, then block objects:
//! tag 5, type descriptor, `u32` size, padding to 4 bytes, the block, tag 6; tag 1 ends the
//! stream) holding back at most an object header, and between two blocks it inserts its own
//! MetadataBlock and EventBlock objects, written by nettrace's writer with metadata ids far
//! above the runtime's and a capture thread of their own (so no sequence gaps appear). Each
//! inserted object is made a multiple of 4 bytes long (by growing its block header, whose
//! size readers honour) so every later runtime block keeps its alignment. Streams it does not
//! recognise (NetPerf, V6, anything unexpected) pass through untouched and nothing is added.

use std::io::{self, Write};

use nettrace::{EventMetadata, EventRecord, TraceWriter, WriteFormat, WriterOptions};

/// clrspy's provider name.
pub const PROVIDER: &str = clr_events::clrspy::PROVIDER;
/// Metadata ids of clrspy's events start here (the runtime counts up from 1).
pub const FIRST_METADATA_ID: u32 = 0x7F00_0000;
/// The capture thread clrspy's events claim (no OS thread has this id).
pub const CAPTURE_THREAD: u64 = 0x00C1_125B_0000_0000;

/// clrspy's events.
#[derive(Clone, Debug, PartialEq)]
pub enum Injected {
    /// `ThreadCpu` (1): a thread's total CPU time at a sampler tick.
    ThreadCpu {
        /// Thread.
        tid: u32,
        /// CPU ns so far.
        cpu_ns: u64,
        /// Scheduler state letter.
        state: u8,
    },
    /// `ThreadName` (2).
    ThreadName {
        /// Thread.
        tid: u32,
        /// Name.
        name: String,
    },
    /// `SamplerInfo` (3): once, how readings are taken.
    SamplerInfo {
        /// Interval, ms.
        interval_ms: u32,
        /// "schedstat" or "stat".
        source: String,
    },
    /// `Tick` (4): every thread was read at this time.
    Tick,
    /// `ModuleMap` (5): an executable mapping.
    ModuleMap {
        /// Start address.
        start: u64,
        /// End address.
        end: u64,
        /// File offset.
        offset: u64,
        /// Path.
        path: String,
    },
}

impl Injected {
    /// The event's index in [`definitions`].
    fn id(&self) -> usize {
        use clr_events::clrspy::{ids, EVENTS};
        let id = match self {
            Injected::ThreadCpu { .. } => ids::THREAD_CPU,
            Injected::ThreadName { .. } => ids::THREAD_NAME,
            Injected::SamplerInfo { .. } => ids::SAMPLER_INFO,
            Injected::Tick => ids::TICK,
            Injected::ModuleMap { .. } => ids::MODULE_MAP,
        };
        // Every id is in the table (clr-events' tests check it).
        EVENTS.iter().position(|e| e.id == id).unwrap_or(0)
    }

    fn thread(&self) -> u64 {
        match self {
            Injected::ThreadCpu { tid, .. } | Injected::ThreadName { tid, .. } => u64::from(*tid),
            _ => 0,
        }
    }

    fn payload(&self) -> Vec<u8> {
        use clr_events::clrspy;
        let mut p = Vec::new();
        match self {
            Injected::ThreadCpu { tid, cpu_ns, state } => clrspy::ThreadCpu {
                thread_id: *tid,
                cpu_ns: *cpu_ns,
                state: u16::from(*state),
            }
            .encode(&mut p),
            Injected::ThreadName { tid, name } => clrspy::ThreadName::encode(*tid, name, &mut p),
            Injected::SamplerInfo {
                interval_ms,
                source,
            } => clrspy::SamplerInfo::encode(*interval_ms, source, &mut p),
            Injected::Tick => {}
            Injected::ModuleMap {
                start,
                end,
                offset,
                path,
            } => clrspy::ModuleMap::encode(*start, *end, *offset, path, &mut p),
        }
        p
    }
}

/// The events' metadata, from clr-events' definition of the provider.
fn definitions() -> Vec<EventMetadata> {
    clr_events::clrspy::metadata()
}

/// Facts of the runtime's Trace object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceFacts {
    /// Clock ticks per second.
    pub ticks_per_second: i64,
    /// Pointer size.
    pub pointer_size: u8,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Reading the preamble and the Trace object.
    Preamble,
    /// Between two objects.
    Boundary,
    /// Inside an object: this many bytes to pass through.
    Skip(u64),
    /// Unrecognised: everything passes through.
    Passthrough,
    /// The end tag was seen.
    Ended,
}

/// Passes the runtime's stream through to `W` and splices clrspy's events in between blocks.
pub struct Splicer<W: Write> {
    out: W,
    state: State,
    /// Bytes held back while an object header is incomplete.
    hold: Vec<u8>,
    /// Bytes written to `out` (runtime's and ours).
    written: u64,
    facts: Option<TraceFacts>,
    writer: Option<(TraceWriter<Vec<u8>>, Vec<u32>, u64)>,
    pending: Vec<(u64, Injected)>,
    /// Events dropped because the queue was full or the stream was not recognised.
    pub dropped: u64,
    /// Events spliced in.
    pub spliced: u64,
}

/// The most events held while waiting for a block boundary.
const MAX_PENDING: usize = 200_000;

impl<W: Write> Splicer<W> {
    /// A splicer writing to `out`.
    pub fn new(out: W) -> Splicer<W> {
        Splicer {
            out,
            state: State::Preamble,
            hold: Vec::new(),
            written: 0,
            facts: None,
            writer: None,
            pending: Vec::new(),
            dropped: 0,
            spliced: 0,
        }
    }

    /// Bytes written so far (the runtime's and clrspy's).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The Trace object's facts, once read.
    pub fn facts(&self) -> Option<TraceFacts> {
        self.facts
    }

    /// True while clrspy's events can still be spliced in.
    pub fn is_active(&self) -> bool {
        matches!(
            self.state,
            State::Preamble | State::Boundary | State::Skip(_)
        )
    }

    /// Queues an event stamped `monotonic_ns` (CLOCK_MONOTONIC); it is written at the next
    /// block boundary.
    pub fn push(&mut self, monotonic_ns: u64, e: Injected) {
        if !self.is_active() || self.pending.len() >= MAX_PENDING {
            self.dropped += 1;
            return;
        }
        self.pending.push((monotonic_ns, e));
    }

    fn emit(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    /// Passes runtime bytes through.
    pub fn write_runtime(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match self.state {
                State::Passthrough | State::Ended => {
                    self.emit(bytes)?;
                    return Ok(());
                }
                State::Skip(n) => {
                    let k = (n.min(bytes.len() as u64)) as usize;
                    self.emit(&bytes[..k])?;
                    bytes = &bytes[k..];
                    self.state = if n == k as u64 {
                        State::Boundary
                    } else {
                        State::Skip(n - k as u64)
                    };
                    if self.state == State::Boundary {
                        self.inject()?;
                    }
                }
                State::Preamble | State::Boundary => {
                    self.hold.push(bytes[0]);
                    bytes = &bytes[1..];
                    self.parse_hold()?;
                }
            }
        }
        Ok(())
    }

    /// Tries to parse what is held; on success, writes it and moves on.
    fn parse_hold(&mut self) -> io::Result<()> {
        let parsed = match self.state {
            State::Preamble => parse_preamble(&self.hold),
            State::Boundary => parse_object_header(&self.hold, self.written),
            _ => return Ok(()),
        };
        match parsed {
            Parse::NeedMore => {
                if self.hold.len() > 4096 {
                    self.give_up()?;
                }
                Ok(())
            }
            Parse::Bad => self.give_up(),
            Parse::Preamble(facts) => {
                self.facts = Some(facts);
                let held = std::mem::take(&mut self.hold);
                self.emit(&held)?;
                self.state = State::Boundary;
                self.inject()
            }
            Parse::End => {
                // Our last events go in before the end tag.
                let held = std::mem::take(&mut self.hold);
                self.inject()?;
                self.emit(&held)?;
                self.state = State::Ended;
                Ok(())
            }
            Parse::Object(body) => {
                let held = std::mem::take(&mut self.hold);
                self.emit(&held)?;
                self.state = State::Skip(body);
                Ok(())
            }
        }
    }

    fn give_up(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.hold);
        self.emit(&held)?;
        self.state = State::Passthrough;
        self.dropped += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Writes queued events now if the stream is between blocks. Call it when the runtime is
    /// quiet, too: an idle stream sits between blocks.
    pub fn inject(&mut self) -> io::Result<()> {
        if self.state != State::Boundary || !self.hold.is_empty() || self.pending.is_empty() {
            return Ok(());
        }
        let Some(facts) = self.facts else {
            return Ok(());
        };
        if self.writer.is_none() {
            let opts = WriterOptions {
                format: WriteFormat::V5,
                compressed_headers: true,
                pointer_size: facts.pointer_size,
                ticks_per_second: facts.ticks_per_second,
                block_size: usize::MAX,
                blocks_per_sequence_point: u32::MAX,
                first_metadata_id: FIRST_METADATA_ID,
                ..WriterOptions::default()
            };
            let mut w = TraceWriter::new(Vec::new(), opts)?;
            let ids = definitions()
                .iter()
                .map(|d| w.define(d))
                .collect::<io::Result<Vec<u32>>>()?;
            // The writer's own preamble is not ours to write: drop it, remembering its length
            // (the writer pads relative to its own position).
            let skipped = w.get_mut().len() as u64;
            w.get_mut().clear();
            self.writer = Some((w, ids, skipped));
        }
        let pending = std::mem::take(&mut self.pending);
        let tps = facts.ticks_per_second.max(1) as u128;
        let Some((w, ids, writer_pos)) = self.writer.as_mut() else {
            return Ok(());
        };
        for (ns, e) in &pending {
            let ticks = (u128::from(*ns) * tps / 1_000_000_000) as i64;
            let payload = e.payload();
            w.write(&EventRecord {
                metadata_id: ids[e.id()],
                thread_id: e.thread(),
                capture_thread_id: CAPTURE_THREAD,
                timestamp: ticks,
                payload: &payload,
                ..EventRecord::default()
            })?;
        }
        w.flush_events()?;
        let bytes = std::mem::take(w.get_mut());
        let start = *writer_pos;
        *writer_pos += bytes.len() as u64;
        let objects = realign(&bytes, start, self.written)
            .ok_or_else(|| io::Error::other("internal: unexpected writer output"))?;
        self.emit(&objects)?;
        self.spliced += pending.len() as u64;
        Ok(())
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// The output.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

enum Parse {
    NeedMore,
    Bad,
    Preamble(TraceFacts),
    End,
    /// An object header; this many bytes follow (block and end tag).
    Object(u64),
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Parses a type descriptor at `at`: tag 5, tag 1, version, min version, name; tag 6. Returns
/// (name, end offset).
fn type_descriptor(b: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, ()> {
    if b.len() < at + 14 {
        return Ok(None);
    }
    if b[at] != 5 || b[at + 1] != 1 {
        return Err(());
    }
    let len = u32_at(b, at + 10).ok_or(())? as usize;
    if len == 0 || len > 64 {
        return Err(());
    }
    let end = at + 14 + len;
    if b.len() < end + 1 {
        return Ok(None);
    }
    if b[end] != 6 {
        return Err(());
    }
    Ok(Some((&b[at + 14..end], end + 1)))
}

fn parse_preamble(b: &[u8]) -> Parse {
    const MAGIC: &[u8] = b"Nettrace";
    let n = b.len().min(MAGIC.len());
    if b[..n] != MAGIC[..n] {
        return Parse::Bad;
    }
    if b.len() < 12 {
        return Parse::NeedMore;
    }
    let Some(slen) = u32_at(b, 8) else {
        return Parse::NeedMore;
    };
    if slen != 20 {
        return Parse::Bad; // V6 (0) or something else
    }
    if b.len() < 32 + 1 {
        return Parse::NeedMore;
    }
    if &b[12..32] != b"!FastSerialization.1" || b[32] != 5 {
        return Parse::Bad;
    }
    let (name, at) = match type_descriptor(b, 33) {
        Ok(Some(x)) => x,
        Ok(None) => return Parse::NeedMore,
        Err(()) => return Parse::Bad,
    };
    if name != b"Trace" {
        return Parse::Bad;
    }
    // SYSTEMTIME (16), sync ticks (8), ticks per second (8), pointer size (4), pid (4),
    // processors (4), sampling interval (4), end tag.
    let end = at + 48;
    if b.len() < end + 1 {
        return Parse::NeedMore;
    }
    if b[end] != 6 {
        return Parse::Bad;
    }
    let tps = i64::from_le_bytes(b[at + 24..at + 32].try_into().unwrap_or([0; 8]));
    let ptr = u32_at(b, at + 32).unwrap_or(0);
    if tps <= 0 || !(ptr == 4 || ptr == 8) {
        return Parse::Bad;
    }
    Parse::Preamble(TraceFacts {
        ticks_per_second: tps,
        pointer_size: ptr as u8,
    })
}

/// Parses a block object's header held at stream position `pos`.
fn parse_object_header(b: &[u8], pos: u64) -> Parse {
    match b.first() {
        None => return Parse::NeedMore,
        Some(1) => return Parse::End,
        Some(5) => {}
        Some(_) => return Parse::Bad,
    }
    let (name, at) = match type_descriptor(b, 1) {
        Ok(Some(x)) => x,
        Ok(None) => return Parse::NeedMore,
        Err(()) => return Parse::Bad,
    };
    if !matches!(
        name,
        b"EventBlock" | b"MetadataBlock" | b"StackBlock" | b"SPBlock"
    ) {
        return Parse::Bad;
    }
    let Some(size) = u32_at(b, at) else {
        return Parse::NeedMore;
    };
    let after = pos + at as u64 + 4;
    let pad = ((4 - after % 4) % 4) as usize;
    if b.len() < at + 4 + pad {
        return Parse::NeedMore;
    }
    if b.len() > at + 4 + pad {
        // Only reachable when called with more bytes than the header: never, bytes come one
        // at a time while a header is parsed.
        return Parse::Bad;
    }
    Parse::Object(u64::from(size) + 1)
}

/// Rewrites the writer's block objects (written at writer position `writer_pos`) for stream
/// position `stream_pos`: padding recomputed, and each object grown to a multiple of 4 bytes
/// by enlarging its block header.
fn realign(bytes: &[u8], writer_pos: u64, stream_pos: u64) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut i = 0usize;
    while i < bytes.len() {
        if bytes[i] != 5 {
            return None;
        }
        let (_, at) = type_descriptor(bytes, i + 1).ok()??;
        let size = u32_at(bytes, at)? as usize;
        let wpad = ((4 - (writer_pos + at as u64 + 4) % 4) % 4) as usize;
        let data_start = at + 4 + wpad;
        let data = bytes.get(data_start..data_start + size)?;
        if bytes.get(data_start + size) != Some(&6) {
            return None;
        }
        let head = &bytes[i..at];
        // The block's header size (u16 at its start) grows by `extra` zero bytes.
        let header_size = u16::from_le_bytes(data.get(..2)?.try_into().ok()?) as usize;
        let obj_start = stream_pos + out.len() as u64;
        let spad = ((4 - (obj_start + head.len() as u64 + 4) % 4) % 4) as usize;
        let base_len = head.len() + 4 + spad + size + 1;
        let extra = (4 - base_len % 4) % 4;
        out.extend_from_slice(head);
        out.extend_from_slice(&((size + extra) as u32).to_le_bytes());
        out.resize(out.len() + spad, 0);
        out.extend_from_slice(&((header_size + extra) as u16).to_le_bytes());
        out.extend_from_slice(data.get(2..header_size)?);
        out.resize(out.len() + extra, 0);
        out.extend_from_slice(data.get(header_size..)?);
        out.push(6);
        i = data_start + size + 1;
    }
    Some(out)
}
