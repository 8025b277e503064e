//! Bounds-checked reads over a byte slice: little-endian integers, ECMA-335 compressed
//! integers (II.23.2) and the ReadyToRun "native format" integers, sparse arrays and hash
//! tables. Every read returns a value or an [`Error`] naming what was read where.

use crate::Error;

/// A byte slice read at explicit offsets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bytes<'a> {
    data: &'a [u8],
    /// What the bytes are (for errors).
    what: &'static str,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(data: &'a [u8], what: &'static str) -> Bytes<'a> {
        Bytes { data, what }
    }

    pub(crate) fn slice(&self, offset: usize, len: usize) -> Result<&'a [u8], Error> {
        offset
            .checked_add(len)
            .and_then(|end| self.data.get(offset..end))
            .ok_or(Error::OutOfBounds {
                what: self.what,
                offset: offset as u64,
                len: len as u64,
            })
    }

    pub(crate) fn u8(&self, offset: usize) -> Result<u8, Error> {
        Ok(self.slice(offset, 1)?[0])
    }

    pub(crate) fn u16(&self, offset: usize) -> Result<u16, Error> {
        let b = self.slice(offset, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&self, offset: usize) -> Result<u32, Error> {
        let b = self.slice(offset, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&self, offset: usize) -> Result<u64, Error> {
        let lo = self.u32(offset)?;
        let hi = self.u32(offset + 4)?;
        Ok(u64::from(lo) | (u64::from(hi) << 32))
    }

    /// A zero-terminated string starting at `offset` (at most `max` bytes before the 0).
    pub(crate) fn cstr(&self, offset: usize, max: usize) -> Result<&'a [u8], Error> {
        let rest = self.data.get(offset..).ok_or(Error::OutOfBounds {
            what: self.what,
            offset: offset as u64,
            len: 1,
        })?;
        let end = rest
            .iter()
            .take(max)
            .position(|&b| b == 0)
            .ok_or(Error::Malformed {
                what: self.what,
                offset: offset as u64,
                detail: "string without its terminating zero",
            })?;
        Ok(&rest[..end])
    }

    fn malformed(&self, offset: usize, detail: &'static str) -> Error {
        Error::Malformed {
            what: self.what,
            offset: offset as u64,
            detail,
        }
    }

    /// An ECMA-335 compressed unsigned integer (II.23.2): the value and the next offset.
    pub(crate) fn compressed(&self, offset: usize) -> Result<(u32, usize), Error> {
        let b0 = self.u8(offset)?;
        if b0 & 0x80 == 0 {
            Ok((u32::from(b0), offset + 1))
        } else if b0 & 0xC0 == 0x80 {
            let b1 = self.u8(offset + 1)?;
            Ok(((u32::from(b0 & 0x3F) << 8) | u32::from(b1), offset + 2))
        } else if b0 & 0xE0 == 0xC0 {
            let b = self.slice(offset + 1, 3)?;
            let v = (u32::from(b0 & 0x1F) << 24)
                | (u32::from(b[0]) << 16)
                | (u32::from(b[1]) << 8)
                | u32::from(b[2]);
            Ok((v, offset + 4))
        } else {
            Err(self.malformed(offset, "bad compressed integer"))
        }
    }

    /// An ECMA-335 compressed signed integer (II.23.2): the value rotated left by one bit
    /// (the sign in the lowest), then compressed; the value and the next offset.
    pub(crate) fn compressed_signed(&self, offset: usize) -> Result<(i32, usize), Error> {
        let (raw, next) = self.compressed(offset)?;
        let magnitude = (raw >> 1) as i32;
        let value = if raw & 1 == 0 {
            magnitude
        } else {
            // The width the value was written in says what its sign extends from.
            match next - offset {
                1 => magnitude - 0x40,
                2 => magnitude - 0x2000,
                _ => magnitude - 0x1000_0000,
            }
        };
        Ok((value, next))
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    /// A native-format unsigned integer: the value and the next offset.
    pub(crate) fn native_unsigned(&self, offset: usize) -> Result<(u32, usize), Error> {
        let b0 = u32::from(self.u8(offset)?);
        if b0 & 1 == 0 {
            Ok((b0 >> 1, offset + 1))
        } else if b0 & 2 == 0 {
            Ok((u32::from(self.u16(offset)?) >> 2, offset + 2))
        } else if b0 & 4 == 0 {
            let b = self.slice(offset, 3)?;
            let v = u32::from(b[0]) | (u32::from(b[1]) << 8) | (u32::from(b[2]) << 16);
            Ok((v >> 3, offset + 3))
        } else if b0 & 8 == 0 {
            Ok((self.u32(offset)? >> 4, offset + 4))
        } else if b0 & 16 == 0 {
            Ok((self.u32(offset + 1)?, offset + 5))
        } else {
            Err(self.malformed(offset, "bad native-format integer"))
        }
    }

    /// A native-format signed integer: the value and the next offset.
    pub(crate) fn native_signed(&self, offset: usize) -> Result<(i32, usize), Error> {
        let b0 = self.u8(offset)?;
        if b0 & 1 == 0 {
            Ok((i32::from(b0 as i8) >> 1, offset + 1))
        } else if b0 & 2 == 0 {
            Ok((i32::from(self.u16(offset)? as i16) >> 2, offset + 2))
        } else if b0 & 4 == 0 {
            let b = self.slice(offset, 3)?;
            let v = (u32::from(b[0]) << 8) | (u32::from(b[1]) << 16) | (u32::from(b[2]) << 24);
            Ok(((v as i32) >> 11, offset + 3))
        } else if b0 & 8 == 0 {
            Ok(((self.u32(offset)? as i32) >> 4, offset + 4))
        } else if b0 & 16 == 0 {
            Ok((self.u32(offset + 1)? as i32, offset + 5))
        } else {
            Err(self.malformed(offset, "bad native-format integer"))
        }
    }

    /// A table entry of 1, 2 or 4 bytes (`size_code` 0, 1, 2).
    fn sized(&self, offset: usize, size_code: u32) -> Result<usize, Error> {
        Ok(match size_code {
            0 => usize::from(self.u8(offset)?),
            1 => usize::from(self.u16(offset)?),
            _ => self.u32(offset)? as usize,
        })
    }
}

/// The number of elements per block of a native-format sparse array.
const BLOCK: u32 = 16;

/// A native-format sparse array: element index → offset of the element's data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NativeArray<'a> {
    bytes: Bytes<'a>,
    base: usize,
    count: u32,
    size_code: u32,
}

impl<'a> NativeArray<'a> {
    pub(crate) fn new(bytes: Bytes<'a>, offset: usize) -> Result<NativeArray<'a>, Error> {
        let (header, base) = bytes.native_unsigned(offset)?;
        Ok(NativeArray {
            bytes,
            base,
            count: header >> 2,
            size_code: header & 3,
        })
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The offset of element `index`'s data, None when the array has no such element.
    pub(crate) fn get(&self, index: u32) -> Result<Option<usize>, Error> {
        if index >= self.count {
            return Ok(None);
        }
        let width = 1usize << self.size_code.min(2);
        let block = (index / BLOCK) as usize;
        let mut offset = self.base
            + self
                .bytes
                .sized(self.base + block * width, self.size_code)?;
        // A small binary tree per block: each node says whether its low or high half exists.
        let mut bit = BLOCK >> 1;
        while bit > 0 {
            let (val, next) = self.bytes.native_unsigned(offset)?;
            if index & bit != 0 {
                if val & 2 != 0 {
                    offset += (val >> 2) as usize;
                    bit >>= 1;
                    continue;
                }
            } else if val & 1 != 0 {
                offset = next;
                bit >>= 1;
                continue;
            }
            // A leaf that stands for a single element.
            if val & 3 == 0 && (val >> 2) == (index & (BLOCK - 1)) {
                return Ok(Some(next));
            }
            return Ok(None);
        }
        Ok(Some(offset))
    }
}

/// Every entry offset of a native-format hash table (bucket by bucket), at most `limit`.
pub(crate) fn hashtable_entries(
    bytes: Bytes<'_>,
    offset: usize,
    limit: usize,
) -> Result<Vec<usize>, Error> {
    let header = u32::from(bytes.u8(offset)?);
    let base = offset + 1;
    let shift = header >> 2;
    let size_code = header & 3;
    if shift > 24 {
        return Err(bytes.malformed(offset, "hash table with too many buckets"));
    }
    let width = 1usize << size_code.min(2);
    let buckets = 1usize << shift;
    let mut out = Vec::new();
    for b in 0..buckets {
        let start = base + bytes.sized(base + b * width, size_code)?;
        let end = base + bytes.sized(base + (b + 1) * width, size_code)?;
        let mut pos = start;
        while pos < end {
            // One byte of the hash code, then the entry's offset relative to here.
            let at = pos + 1;
            let (delta, next) = bytes.native_signed(at)?;
            let entry = (at as i64) + i64::from(delta);
            let entry = usize::try_from(entry)
                .map_err(|_| bytes.malformed(at, "hash table entry before the image"))?;
            out.push(entry);
            if out.len() > limit {
                return Err(bytes.malformed(offset, "hash table with too many entries"));
            }
            pos = next;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_decode_as_the_formats_say() {
        // Native format: 12 is one byte 0x18; 1000 is 0xa1 0x0f.
        let b = Bytes::new(&[0x18, 0xa1, 0x0f, 0xff], "t");
        assert_eq!(b.native_unsigned(0).unwrap(), (12, 1));
        assert_eq!(b.native_unsigned(1).unwrap(), (1000, 3));
        assert!(b.native_unsigned(3).is_err());
        let s = Bytes::new(&[0xfe], "t");
        assert_eq!(s.native_signed(0).unwrap(), (-1, 1));
        // ECMA-335 compressed: 0x03, 0x3FFF = 0xBF 0xFF, 0x4000 = 0xC0 0x00 0x40 0x00.
        let c = Bytes::new(&[0x03, 0xBF, 0xFF, 0xC0, 0x00, 0x40, 0x00, 0xE0], "t");
        assert_eq!(c.compressed(0).unwrap(), (3, 1));
        assert_eq!(c.compressed(1).unwrap(), (0x3FFF, 3));
        assert_eq!(c.compressed(3).unwrap(), (0x4000, 7));
        assert!(c.compressed(7).is_err());
        assert!(c.u32(6).is_err());
        assert!(c.cstr(0, 4).is_err());
    }
}
