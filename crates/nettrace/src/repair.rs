//! Repair of cut or damaged traces: keep every whole block up to the first damage or the cut,
//! re-frame the whole events of a cut last event block into a complete block, drop the rest,
//! and end the stream validly, so every reader opens the result. The whole blocks kept are
//! copied unchanged (a whole trace comes out byte for byte the same). A NetPerf input is
//! converted to NetTrace instead ([`crate::netperf_upgrade`]); what was kept and lost is a
//! [`Repair`].

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::error::BlockKind;
use crate::framing::{self, Framing, Head};
use crate::header::FormatVersion;
use crate::reader::{ByteSource, Reader, MAX_STREAM_BLOCK};
use crate::repaired::Repair;
use crate::scan::{end_of_stream, Item, Scanner};

/// Copies the trace read from `input` to `out`, cut after its last whole block and ended
/// validly when it was cut or damaged; the whole events of a cut last event block are kept in
/// a block re-framed around them. A NetPerf input (.NET Core 2.x) is converted to NetTrace V5:
/// every whole event re-encoded with [`crate::TraceWriter`] (metadata, stacks, threads,
/// timestamps, payloads and the trace header's facts kept).
///
/// `out` is written from its current start and truncated to the repaired length. Errors are
/// the input's or the output's I/O errors; a stream that is not a trace at all (no whole
/// header) is an [`io::ErrorKind::InvalidData`] error.
pub fn repair(mut input: impl Read, out: &mut File) -> io::Result<Repair> {
    // The stream header says whether to copy blocks or convert events.
    let mut first = Vec::with_capacity(64);
    (&mut input).take(64).read_to_end(&mut first)?;
    let netperf = matches!(framing::stream_start(&first), Ok(Some(s)) if s.netperf);
    let input = io::Cursor::new(first).chain(input);
    if netperf {
        return crate::netperf_upgrade::netperf_to_nettrace(input, out);
    }
    copy_blocks(input, out)
}

/// Bytes of the stream being copied that are not yet part of a whole item.
struct Held {
    /// The stream header and Trace block, once whole.
    head: Vec<u8>,
    /// Bytes after the last whole item (a block being read); emptied when it grows past
    /// what a reader would hold.
    tail: Vec<u8>,
    overflow: bool,
}

impl Held {
    fn push(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.tail.len() + bytes.len() > MAX_STREAM_BLOCK {
            self.overflow = true;
            self.tail = Vec::new();
            return;
        }
        self.tail.extend_from_slice(bytes);
    }

    /// An item ended with the bytes pushed last.
    fn item_ended(&mut self, header: bool) {
        if header && !self.overflow {
            self.head = std::mem::take(&mut self.tail);
        }
        self.tail.clear();
        self.overflow = false;
    }
}

fn copy_blocks(mut input: impl Read, out: &mut File) -> io::Result<Repair> {
    let mut scanner = Scanner::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut r = Repair::new();
    let mut held = Held {
        head: Vec::new(),
        tail: Vec::new(),
        overflow: false,
    };
    let mut ended = false;
    let mut whole_end = 0u64;
    'read: loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        r.bytes_in += n as u64;
        let mut piece = &buf[..n];
        while !piece.is_empty() {
            let step = match scanner.feed(piece) {
                Ok(s) => s,
                Err(e) => {
                    r.damage = Some(e);
                    // Count the rest of the input, keep none of it.
                    r.bytes_in += io::copy(&mut input, &mut io::sink())?;
                    break 'read;
                }
            };
            out.write_all(&piece[..step.consumed])?;
            held.push(&piece[..step.consumed]);
            piece = &piece[step.consumed..];
            // The scanner stops right after an item's last byte.
            match step.item {
                Some(Item::Header { format, .. }) => {
                    r.format = Some(format);
                    whole_end = scanner.offset();
                    held.item_ended(true);
                }
                Some(Item::Block(_)) => {
                    r.blocks += 1;
                    whole_end = scanner.offset();
                    held.item_ended(false);
                }
                Some(Item::End { .. }) => {
                    ended = true;
                    whole_end = scanner.offset();
                    held.item_ended(false);
                }
                None => {}
            }
        }
    }
    let Some(format) = r.format else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            match r.damage.take() {
                Some(e) => format!("not a trace: {e}"),
                None => "not a trace: no whole stream header".to_string(),
            },
        ));
    };
    r.output_format = Some(format);
    r.bytes_kept = whole_end;
    r.was_whole = ended && r.damage.is_none() && whole_end == r.bytes_in;
    // Bytes after the end marker are damage too: the trace ends at its marker.
    out.set_len(whole_end)?;
    out.seek(SeekFrom::Start(whole_end))?;
    r.bytes_out = whole_end;
    if !ended {
        // A cut (not damaged) last event block: its whole events in a block of their own.
        if r.damage.is_none() && !held.overflow {
            if let Some((block, events)) = salvage(&held.head, &held.tail, whole_end, format) {
                out.write_all(&block)?;
                r.bytes_out += block.len() as u64;
                r.salvaged_events = events;
            }
        }
        let eos = end_of_stream(format);
        out.write_all(eos)?;
        r.bytes_out += eos.len() as u64;
    }
    if whole_end < r.bytes_in {
        r.cut_at = Some(whole_end);
    }
    out.flush()?;
    Ok(r)
}

/// The stream header and Trace block (`head`, at offset 0), then a cut block (`tail`) at its
/// real offset `at`: all a reader needs to frame that block's events (event headers do not
/// depend on the tables earlier blocks fill).
struct Spliced<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    at: u64,
    pos: usize,
}

impl ByteSource for Spliced<'_> {
    fn window(&self) -> &[u8] {
        match self.pos.checked_sub(self.head.len()) {
            None => &self.head[self.pos..],
            Some(t) => self.tail.get(t..).unwrap_or_default(),
        }
    }
    fn window_offset(&self) -> u64 {
        match self.pos.checked_sub(self.head.len()) {
            None => self.pos as u64,
            Some(t) => self.at + t as u64,
        }
    }
    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.head.len() + self.tail.len());
    }
    fn fill(&mut self, n: usize) -> crate::Result<bool> {
        Ok(self.window().len() >= n)
    }
}

/// The whole events at the start of the cut event block `tail` (at offset `at`), framed as a
/// complete block of their own: the same block header with the payload size (and, where the
/// block header has them, the smallest and largest timestamps) of the events kept, the events'
/// bytes unchanged. `None` when `tail` is no event block or holds no whole event. The events
/// refer to metadata and stacks of earlier (whole, kept) blocks by the same ids.
fn salvage(head: &[u8], tail: &[u8], at: u64, format: FormatVersion) -> Option<(Vec<u8>, u64)> {
    let fr = if format == FormatVersion::NetTrace6 {
        Framing::V6
    } else {
        Framing::FastSerialization
    };
    let Ok(Head::Block(h)) = framing::block_head(fr, tail, at) else {
        return None;
    };
    if h.kind != BlockKind::Event || tail.len() <= h.start || head.is_empty() {
        return None;
    }
    let mut reader = Reader::with_source(Spliced {
        head,
        tail,
        at,
        pos: 0,
    })
    .ok()?;
    let (mut events, mut end) = (0u64, 0u64);
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    // Bounded: each event consumes bytes of `tail`.
    while let Ok(Some(ev)) = reader.next_event() {
        min = min.min(ev.timestamp);
        max = max.max(ev.timestamp);
        events += 1;
        end = reader.event_end()?;
    }
    if events == 0 {
        return None;
    }
    let keep = usize::try_from(end.checked_sub(at + h.start as u64)?).ok()?;
    let mut payload = tail.get(h.start..h.start + keep)?.to_vec();
    if format != FormatVersion::NetPerf3 {
        let header_size = u16::from_le_bytes([*payload.first()?, *payload.get(1)?]);
        if header_size >= 20 && payload.len() >= 20 {
            payload[4..12].copy_from_slice(&min.to_le_bytes());
            payload[12..20].copy_from_slice(&max.to_le_bytes());
        }
    }
    let size = u32::try_from(keep).ok()?;
    let mut block = tail.get(..h.start)?.to_vec();
    match fr {
        Framing::V6 => {
            // Kind in the top byte, length in the low three (no longer than before).
            let x = size | (u32::from(*block.get(3)?) << 24);
            block[..4].copy_from_slice(&x.to_le_bytes());
            block.extend_from_slice(&payload);
        }
        Framing::FastSerialization => {
            // The size field sits before the padding; the padding stays (same offset).
            let at = h.start.checked_sub(h.padding as usize + 4)?;
            block[at..at + 4].copy_from_slice(&size.to_le_bytes());
            block.extend_from_slice(&payload);
            block.push(framing::TAG_END_OBJECT);
        }
    }
    Some((block, events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{sample_trace, Flavor};
    use crate::TraceReader;

    fn repaired(input: &[u8]) -> (Repair, Vec<u8>) {
        let mut f = tempfile();
        let r = repair(input, &mut f).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut out = Vec::new();
        f.read_to_end(&mut out).unwrap();
        (r, out)
    }

    fn tempfile() -> File {
        let path = std::env::temp_dir().join(format!(
            "nettrace-repair-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        f
    }

    /// Where the stream header ends.
    fn header_end(t: &[u8]) -> usize {
        let mut end = 0;
        Scanner::new()
            .feed_all(t, |i| {
                if let Item::Header { trace, .. } = i {
                    end = trace.end as usize;
                }
            })
            .unwrap();
        end
    }

    fn events(bytes: &[u8]) -> (u64, bool) {
        let mut r = TraceReader::new(bytes).unwrap();
        while r.next_event().unwrap().is_some() {}
        (r.stats().events, r.stats().ended_cleanly)
    }

    /// (thread, timestamp, stack, payload) of every event the reader yields before it stops.
    type Seen = (u64, i64, Vec<u64>, Vec<u8>);
    fn recovered(bytes: &[u8]) -> Vec<Seen> {
        let mut seen = Vec::new();
        let Ok(mut r) = TraceReader::new(bytes) else {
            return seen;
        };
        let _ = r.for_each_event(|e| {
            seen.push((
                e.thread_id,
                e.timestamp,
                e.stack.ips().collect(),
                e.payload.to_vec(),
            ));
            true
        });
        seen
    }

    #[test]
    fn a_whole_trace_is_copied_unchanged() {
        for f in Flavor::ALL {
            let t = sample_trace(f);
            let (r, out) = repaired(&t);
            assert!(r.was_whole, "{r:?}");
            assert_eq!(out, t);
            assert_eq!(r.cut_at, None);
        }
    }

    #[test]
    fn every_cut_comes_out_whole_with_every_whole_block() {
        for f in Flavor::ALL {
            let t = sample_trace(f);
            let (all, _) = events(&t);
            let mut last = 0;
            for cut in header_end(&t)..t.len() {
                let (r, out) = repaired(&t[..cut]);
                let (n, ended) = events(&out);
                assert!(ended, "cut at {cut}: {r:?}");
                assert!(!r.was_whole);
                assert!(n <= all);
                assert!(r.bytes_kept <= cut as u64);
                // Longer prefixes never keep fewer events.
                assert!(n >= last || n == 0, "cut at {cut}: {n} < {last}");
                last = n;
            }
        }
    }

    #[test]
    fn the_whole_events_of_a_cut_block_are_kept() {
        for f in Flavor::ALL {
            let t = sample_trace(f);
            let mut salvaged_any = false;
            for cut in header_end(&t)..t.len() {
                let (r, out) = repaired(&t[..cut]);
                let from_cut = recovered(&t[..cut]);
                let kept = recovered(&out);
                // Every event the reader finds in the cut file, the same, in the same order.
                assert_eq!(kept, from_cut, "{f:?} cut at {cut}: {r:?}");
                assert_eq!(events(&out), (kept.len() as u64, true));
                // The whole blocks before the cut are copied unchanged.
                assert_eq!(out[..r.bytes_kept as usize], t[..r.bytes_kept as usize]);
                salvaged_any |= r.salvaged_events > 0;
            }
            assert!(salvaged_any, "{f:?}");
        }
    }

    #[test]
    fn damage_keeps_what_came_before_and_says_where() {
        let mut t = sample_trace(Flavor::V5Compressed);
        // Break the framing of a block in the middle: its begin-object tag.
        let mut starts = Vec::new();
        Scanner::new()
            .feed_all(&t, |i| {
                if let Item::Block(b) = i {
                    starts.push(b.offset);
                }
            })
            .unwrap();
        let at = starts[starts.len() / 2] as usize;
        t[at] = 0xEE;
        let (r, out) = repaired(&t);
        let (_, ended) = events(&out);
        assert!(ended);
        let cut = r.cut_at.unwrap();
        assert_eq!(cut, at as u64, "{r:?}");
        assert!(r.damage.is_some() || r.cut_at.is_some(), "{r:?}");
        assert!(r.bytes_in == t.len() as u64);
    }

    #[test]
    fn not_a_trace_is_an_error() {
        let mut f = tempfile();
        let e = repair(&b"hello, this is not a trace"[..], &mut f).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
