//! The sans-I/O framing scanner: fed a trace's bytes in pieces of any size as they arrive, it
//! reports the stream header, each whole block and the end-of-stream marker with their absolute
//! offsets, without copying payloads. For programs that move a trace's bytes rather than read
//! its events: splicing blocks into a live stream, keeping a ring of recent blocks, cutting a
//! damaged file at its last whole block (see [`end_of_stream`]).

use crate::error::{BlockKind, Error, ErrorKind, Result};
use crate::framing::{self, BlockHead, Framing, Head, StreamStart, TraceStep};
use crate::header::{FormatVersion, TraceHeader};

/// The most bytes of a Trace block the scanner holds (it parses the Trace block whole).
const MAX_TRACE_BLOCK: usize = 1 << 20;

/// The most bytes of an end-of-stream block the scanner holds (V6 allows it to carry data).
const MAX_END_MARKER: usize = 64 << 10;

/// Where a block sits in the stream. All offsets are absolute byte offsets from the start of
/// the stream (the first byte fed to the [`Scanner`]).
///
/// In V3-V5 a block is a FastSerialization object: begin tag, type object, `u32` size, zero
/// padding to a multiple of 4, the payload, end tag. In V6 it is a 4-byte header (kind and
/// length) followed by the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Block {
    /// What the block holds.
    pub kind: BlockKind,
    /// The FastSerialization object's version (V3-V5); 0 in V6.
    pub version: i32,
    /// Offset of the block's first byte (its begin tag, or its V6 header).
    pub offset: u64,
    /// Offset of the payload's first byte.
    pub payload_offset: u64,
    /// Length of the payload.
    pub payload_len: u64,
    /// Zero bytes between the size field and the payload (V3-V5); 0 in V6. The size field is
    /// the 4 bytes before them.
    pub padding: u8,
    /// Offset one past the block's last byte (after its end tag in V3-V5).
    pub end: u64,
}

impl Block {
    fn new(h: &BlockHead, offset: u64) -> Block {
        Block {
            kind: h.kind,
            version: h.version,
            offset,
            payload_offset: offset + h.start as u64,
            payload_len: h.len as u64,
            padding: h.padding,
            end: offset + h.total() as u64,
        }
    }

    /// The block's length in bytes, header and end tag included.
    pub fn len(&self) -> u64 {
        self.end - self.offset
    }

    /// True for a block with no bytes at all (never the case in a valid stream).
    pub fn is_empty(&self) -> bool {
        self.end == self.offset
    }

    /// The payload's byte range in the stream.
    pub fn payload_range(&self) -> std::ops::Range<u64> {
        self.payload_offset..self.payload_offset + self.payload_len
    }

    /// True for event metadata. Events anywhere later refer to it, so a ring of recent blocks
    /// keeps every metadata block.
    pub fn is_metadata(&self) -> bool {
        self.kind == BlockKind::Metadata
    }

    /// True for blocks that later events may refer to across sequence points: metadata and
    /// V6 thread rows (and their removal). A ring of recent blocks keeps every one of them.
    pub fn is_persistent(&self) -> bool {
        matches!(
            self.kind,
            BlockKind::Metadata | BlockKind::Thread | BlockKind::RemoveThread
        )
    }

    /// True for a block of events.
    pub fn is_event(&self) -> bool {
        self.kind == BlockKind::Event
    }

    /// True for interned stacks (valid until the next sequence point).
    pub fn is_stack(&self) -> bool {
        self.kind == BlockKind::Stack
    }

    /// True for a sequence point: stack and label tables start afresh after it, so a reader
    /// can start reading events here (given the metadata before it).
    pub fn is_sequence_point(&self) -> bool {
        self.kind == BlockKind::SequencePoint
    }
}

/// One item of the stream, reported by [`Scanner::feed`] once its last byte has been fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Item {
    /// The stream header: the magic and serialization signature (V3-V5) or version (V6), then
    /// the Trace block `trace`. It spans `0..trace.end`; [`Scanner::header`] has what it says.
    Header {
        /// The format the header announces.
        format: FormatVersion,
        /// The Trace block (object in V3-V5).
        trace: Block,
    },
    /// A whole block.
    Block(Block),
    /// The end-of-stream marker at `offset..end` (one tag byte in V3-V5, a block header in V6).
    End {
        /// Offset of its first byte.
        offset: u64,
        /// Offset one past its last byte.
        end: u64,
    },
}

impl Item {
    /// Offset of the item's first byte.
    pub fn offset(&self) -> u64 {
        match self {
            Item::Header { .. } => 0,
            Item::Block(b) => b.offset,
            Item::End { offset, .. } => *offset,
        }
    }

    /// Offset one past the item's last byte.
    pub fn end(&self) -> u64 {
        match self {
            Item::Header { trace, .. } => trace.end,
            Item::Block(b) => b.end,
            Item::End { end, .. } => *end,
        }
    }
}

/// What one [`Scanner::feed`] call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    /// Bytes of the input consumed. The scanner stops right after an item's last byte, so
    /// feed the rest (`&input[consumed..]`) again.
    pub consumed: usize,
    /// The item that ended with the consumed bytes, if any.
    pub item: Option<Item>,
}

#[derive(Clone, Debug)]
enum State {
    /// Reading the magic and signature or version.
    Start,
    /// Reading the Trace block (held whole).
    Trace(StreamStart),
    /// Between blocks, or inside a block header that is held.
    Head,
    /// Inside a block: `left` payload bytes to come, then its trailer.
    Payload { block: Block, left: u64 },
    /// After the end-of-stream marker.
    Ended,
    /// After an error.
    Failed(Error),
}

/// A framing scanner over a trace's bytes, fed in pieces of any size (one byte at a time too).
///
/// It does no I/O and copies no payload: it holds only an incomplete block header (and the
/// stream header with its Trace block, which it parses). Each [`feed`](Scanner::feed) consumes
/// a prefix of its input and reports at most one [`Item`]; malformed bytes give an [`Error`]
/// naming their offset, after which every call returns that error again. The readers frame
/// blocks with the same code.
///
/// Typical uses:
/// - splicing: between two blocks ([`Scanner::at_boundary`]) whole blocks of another writer
///   can be inserted (keeping 4-byte alignment in V3-V5, where padding depends on offsets);
/// - a ring of recent data: keep the [`Item::Header`] bytes and every metadata (and V6 thread)
///   block ([`Block::is_persistent`]), and drop the oldest other blocks up to a sequence point
///   ([`Block::is_sequence_point`]), after which stacks and labels are written afresh;
/// - repair: keep the bytes up to the last item's [`end`](Item::end) and append
///   [`end_of_stream`] (example there).
///
/// ```
/// use nettrace::{Item, Scanner, TraceWriter, WriterOptions};
///
/// let bytes = TraceWriter::new(Vec::new(), WriterOptions::default())?.finish()?;
/// let mut scanner = Scanner::new();
/// let mut items = Vec::new();
/// for chunk in bytes.chunks(7) {
///     let mut input = chunk;
///     while !input.is_empty() {
///         let step = scanner.feed(input)?;
///         input = &input[step.consumed..];
///         items.extend(step.item);
///     }
/// }
/// assert!(matches!(items.first(), Some(Item::Header { .. })));
/// assert_eq!(items.last().map(|i| i.end()), Some(bytes.len() as u64));
/// assert!(scanner.is_ended());
/// assert_eq!(scanner.header().map(|h| h.pointer_size), Some(8));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Scanner {
    state: State,
    framing: Framing,
    format: Option<FormatVersion>,
    /// Absolute offset of the next byte to be fed.
    offset: u64,
    /// Bytes of an incomplete header, from absolute offset `offset - held.len()`.
    held: Vec<u8>,
    header: Option<TraceHeader>,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner::new()
    }
}

impl Scanner {
    /// A scanner for a whole stream, from its first byte.
    pub fn new() -> Scanner {
        Scanner {
            state: State::Start,
            framing: Framing::FastSerialization,
            format: None,
            offset: 0,
            held: Vec::new(),
            header: None,
        }
    }

    /// A scanner that starts between two blocks at absolute `offset` of a `format` stream
    /// whose header it does not see (to scan blocks copied out of a stream; padding in V3-V5
    /// depends on the offset). [`Scanner::header`] stays `None`.
    pub fn between_blocks(format: FormatVersion, offset: u64) -> Scanner {
        Scanner {
            state: State::Head,
            framing: match format {
                FormatVersion::NetTrace6 => Framing::V6,
                _ => Framing::FastSerialization,
            },
            format: Some(format),
            offset,
            held: Vec::new(),
            header: None,
        }
    }

    /// Absolute offset of the next byte to feed (bytes fed so far, for a whole stream).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The format, once the stream header announced it.
    pub fn format(&self) -> Option<FormatVersion> {
        self.format
    }

    /// The Trace block's contents, once read.
    pub fn header(&self) -> Option<&TraceHeader> {
        self.header.as_ref()
    }

    /// True between two blocks: the stream header was read, the last byte fed ended a block,
    /// and nothing is held. A splicer may insert whole blocks here.
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Head) && self.held.is_empty()
    }

    /// Bytes held back: an incomplete header (or stream header).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The block being fed: its header was read, some of its payload or end tag is still to
    /// come. A repair tool can salvage the events of a cut event block with it.
    pub fn current(&self) -> Option<&Block> {
        match &self.state {
            State::Payload { block, .. } => Some(block),
            _ => None,
        }
    }

    /// True once the end-of-stream marker was read.
    pub fn is_ended(&self) -> bool {
        matches!(self.state, State::Ended)
    }

    /// Feeds bytes. Consumes a prefix of `input` and reports the item it completed, if any;
    /// call again with the rest. A non-empty input always consumes at least one byte or fails.
    /// After the end-of-stream marker, more bytes are an error ([`ErrorKind::DataAfterEnd`]).
    pub fn feed(&mut self, input: &[u8]) -> Result<Step> {
        let r = if input.is_empty() {
            match &self.state {
                State::Failed(e) => Err(e.clone()),
                _ => Ok(none(0)),
            }
        } else {
            match &mut self.state {
                State::Payload { block, left } => payload(block, left, input, &mut self.offset),
                State::Head => self.head(input),
                State::Start | State::Trace(_) => self.preamble(input),
                State::Ended => Err(Error::at(
                    self.offset,
                    BlockKind::EndOfStream,
                    ErrorKind::DataAfterEnd,
                )),
                State::Failed(e) => Err(e.clone()),
            }
        };
        match r {
            Ok(step) => {
                if let State::Payload { block, left: 0 } = self.state {
                    self.state = State::Head;
                    return Ok(Step {
                        consumed: step.consumed,
                        item: Some(Item::Block(block)),
                    });
                }
                Ok(step)
            }
            Err(e) => {
                self.held.clear();
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Feeds all of `input`, calling `on_item` with each item it completes (for callers that
    /// need not act between the bytes of one piece, e.g. a ring or a repair tool).
    ///
    /// ```
    /// use nettrace::{Item, Scanner, TraceWriter, WriterOptions};
    ///
    /// let bytes = TraceWriter::new(Vec::new(), WriterOptions::default())?.finish()?;
    /// let mut scanner = Scanner::new();
    /// let mut ends = Vec::new();
    /// for piece in bytes.chunks(100) {
    ///     scanner.feed_all(piece, |item| ends.push(item.end()))?;
    /// }
    /// assert_eq!(ends.last(), Some(&(bytes.len() as u64)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn feed_all(&mut self, mut input: &[u8], mut on_item: impl FnMut(Item)) -> Result<()> {
        while !input.is_empty() {
            let step = self.feed(input)?;
            input = &input[step.consumed..];
            if let Some(item) = step.item {
                on_item(item);
            }
        }
        Ok(())
    }

    /// Appends up to `want - held` bytes of `input` to the held bytes; returns how many.
    fn hold(&mut self, input: &[u8], want: usize) -> usize {
        let k = want.saturating_sub(self.held.len()).clamp(1, input.len());
        self.held.extend_from_slice(&input[..k]);
        self.offset += k as u64;
        k
    }

    /// Reads a block header from `buf` at absolute `at`.
    fn block_head(&self, buf: &[u8], at: u64) -> Result<Head> {
        let head = framing::block_head(self.framing, buf, at)?;
        match head {
            Head::End { total } if total > MAX_END_MARKER => Err(Error::at(
                at,
                BlockKind::EndOfStream,
                ErrorKind::LimitExceeded {
                    what: "end-of-stream block size",
                    value: total as u64,
                    limit: MAX_END_MARKER as u64,
                },
            )),
            _ => Ok(head),
        }
    }

    /// Between blocks or in a held header.
    fn head(&mut self, input: &[u8]) -> Result<Step> {
        if self.held.is_empty() {
            // The common case: the whole header is in the input; nothing is copied.
            match self.block_head(input, self.offset)? {
                Head::Need(_) => {}
                Head::End { total } if total <= input.len() => {
                    return Ok(self.end_marker(self.offset, total));
                }
                Head::End { .. } => {}
                Head::Block(h) => return Ok(self.begin_block(&h, self.offset, h.start)),
            }
        }
        let mut consumed = 0;
        loop {
            let at = self.offset - self.held.len() as u64;
            let want = match self.block_head(&self.held, at)? {
                Head::Need(n) => n,
                Head::End { total } if total <= self.held.len() => {
                    self.held.clear();
                    let mut step = self.end_marker(at, 0);
                    step.consumed = consumed;
                    return Ok(step);
                }
                Head::End { total } => total,
                Head::Block(h) if h.start <= self.held.len() => {
                    // The header needs are exact: the held bytes are the header, no more.
                    debug_assert_eq!(h.start, self.held.len());
                    self.held.clear();
                    let mut step = self.begin_block(&h, at, 0);
                    step.consumed = consumed;
                    return Ok(step);
                }
                Head::Block(h) => h.start,
            };
            if consumed == input.len() {
                return Ok(none(consumed));
            }
            consumed += self.hold(&input[consumed..], want);
        }
    }

    /// The end marker at `at`; `fresh` of its bytes come from the current input.
    fn end_marker(&mut self, at: u64, fresh: usize) -> Step {
        self.offset += fresh as u64;
        self.state = State::Ended;
        Step {
            consumed: fresh,
            item: Some(Item::End {
                offset: at,
                end: self.offset,
            }),
        }
    }

    /// A block whose header ends here; `fresh` header bytes come from the current input.
    fn begin_block(&mut self, h: &BlockHead, at: u64, fresh: usize) -> Step {
        self.offset += fresh as u64;
        let block = Block::new(h, at);
        self.state = State::Payload {
            block,
            left: block.end - block.payload_offset,
        };
        // A V6 block with an empty payload is whole already (`feed` reports it).
        none(fresh)
    }

    /// The stream header and the Trace block, held whole.
    fn preamble(&mut self, input: &[u8]) -> Result<Step> {
        let mut consumed = 0;
        loop {
            let want = match &self.state {
                State::Start => match framing::stream_start(&self.held)? {
                    None => self.held.len() + 1,
                    Some(start) => {
                        self.framing = start.framing;
                        self.format = Some(start.format());
                        self.held.drain(..start.consumed);
                        self.state = State::Trace(start);
                        continue;
                    }
                },
                State::Trace(start) => {
                    let at = self.offset - self.held.len() as u64;
                    match framing::trace_block(start, &self.held, at)? {
                        TraceStep::Need(n) => n,
                        TraceStep::Done { header, head, .. } => {
                            let trace = Block::new(&head, at);
                            let format = header.format;
                            self.header = Some(header);
                            self.held = Vec::new();
                            self.state = State::Head;
                            return Ok(Step {
                                consumed,
                                item: Some(Item::Header { format, trace }),
                            });
                        }
                    }
                }
                _ => return Ok(none(consumed)),
            };
            if want > MAX_TRACE_BLOCK {
                return Err(Error::at(
                    self.offset - self.held.len() as u64,
                    BlockKind::Trace,
                    ErrorKind::LimitExceeded {
                        what: "Trace block size",
                        value: want as u64,
                        limit: MAX_TRACE_BLOCK as u64,
                    },
                ));
            }
            if consumed == input.len() {
                return Ok(none(consumed));
            }
            consumed += self.hold(&input[consumed..], want);
        }
    }
}

fn none(consumed: usize) -> Step {
    Step {
        consumed,
        item: None,
    }
}

/// Inside a block's payload and trailer: passes bytes by, checking the V3-V5 end tag.
fn payload(block: &Block, left: &mut u64, input: &[u8], offset: &mut u64) -> Result<Step> {
    let trailer = block.end - block.payload_offset - block.payload_len;
    if *left > trailer {
        let k = (*left - trailer).min(input.len() as u64) as usize;
        *left -= k as u64;
        *offset += k as u64;
        return Ok(none(k));
    }
    framing::check_end_tag(block.kind, input[0], *offset)?;
    *left -= 1;
    *offset += 1;
    Ok(none(1))
}

/// The bytes that end a stream of `format`: append them after the last whole block to make a
/// cut trace whole again.
///
/// ```
/// use nettrace::{end_of_stream, FormatVersion, Scanner, TraceReader, TraceWriter, WriterOptions};
/// use nettrace::{EventMetadata, EventRecord};
///
/// assert_eq!(end_of_stream(FormatVersion::NetTrace4), [1]);
/// assert_eq!(end_of_stream(FormatVersion::NetTrace6), [0, 0, 0, 0]);
///
/// // Repair: a trace cut in the middle of a block (a recorder that died) is kept up to its
/// // last whole block, and ended.
/// let mut w = TraceWriter::new(Vec::new(), WriterOptions::default())?;
/// let id = w.define(&EventMetadata { provider: "P".into(), ..Default::default() })?;
/// w.write(&EventRecord { metadata_id: id, ..Default::default() })?;
/// w.sequence_point()?;
/// w.write(&EventRecord { metadata_id: id, ..Default::default() })?;
/// let whole = w.finish()?;
/// let cut = &whole[..whole.len() - 10];
///
/// let mut scanner = Scanner::new();
/// let mut last_whole = 0;
/// // (Damage would stop the scan with an error: the bytes before it are kept the same way.)
/// let _ = scanner.feed_all(cut, |item| last_whole = item.end());
/// let mut fixed = cut[..last_whole as usize].to_vec();
/// fixed.extend_from_slice(end_of_stream(scanner.format().unwrap()));
///
/// let mut reader = TraceReader::new(&fixed)?;
/// while reader.next_event()?.is_some() {}
/// assert!(reader.stats().ended_cleanly);
/// assert_eq!(reader.stats().events, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn end_of_stream(format: FormatVersion) -> &'static [u8] {
    match format {
        FormatVersion::NetTrace6 => &[0, 0, 0, 0],
        FormatVersion::NetPerf3 | FormatVersion::NetTrace4 => &[1],
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
