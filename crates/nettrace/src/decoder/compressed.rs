//! The fast path for compressed event headers (V4–V6): when the block holds [`WINDOW`] bytes or
//! more from the event's start, no header can run past them, so fields are read without a
//! bounds check each, in one inlined function. (Decoding integers of several bytes without a
//! branch per byte, from one eight-byte load, measured twice as slow on the dense benchmark
//! trace: it puts each integer's length on the critical path of the next read, where a
//! predicted branch does not.) The checked decoder in `decode_header` reads the last events of a block and reports
//! every malformed header: this path gives up (`None`) exactly where that one fails.

use super::block::{BlockIter, EventEncoding, RawHeader};
use crate::value::Guid;

/// Bytes the fast path needs from the event's start. The largest compressed header is 88
/// bytes (flags 1, metadata id 5, sequence 5, capture thread 10, processor 5, thread 10,
/// stack id 5, timestamp 10, two GUIDs 32, payload size 5); a field starts at byte 83 at the
/// latest and reads ten bytes at most. Read positions are clamped to `WINDOW - 16`, a no-op for
/// every position a header reaches, so that the compiler sees every read inside the window.
pub(super) const WINDOW: usize = 128;
const LAST_START: usize = WINDOW - 16;

/// Reads a LEB128-style unsigned integer at `*p`: `None` when it is longer than ten bytes or
/// exceeds 64 bits (as `Cursor::varu64` fails).
#[inline(always)]
fn var(w: &[u8; WINDOW], p: &mut usize) -> Option<u64> {
    let at = (*p).min(LAST_START);
    let b = w[at];
    if b < 0x80 {
        *p += 1;
        return Some(u64::from(b));
    }
    let mut result = u64::from(b & 0x7f);
    for i in 1..10 {
        let b = w[at + i];
        if i == 9 && b > 1 {
            return None;
        }
        result |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *p += i + 1;
            return Some(result);
        }
    }
    None
}

/// [`var`] for integers that must fit in 32 bits (as `Cursor::varu32`).
#[inline(always)]
fn var32(w: &[u8; WINDOW], p: &mut usize) -> Option<u32> {
    u32::try_from(var(w, p)?).ok()
}

#[inline(always)]
fn guid(w: &[u8; WINDOW], p: &mut usize) -> Guid {
    let at = (*p).min(LAST_START);
    let mut g = [0u8; 16];
    g.copy_from_slice(&w[at..at + 16]);
    *p += 16;
    Guid(g)
}

/// Decodes the next event of a compressed block at `it.pos` when [`WINDOW`] bytes are left
/// from there and the header is well formed and its payload inside the block: `false` leaves
/// the event to the checked decoder (the block's end, the last events, damage), which starts
/// over from `it.pos`.
#[inline(always)]
pub(super) fn next(data: &[u8], offset: u64, it: &mut BlockIter) -> bool {
    let start = it.pos;
    let Some(w) = data.get(start..).and_then(|r| r.first_chunk::<WINDOW>()) else {
        return false;
    };
    let v6 = it.encoding == EventEncoding::V6Compressed;
    let Some(len) = decode(w, &mut it.cur.h, v6) else {
        return false;
    };
    let payload_start = start + len;
    let end = payload_start + it.cur.h.payload_size as usize;
    if end > data.len() {
        return false;
    }
    it.cur.offset = offset + start as u64;
    it.cur.payload_start = payload_start;
    it.cur.inline_stack = None;
    it.pos = end;
    true
}

/// Decodes the compressed header at the start of `w` over `h` (the previous event's header,
/// which absent fields repeat and deltas add to). Returns the header's length, or `None` when
/// a field is malformed; `h` may then be half updated, and the checked decoder, run on the same
/// bytes, fails at the same field.
#[inline(always)]
pub(super) fn decode(w: &[u8; WINDOW], h: &mut RawHeader, v6: bool) -> Option<usize> {
    let flags = w[0];
    let mut p = 1;
    if flags & 1 != 0 {
        h.metadata_id = var32(w, &mut p)?;
    }
    if flags & 2 != 0 {
        h.sequence = h.sequence.wrapping_add(var32(w, &mut p)?);
        h.capture_thread = var(w, &mut p)?;
        h.processor = var32(w, &mut p)?;
    }
    if v6 || h.metadata_id != 0 {
        h.sequence = h.sequence.wrapping_add(1);
    }
    if flags & 4 != 0 {
        h.thread = var(w, &mut p)?;
    }
    if flags & 8 != 0 {
        h.stack_id = var32(w, &mut p)?;
    }
    h.timestamp = h.timestamp.wrapping_add(var(w, &mut p)? as i64);
    if v6 {
        if flags & 16 != 0 {
            h.label_list = var32(w, &mut p)?;
        }
    } else {
        if flags & 16 != 0 {
            h.activity = guid(w, &mut p);
        }
        if flags & 32 != 0 {
            h.related = guid(w, &mut p);
        }
    }
    h.is_sorted = flags & 64 != 0;
    if flags & 128 != 0 {
        h.payload_size = var32(w, &mut p)?;
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::Cursor;

    fn encode(mut x: u64, out: &mut Vec<u8>) {
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn window(bytes: &[u8], fill: u8) -> [u8; WINDOW] {
        let mut w = [fill; WINDOW];
        w[..bytes.len()].copy_from_slice(bytes);
        w
    }

    /// Every length from one to ten bytes, overlong and too-large encodings, each followed by
    /// bytes with and without the high bit: the same values, lengths and failures as `Cursor`.
    #[test]
    fn integers_read_as_the_cursor_reads_them() {
        let mut cases: Vec<Vec<u8>> = vec![
            vec![0x80, 0x00],
            vec![0xff; 10],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
            vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
            vec![0xff; 12],
        ];
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 0x55] {
                let mut e = Vec::new();
                encode(v, &mut e);
                cases.push(e);
            }
        }
        let mut e = Vec::new();
        encode(u64::MAX, &mut e);
        cases.push(e);
        for enc in &cases {
            for fill in [0x00, 0x80, 0xff] {
                let w = window(enc, fill);
                let mut c = Cursor::new(&w, 0);
                let mut p = 0;
                match (c.varu64(), var(&w, &mut p)) {
                    (Ok(a), Some(b)) => {
                        assert_eq!(a, b, "{enc:x?}");
                        assert_eq!(c.position(), p, "{enc:x?}");
                    }
                    (Err(_), None) => {}
                    (a, b) => panic!("{enc:x?}: {a:?} vs {b:?}"),
                }
                let mut c = Cursor::new(&w, 0);
                let mut p = 0;
                match (c.varu32(), var32(&w, &mut p)) {
                    (Ok(a), Some(b)) => {
                        assert_eq!(a, b, "{enc:x?}");
                        assert_eq!(c.position(), p, "{enc:x?}");
                    }
                    (Err(_), None) => {}
                    (a, b) => panic!("{enc:x?}: {a:?} vs {b:?}"),
                }
            }
        }
    }

    /// The largest header (every field at its longest) fits the window.
    #[test]
    fn the_largest_header_fits() {
        let mut b = vec![0xff_u8];
        for (v, _) in [
            (u64::from(u32::MAX), "metadata"),
            (u64::from(u32::MAX), "sequence"),
            (u64::MAX, "capture thread"),
            (u64::from(u32::MAX), "processor"),
            (u64::MAX, "thread"),
            (u64::from(u32::MAX), "stack"),
            (u64::MAX, "timestamp"),
        ] {
            encode(v, &mut b);
        }
        b.extend_from_slice(&[7; 32]);
        encode(u64::from(u32::MAX), &mut b);
        assert_eq!(b.len(), 88);
        let w = window(&b, 0xff);
        let mut h = RawHeader::default();
        assert_eq!(decode(&w, &mut h, false), Some(88));
        assert_eq!(h.payload_size, u32::MAX);
        assert_eq!(h.related, Guid([7; 16]));
        assert_eq!(h.thread, u64::MAX);
    }
}
