//! FastSerialization's primitives: tags, little-endian numbers, strings (a UTF-16 length,
//! then each code unit UTF-8 encoded on its own) and the graph blob's compressed integers.

use crate::error::{Error, ErrorKind};

/// The stream's header string.
pub(crate) const HEADER: &str = "!FastSerialization.1";

/// Tags (one byte each) that frame objects and references.
pub(crate) mod tag {
    /// A null object reference.
    pub(crate) const NULL_REFERENCE: u8 = 1;
    /// A reference to an object already in the stream (a 4-byte label follows).
    pub(crate) const OBJECT_REFERENCE: u8 = 2;
    /// The start of an object.
    pub(crate) const BEGIN_OBJECT: u8 = 4;
    /// The start of an object that is never referenced.
    pub(crate) const BEGIN_PRIVATE_OBJECT: u8 = 5;
    /// The end of an object.
    pub(crate) const END_OBJECT: u8 = 6;
    /// A tagged byte.
    pub(crate) const BYTE: u8 = 8;
    /// A tagged 16-bit integer.
    pub(crate) const INT16: u8 = 9;
    /// A tagged 32-bit integer.
    pub(crate) const INT32: u8 = 10;
    /// A tagged 64-bit integer.
    pub(crate) const INT64: u8 = 11;
    /// A region a reader may skip: a forward-reference index (whose table entry is where the
    /// region ends), then an object.
    pub(crate) const SKIP_REGION: u8 = 12;
    /// A tagged string.
    pub(crate) const STRING: u8 = 13;
}

/// A bounds-checked cursor over the file's bytes.
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0 }
    }

    pub(crate) fn err(&self, kind: ErrorKind) -> Error {
        Error::at(self.pos, kind)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        if self.remaining() < n {
            return Err(self.err(ErrorKind::Truncated { what }));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, Error> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, Error> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, Error> {
        Ok(self.i32(what)? as u32)
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, Error> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }

    pub(crate) fn f32(&mut self, what: &'static str) -> Result<f32, Error> {
        Ok(f32::from_bits(self.u32(what)?))
    }

    /// A count that must fit in what is left, `unit` bytes an item at least.
    pub(crate) fn count(&mut self, what: &'static str, unit: usize) -> Result<usize, Error> {
        let at = self.pos;
        let v = self.i32(what)?;
        if v < 0 {
            return Err(Error::at(
                at,
                ErrorKind::BadValue {
                    what,
                    value: v.into(),
                    why: "is negative",
                },
            ));
        }
        let n = v as usize;
        if n.saturating_mul(unit.max(1)) > self.remaining() {
            return Err(Error::at(
                at,
                ErrorKind::BadValue {
                    what,
                    value: v.into(),
                    why: "is more than the rest of the file can hold",
                },
            ));
        }
        Ok(n)
    }

    pub(crate) fn string(&mut self, what: &'static str) -> Result<Option<String>, Error> {
        let at = self.pos;
        let len = self.i32(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 || len as usize > self.remaining() {
            return Err(Error::at(
                at,
                ErrorKind::BadValue {
                    what,
                    value: len.into(),
                    why: "is not a string length the rest of the file can hold",
                },
            ));
        }
        let mut units = Vec::with_capacity(len as usize);
        for _ in 0..len {
            units.push(self.utf8_unit(what)?);
        }
        Ok(Some(String::from_utf16_lossy(&units)))
    }

    /// One UTF-16 code unit written as UTF-8 (1 to 3 bytes).
    fn utf8_unit(&mut self, what: &'static str) -> Result<u16, Error> {
        let b0 = self.u8(what)?;
        let (extra, init) = match b0 {
            0x00..=0x7f => return Ok(u16::from(b0)),
            0xc0..=0xdf => (1, u32::from(b0 & 0x1f)),
            0xe0..=0xef => (2, u32::from(b0 & 0x0f)),
            _ => {
                return Err(Error::at(
                    self.pos - 1,
                    ErrorKind::BadValue {
                        what,
                        value: b0.into(),
                        why: "does not start a character",
                    },
                ))
            }
        };
        let mut v = init;
        for _ in 0..extra {
            let b = self.u8(what)?;
            if b & 0xc0 != 0x80 {
                return Err(Error::at(
                    self.pos - 1,
                    ErrorKind::BadValue {
                        what,
                        value: b.into(),
                        why: "does not continue a character",
                    },
                ));
            }
            v = (v << 6) | u32::from(b & 0x3f);
        }
        Ok(v as u16)
    }

    pub(crate) fn expect_tag(
        &mut self,
        want: u8,
        expected: &'static str,
        what: &'static str,
    ) -> Result<(), Error> {
        let t = self.u8(what)?;
        if t != want {
            return Err(Error::at(
                self.pos - 1,
                ErrorKind::UnexpectedTag {
                    found: t,
                    expected,
                    what,
                },
            ));
        }
        Ok(())
    }

    /// The graph blob's compressed signed integer.
    pub(crate) fn compressed(&mut self, what: &'static str) -> Result<i32, Error> {
        let b0 = self.u8(what)?;
        // Sign-extend the first byte's 7 value bits.
        let mut v: i64 = i64::from(((b0 << 1) as i8) >> 1);
        let mut b = b0;
        let mut n = 1;
        while b & 0x80 != 0 {
            if n == 5 {
                return Err(Error::at(
                    self.pos - 1,
                    ErrorKind::BadValue {
                        what,
                        value: b.into(),
                        why: "makes a compressed integer longer than 5 bytes",
                    },
                ));
            }
            b = self.u8(what)?;
            v = (v << 7) | i64::from(b & 0x7f);
            n += 1;
        }
        i32::try_from(v).map_err(|_| {
            self.err(ErrorKind::BadValue {
                what,
                value: v,
                why: "does not fit in 32 bits",
            })
        })
    }
}

/// Little-endian writing into a growing buffer.
#[derive(Default)]
pub(crate) struct Out {
    pub(crate) buf: Vec<u8>,
}

impl Out {
    pub(crate) fn pos(&self) -> u32 {
        self.buf.len() as u32
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub(crate) fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn f32(&mut self, v: f32) {
        self.buf.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    pub(crate) fn string(&mut self, s: Option<&str>) {
        let Some(s) = s else {
            self.i32(-1);
            return;
        };
        let units: Vec<u16> = s.encode_utf16().collect();
        self.i32(units.len() as i32);
        for u in units {
            let u = u32::from(u);
            if u < 0x80 {
                self.buf.push(u as u8);
            } else if u < 0x800 {
                self.buf.push(0xc0 | (u >> 6) as u8);
                self.buf.push(0x80 | (u & 0x3f) as u8);
            } else {
                self.buf.push(0xe0 | (u >> 12) as u8);
                self.buf.push(0x80 | ((u >> 6) & 0x3f) as u8);
                self.buf.push(0x80 | (u & 0x3f) as u8);
            }
        }
    }
}

/// Appends `v` as a compressed signed integer (big-endian 7-bit groups, high bit = more).
pub(crate) fn put_compressed(buf: &mut Vec<u8>, v: i32) {
    let v = i64::from(v);
    // The fewest groups whose sign-extended value is v.
    let mut groups = 1;
    while groups < 5 {
        let bits = 7 * groups;
        let min = -(1i64 << (bits - 1));
        let max = (1i64 << (bits - 1)) - 1;
        if v >= min && v <= max {
            break;
        }
        groups += 1;
    }
    for g in (0..groups).rev() {
        let part = ((v >> (7 * g)) & 0x7f) as u8;
        buf.push(if g > 0 { part | 0x80 } else { part });
    }
}
