//! The tap's side on the pump thread: the spliced stream (the runtime's bytes with clrspy's
//! events, exactly what the trace file gets) cut into its blocks and sent to the tap thread.
//! While the tap thread is behind (more than [`TAP_BYTES`] in flight) the feed skips stack,
//! event and clrspy blocks up to the next sequence point — the header, metadata and sequence
//! points always go through, so what follows decodes whole — and tells the tap thread the span
//! it skipped. Blocks after a skip are re-framed for their new offsets (V3–V5 pad payloads to
//! 4-byte offsets). With `lossless`, the feed waits for the tap thread instead of skipping.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use nettrace::{Block, Clock, FormatVersion, Item, Scanner};

use crate::consumer::Lost;
use crate::inject::{Splicer, WholePrefix};
use crate::sink::{SinkReport, SpliceOutput};
use crate::Result;

/// Bytes in flight to the tap thread before it counts as behind.
pub(crate) const TAP_BYTES: usize = 4 << 20;

/// What the feed sends the tap thread.
pub(crate) enum Msg {
    /// The next bytes of the (possibly skipped) stream.
    Bytes(Vec<u8>),
    /// A span skipped here, between the bytes before and after this message.
    Lost(Lost),
}

/// Counters shared by the feed and the tap thread.
#[derive(Default)]
pub(crate) struct FeedShared {
    /// Bytes sent and not yet taken by the tap thread.
    pub(crate) in_flight: AtomicUsize,
    /// Blocks and bytes skipped so far.
    pub(crate) lost_blocks: AtomicU64,
    pub(crate) lost_bytes: AtomicU64,
    /// Set by the tap thread when it stops reading (the feed then sends nothing more).
    pub(crate) closed: AtomicBool,
    /// Bytes in flight before the tap counts as behind (0: [`TAP_BYTES`]).
    pub(crate) bound: AtomicUsize,
    /// The tap thread's own CPU time as of the last chunk it took, ns.
    pub(crate) thread_cpu_ns: AtomicU64,
}

impl FeedShared {
    fn bound(&self) -> usize {
        match self.bound.load(Ordering::Relaxed) {
            0 => TAP_BYTES,
            b => b,
        }
    }
}

/// The feed: a [`SpliceOutput`], so the tap is one more sink of the spliced stream.
pub(crate) struct TapFeed {
    scanner: Scanner,
    /// Bytes of the item being scanned.
    cur: Vec<u8>,
    /// Bytes to send at the next settle.
    out: Vec<u8>,
    /// Bytes forwarded so far (the tap thread's stream offset after `out`).
    fwd: u64,
    format: Option<FormatVersion>,
    clock: Option<Clock>,
    /// The span being skipped.
    skipping: Option<Lost>,
    /// The framing could not be followed: bytes pass as they come (or are dropped whole when
    /// behind, and the tap gives up).
    raw: bool,
    tx: Option<Sender<Msg>>,
    shared: Arc<FeedShared>,
    lossless: bool,
}

impl TapFeed {
    pub(crate) fn new(tx: Sender<Msg>, shared: Arc<FeedShared>, lossless: bool) -> TapFeed {
        TapFeed {
            scanner: Scanner::new(),
            cur: Vec::new(),
            out: Vec::new(),
            fwd: 0,
            format: None,
            clock: None,
            skipping: None,
            raw: false,
            tx: Some(tx),
            shared,
            lossless,
        }
    }

    fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Relaxed) + self.out.len()
    }

    fn item(&mut self, item: Item) -> io::Result<()> {
        let bytes = std::mem::take(&mut self.cur);
        match item {
            Item::Header { format, .. } => {
                self.format = Some(format);
                self.clock = self.scanner.header().map(|h| h.clock());
                self.pass(&bytes);
            }
            Item::Block(b) if b.is_persistent() => self.forward(&b, &bytes)?,
            Item::Block(b) if b.is_sequence_point() => {
                // Resume here once the tap thread caught up to half the bound.
                if self.skipping.is_some() && self.in_flight() < self.shared.bound() / 2 {
                    self.end_skip();
                }
                self.forward(&b, &bytes)?;
            }
            Item::Block(b) => {
                if self.skipping.is_none()
                    && !self.lossless
                    && self.in_flight() > self.shared.bound()
                {
                    self.skipping = Some(Lost::default());
                }
                match self.skipping.as_mut() {
                    Some(l) => {
                        l.blocks += 1;
                        l.bytes += bytes.len() as u64;
                        if b.is_event() {
                            if let Some((from, to)) = event_block_span(&b, &bytes, self.format) {
                                let c = self.clock;
                                let ns = |t| c.map(|c| c.ns_since_start(t));
                                l.add(&Lost {
                                    from_ns: ns(from),
                                    to_ns: ns(to),
                                    ..Lost::default()
                                });
                            }
                        }
                    }
                    None => self.forward(&b, &bytes)?,
                }
            }
            Item::End { .. } => {
                self.end_skip();
                self.pass(&bytes);
            }
            _ => self.pass(&bytes),
        }
        Ok(())
    }

    /// Appends bytes that need no re-framing.
    fn pass(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
        self.fwd += bytes.len() as u64;
    }

    /// Appends a block, re-framed when a skip moved it off its 4-byte phase.
    fn forward(&mut self, b: &Block, bytes: &[u8]) -> io::Result<()> {
        let format = self.format.unwrap_or(FormatVersion::NetTrace4);
        if format == FormatVersion::NetTrace6 || b.offset % 4 == self.fwd % 4 {
            self.pass(bytes);
            return Ok(());
        }
        let n = crate::ring::reframe(format, b, bytes, self.fwd, &mut self.out)?;
        self.fwd += n;
        Ok(())
    }

    /// Ends the skipped span: the bytes before it go first, then the notice.
    fn end_skip(&mut self) {
        let Some(lost) = self.skipping.take() else {
            return;
        };
        self.shared
            .lost_blocks
            .fetch_add(lost.blocks, Ordering::Relaxed);
        self.shared
            .lost_bytes
            .fetch_add(lost.bytes, Ordering::Relaxed);
        self.send();
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Lost(lost));
        }
    }

    /// Sends what is ready (in lossless mode after the tap thread made room).
    fn send(&mut self) {
        if self.out.is_empty() {
            return;
        }
        if self.shared.closed.load(Ordering::Relaxed) {
            self.tx = None;
        }
        let Some(tx) = &self.tx else {
            self.out.clear();
            return;
        };
        if self.lossless {
            while self.shared.in_flight.load(Ordering::Relaxed) > self.shared.bound()
                && !self.shared.closed.load(Ordering::Relaxed)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let chunk = std::mem::take(&mut self.out);
        self.shared
            .in_flight
            .fetch_add(chunk.len(), Ordering::Relaxed);
        if tx.send(Msg::Bytes(chunk)).is_err() {
            self.tx = None;
        }
    }
}

/// The earliest and latest timestamps (trace ticks) a V4/V5 event block's header holds.
fn event_block_span(b: &Block, bytes: &[u8], format: Option<FormatVersion>) -> Option<(i64, i64)> {
    if format != Some(FormatVersion::NetTrace4) {
        return None;
    }
    let start = usize::try_from(b.payload_offset.checked_sub(b.offset)?).ok()?;
    let p = bytes.get(start..)?;
    let header_size = u16::from_le_bytes(p.get(..2)?.try_into().ok()?);
    if header_size < 20 {
        return None;
    }
    let min = i64::from_le_bytes(p.get(4..12)?.try_into().ok()?);
    let max = i64::from_le_bytes(p.get(12..20)?.try_into().ok()?);
    Some((min, max))
}

impl Write for TapFeed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len();
        let mut rest = buf;
        while !rest.is_empty() {
            if self.raw {
                if self.in_flight() > self.shared.bound() && !self.lossless {
                    // Not a stream the feed can cut: the tap gives up.
                    self.tx = None;
                    return Ok(n);
                }
                self.pass(rest);
                return Ok(n);
            }
            match self.scanner.feed(rest) {
                Ok(step) => {
                    self.cur.extend_from_slice(&rest[..step.consumed]);
                    rest = &rest[step.consumed..];
                    if let Some(item) = step.item {
                        if self.item(item).is_err() {
                            // A block the feed cannot re-frame: the live view gives up
                            // rather than fail the recording (the file has it all).
                            self.shared.closed.store(true, Ordering::Relaxed);
                            self.tx = None;
                            return Ok(n);
                        }
                    }
                }
                Err(_) => {
                    self.raw = true;
                    self.end_skip();
                    let held = std::mem::take(&mut self.cur);
                    self.pass(&held);
                }
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl SpliceOutput for TapFeed {
    fn settle(&mut self, _whole: WholePrefix, written: u64) -> io::Result<u64> {
        self.send();
        Ok(written)
    }

    fn finish(mut s: Splicer<TapFeed>, _path: &Path) -> Result<SinkReport> {
        // The held end of stream, if any, goes through `write`.
        let _ = s.end();
        let feed = s.get_mut();
        if !feed.raw && !feed.cur.is_empty() {
            // A cut stream: the partial block is of no use to the reader.
            feed.cur.clear();
        }
        feed.end_skip();
        feed.send();
        feed.tx = None;
        Ok(SinkReport {
            bytes: feed.fwd,
            ..SinkReport::default()
        })
    }
}
