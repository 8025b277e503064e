//! The reader's state machine, shared by the slice and `io::Read` readers: it is handed whole
//! blocks and keeps the tables events refer to (metadata, stacks, threads, label lists), tracks
//! sequence numbers to count dropped events, and decodes event headers one at a time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cursor::Cursor;
use crate::error::{BlockKind, Error, ErrorKind, InBlock, Result};
use crate::event::{Event, LabelList, Stack, ThreadInfo};
use crate::framing::{Framing, StreamStart};
use crate::header::{Clock, FormatVersion, TraceHeader};
use crate::metadata::{self, EventMetadata};

mod block;
pub(crate) mod brief;
mod compressed;
mod tables;

pub(crate) use block::{BlockIter, RawEvent};
use block::{EventEncoding, RawHeader};

/// The next metadata row's key ([`Event::metadata_key`]): unique in the process.
static NEXT_METADATA_KEY: AtomicU64 = AtomicU64::new(1);

/// Metadata ids below this are kept in a vector; larger ones in a map.
const DENSE_METADATA_IDS: u32 = 1 << 16;
/// Hard limit on one stack's size in bytes.
pub(crate) const MAX_STACK_BYTES: u32 = 1 << 20;
/// Stack ids above `base + this` go to the sparse map.
const DENSE_STACK_SPAN: u32 = 1 << 20;

/// How far ahead of the event being decoded the reader asks the CPU to fetch block bytes.
const PREFETCH_DISTANCE: usize = 512;

/// Hints the CPU to load `data[at]` into cache (no effect when out of range or on other CPUs).
#[inline(always)]
fn prefetch(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = data.get(at) {
        // SAFETY: prefetching is a hint; the pointer is in bounds and is never dereferenced.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                b as *const u8 as *const i8,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// The end of an event that declares its size (`u32` size field at `start`, not counted).
fn sized_event_end(data: &[u8], start: usize, size: usize, ev_offset: u64) -> Result<usize> {
    let end = start + 4 + size;
    if end > data.len() {
        return Err(Error::new(
            ev_offset,
            Some(BlockKind::Event),
            ErrorKind::Truncated {
                needed: (end - start) as u64,
                available: (data.len() - start) as u64,
            },
        ));
    }
    Ok(end)
}

/// Counters gathered while reading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Events yielded.
    pub events: u64,
    /// Metadata rows read.
    pub metadata_rows: u64,
    /// Stacks read into the stack table.
    pub stacks: u64,
    /// Blocks read (all kinds).
    pub blocks: u64,
    /// Event blocks read.
    pub event_blocks: u64,
    /// Sequence points read.
    pub sequence_points: u64,
    /// Blocks of unknown kind skipped (V6).
    pub unknown_blocks: u64,
    /// Events whose metadata id was never defined (yielded with empty metadata).
    pub events_without_metadata: u64,
    /// Events with a stack id that was not in the stack table.
    pub missing_stacks: u64,
    /// Events the writer dropped, from gaps in per-thread sequence numbers and sequence points.
    pub dropped_events: u64,
    /// Of [`TraceStats::dropped_events`], those at the trace's start: gaps found before the
    /// first sequence point was read, and the numbers of a thread before any of its events
    /// was read (a sequence point or a V6 thread's removal names a thread none of whose
    /// events came yet). A trace that holds only the end of a stream (a ring buffer's, cut
    /// at a block anywhere, its first blocks possibly of threads written out of order) has
    /// these by design; in a whole stream they are losses like the others. After the first
    /// sequence point every thread's numbers are known, so later gaps are real losses.
    pub dropped_at_start: u64,
    /// True when any metadata carried V5 tags (the trace is NetTrace V5).
    pub v5_metadata_tags: bool,
    /// Bytes of the stream consumed by whole blocks (everything before this offset was read).
    pub bytes_read: u64,
    /// True when the end-of-stream marker was reached.
    pub ended_cleanly: bool,
    /// Smallest event timestamp (ticks), when any event was read.
    pub min_timestamp: Option<i64>,
    /// Largest event timestamp (ticks).
    pub max_timestamp: Option<i64>,
}

#[derive(Default)]
struct StackTable {
    bytes: Vec<u8>,
    base: u32,
    dense: Vec<(u32, u32)>,
    sparse: HashMap<u32, (u32, u32)>,
}

impl StackTable {
    fn clear(&mut self) {
        self.bytes.clear();
        self.dense.clear();
        self.sparse.clear();
        self.base = 0;
    }

    fn insert(&mut self, id: u32, data: &[u8]) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(data);
        let entry = (start, data.len() as u32);
        if self.dense.is_empty() && self.sparse.is_empty() {
            self.base = id;
        }
        match id.checked_sub(self.base) {
            Some(rel) if rel < DENSE_STACK_SPAN => {
                let rel = rel as usize;
                if rel >= self.dense.len() {
                    self.dense.resize(rel + 1, (0, 0));
                }
                self.dense[rel] = entry;
            }
            _ => {
                self.sparse.insert(id, entry);
            }
        }
    }

    /// The length in bytes of stack `id`, when the table has it.
    #[inline]
    fn len(&self, id: u32) -> Option<usize> {
        let (_, l) = match id.checked_sub(self.base) {
            Some(rel) if (rel as usize) < self.dense.len() => self.dense[rel as usize],
            _ => *self.sparse.get(&id)?,
        };
        Some(l as usize)
    }

    #[inline]
    fn get(&self, id: u32) -> Option<&[u8]> {
        let (s, l) = match id.checked_sub(self.base) {
            Some(rel) if (rel as usize) < self.dense.len() => self.dense[rel as usize],
            _ => *self.sparse.get(&id)?,
        };
        self.bytes.get(s as usize..(s + l) as usize)
    }
}

/// The decoding state.
pub(crate) struct Decoder {
    pub(crate) header: TraceHeader,
    pub(crate) clock: Clock,
    pub(crate) stats: TraceStats,
    framing: Framing,
    dense_metadata: Vec<Option<Box<EventMetadata>>>,
    sparse_metadata: HashMap<u32, Box<EventMetadata>>,
    /// Each row's key, beside `dense_metadata` (0: no row).
    dense_keys: Vec<u64>,
    sparse_keys: HashMap<u32, u64>,
    unknown_metadata: EventMetadata,
    stacks: StackTable,
    threads: HashMap<u64, ThreadInfo>,
    labels: HashMap<u32, LabelList>,
    last_seq: HashMap<u64, u32>,
    cur_seq_thread: Option<u64>,
    cur_seq: u32,
    thread_cache: Option<(u64, u64, Option<u64>)>,
    /// True until the first sequence point was read.
    at_start: bool,
    /// Tests only: decode every header on the checked path (the fast path's reference).
    #[cfg(test)]
    pub(crate) test_checked_only: bool,
}

impl Decoder {
    pub(crate) fn new(start: &StreamStart, header: TraceHeader) -> Decoder {
        Decoder {
            clock: header.clock(),
            header,
            stats: TraceStats::default(),
            framing: start.framing,
            dense_metadata: Vec::new(),
            sparse_metadata: HashMap::new(),
            dense_keys: Vec::new(),
            sparse_keys: HashMap::new(),
            unknown_metadata: EventMetadata::default(),
            stacks: StackTable::default(),
            threads: HashMap::new(),
            labels: HashMap::new(),
            last_seq: HashMap::new(),
            cur_seq_thread: None,
            cur_seq: 0,
            thread_cache: None,
            at_start: true,
            #[cfg(test)]
            test_checked_only: false,
        }
    }

    fn is_v6(&self) -> bool {
        self.framing == Framing::V6
    }

    /// Looks up a metadata row.
    #[inline]
    pub(crate) fn metadata(&self, id: u32) -> Option<&EventMetadata> {
        if id < DENSE_METADATA_IDS {
            self.dense_metadata.get(id as usize)?.as_deref()
        } else {
            self.sparse_metadata.get(&id).map(|b| &**b)
        }
    }

    /// The key of a metadata row (0 when there is none).
    #[inline]
    fn metadata_key(&self, id: u32) -> u64 {
        if id < DENSE_METADATA_IDS {
            self.dense_keys.get(id as usize).copied().unwrap_or(0)
        } else {
            self.sparse_keys.get(&id).copied().unwrap_or(0)
        }
    }

    /// All metadata rows read so far.
    pub(crate) fn all_metadata(&self) -> impl Iterator<Item = &EventMetadata> {
        self.dense_metadata
            .iter()
            .filter_map(|m| m.as_deref())
            .chain(self.sparse_metadata.values().map(|b| &**b))
    }

    fn add_metadata(&mut self, m: EventMetadata) {
        self.stats.metadata_rows += 1;
        if m.has_v5_tags {
            self.stats.v5_metadata_tags = true;
        }
        let id = m.metadata_id;
        let key = NEXT_METADATA_KEY.fetch_add(1, Ordering::Relaxed);
        if id < DENSE_METADATA_IDS {
            let i = id as usize;
            if i >= self.dense_metadata.len() {
                self.dense_metadata.resize_with(i + 1, || None);
                self.dense_keys.resize(i + 1, 0);
            }
            self.dense_metadata[i] = Some(Box::new(m));
            self.dense_keys[i] = key;
        } else {
            self.sparse_metadata.insert(id, Box::new(m));
            self.sparse_keys.insert(id, key);
        }
    }

    /// Handles a non-event block, or prepares iteration over an event block.
    /// Returns `Some(iter)` for event blocks.
    pub(crate) fn begin_block(
        &mut self,
        kind: BlockKind,
        data: &[u8],
        offset: u64,
    ) -> Result<Option<BlockIter>> {
        self.stats.blocks += 1;
        match kind {
            BlockKind::Event => {
                self.stats.event_blocks += 1;
                self.event_block_iter(data, offset).map(Some)
            }
            BlockKind::Metadata
            | BlockKind::Stack
            | BlockKind::SequencePoint
            | BlockKind::Thread
            | BlockKind::RemoveThread
            | BlockKind::LabelList => {
                match kind {
                    BlockKind::Metadata => self.metadata_block(data, offset),
                    BlockKind::Stack => self.stack_block(data, offset),
                    BlockKind::SequencePoint => self.sequence_point(data, offset),
                    BlockKind::Thread => self.thread_block(data, offset),
                    BlockKind::RemoveThread => self.remove_thread_block(data, offset),
                    _ => self.label_list_block(data, offset),
                }
                .in_block(kind)?;
                Ok(None)
            }
            BlockKind::Trace => Err(Error::at(offset, kind, ErrorKind::SecondTrace)),
            BlockKind::Unknown(_) | BlockKind::StreamHeader | BlockKind::EndOfStream => {
                self.stats.unknown_blocks += 1;
                Ok(None)
            }
        }
    }

    /// Reads the common V4+ event/metadata block header; returns (compressed, header length).
    fn block_header(data: &[u8], offset: u64, kind: BlockKind) -> Result<(bool, usize)> {
        let mut c = Cursor::new(data, offset);
        let header_size = c.u16().in_block(kind)? as usize;
        let flags = c.u16().in_block(kind)?;
        if header_size < 4 || header_size > data.len() {
            return Err(Error::at(
                offset,
                kind,
                ErrorKind::SizeOutOfRange {
                    what: "block header size",
                    found: header_size as u64,
                    min: 4,
                    max: data.len() as u64,
                },
            ));
        }
        Ok((flags & 1 != 0, header_size))
    }

    fn event_block_iter(&mut self, data: &[u8], offset: u64) -> Result<BlockIter> {
        let (encoding, pos) = if self.header.format == FormatVersion::NetPerf3 {
            (EventEncoding::V3, 0)
        } else {
            let (compressed, hs) = Self::block_header(data, offset, BlockKind::Event)?;
            let enc = match (self.is_v6(), compressed) {
                (false, false) => EventEncoding::V5Plain,
                (false, true) => EventEncoding::V5Compressed,
                (true, false) => EventEncoding::V6Plain,
                (true, true) => EventEncoding::V6Compressed,
            };
            (enc, hs)
        };
        Ok(BlockIter {
            encoding,
            pos,
            cur: RawEvent::default(),
        })
    }

    fn flush_seq_cache(&mut self) {
        if let Some(t) = self.cur_seq_thread.take() {
            self.last_seq.insert(t, self.cur_seq);
        }
    }

    /// Decodes the next event header of a block (metadata or event block) with a bounds check
    /// per field. `Ok(false)` at the end of the block.
    #[inline(never)]
    fn decode_header(&mut self, data: &[u8], offset: u64, it: &mut BlockIter) -> Result<bool> {
        if it.pos >= data.len() {
            return Ok(false);
        }
        let start = it.pos;
        let ev_offset = offset + start as u64;
        let mut c = Cursor::new(&data[start..], ev_offset);
        let kind = BlockKind::Event;
        let mut inline_stack = None;
        let next_pos;
        let payload_start;
        match it.encoding {
            EventEncoding::V5Compressed | EventEncoding::V6Compressed => {
                let v6 = it.encoding == EventEncoding::V6Compressed;
                let h = &mut it.cur.h;
                let flags = c.u8().in_block(kind)?;
                if flags & 1 != 0 {
                    h.metadata_id = c.varu32().in_block(kind)?;
                }
                if flags & 2 != 0 {
                    h.sequence = h.sequence.wrapping_add(c.varu32().in_block(kind)?);
                    h.capture_thread = c.varu64().in_block(kind)?;
                    h.processor = c.varu32().in_block(kind)?;
                }
                if v6 || h.metadata_id != 0 {
                    h.sequence = h.sequence.wrapping_add(1);
                }
                if flags & 4 != 0 {
                    h.thread = c.varu64().in_block(kind)?;
                }
                if flags & 8 != 0 {
                    h.stack_id = c.varu32().in_block(kind)?;
                }
                h.timestamp = h.timestamp.wrapping_add(c.varu64().in_block(kind)? as i64);
                if v6 {
                    if flags & 16 != 0 {
                        h.label_list = c.varu32().in_block(kind)?;
                    }
                } else {
                    if flags & 16 != 0 {
                        h.activity = c.guid().in_block(kind)?;
                    }
                    if flags & 32 != 0 {
                        h.related = c.guid().in_block(kind)?;
                    }
                }
                h.is_sorted = flags & 64 != 0;
                if flags & 128 != 0 {
                    h.payload_size = c.varu32().in_block(kind)?;
                }
                payload_start = start + c.position();
                c.skip(h.payload_size as usize).in_block(kind)?;
                next_pos = start + c.position();
            }
            EventEncoding::V5Plain | EventEncoding::V6Plain => {
                let v6 = it.encoding == EventEncoding::V6Plain;
                let size = c.u32().in_block(kind)? as usize;
                let meta = c.u32().in_block(kind)?;
                let mut h = RawHeader {
                    metadata_id: meta & 0x7fff_ffff,
                    is_sorted: meta & 0x8000_0000 != 0,
                    sequence: c.u32().in_block(kind)?,
                    thread: c.u64().in_block(kind)?,
                    capture_thread: c.u64().in_block(kind)?,
                    processor: c.u32().in_block(kind)?,
                    stack_id: c.u32().in_block(kind)?,
                    timestamp: c.i64().in_block(kind)?,
                    ..RawHeader::default()
                };
                if v6 {
                    h.label_list = c.u32().in_block(kind)?;
                } else {
                    h.activity = c.guid().in_block(kind)?;
                    h.related = c.guid().in_block(kind)?;
                }
                h.payload_size = c.u32().in_block(kind)?;
                let header_len = c.position();
                payload_start = start + header_len;
                if header_len + h.payload_size as usize > size + 4 {
                    return Err(Error::at(
                        ev_offset,
                        kind,
                        ErrorKind::SizeOutOfRange {
                            what: "event size",
                            found: size as u64,
                            min: (header_len - 4) as u64 + u64::from(h.payload_size),
                            max: u32::MAX.into(),
                        },
                    ));
                }
                // The next event follows the payload directly, as TraceEvent reads V4/V5 (the
                // format text mentions 4-byte padding; no writer we know emits it).
                next_pos = sized_event_end(data, start, size, ev_offset)?;
                it.cur.h = h;
            }
            EventEncoding::V3 => {
                let size = c.u32().in_block(kind)? as usize;
                let h = RawHeader {
                    metadata_id: c.u32().in_block(kind)?,
                    thread: u64::from(c.u32().in_block(kind)?),
                    timestamp: c.i64().in_block(kind)?,
                    activity: c.guid().in_block(kind)?,
                    related: c.guid().in_block(kind)?,
                    payload_size: c.u32().in_block(kind)?,
                    ..RawHeader::default()
                };
                payload_start = start + c.position();
                c.skip(h.payload_size as usize).in_block(kind)?;
                let at = c.offset();
                let stack_size = c.u32().in_block(kind)? as usize;
                let sp = start + c.position();
                c.skip(stack_size).in_block(kind)?;
                if c.position() > size + 4 {
                    return Err(Error::at(
                        at,
                        kind,
                        ErrorKind::SizeOutOfRange {
                            what: "event size",
                            found: size as u64,
                            min: (c.position() - 4) as u64,
                            max: u32::MAX.into(),
                        },
                    ));
                }
                inline_stack = Some((sp, stack_size));
                it.cur.h = h;
                next_pos = sized_event_end(data, start, size, ev_offset)?;
            }
        }
        it.cur.offset = ev_offset;
        it.cur.payload_start = payload_start;
        it.cur.inline_stack = inline_stack;
        it.pos = next_pos;
        Ok(true)
    }

    /// True when a test turned the compressed-header fast path off.
    #[cfg(test)]
    fn checked_only(&self) -> bool {
        self.test_checked_only
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn checked_only(&self) -> bool {
        false
    }

    /// Decodes the next real event of an event block (skipping NetPerf's inline metadata).
    #[inline(always)]
    pub(crate) fn next_in_block(
        &mut self,
        data: &[u8],
        offset: u64,
        it: &mut BlockIter,
    ) -> Result<bool> {
        loop {
            prefetch(data, it.pos + PREFETCH_DISTANCE);
            let fast = matches!(
                it.encoding,
                EventEncoding::V5Compressed | EventEncoding::V6Compressed
            ) && !self.checked_only()
                && compressed::next(data, offset, it);
            if !fast && !self.decode_header(data, offset, it)? {
                return Ok(false);
            }
            let raw = &it.cur;
            if raw.h.metadata_id == 0 {
                if it.encoding == EventEncoding::V3 {
                    let p =
                        &data[raw.payload_start..raw.payload_start + raw.h.payload_size as usize];
                    let m = metadata::parse_v5(p, offset + raw.payload_start as u64)?;
                    self.add_metadata(m);
                    continue;
                }
                return Err(Error::at(
                    raw.offset,
                    BlockKind::Event,
                    ErrorKind::InvalidValue {
                        what: "event's metadata id",
                        found: 0,
                        expected: "a non-zero id",
                    },
                ));
            }
            self.account(raw);
            return Ok(true);
        }
    }

    /// Counts an event: events, first and last times, and sequence gaps of its thread.
    #[inline(always)]
    fn account(&mut self, raw: &RawEvent) {
        let s = &mut self.stats;
        s.events += 1;
        let ts = raw.h.timestamp;
        s.min_timestamp = Some(s.min_timestamp.map_or(ts, |m| m.min(ts)));
        s.max_timestamp = Some(s.max_timestamp.map_or(ts, |m| m.max(ts)));
        if raw.inline_stack.is_some() {
            return; // NetPerf has no sequence numbers
        }
        let t = raw.h.capture_thread;
        if self.cur_seq_thread != Some(t) {
            self.switch_seq_thread(t);
        }
        let expected = self.cur_seq.wrapping_add(1);
        let seq = raw.h.sequence;
        if self.cur_seq != 0 && seq != expected && seq > expected {
            self.stats.dropped_events += u64::from(seq - expected);
            if self.at_start {
                self.stats.dropped_at_start += u64::from(seq - expected);
            }
        }
        if seq > self.cur_seq || seq == 1 {
            self.cur_seq = seq;
        }
    }

    /// Makes `t` the thread whose sequence numbers [`Decoder::account`] follows.
    #[inline(never)]
    fn switch_seq_thread(&mut self, t: u64) {
        self.flush_seq_cache();
        self.cur_seq = self.last_seq.get(&t).copied().unwrap_or(0);
        self.cur_seq_thread = Some(t);
    }

    #[inline]
    fn resolve_thread(&mut self, index: u64) -> (u64, Option<u64>) {
        if !self.is_v6() {
            return (index, self.header.process_id);
        }
        if let Some((i, t, p)) = self.thread_cache {
            if i == index {
                return (t, p);
            }
        }
        let (t, p) = match self.threads.get(&index) {
            Some(info) => (
                info.thread_id.unwrap_or(index),
                info.process_id.or(self.header.process_id),
            ),
            None => (index, self.header.process_id),
        };
        self.thread_cache = Some((index, t, p));
        (t, p)
    }

    /// Builds the event for a decoded header.
    #[inline(always)]
    pub(crate) fn make_event<'s>(&'s mut self, data: &'s [u8], raw: &RawEvent) -> Event<'s> {
        let (thread_id, process_id) = self.resolve_thread(raw.h.thread);
        let capture = if raw.inline_stack.is_some() {
            None
        } else if self.is_v6() {
            Some(self.resolve_thread(raw.h.capture_thread).0)
        } else {
            Some(raw.h.capture_thread)
        };
        let ps = self.header.pointer_size;
        // One look-up each for the stack and the metadata row; misses are counted here.
        let table_stack = match raw.inline_stack {
            None if raw.h.stack_id != 0 => {
                let found = self.stacks.get(raw.h.stack_id).is_some();
                if !found {
                    self.stats.missing_stacks += 1;
                }
                found
            }
            _ => false,
        };
        if self.metadata(raw.h.metadata_id).is_none() {
            self.stats.events_without_metadata += 1;
        }
        let this: &'s Decoder = self;
        let metadata = match this.metadata(raw.h.metadata_id) {
            Some(m) => m,
            None => &this.unknown_metadata,
        };
        let labels = if raw.h.label_list != 0 {
            this.labels.get(&raw.h.label_list)
        } else {
            None
        };
        let (activity_id, related_activity_id) = match labels {
            Some(l) => (
                l.activity_id.unwrap_or_default(),
                l.related_activity_id.unwrap_or_default(),
            ),
            None => (raw.h.activity, raw.h.related),
        };
        let payload = &data[raw.payload_start..raw.payload_start + raw.h.payload_size as usize];
        let stack = match raw.inline_stack {
            Some((s, l)) => Stack::new(&data[s..s + l], ps),
            None if table_stack => Stack::new(this.stacks.get(raw.h.stack_id).unwrap_or(&[]), ps),
            None => Stack::new(&[], ps),
        };
        Event {
            metadata,
            metadata_key: this.metadata_key(raw.h.metadata_id),
            payload,
            stack,
            stack_id: raw.h.stack_id,
            timestamp: raw.h.timestamp,
            clock: this.clock,
            thread_id,
            capture_thread_id: capture,
            thread_index: raw.h.thread,
            process_id,
            // The runtime writes u32::MAX when it does not know the processor (rundown).
            processor: if raw.inline_stack.is_some() || raw.h.processor == u32::MAX {
                None
            } else {
                Some(raw.h.processor)
            },
            sequence_number: raw.h.sequence,
            is_sorted: raw.h.is_sorted,
            activity_id,
            related_activity_id,
            labels,
            offset: raw.offset,
        }
    }
}
