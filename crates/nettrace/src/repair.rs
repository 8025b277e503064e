//! Repair of cut or damaged traces: keep every whole block up to the first damage or the cut,
//! drop the rest, and end the stream validly, so every reader opens the result. The bytes
//! kept are copied unchanged (a whole trace comes out byte for byte the same).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::header::FormatVersion;
use crate::scan::{end_of_stream, Item, Scanner};
use crate::Error;

/// What [`repair`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repair {
    /// The stream's format (the output keeps it), once its header was read.
    pub format: Option<FormatVersion>,
    /// Bytes read from the input.
    pub bytes_in: u64,
    /// Bytes of the input kept (everything before them was whole).
    pub bytes_kept: u64,
    /// Bytes of the output (kept bytes plus the end of stream clrspy wrote, if any).
    pub bytes_out: u64,
    /// Whole blocks kept (not counting the stream header).
    pub blocks: u64,
    /// True when the input already was a whole trace: the output is a copy.
    pub was_whole: bool,
    /// Where and why the input stops being a trace (None when it was whole, or only cut short
    /// at its end).
    pub damage: Option<Error>,
    /// Offset of the first byte dropped (`bytes_kept`), when something was.
    pub cut_at: Option<u64>,
}

/// Copies the trace read from `input` to `out`, cut after its last whole block and ended
/// validly when it was cut or damaged. `out` is written from its current start and truncated
/// to the repaired length. Errors are the input's or the output's I/O errors; a stream that is
/// not a trace at all (no whole header) is an [`io::ErrorKind::InvalidData`] error.
pub fn repair(mut input: impl Read, out: &mut File) -> io::Result<Repair> {
    let mut scanner = Scanner::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut r = Repair {
        format: None,
        bytes_in: 0,
        bytes_kept: 0,
        bytes_out: 0,
        blocks: 0,
        was_whole: false,
        damage: None,
        cut_at: None,
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
            piece = &piece[step.consumed..];
            match step.item {
                Some(Item::Header { format, .. }) => {
                    r.format = Some(format);
                    whole_end = scanner.offset();
                }
                Some(Item::Block(_)) => {
                    r.blocks += 1;
                    whole_end = scanner.offset();
                }
                Some(Item::End { .. }) => {
                    ended = true;
                    whole_end = scanner.offset();
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
    r.bytes_kept = whole_end;
    r.was_whole = ended && r.damage.is_none() && whole_end == r.bytes_in;
    // Bytes after the end marker are damage too: the trace ends at its marker.
    out.set_len(whole_end)?;
    out.seek(SeekFrom::Start(whole_end))?;
    r.bytes_out = whole_end;
    if !ended {
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
