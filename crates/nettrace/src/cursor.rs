//! A bounds-checked little-endian cursor over a byte slice: every read either returns a value or
//! a [`CursorError`] saying how many bytes were needed where. Used by the block parsers here and
//! by payload decoders in other crates.

use crate::value::{Guid, SystemTime};

/// A read past the end of the data, or a value that does not fit its declared encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CursorError {
    /// `needed` bytes were wanted at `offset` but only `available` remained.
    Eof {
        /// Absolute offset (the cursor's base plus position) of the failed read.
        offset: u64,
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A variable-length integer at `offset` was longer than its type allows.
    BadVarInt {
        /// Absolute offset where the integer started.
        offset: u64,
    },
}

impl std::fmt::Display for CursorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            CursorError::Eof {
                needed, available, ..
            } => write!(f, "needed {needed} bytes but only {available} remain"),
            CursorError::BadVarInt { .. } => write!(f, "variable-length integer is too long"),
        }
    }
}

impl std::error::Error for CursorError {}

/// A cursor over a byte slice. `base` is the absolute offset of the slice's first byte in the
/// whole stream, so errors can name file offsets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

macro_rules! read_le {
    ($name:ident, $ty:ty, $n:expr) => {
        #[doc = concat!("Reads a little-endian `", stringify!($ty), "`.")]
        #[inline]
        pub(crate) fn $name(&mut self) -> Result<$ty, CursorError> {
            let b = self.array::<$n>()?;
            Ok(<$ty>::from_le_bytes(b))
        }
    };
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`, whose first byte sits at absolute offset `base`.
    #[inline]
    pub(crate) fn new(data: &'a [u8], base: u64) -> Cursor<'a> {
        Cursor { data, pos: 0, base }
    }

    /// Position within the slice.
    #[inline]
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Absolute offset of the next byte.
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left.
    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// True when nothing is left.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The unread rest of the slice.
    #[inline]
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    #[inline]
    fn eof(&self, needed: usize) -> CursorError {
        CursorError::Eof {
            offset: self.offset(),
            needed,
            available: self.remaining(),
        }
    }

    /// Takes the next `n` bytes.
    #[inline]
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], CursorError> {
        if n > self.remaining() {
            return Err(self.eof(n));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skips `n` bytes.
    #[inline]
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), CursorError> {
        self.bytes(n).map(|_| ())
    }

    /// Reads a fixed-size array.
    #[inline]
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], CursorError> {
        let s = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }

    /// Reads one byte.
    #[inline]
    pub(crate) fn u8(&mut self) -> Result<u8, CursorError> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.eof(1)),
        }
    }

    read_le!(u16, u16, 2);
    read_le!(i16, i16, 2);
    read_le!(u32, u32, 4);
    read_le!(i32, i32, 4);
    read_le!(u64, u64, 8);
    read_le!(i64, i64, 8);
    read_le!(f32, f32, 4);
    read_le!(f64, f64, 8);

    /// Reads a GUID.
    #[inline]
    pub(crate) fn guid(&mut self) -> Result<Guid, CursorError> {
        self.array::<16>().map(Guid)
    }

    /// Reads a `SYSTEMTIME` (eight little-endian `u16`).
    pub(crate) fn system_time(&mut self) -> Result<SystemTime, CursorError> {
        Ok(SystemTime {
            year: self.u16()?,
            month: self.u16()?,
            day_of_week: self.u16()?,
            day: self.u16()?,
            hour: self.u16()?,
            minute: self.u16()?,
            second: self.u16()?,
            millisecond: self.u16()?,
        })
    }

    /// Reads a LEB128-style unsigned integer of at most 64 bits.
    #[inline(always)]
    pub(crate) fn varu64(&mut self) -> Result<u64, CursorError> {
        // Most values in traces fit in one byte.
        if let Some(&b) = self.data.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.varu64_long()
    }

    #[inline(never)]
    fn varu64_long(&mut self) -> Result<u64, CursorError> {
        let start = self.offset();
        // Away from the end of the data: no bounds check per byte (same results and errors as
        // the loop below, which also handles a value cut by the end).
        if let Some(bytes) = self
            .data
            .get(self.pos..)
            .and_then(|r| r.first_chunk::<10>())
        {
            let mut result: u64 = 0;
            for (i, &b) in bytes.iter().enumerate() {
                if i == 9 && b > 1 {
                    break;
                }
                result |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    self.pos += i + 1;
                    return Ok(result);
                }
            }
            return Err(CursorError::BadVarInt { offset: start });
        }
        let mut result: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(CursorError::BadVarInt { offset: start });
            }
            result |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(result);
            }
            shift += 7;
            if shift > 63 {
                return Err(CursorError::BadVarInt { offset: start });
            }
        }
    }

    /// Reads a LEB128-style unsigned integer that must fit in 32 bits.
    #[inline(always)]
    pub(crate) fn varu32(&mut self) -> Result<u32, CursorError> {
        if let Some(&b) = self.data.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u32::from(b));
            }
        }
        let start = self.offset();
        let v = self.varu64_long()?;
        u32::try_from(v).map_err(|_| CursorError::BadVarInt { offset: start })
    }

    /// Reads a zig-zag encoded signed integer.
    #[inline]
    pub(crate) fn vari64(&mut self) -> Result<i64, CursorError> {
        let v = self.varu64()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// Reads a NUL-terminated UTF-16LE string (the terminator is consumed, not returned). A
    /// missing terminator is an error. Invalid UTF-16 is replaced with U+FFFD.
    pub(crate) fn utf16z(&mut self) -> Result<String, CursorError> {
        let rest = self.rest();
        let units = rest.len() / 2;
        let Some(n) = (0..units).find(|&i| rest[2 * i] == 0 && rest[2 * i + 1] == 0) else {
            return Err(CursorError::Eof {
                offset: self.offset(),
                needed: rest.len() + 2,
                available: rest.len(),
            });
        };
        let body = &rest[..2 * n];
        self.pos += 2 * n + 2;
        // Most strings in traces are ASCII: copy those without decoding.
        if body.chunks_exact(2).all(|u| u[1] == 0 && u[0] < 0x80) {
            let ascii: Vec<u8> = body.iter().step_by(2).copied().collect();
            // All bytes are below 0x80, so this cannot fail; fall back to lossy anyway.
            return Ok(String::from_utf8(ascii)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()));
        }
        let iter = body
            .chunks_exact(2)
            .map(|u| u16::from_le_bytes([u[0], u[1]]));
        Ok(char::decode_utf16(iter)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect())
    }

    /// Reads a UTF-8 string prefixed with its byte length as a `varuint32` (NetTrace V6).
    pub(crate) fn utf8_varlen(&mut self) -> Result<String, CursorError> {
        let n = self.varu32()? as usize;
        let b = self.bytes(n)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let data = [0x96, 0x01, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x10, 0x03];
        let mut c = Cursor::new(&data, 100);
        assert_eq!(c.varu64().unwrap(), 150);
        assert_eq!(c.varu32().unwrap(), 127);
        assert!(c.varu32().is_err());
        let mut c = Cursor::new(&data[8..], 0);
        assert_eq!(c.vari64().unwrap(), -2);
    }

    #[test]
    fn eof_names_offset() {
        let mut c = Cursor::new(&[1, 2, 3], 10);
        c.u8().unwrap();
        let e = c.u32().unwrap_err();
        assert_eq!(
            e,
            CursorError::Eof {
                offset: 11,
                needed: 4,
                available: 2
            }
        );
    }

    #[test]
    fn utf16z_reads_and_rejects_unterminated() {
        let mut c = Cursor::new(&[b'h', 0, b'i', 0, 0, 0, 9], 0);
        assert_eq!(c.utf16z().unwrap(), "hi");
        assert_eq!(c.remaining(), 1);
        let mut c = Cursor::new(&[b'h', 0, b'i'], 0);
        assert!(c.utf16z().is_err());
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let data = [0xff; 12];
        assert!(Cursor::new(&data, 0).varu64().is_err());
    }

    #[test]
    fn varints_read_the_same_near_and_away_from_the_end() {
        let mut cases: Vec<Vec<u8>> = vec![
            vec![0x80, 0x01],
            vec![0xff, 0x7f],
            vec![0xff; 9],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
            vec![0x80],
        ];
        for v in [
            300u64,
            1 << 20,
            u64::from(u32::MAX),
            u64::MAX >> 1,
            u64::MAX,
        ] {
            let mut enc = Vec::new();
            let mut x = v;
            loop {
                let b = (x & 0x7f) as u8;
                x >>= 7;
                if x == 0 {
                    enc.push(b);
                    break;
                }
                enc.push(b | 0x80);
            }
            cases.push(enc);
        }
        for enc in cases {
            // Alone (the value ends at the end of the data) and followed by padding.
            let mut padded = enc.clone();
            padded.extend_from_slice(&[0x80; 12]);
            let mut near = Cursor::new(&enc, 7);
            let mut away = Cursor::new(&padded, 7);
            let (a, b) = (near.varu64(), away.varu64());
            match (&a, &b) {
                (Ok(x), Ok(y)) => {
                    assert_eq!(x, y, "{enc:x?}");
                    assert_eq!(near.position(), away.position(), "{enc:x?}");
                }
                (
                    Err(CursorError::BadVarInt { offset: x }),
                    Err(CursorError::BadVarInt { offset: y }),
                ) => {
                    assert_eq!(x, y, "{enc:x?}")
                }
                // A value cut by the end of the data: padding makes it either whole or too long.
                (Err(_), _) => assert!(enc.last().is_some_and(|b| b & 0x80 != 0), "{enc:x?}"),
                _ => panic!("{enc:x?}: {a:?} vs {b:?}"),
            }
            let (a, b) = (
                Cursor::new(&enc, 0).varu32(),
                Cursor::new(&padded, 0).varu32(),
            );
            if enc.last().is_some_and(|b| b & 0x80 == 0) {
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{enc:x?}");
            }
        }
    }
}
