//! The event type every reader yields, and the small tables it refers to (stacks, threads,
//! label lists).

use crate::header::Clock;
use crate::metadata::EventMetadata;
use crate::value::Guid;

/// A stack as stored in the trace: instruction pointers, innermost frame first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stack<'a> {
    bytes: &'a [u8],
    pointer_size: u8,
}

impl<'a> Stack<'a> {
    /// A stack over raw bytes of `pointer_size`-wide addresses (4 or 8).
    pub fn new(bytes: &'a [u8], pointer_size: u8) -> Stack<'a> {
        Stack {
            bytes,
            pointer_size,
        }
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.pointer_size.max(1) as usize
    }

    /// True when the event has no stack.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The width of one address in bytes (4 or 8), the trace header's.
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }

    /// Instruction pointers, innermost first.
    pub fn ips(&self) -> Ips<'a> {
        let wide = self.pointer_size != 4;
        Ips {
            chunks: self.bytes.chunks_exact(if wide { 8 } else { 4 }),
            wide,
        }
    }
}

/// Iterator over a stack's instruction pointers.
#[derive(Clone, Debug)]
pub struct Ips<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    wide: bool,
}

#[inline(always)]
fn ip_of(c: &[u8], wide: bool) -> u64 {
    if wide {
        let mut b = [0u8; 8];
        b.copy_from_slice(&c[..8]);
        u64::from_le_bytes(b)
    } else {
        let mut b = [0u8; 4];
        b.copy_from_slice(&c[..4]);
        u64::from(u32::from_le_bytes(b))
    }
}

impl Iterator for Ips<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        let c = self.chunks.next()?;
        Some(ip_of(c, self.wide))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }

    #[inline]
    fn fold<B, F: FnMut(B, u64) -> B>(self, init: B, mut f: F) -> B {
        // One branch on the width, then a tight loop.
        if self.wide {
            self.chunks.fold(init, |acc, c| f(acc, ip_of(c, true)))
        } else {
            self.chunks.fold(init, |acc, c| f(acc, ip_of(c, false)))
        }
    }
}

impl ExactSizeIterator for Ips<'_> {}

/// A V6 label list: correlation ids and other labels attached to events, and overrides of the
/// metadata's opcode, keywords, level and version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelList {
    /// Activity id.
    pub activity_id: Option<Guid>,
    /// Related activity id.
    pub related_activity_id: Option<Guid>,
    /// W3C trace id.
    pub trace_id: Option<[u8; 16]>,
    /// W3C span id.
    pub span_id: Option<u64>,
    /// Opcode override.
    pub opcode: Option<u8>,
    /// Keywords override.
    pub keywords: Option<u64>,
    /// Level override.
    pub level: Option<u8>,
    /// Version override.
    pub version: Option<u8>,
    /// String labels.
    pub strings: Vec<(String, String)>,
    /// Integer labels.
    pub integers: Vec<(String, i64)>,
}

/// What a V6 thread row says about a thread index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ThreadInfo {
    /// OS thread id.
    pub(crate) thread_id: Option<u64>,
    /// OS process id.
    pub(crate) process_id: Option<u64>,
    /// Thread name.
    pub(crate) name: Option<String>,
    /// Other key/value facts.
    pub(crate) key_values: Vec<(String, String)>,
}

/// One event. Borrowed from the reader: payload bytes are not copied. Only the readers make
/// events; new fields may be added.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Event<'a> {
    /// The metadata row of this event (provider, id, name, version, declared fields).
    pub metadata: &'a EventMetadata,
    /// See [`Event::metadata_key`].
    pub(crate) metadata_key: u64,
    /// Payload bytes.
    pub payload: &'a [u8],
    /// The event's stack (empty when it has none).
    pub stack: Stack<'a>,
    /// Stack id in the trace's stack table (0 = none; V3 stacks are inline and have no id).
    pub stack_id: u32,
    /// Timestamp in clock ticks.
    pub timestamp: i64,
    /// The trace clock (to convert `timestamp`).
    pub clock: Clock,
    /// OS thread id the event describes.
    pub thread_id: u64,
    /// OS thread id that captured the event (`None` in NetPerf traces).
    pub capture_thread_id: Option<u64>,
    /// V6 thread table index of `thread_id` (equal to `thread_id` before V6).
    pub thread_index: u64,
    /// Process id (V6 thread rows, or the trace's process id).
    pub process_id: Option<u64>,
    /// Processor number of the capturing thread (`None` in NetPerf traces).
    pub processor: Option<u32>,
    /// Per-capture-thread sequence number (0 in NetPerf traces).
    pub sequence_number: u32,
    /// The writer's "sorted" flag: no later event in the file has an earlier timestamp.
    pub is_sorted: bool,
    /// Activity id (V3-V5 header; V6 label list).
    pub activity_id: Guid,
    /// Related activity id.
    pub related_activity_id: Guid,
    /// V6 label list, when the event has one.
    pub labels: Option<&'a LabelList>,
    /// Absolute byte offset of the event's header in the stream.
    pub offset: u64,
}

impl<'a> Event<'a> {
    /// Provider name.
    pub fn provider(&self) -> &'a str {
        &self.metadata.provider
    }

    /// Identifies the metadata row the event refers to: events with the same key share one row
    /// (same provider, event id, version and fields), whichever reader of this process read
    /// them; a row redefined later (V6 may reuse an id) gets a new key. 0 when the event's
    /// metadata id was never defined. Lets consumers cache per row without comparing names.
    pub fn metadata_key(&self) -> u64 {
        self.metadata_key
    }

    /// The traced process's pointer width in bytes (4 or 8), from the trace header: the
    /// value to give payload decoders (a pointer-sized field moves every field after it).
    pub fn pointer_size(&self) -> u8 {
        self.stack.pointer_size()
    }

    /// Event id.
    pub fn event_id(&self) -> u32 {
        self.metadata.event_id
    }

    /// Event name as written in the trace's metadata (may be empty; see `clr-events` for names
    /// of the runtime's own events).
    pub fn metadata_name(&self) -> &'a str {
        &self.metadata.event_name
    }

    /// Event version (label list override, else metadata).
    pub fn version(&self) -> u8 {
        self.labels
            .and_then(|l| l.version)
            .unwrap_or(self.metadata.version)
    }

    /// Level (label list override, else metadata).
    pub fn level(&self) -> u8 {
        self.labels
            .and_then(|l| l.level)
            .unwrap_or(self.metadata.level)
    }

    /// Keywords (label list override, else metadata).
    pub fn keywords(&self) -> u64 {
        self.labels
            .and_then(|l| l.keywords)
            .unwrap_or(self.metadata.keywords)
    }

    /// Opcode (label list override, else metadata).
    pub fn opcode(&self) -> u8 {
        self.labels
            .and_then(|l| l.opcode)
            .unwrap_or(self.metadata.opcode)
    }

    /// Nanoseconds since the trace start.
    pub fn timestamp_ns(&self) -> i64 {
        self.clock.ns_since_start(self.timestamp)
    }

    /// Nanoseconds since the Unix epoch (UTC).
    pub fn unix_ns(&self) -> i64 {
        self.clock.unix_ns(self.timestamp)
    }

    /// Decodes the payload with the fields the metadata declares (self-describing events).
    pub fn decode_with_metadata(&self) -> crate::payload::DecodedPayload {
        crate::payload::decode_payload(&self.metadata.fields, self.payload)
    }
}
