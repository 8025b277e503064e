//! The ring sink: keeps only the newest part of the stream on disk, and when it ends writes a
//! whole trace a reader opens: the stream header, every metadata block, the newest stack and
//! event blocks (with the stacks their events refer to), the rundown, the end of stream.
//!
//! How: clrspy's events are spliced in first (the same [`Splicer`] as the trace file), then the
//! stream is cut into its blocks. The header and metadata blocks are held in memory (they are
//! small and every kept event may refer to them). The other blocks go to chunk files in a
//! directory beside the output (stack blocks to one file per sequence-point interval), and the
//! oldest are dropped as soon as the total passes the budget. Stack ids are valid only until
//! the next sequence point, so a stack block stays while any event block of its interval does,
//! and always while its interval is still open. At the end the output is assembled: each block
//! is re-framed for its new offset (V3-V5 pad payloads to 4-byte offsets) and the chunk
//! directory is removed. The last event, clrspy's `Ring`, says what the ring kept and dropped,
//! so a reader tells the gap it leaves at the start of each thread's sequence numbers from
//! events the runtime lost.
//!
//! The bound: the finished file holds at most `budget` bytes plus one block, plus what arrived
//! after the runtime was asked to stop or began its rundown (a target that exits ends the
//! session itself) — its last buffered events and the rundown, never dropped: the rundown names
//! the kept window's methods, up to four budgets or 256 MB, whichever is more — unless the
//! header, metadata and the stacks of the open sequence-point interval alone are more (they
//! are never dropped); disk use while recording is that plus one chunk.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nettrace::{Block, BlockKind, FormatVersion, Item, Scanner};

use crate::inject::{Injected, Splicer, WholePrefix};
pub use crate::sink::RingStats;
use crate::sink::{ByteSink, FileSink, SinkReport, SpliceOutput, SplicedSink};
use crate::{Error, Result};

/// True for blocks of interned data later events of the same sequence-point interval refer to
/// by id: stacks, and V6 label lists.
fn interned(b: &Block) -> bool {
    b.is_stack() || b.kind == BlockKind::LabelList
}

/// The rundown provider.
const RUNDOWN_PROVIDER: &str = "Microsoft-Windows-DotNETRuntimeRundown";

/// The rundown provider's name as NetTrace 4-5 metadata spells it (UTF-16LE): the runtime defines its events
/// when the rundown starts, at the session's end.
const RUNDOWN_PROVIDER_UTF16: &[u8] = &{
    const NAME: &[u8] = RUNDOWN_PROVIDER.as_bytes();
    let mut out = [0u8; 2 * NAME.len()];
    let mut i = 0;
    while i < NAME.len() {
        out[2 * i] = NAME[i];
        i += 1;
    }
    out
};

/// What may arrive after the stop, kept beyond the budget, at least (four budgets when more).
const AFTER_STOP_MIN_BOUND: u64 = 256 << 20;

/// True when a metadata block defines an event of the rundown provider (its name is UTF-16 in
/// NetTrace 4-5 metadata, UTF-8 in V6).
fn defines_rundown(block: &[u8]) -> bool {
    [RUNDOWN_PROVIDER_UTF16, RUNDOWN_PROVIDER.as_bytes()]
        .iter()
        .any(|name| block.windows(name.len()).any(|w| w == *name))
}

/// Slack counted per block: re-framing may pad a payload by up to 3 more bytes.
const REFRAME_SLACK: u64 = 3;

/// Where a kept block's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Data chunk `id`, at `at`.
    Chunk { id: u64, at: u64 },
    /// The stack file of interval `seg`, at `at`.
    Stacks { seg: u64, at: u64 },
}

/// One kept stack, event or sequence-point block.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The block as it was in the stream (offsets relative to that stream).
    block: Block,
    /// Its sequence-point interval.
    seg: u64,
    loc: Loc,
}

/// Counts per sequence-point interval.
#[derive(Clone, Copy, Debug, Default)]
struct SegCount {
    events: u64,
    stacks: u64,
}

/// The block store behind the splicer: it sees the spliced stream and keeps the newest part.
struct Store {
    dir: PathBuf,
    budget: u64,
    scanner: Scanner,
    /// Bytes of the item being received.
    cur: Vec<u8>,
    format: Option<FormatVersion>,
    header: Vec<u8>,
    /// Metadata (and V6 thread) blocks, whole, with their blocks' framing.
    meta: Vec<(Block, Vec<u8>)>,
    meta_bytes: u64,
    entries: VecDeque<Entry>,
    entry_bytes: u64,
    segs: HashMap<u64, SegCount>,
    /// The open sequence-point interval.
    seg: u64,
    chunk: Option<(u64, File, u64)>,
    chunk_size: u64,
    next_chunk: u64,
    chunk_live: HashMap<u64, u64>,
    stacks: Option<(u64, File, u64)>,
    end: Option<Vec<u8>>,
    /// Bytes received (the spliced stream).
    received: u64,
    /// `received` when the runtime was asked to stop: from there on nothing is dropped (the
    /// rundown and the last buffered events are kept beyond the budget).
    stopped_at: Option<u64>,
    /// Take the rundown provider's first metadata as the session's end (see [`open_output`]).
    detect_rundown: bool,
    /// Blocks dropped, and sequence points seen.
    pub(crate) dropped_blocks: u64,
    pub(crate) dropped_bytes: u64,
    pub(crate) sequence_points: u64,
}

impl Store {
    fn new(dir: PathBuf, budget: u64) -> Store {
        Store {
            dir,
            budget,
            scanner: Scanner::new(),
            cur: Vec::new(),
            format: None,
            header: Vec::new(),
            meta: Vec::new(),
            meta_bytes: 0,
            entries: VecDeque::new(),
            entry_bytes: 0,
            segs: HashMap::new(),
            seg: 0,
            chunk: None,
            chunk_size: (budget / 16).clamp(64 << 10, 4 << 20),
            next_chunk: 0,
            chunk_live: HashMap::new(),
            stacks: None,
            end: None,
            received: 0,
            stopped_at: None,
            detect_rundown: true,
            dropped_blocks: 0,
            dropped_bytes: 0,
            sequence_points: 0,
        }
    }

    /// Bytes the assembled file would hold now (before the end marker).
    fn kept(&self) -> u64 {
        self.header.len() as u64 + self.meta_bytes + self.entry_bytes
    }

    fn chunk_path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("chunk-{id}"))
    }

    fn stacks_path(&self, seg: u64) -> PathBuf {
        self.dir.join(format!("stacks-{seg}"))
    }

    fn item(&mut self, item: Item) -> io::Result<()> {
        let bytes = std::mem::take(&mut self.cur);
        if bytes.len() as u64 != item.end() - item.offset() {
            return Err(io::Error::other("internal: ring lost track of the blocks"));
        }
        match item {
            Item::Header { format, .. } => {
                self.format = Some(format);
                self.header = bytes;
            }
            Item::Block(b) if b.is_persistent() => {
                if self.detect_rundown && self.stopped_at.is_none() && defines_rundown(&bytes) {
                    // The runtime started its rundown (the session is ending, whoever ended
                    // it: a target that exits ends it too): keep what follows.
                    self.stopped_at = Some(self.received.saturating_sub(bytes.len() as u64));
                }
                self.meta_bytes += b.len() + REFRAME_SLACK;
                self.meta.push((b, bytes));
            }
            Item::Block(b) => self.keep(b, &bytes)?,
            Item::End { .. } => self.end = Some(bytes),
            _ => {}
        }
        self.trim()
    }

    /// Stores a stack, event or sequence-point block.
    fn keep(&mut self, b: Block, bytes: &[u8]) -> io::Result<()> {
        let seg = self.seg;
        let loc = if interned(&b) {
            if self.stacks.as_ref().is_none_or(|s| s.0 != seg) {
                let f = crate::private::create_private(&self.stacks_path(seg))?;
                self.stacks = Some((seg, f, 0));
            }
            let Some((_, f, len)) = self.stacks.as_mut() else {
                return Err(io::Error::other("internal: no stack file"));
            };
            f.write_all(bytes)?;
            let at = *len;
            *len += bytes.len() as u64;
            self.segs.entry(seg).or_default().stacks += 1;
            Loc::Stacks { seg, at }
        } else {
            if self.chunk.as_ref().is_none_or(|c| c.2 >= self.chunk_size) {
                let id = self.next_chunk;
                self.next_chunk += 1;
                let f = crate::private::create_private(&self.chunk_path(id))?;
                self.chunk = Some((id, f, 0));
            }
            let Some((id, f, len)) = self.chunk.as_mut() else {
                return Err(io::Error::other("internal: no chunk file"));
            };
            f.write_all(bytes)?;
            let at = *len;
            *len += bytes.len() as u64;
            *self.chunk_live.entry(*id).or_default() += 1;
            if b.is_event() {
                self.segs.entry(seg).or_default().events += 1;
            }
            Loc::Chunk { id: *id, at }
        };
        self.entry_bytes += b.len() + REFRAME_SLACK;
        self.entries.push_back(Entry { block: b, seg, loc });
        if b.is_sequence_point() {
            self.sequence_points += 1;
            self.seg += 1;
            // The closed interval's stacks may go once its events have.
            self.stacks = None;
            if self.segs.get(&seg).is_some_and(|c| c.stacks == 0) {
                self.segs.remove(&seg);
            }
        }
        Ok(())
    }

    /// Drops the oldest droppable blocks while over the budget, until the runtime was asked
    /// to stop: the rundown that follows names the kept window's methods and must not push it
    /// out (a large app's rundown is about as big as a 16 MB ring).
    fn trim(&mut self) -> io::Result<()> {
        // Past a bound (a rundown provider enabled by hand would define its events at the
        // start), the ring is a ring again: disk stays bounded.
        let bound = self.budget.saturating_mul(4).max(AFTER_STOP_MIN_BOUND);
        if self
            .stopped_at
            .is_some_and(|at| self.received.saturating_sub(at) <= bound)
        {
            return Ok(());
        }
        let mut from = 0;
        while self.kept() > self.budget {
            let Some(i) = self.droppable(from) else {
                break;
            };
            let e = self.entries[i];
            self.drop_at(i)?;
            // The last event block of a closed interval frees its stacks, which may be older.
            let freed = e.block.is_event()
                && e.seg < self.seg
                && self.segs.get(&e.seg).is_none_or(|c| c.events == 0);
            from = if freed { 0 } else { i };
        }
        Ok(())
    }

    /// The first droppable entry at or after `from`: any non-stack block; a stack block once
    /// its interval is closed and has no event block left.
    fn droppable(&self, from: usize) -> Option<usize> {
        (from..self.entries.len()).find(|&i| {
            let e = &self.entries[i];
            !interned(&e.block)
                || (e.seg < self.seg && self.segs.get(&e.seg).is_none_or(|c| c.events == 0))
        })
    }

    fn drop_at(&mut self, i: usize) -> io::Result<()> {
        let Some(e) = self.entries.remove(i) else {
            return Ok(());
        };
        self.entry_bytes -= e.block.len() + REFRAME_SLACK;
        self.dropped_blocks += 1;
        self.dropped_bytes += e.block.len();
        match e.loc {
            Loc::Chunk { id, .. } => {
                let live = self.chunk_live.entry(id).or_default();
                *live = live.saturating_sub(1);
                let current = self.chunk.as_ref().is_some_and(|c| c.0 == id);
                if *live == 0 && !current {
                    self.chunk_live.remove(&id);
                    std::fs::remove_file(self.chunk_path(id))?;
                }
                if e.block.is_event() {
                    if let Some(c) = self.segs.get_mut(&e.seg) {
                        c.events = c.events.saturating_sub(1);
                    }
                }
            }
            Loc::Stacks { seg, .. } => {
                let c = self.segs.entry(seg).or_default();
                c.stacks = c.stacks.saturating_sub(1);
                if c.stacks == 0 {
                    self.segs.remove(&seg);
                    std::fs::remove_file(self.stacks_path(seg))?;
                }
            }
        }
        Ok(())
    }

    /// Writes the assembled trace to `out`; returns its length (0 when the stream never
    /// started a trace: the file stays empty, as the plain file's would).
    fn assemble(&mut self, out: &mut impl Write) -> io::Result<u64> {
        let Some(format) = self.format else {
            return Ok(0);
        };
        self.chunk = None;
        self.stacks = None;
        let mut pos = 0u64;
        out.write_all(&self.header)?;
        pos += self.header.len() as u64;
        for (b, bytes) in &self.meta {
            pos += reframe(format, b, bytes, pos, out)?;
        }
        let mut open: Option<(Loc, File)> = None;
        let mut buf = Vec::new();
        for e in &self.entries {
            let (path, at) = match e.loc {
                Loc::Chunk { id, at } => (self.chunk_path(id), at),
                Loc::Stacks { seg, at } => (self.stacks_path(seg), at),
            };
            let same = |a: &Loc, b: &Loc| match (a, b) {
                (Loc::Chunk { id: x, .. }, Loc::Chunk { id: y, .. }) => x == y,
                (Loc::Stacks { seg: x, .. }, Loc::Stacks { seg: y, .. }) => x == y,
                _ => false,
            };
            if !open.as_ref().is_some_and(|(l, _)| same(l, &e.loc)) {
                open = Some((e.loc, File::open(&path)?));
            }
            let Some((_, f)) = open.as_mut() else {
                continue;
            };
            buf.resize(e.block.len() as usize, 0);
            f.seek(SeekFrom::Start(at))?;
            f.read_exact(&mut buf)?;
            pos += reframe(format, &e.block, &buf, pos, out)?;
        }
        let eos = self
            .end
            .clone()
            .unwrap_or_else(|| nettrace::end_of_stream(format).to_vec());
        out.write_all(&eos)?;
        pos += eos.len() as u64;
        Ok(pos)
    }
}

impl Write for Store {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let n = buf.len();
        self.received += n as u64;
        while !buf.is_empty() {
            let step = self
                .scanner
                .feed(buf)
                .map_err(|e| io::Error::other(format!("the ring needs a whole trace: {e}")))?;
            self.cur.extend_from_slice(&buf[..step.consumed]);
            buf = &buf[step.consumed..];
            if let Some(item) = step.item {
                self.item(item)?;
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes block `b` (its bytes `bytes`, framed for its old offset) at output offset `pos`;
/// returns the bytes written. V3-V5 payloads start at a multiple of 4: the padding before them
/// is recomputed.
pub(crate) fn reframe(
    format: FormatVersion,
    b: &Block,
    bytes: &[u8],
    pos: u64,
    out: &mut impl Write,
) -> io::Result<u64> {
    if format == FormatVersion::NetTrace6 {
        out.write_all(bytes)?;
        return Ok(bytes.len() as u64);
    }
    let rel = |abs: u64| usize::try_from(abs - b.offset).ok();
    let bad = || io::Error::other("internal: a block's framing does not add up");
    let size_at = rel(b.payload_offset - u64::from(b.padding) - 4).ok_or_else(bad)?;
    let payload = rel(b.payload_offset).ok_or_else(bad)?;
    let payload_end = payload + usize::try_from(b.payload_len).map_err(|_| bad())?;
    let head = bytes.get(..size_at + 4).ok_or_else(bad)?;
    let data = bytes.get(payload..payload_end).ok_or_else(bad)?;
    let tail = bytes.get(payload_end..).ok_or_else(bad)?;
    let pad = ((4 - (pos + head.len() as u64) % 4) % 4) as usize;
    out.write_all(head)?;
    out.write_all(&[0u8; 3][..pad])?;
    out.write_all(data)?;
    out.write_all(tail)?;
    Ok((head.len() + pad + data.len() + tail.len()) as u64)
}

/// Parses a ring size in the size grammar ([`clrspy_values::size`]; a bare number is bytes):
/// `64MB`, `512KB`, `1.5GB`. At least 64 KB.
pub fn parse_ring_size(s: &str) -> std::result::Result<u64, String> {
    let bytes =
        clrspy_values::parse_size(s, clrspy_values::SizeUnit::Bytes).map_err(|e| e.to_string())?;
    if bytes < 64 << 10 {
        return Err(format!("ring size '{s}' must be at least 64KB"));
    }
    Ok(bytes)
}

/// Parses the session's buffer size (`--buffer-size`) in the size grammar, a bare number
/// being megabytes: whole megabytes from 1MB to 64GB, returned in megabytes.
pub fn parse_buffer_size(s: &str) -> std::result::Result<u32, String> {
    let bytes =
        clrspy_values::parse_size(s, clrspy_values::SizeUnit::Mb).map_err(|e| e.to_string())?;
    let mb = bytes >> 20;
    if bytes % (1 << 20) != 0 || mb == 0 || mb > 1 << 16 {
        return Err(format!(
            "buffer size '{s}' must be whole megabytes from 1MB to 64GB"
        ));
    }
    u32::try_from(mb).map_err(|_| format!("buffer size '{s}' is too large"))
}

/// A sink that keeps only the newest `budget` bytes of the trace (see the module note).
pub(crate) type RingSink = SplicedSink<RingStore>;

impl SplicedSink<RingStore> {
    /// A ring writing its trace to `path` when finished, keeping about `budget` bytes; its
    /// chunks live in `<path>.ring/` meanwhile. The file is created (empty) now, so an
    /// unwritable path fails here; it, the folder and the chunks are owner-only (0600, 0700).
    pub(crate) fn create(path: &Path, budget: u64) -> Result<RingSink> {
        crate::private::create_private(path).map_err(|e| Error::output(path, e))?;
        let mut dir = path.as_os_str().to_owned();
        dir.push(".ring");
        let dir = PathBuf::from(dir);
        crate::private::create_private_dir(&dir).map_err(|e| Error::output(&dir, e))?;
        Ok(SplicedSink::with_output(
            path,
            RingStore {
                store: Store::new(dir, budget),
                names: HashMap::new(),
                inlined: Vec::new(),
            },
        ))
    }

    /// What the ring kept and dropped (complete once finished).
    #[cfg(test)]
    pub(crate) fn stats(&self) -> RingStats {
        match (self.report(), self.output_ref()) {
            (Some(r), _) => r.ring.unwrap_or_default(),
            (None, Some(st)) => st.store.stats(),
            (None, None) => RingStats::default(),
        }
    }
}

/// The ring's block store, behind the splicer of a [`RingSink`]; its chunk directory is
/// removed when it is dropped.
pub(crate) struct RingStore {
    store: Store,
    /// Every thread name clrspy spliced in (the last per thread: the reader names a thread
    /// when it first sees it), written again at the end when the ring dropped blocks, so the
    /// threads of the kept window keep their names and roles.
    names: HashMap<u32, String>,
    /// Every `Inlined` event spliced in (the JIT's inlining happens mostly at the start, in
    /// the blocks a ring drops first), written again at the end for the same reason.
    inlined: Vec<Injected>,
}

impl Write for RingStore {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.store.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for RingStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.store.dir);
    }
}

impl Store {
    fn stats(&self) -> RingStats {
        RingStats {
            received: self.received,
            dropped_blocks: self.dropped_blocks,
            dropped_bytes: self.dropped_bytes,
            sequence_points: self.sequence_points,
            after_stop_bytes: self.stopped_at.map_or(0, |at| self.received - at),
        }
    }
}

impl SpliceOutput for RingStore {
    fn settle(&mut self, _whole: WholePrefix, _written: u64) -> io::Result<u64> {
        Ok(self.store.kept())
    }

    fn spliced(&mut self, ev: &Injected) {
        match ev {
            Injected::ThreadName { tid, name } => {
                self.names.insert(*tid, name.clone());
            }
            Injected::Inlined { .. } => self.inlined.push(ev.clone()),
            _ => {}
        }
    }

    fn stopping(&mut self) {
        let st = &mut self.store;
        st.stopped_at.get_or_insert(st.received);
    }

    fn finish(mut s: Splicer<RingStore>, path: &Path) -> Result<SinkReport> {
        let err = |e| Error::output(path, e);
        // Last, what the ring kept and dropped: readers tell its gap at the start of the
        // stream from events the runtime lost.
        let note = {
            let st = &s.get_mut().store;
            clr_events::clrspy::Ring {
                budget_bytes: st.budget,
                received_bytes: st.received,
                dropped_blocks: st.dropped_blocks,
                dropped_bytes: st.dropped_bytes,
            }
        };
        let now = crate::procstat::monotonic_ns();
        if note.dropped_blocks > 0 {
            // The names went with the oldest blocks: the kept window's threads get them back.
            let mut names: Vec<(u32, String)> =
                std::mem::take(&mut s.get_mut().names).into_iter().collect();
            names.sort_unstable();
            for (tid, name) in names {
                s.push_at_end(now, Injected::ThreadName { tid, name });
            }
            for ev in std::mem::take(&mut s.get_mut().inlined) {
                s.push_at_end(now, ev);
            }
        }
        s.push_at_end(now, Injected::Ring(note));
        // A stream that stopped between blocks without its end marker takes it now.
        s.inject().map_err(err)?;
        s.end().map_err(err)?;
        let spliced = s.spliced;
        let whole = s.whole();
        let mut store = s.into_inner().map_err(err)?;
        let closed_by_clrspy = (!whole.ended).then_some(store.store.cur.len() as u64);
        let file = crate::private::create_private(path).map_err(err)?;
        let mut out = io::BufWriter::new(file);
        let r = store.store.assemble(&mut out).and_then(|n| {
            let f = out.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            Ok(n)
        });
        let stats = store.store.stats();
        // Dropping the store removes its chunks.
        drop(store);
        Ok(SinkReport {
            bytes: r.map_err(err)?,
            spliced_events: spliced,
            path: Some(path.to_path_buf()),
            closed_by_clrspy,
            ring: Some(stats),
        })
    }
}

/// The output for a recording of `config`: the trace file, or a ring of `ring` bytes writing
/// it at the end. The ring takes the rundown provider's first metadata as the session's end
/// unless `config` enables that provider itself (its events may then come at the start).
pub(crate) fn open_output(
    path: &Path,
    ring: Option<u64>,
    config: &diagnostics_client::SessionConfig,
) -> Result<Box<dyn ByteSink>> {
    Ok(match ring {
        Some(budget) => {
            let mut sink = RingSink::create(path, budget)?;
            let own = config
                .providers
                .iter()
                .any(|p| p.name.eq_ignore_ascii_case(RUNDOWN_PROVIDER));
            if let Some(st) = sink.output_mut() {
                st.store.detect_rundown = !own;
            }
            Box::new(sink)
        }
        None => Box::new(FileSink::create(path)?),
    })
}

#[cfg(test)]
#[path = "ring_tests.rs"]
mod tests;
