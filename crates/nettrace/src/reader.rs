//! The readers: [`TraceReader`] over a byte slice or memory map (zero-copy) and
//! [`StreamReader`] over any `io::Read` (a file being written, a socket). Both share one engine
//! over a [`ByteSource`] and yield the same [`Event`] type; they find blocks with the framing
//! code the [`Scanner`](crate::Scanner) uses.
//!
//! Events come in file order. Events of different threads between two sequence points are not
//! sorted by time; [`Event::is_sorted`] carries the writer's hint.

use std::io::Read;
use std::path::Path;

use crate::decoder::brief::{BriefAnswer, EventBrief};
use crate::decoder::{BlockIter, Decoder, TraceStats};
use crate::error::{BlockKind, Error, ErrorKind, Result};
use crate::event::Event;
use crate::framing::{self, Frame, StreamStart, TraceStep};
use crate::header::TraceHeader;
use crate::metadata::EventMetadata;

/// Hard limit on one block held in memory by the streaming reader.
pub(crate) const MAX_STREAM_BLOCK: usize = 256 << 20;

/// A window of bytes the reader works on. Implemented for slices and `io::Read` sources.
pub trait ByteSource {
    /// The bytes not yet consumed.
    fn window(&self) -> &[u8];
    /// Absolute stream offset of `window()[0]`.
    fn window_offset(&self) -> u64;
    /// Drops `n` bytes from the front of the window.
    fn consume(&mut self, n: usize);
    /// Tries to make the window at least `n` bytes long. `Ok(false)` when the source ended first.
    fn fill(&mut self, n: usize) -> Result<bool>;
}

/// A byte slice as a source: everything is already in the window.
#[derive(Clone, Copy, Debug)]
pub struct SliceSource<'a> {
    data: &'a [u8],
    pos: usize,
}

impl ByteSource for SliceSource<'_> {
    #[inline]
    fn window(&self) -> &[u8] {
        &self.data[self.pos..]
    }
    #[inline]
    fn window_offset(&self) -> u64 {
        self.pos as u64
    }
    #[inline]
    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
    }
    #[inline]
    fn fill(&mut self, n: usize) -> Result<bool> {
        Ok(self.data.len() - self.pos >= n)
    }
}

/// An `io::Read` as a source: bytes are read as needed into a buffer that holds the current
/// block and what was read past it.
///
/// Reads go straight into the buffer in chunks of at least 1 MB (so a
/// `BufReader` below with a smaller capacity passes them through instead of copying), the
/// buffer is zeroed only when it grows (the first time by the allocator, so that its pages are
/// touched only as reads fill them), and the unread tail moves to its front only when too
/// little room is left behind it.
#[derive(Debug)]
pub struct ReadSource<R> {
    inner: R,
    /// Initialized bytes; `start..end` is the window.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    offset: u64,
    ended: bool,
    /// The smallest read asked of `inner`.
    min_read: usize,
    /// The buffer's usual size.
    buffer: usize,
}

/// The smallest read the streaming reader asks its source for.
const MIN_READ: usize = 1 << 20;
/// The streaming reader's usual buffer size.
const READ_BUFFER: usize = 4 << 20;

impl<R: Read> ReadSource<R> {
    fn new(inner: R) -> Self {
        Self::with_buffer(inner, READ_BUFFER)
    }

    /// A source whose buffer is usually `buffer` bytes (at least 4 KB; it grows for a larger
    /// block), read in chunks of at least a quarter of it (at most [`MIN_READ`]).
    fn with_buffer(inner: R, buffer: usize) -> Self {
        let buffer = buffer.max(4096);
        ReadSource {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            offset: 0,
            ended: false,
            min_read: (buffer / 4).min(MIN_READ),
            buffer,
        }
    }
}

impl<R: Read> ByteSource for ReadSource<R> {
    #[inline]
    fn window(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }
    #[inline]
    fn window_offset(&self) -> u64 {
        self.offset
    }
    fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }
    fn fill(&mut self, n: usize) -> Result<bool> {
        if n > MAX_STREAM_BLOCK {
            return Err(Error::new(
                self.offset,
                None,
                ErrorKind::LimitExceeded {
                    what: "block size",
                    value: n as u64,
                    limit: MAX_STREAM_BLOCK as u64,
                },
            ));
        }
        while self.end - self.start < n && !self.ended {
            if self.buf.len() - self.end < self.min_read || self.buf.len() - self.start < n {
                // Too little room behind the window: move it to the front, grow if needed.
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                let want = n.max(self.end + self.min_read).max(self.buffer);
                if self.buf.is_empty() {
                    // Zeroed memory from the allocator: a page is touched only when a read
                    // fills it (a slow stream's reader stays a few pages, not `buffer`).
                    self.buf = vec![0; want];
                } else if self.buf.len() < want {
                    self.buf.resize(want, 0);
                }
            }
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.ended = true,
                Ok(k) => self.end = (self.end + k).min(self.buf.len()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let have = (self.end - self.start) as u64;
                    return Err(Error::io(self.offset + have, e));
                }
            }
        }
        Ok(self.end - self.start >= n)
    }
}

#[derive(Clone, Copy, Debug)]
struct Current {
    start: usize,
    len: usize,
    total: usize,
    it: BlockIter,
}

/// The reader engine over any [`ByteSource`]. Use [`TraceReader`] or [`StreamReader`].
pub struct Reader<S> {
    src: S,
    dec: Decoder,
    start: StreamStart,
    cur: Option<Current>,
    done: bool,
    pending: Option<Error>,
    error: Option<Error>,
}

/// Reads a trace held in memory (a slice or a memory map). Zero-copy: payloads borrow the input.
pub type TraceReader<'a> = Reader<SliceSource<'a>>;

/// Reads a trace incrementally from an `io::Read`, holding one block and at most a few MB read
/// past it in memory.
pub type StreamReader<R> = Reader<ReadSource<R>>;

impl<'a> Reader<SliceSource<'a>> {
    /// Starts reading `data`: parses the stream header and the Trace block.
    pub fn new(data: &'a [u8]) -> Result<Self> {
        Reader::with_source(SliceSource { data, pos: 0 })
    }
}

impl<R: Read> Reader<ReadSource<R>> {
    /// Starts reading from `source`: blocks until the stream header and Trace block arrived.
    ///
    /// ```
    /// use nettrace::{StreamReader, TraceWriter, WriterOptions};
    ///
    /// let bytes = TraceWriter::new(Vec::new(), WriterOptions::default())?.finish()?;
    /// // Any `io::Read`: a file, a socket, a pipe.
    /// let mut reader = StreamReader::from_read(&bytes[..])?;
    /// assert_eq!(reader.header().pointer_size, 8);
    /// assert!(reader.next_event()?.is_none());
    /// assert!(reader.stats().ended_cleanly);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_read(source: R) -> Result<Self> {
        Reader::with_source(ReadSource::new(source))
    }

    /// [`Reader::from_read`] with a buffer of usually `buffer` bytes instead of 4 MB (it
    /// still grows to hold a larger block): for a live stream whose reads are small, where
    /// the reader's memory matters more than the number of reads.
    pub fn from_read_with_buffer(source: R, buffer: usize) -> Result<Self> {
        Reader::with_source(ReadSource::with_buffer(source, buffer))
    }

    /// The underlying source.
    pub fn get_ref(&self) -> &R {
        &self.src.inner
    }
}

fn truncated(src_offset: u64, needed: usize, have: usize, kind: Option<BlockKind>) -> Error {
    Error::new(
        src_offset,
        kind,
        ErrorKind::Truncated {
            needed: needed as u64,
            available: have as u64,
        },
    )
}

impl<S: ByteSource> Reader<S> {
    /// Starts reading from any source.
    pub fn with_source(mut src: S) -> Result<Self> {
        // Stream header.
        let mut want = 24;
        let start = loop {
            let more = src.fill(want)?;
            if let Some(s) = framing::stream_start(src.window())? {
                break s;
            }
            if !more {
                let have = src.window().len();
                return Err(truncated(0, want, have, Some(BlockKind::StreamHeader)));
            }
            want += 16;
        };
        src.consume(start.consumed);
        // Trace block.
        let mut want = 64;
        let (header, total) = loop {
            let more = src.fill(want)?;
            let w = src.window();
            let off = src.window_offset();
            match framing::trace_block(&start, w, off)? {
                TraceStep::Done { header, total, .. } => break (header, total),
                TraceStep::Need(needed) => {
                    if !more {
                        return Err(truncated(off, needed, w.len(), Some(BlockKind::Trace)));
                    }
                    want = needed.max(w.len() + 16);
                }
            }
        };
        src.consume(total);
        let mut dec = Decoder::new(&start, header);
        dec.stats.bytes_read = src.window_offset();
        Ok(Reader {
            src,
            dec,
            start,
            cur: None,
            done: false,
            pending: None,
            error: None,
        })
    }

    /// The trace header.
    pub fn header(&self) -> &TraceHeader {
        &self.dec.header
    }

    /// Counters so far (complete after the last event).
    pub fn stats(&self) -> &TraceStats {
        &self.dec.stats
    }

    /// The error that ended reading, if any (also returned once by [`Reader::next_event`]).
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// Metadata rows read so far.
    pub fn metadata(&self) -> impl Iterator<Item = &EventMetadata> {
        self.dec.all_metadata()
    }

    /// Absolute stream offset one past the event decoded last, while its block is being read
    /// (repair keeps the whole events of a cut block up to here).
    pub(crate) fn event_end(&self) -> Option<u64> {
        let cur = self.cur.as_ref()?;
        Some(self.src.window_offset() + (cur.start + cur.it.pos) as u64)
    }

    fn fail(&mut self, e: Error) -> Error {
        self.done = true;
        self.cur = None;
        self.error = Some(e.clone());
        e
    }

    /// The next event, `Ok(None)` at the end. After an error (returned once), reading has
    /// stopped for good: every complete event before the damage has been yielded.
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>> {
        if self.advance()? {
            Ok(self.current())
        } else {
            Ok(None)
        }
    }

    /// Decodes the next event's header: `Ok(true)` when [`Reader::current`] has an event.
    fn advance(&mut self) -> Result<bool> {
        loop {
            if !self.enter_block()? {
                return Ok(false);
            }
            let Some(cur) = self.cur.as_mut() else {
                continue;
            };
            let off = self.src.window_offset() + cur.start as u64;
            let blk = &self.src.window()[cur.start..cur.start + cur.len];
            match self.dec.next_in_block(blk, off, &mut cur.it) {
                Ok(true) => return Ok(true),
                Ok(false) => self.leave_block()?,
                Err(e) => return Err(self.block_damaged(e)),
            }
        }
    }

    /// Reads blocks until one with events to iterate is current: `Ok(false)` at the end.
    /// Called once per event: the usual case (a block is current) is a test inlined into the
    /// caller; reading the next block is a call of its own.
    #[inline(always)]
    fn enter_block(&mut self) -> Result<bool> {
        if self.cur.is_some() {
            return Ok(true);
        }
        self.next_current_block()
    }

    /// [`Reader::enter_block`]'s slow half: reads blocks until one is current.
    #[inline(never)]
    fn next_current_block(&mut self) -> Result<bool> {
        while self.cur.is_none() {
            if self.done {
                return Ok(false);
            }
            match self.next_block() {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(true)
    }

    /// Moves past the current event block after its last event (an earlier pending truncation
    /// is the error then).
    fn leave_block(&mut self) -> Result<()> {
        let total = self.cur.take().map_or(0, |c| c.total);
        if let Some(e) = self.pending.take() {
            return Err(self.fail(e));
        }
        self.src.consume(total);
        self.dec.stats.bytes_read = self.src.window_offset();
        Ok(())
    }

    /// Ends reading at damage inside the current event block (an earlier pending truncation
    /// says more).
    #[cold]
    fn block_damaged(&mut self, e: Error) -> Error {
        let e = self.pending.take().unwrap_or(e);
        self.fail(e)
    }

    /// The event [`Reader::advance`] decoded last, built where the caller wants it (returning
    /// it through `Result<Option<_>>` costs a copy of the whole event).
    #[inline(always)]
    fn current(&mut self) -> Option<Event<'_>> {
        let cur = self.cur.as_ref()?;
        let blk = self.src.window().get(cur.start..cur.start + cur.len)?;
        Some(self.dec.make_event(blk, &cur.it.cur))
    }

    /// Moves to the next block. `Ok(false)` at the end of the stream.
    fn next_block(&mut self) -> Result<bool> {
        let mut want = 8;
        let mut kind_seen = None;
        loop {
            let more = self.src.fill(want).map_err(|e| match kind_seen {
                Some(k) => e.in_block(k),
                None => e,
            })?;
            let off = self.src.window_offset();
            let w = self.src.window();
            if w.is_empty() && !more {
                // The stream stopped between blocks, without its end marker.
                self.done = true;
                return Err(Error::at(
                    off,
                    BlockKind::EndOfStream,
                    ErrorKind::MissingEndOfStream,
                ));
            }
            match framing::next_frame(self.start.framing, w, off)? {
                Frame::Block {
                    kind,
                    start,
                    len,
                    total,
                    ..
                } => {
                    let data = &w[start..start + len];
                    let abs = off + start as u64;
                    match self.dec.begin_block(kind, data, abs)? {
                        Some(it) => {
                            self.cur = Some(Current {
                                start,
                                len,
                                total,
                                it,
                            });
                        }
                        None => {
                            self.src.consume(total);
                            self.dec.stats.bytes_read = self.src.window_offset();
                        }
                    }
                    return Ok(true);
                }
                Frame::End { total } => {
                    self.src.consume(total);
                    self.dec.stats.bytes_read = self.src.window_offset();
                    self.dec.stats.ended_cleanly = true;
                    self.done = true;
                    return Ok(false);
                }
                Frame::NeedMore { needed, partial } => {
                    kind_seen = partial.map(|p| p.0);
                    if more {
                        want = if needed > w.len() {
                            needed
                        } else {
                            w.len() + 8
                        };
                        continue;
                    }
                    // Truncated: salvage the complete events of a cut event block.
                    let have = w.len();
                    let err = match partial {
                        Some((kind, start, len)) => Error::at(
                            off,
                            kind,
                            ErrorKind::TruncatedBlock {
                                declared: len as u64,
                                available: have.saturating_sub(start) as u64,
                            },
                        ),
                        None => truncated(off, needed, have, None),
                    };
                    self.done = true;
                    if let Some((BlockKind::Event, start, _)) = partial {
                        if start < have {
                            let data = &w[start..have];
                            let abs = off + start as u64;
                            if let Ok(Some(it)) = self.dec.begin_block(BlockKind::Event, data, abs)
                            {
                                self.cur = Some(Current {
                                    start,
                                    len: have - start,
                                    total: have,
                                    it,
                                });
                                self.pending = Some(err);
                                return Ok(true);
                            }
                        }
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Calls `sink` for every event until it returns `false` or the trace ends. Returns the
    /// error that stopped reading, after all complete events before it were passed to `sink`.
    pub fn for_each_event(&mut self, mut sink: impl FnMut(&Event<'_>) -> bool) -> Result<()> {
        while self.advance()? {
            if let Some(ev) = self.current() {
                if !sink(&ev) {
                    break;
                }
            }
        }
        Ok(())
    }
}

impl<S: ByteSource> Reader<S> {
    /// The lean counting pass: calls `sink` with each event's [`EventBrief`] (decoded from the
    /// header alone, no [`Event`] built) and `None`; when it answers
    /// [`BriefAnswer::NeedEvent`], builds the event and calls it again with `Some(event)` (that
    /// second answer is `Done` or `Stop`). Statistics end as with [`Reader::for_each_event`];
    /// so does the error.
    pub fn for_each_brief(
        &mut self,
        mut sink: impl FnMut(&EventBrief, Option<&Event<'_>>) -> BriefAnswer,
    ) -> Result<()> {
        loop {
            if !self.enter_block()? {
                return Ok(());
            }
            let Some(cur) = self.cur.as_mut() else {
                continue;
            };
            let off = self.src.window_offset() + cur.start as u64;
            let blk = &self.src.window()[cur.start..cur.start + cur.len];
            match self.dec.brief_block(blk, off, &mut cur.it, &mut sink) {
                Ok(true) => return Ok(()),
                Ok(false) => self.leave_block()?,
                Err(e) => return Err(self.block_damaged(e)),
            }
        }
    }
}

/// A trace file mapped into memory.
pub struct TraceFile {
    map: memmap2::Mmap,
}

impl TraceFile {
    /// Maps the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<TraceFile> {
        let f = std::fs::File::open(path)?;
        // SAFETY: the map is read-only; a file truncated by another process while mapped can
        // raise SIGBUS, as with any memory-mapped reader. Callers that read files still being
        // written should use `StreamReader` instead.
        let map = unsafe { memmap2::Mmap::map(&f)? };
        Ok(TraceFile { map })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// A reader over the mapped bytes.
    pub fn reader(&self) -> Result<TraceReader<'_>> {
        TraceReader::new(&self.map)
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
