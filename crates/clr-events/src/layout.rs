//! The layout language and the decoder that runs it.
//!
//! A layout is a static list of [`FieldDef`]s read in order from the payload, little-endian,
//! with no padding (the way the runtime writes its events). Variable parts are described by
//! earlier fields: a counted array or a counted list of structs takes its length from a field
//! decoded before it *at the same level* (inside a struct, from the struct's own fields).
//!
//! Decoding never panics and never allocates more than the payload can justify: before reading
//! `count` elements the decoder checks that `count` times the element's minimum encoded size
//! fits in the bytes that are left, and reports [`DecodeError::CountTooLarge`] otherwise.

use nettrace::{Field, Guid, Value};

/// A fixed-width or self-delimited value in a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scalar {
    /// `win:UInt8`, decoded as [`Value::U8`].
    U8,
    /// `win:UInt16`, decoded as [`Value::U16`].
    U16,
    /// `win:UInt32`, decoded as [`Value::U32`].
    U32,
    /// `win:UInt64`, decoded as [`Value::U64`].
    U64,
    /// `win:Int16`, decoded as [`Value::I16`].
    I16,
    /// `win:Int32`, decoded as [`Value::I32`].
    I32,
    /// `win:Int64`, decoded as [`Value::I64`].
    I64,
    /// `win:Float`, decoded as [`Value::F32`].
    F32,
    /// `win:Double`, decoded as [`Value::F64`].
    F64,
    /// `win:Boolean`: a 4-byte Win32 `BOOL`, decoded as [`Value::Bool`] (non-zero is true).
    Bool32,
    /// `win:Pointer`: 4 or 8 bytes depending on the traced process, decoded as
    /// [`Value::Pointer`].
    Pointer,
    /// `win:GUID`: 16 bytes, decoded as [`Value::Guid`].
    Guid,
    /// `win:UnicodeString`: NUL-terminated UTF-16LE, decoded as [`Value::String`].
    UnicodeString,
    /// `win:AnsiString`: NUL-terminated 8-bit text, decoded as [`Value::String`] (invalid UTF-8
    /// replaced).
    AnsiString,
}

impl Scalar {
    /// The fewest bytes this value can take (a string's terminator alone).
    pub fn min_size(self, pointer_size: u8) -> usize {
        match self {
            Scalar::U8 | Scalar::AnsiString => 1,
            Scalar::U16 | Scalar::I16 | Scalar::UnicodeString => 2,
            Scalar::U32 | Scalar::I32 | Scalar::F32 | Scalar::Bool32 => 4,
            Scalar::U64 | Scalar::I64 | Scalar::F64 => 8,
            Scalar::Pointer => pointer_size as usize,
            Scalar::Guid => 16,
        }
    }
}

/// What one field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldKind {
    /// One value.
    Scalar(Scalar),
    /// `count` values of one type, where `count` is the value of an earlier field at the same
    /// level. Decoded as [`Value::Array`].
    Array {
        /// Element type.
        elem: Scalar,
        /// Name of the earlier field holding the element count.
        count: &'static str,
    },
    /// Raw bytes whose length is the value of an earlier field at the same level. Decoded as
    /// [`Value::Bytes`].
    Blob {
        /// Name of the earlier field holding the byte length.
        len: &'static str,
    },
    /// `count` structs, where `count` is the value of an earlier field at the same level.
    /// Decoded as [`Value::Array`] of [`Value::Object`]s.
    Structs {
        /// Name of the earlier field holding the element count.
        count: &'static str,
        /// The fields of each struct.
        fields: &'static [FieldDef],
    },
}

/// One named field of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// The payload name (as the manifest and TraceEvent spell it).
    pub name: &'static str,
    /// What the field holds.
    pub kind: FieldKind,
}

impl FieldDef {
    /// The fewest bytes this field can take.
    pub fn min_size(&self, pointer_size: u8) -> usize {
        match self.kind {
            FieldKind::Scalar(s) => s.min_size(pointer_size),
            FieldKind::Array { .. } | FieldKind::Blob { .. } | FieldKind::Structs { .. } => 0,
        }
    }
}

/// Builders used by the tables: one short function per manifest `inType`.
pub(crate) mod d {
    use super::{FieldDef, FieldKind, Scalar};

    const fn s(name: &'static str, s: Scalar) -> FieldDef {
        FieldDef {
            name,
            kind: FieldKind::Scalar(s),
        }
    }
    pub(crate) const fn uint8(name: &'static str) -> FieldDef {
        s(name, Scalar::U8)
    }
    pub(crate) const fn uint16(name: &'static str) -> FieldDef {
        s(name, Scalar::U16)
    }
    pub(crate) const fn uint32(name: &'static str) -> FieldDef {
        s(name, Scalar::U32)
    }
    pub(crate) const fn uint64(name: &'static str) -> FieldDef {
        s(name, Scalar::U64)
    }
    pub(crate) const fn int32(name: &'static str) -> FieldDef {
        s(name, Scalar::I32)
    }
    pub(crate) const fn int64(name: &'static str) -> FieldDef {
        s(name, Scalar::I64)
    }
    pub(crate) const fn double(name: &'static str) -> FieldDef {
        s(name, Scalar::F64)
    }
    pub(crate) const fn boolean(name: &'static str) -> FieldDef {
        s(name, Scalar::Bool32)
    }
    pub(crate) const fn ptr(name: &'static str) -> FieldDef {
        s(name, Scalar::Pointer)
    }
    pub(crate) const fn guid(name: &'static str) -> FieldDef {
        s(name, Scalar::Guid)
    }
    pub(crate) const fn string(name: &'static str) -> FieldDef {
        s(name, Scalar::UnicodeString)
    }
    pub(crate) const fn ansi(name: &'static str) -> FieldDef {
        s(name, Scalar::AnsiString)
    }
    pub(crate) const fn array(name: &'static str, elem: Scalar, count: &'static str) -> FieldDef {
        FieldDef {
            name,
            kind: FieldKind::Array { elem, count },
        }
    }
    pub(crate) const fn blob(name: &'static str, len: &'static str) -> FieldDef {
        FieldDef {
            name,
            kind: FieldKind::Blob { len },
        }
    }
    pub(crate) const fn structs(
        name: &'static str,
        count: &'static str,
        fields: &'static [FieldDef],
    ) -> FieldDef {
        FieldDef {
            name,
            kind: FieldKind::Structs { count, fields },
        }
    }
}

/// Why a payload could not be decoded to the end of its layout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The payload ended inside `field`.
    #[error("payload ends inside field {field} at offset {offset}: needed {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Payload offset where the read started.
        offset: usize,
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A string field has no terminating NUL before the end of the payload.
    #[error("string field {field} at offset {offset} has no terminator")]
    UnterminatedString {
        /// The field being read.
        field: &'static str,
        /// Payload offset where the string starts.
        offset: usize,
    },
    /// A count (or length) field asks for more elements than the rest of the payload can hold.
    #[error("field {field} at offset {offset} claims {count} elements of at least {min_size} bytes, but only {available} bytes are left")]
    CountTooLarge {
        /// The array, blob or struct list.
        field: &'static str,
        /// The claimed element count (or byte length).
        count: u64,
        /// The minimum encoded size of one element.
        min_size: usize,
        /// Payload offset where the elements start.
        offset: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// The count field a layout names was not decoded before the field that needs it (a bug in
    /// a layout table, reported instead of panicking).
    #[error("field {field} needs count field {count_field}, which was not decoded")]
    MissingCount {
        /// The array, blob or struct list.
        field: &'static str,
        /// The count field it names.
        count_field: &'static str,
    },
    /// The pointer size is neither 4 nor 8.
    #[error("pointer size {0} is not 4 or 8")]
    BadPointerSize(u8),
    /// The event's version has no field of this name (a typed view needs it).
    #[error("this version has no field {field}")]
    MissingField {
        /// The field asked for.
        field: &'static str,
    },
    /// The field holds another kind of value than the one asked for (a layout table bug,
    /// reported instead of panicking).
    #[error("field {field} does not hold the type asked for")]
    WrongType {
        /// The field asked for.
        field: &'static str,
    },
    /// No layout is known for the event (or for a version this old).
    #[error("no layout is known for this event")]
    NoLayout,
}

/// The result of decoding one payload with a layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The fields decoded, in layout order. When [`Decoded::error`] is set these are the fields
    /// read before the problem (an array being read when it happened holds the elements read
    /// so far, the last one possibly partial).
    pub fields: Vec<Field>,
    /// Why decoding stopped early, if it did.
    pub error: Option<DecodeError>,
    /// Payload bytes after the last field of the layout: a newer event version appends fields
    /// this crate does not know yet. Zero when [`Decoded::error`] is set.
    pub extra_bytes: usize,
}

impl Decoded {
    /// True when the whole layout was decoded.
    pub fn is_complete(&self) -> bool {
        self.error.is_none()
    }

    /// The top-level field named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.value)
    }

    /// An integer (or bool/pointer) field as `u64`, when it exists and fits.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    /// An integer field as `i64`, when it exists and fits.
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Value::as_i64)
    }

    /// A numeric field as `f64`.
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(Value::as_f64)
    }

    /// A string field.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    /// A boolean field (integers count as true when non-zero).
    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Value::Bool(b) => Some(*b),
            v => v.as_u64().map(|n| n != 0),
        }
    }

    /// A GUID field.
    pub fn guid(&self, name: &str) -> Option<Guid> {
        match self.get(name)? {
            Value::Guid(g) => Some(*g),
            _ => None,
        }
    }

    /// A byte-blob field.
    pub fn bytes(&self, name: &str) -> Option<&[u8]> {
        match self.get(name)? {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// An array field (counted values or counted structs).
    pub fn array(&self, name: &str) -> Option<&[Value]> {
        match self.get(name)? {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The field named `name` inside a struct element of an array field (for
    /// [`FieldKind::Structs`] arrays).
    pub fn field_of<'v>(element: &'v Value, name: &str) -> Option<&'v Value> {
        match element {
            Value::Object(fields) => fields.iter().find(|f| f.name == name).map(|f| &f.value),
            _ => None,
        }
    }
}

/// Decodes `payload` with `fields`. Never panics.
pub(crate) fn decode_fields(fields: &[FieldDef], payload: &[u8], pointer_size: u8) -> Decoded {
    if pointer_size != 4 && pointer_size != 8 {
        return Decoded {
            fields: Vec::new(),
            error: Some(DecodeError::BadPointerSize(pointer_size)),
            extra_bytes: 0,
        };
    }
    let mut r = Reader {
        data: payload,
        pos: 0,
        pointer_size,
    };
    let mut out = Vec::with_capacity(fields.len());
    match r.fields(fields, &mut out) {
        Ok(()) => Decoded {
            fields: out,
            error: None,
            extra_bytes: payload.len() - r.pos,
        },
        Err(e) => Decoded {
            fields: out,
            error: Some(e),
            extra_bytes: 0,
        },
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    pointer_size: u8,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated {
                field,
                offset: self.pos,
                needed: n,
                available: self.remaining(),
            });
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let s = self.take(field, N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn scalar(&mut self, field: &'static str, s: Scalar) -> Result<Value, DecodeError> {
        Ok(match s {
            Scalar::U8 => Value::U8(self.array::<1>(field)?[0]),
            Scalar::U16 => Value::U16(u16::from_le_bytes(self.array(field)?)),
            Scalar::U32 => Value::U32(u32::from_le_bytes(self.array(field)?)),
            Scalar::U64 => Value::U64(u64::from_le_bytes(self.array(field)?)),
            Scalar::I16 => Value::I16(i16::from_le_bytes(self.array(field)?)),
            Scalar::I32 => Value::I32(i32::from_le_bytes(self.array(field)?)),
            Scalar::I64 => Value::I64(i64::from_le_bytes(self.array(field)?)),
            Scalar::F32 => Value::F32(f32::from_le_bytes(self.array(field)?)),
            Scalar::F64 => Value::F64(f64::from_le_bytes(self.array(field)?)),
            Scalar::Bool32 => Value::Bool(u32::from_le_bytes(self.array(field)?) != 0),
            Scalar::Pointer => Value::Pointer(if self.pointer_size == 4 {
                u64::from(u32::from_le_bytes(self.array(field)?))
            } else {
                u64::from_le_bytes(self.array(field)?)
            }),
            Scalar::Guid => Value::Guid(Guid(self.array(field)?)),
            Scalar::UnicodeString => {
                let rest = &self.data[self.pos..];
                let end = rest.chunks_exact(2).position(|c| c == [0, 0]).ok_or(
                    DecodeError::UnterminatedString {
                        field,
                        offset: self.pos,
                    },
                )?;
                let units: Vec<u16> = rest[..end * 2]
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                self.pos += end * 2 + 2;
                Value::String(String::from_utf16_lossy(&units))
            }
            Scalar::AnsiString => {
                let rest = &self.data[self.pos..];
                let end =
                    rest.iter()
                        .position(|&b| b == 0)
                        .ok_or(DecodeError::UnterminatedString {
                            field,
                            offset: self.pos,
                        })?;
                let s = String::from_utf8_lossy(&rest[..end]).into_owned();
                self.pos += end + 1;
                Value::String(s)
            }
        })
    }

    /// Checks that `count` elements of at least `min_size` bytes can fit, and returns the count
    /// as a `usize`.
    fn check_count(
        &self,
        field: &'static str,
        count: u64,
        min_size: usize,
    ) -> Result<usize, DecodeError> {
        let min = min_size.max(1) as u64;
        let available = self.remaining();
        match count.checked_mul(min) {
            Some(total) if total <= available as u64 => Ok(count as usize),
            _ => Err(DecodeError::CountTooLarge {
                field,
                count,
                min_size: min_size.max(1),
                offset: self.pos,
                available,
            }),
        }
    }

    fn fields(&mut self, defs: &[FieldDef], out: &mut Vec<Field>) -> Result<(), DecodeError> {
        for def in defs {
            match def.kind {
                FieldKind::Scalar(s) => {
                    let v = self.scalar(def.name, s)?;
                    out.push(Field::new(def.name, v));
                }
                FieldKind::Array { elem, count } => {
                    let n = lookup_count(out, def.name, count)?;
                    let n = self.check_count(def.name, n, elem.min_size(self.pointer_size))?;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        match self.scalar(def.name, elem) {
                            Ok(v) => items.push(v),
                            Err(e) => {
                                out.push(Field::new(def.name, Value::Array(items)));
                                return Err(e);
                            }
                        }
                    }
                    out.push(Field::new(def.name, Value::Array(items)));
                }
                FieldKind::Blob { len } => {
                    let n = lookup_count(out, def.name, len)?;
                    let n = self.check_count(def.name, n, 1)?;
                    let bytes = self.take(def.name, n)?;
                    out.push(Field::new(def.name, Value::Bytes(bytes.to_vec())));
                }
                FieldKind::Structs { count, fields } => {
                    let n = lookup_count(out, def.name, count)?;
                    let min: usize = fields.iter().map(|f| f.min_size(self.pointer_size)).sum();
                    let n = self.check_count(def.name, n, min)?;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        let mut inner = Vec::with_capacity(fields.len());
                        let r = self.fields(fields, &mut inner);
                        if r.is_err() && inner.is_empty() {
                            out.push(Field::new(def.name, Value::Array(items)));
                            return r;
                        }
                        items.push(Value::Object(inner));
                        if let Err(e) = r {
                            out.push(Field::new(def.name, Value::Array(items)));
                            return Err(e);
                        }
                    }
                    out.push(Field::new(def.name, Value::Array(items)));
                }
            }
        }
        Ok(())
    }
}

fn lookup_count(
    decoded: &[Field],
    field: &'static str,
    count_field: &'static str,
) -> Result<u64, DecodeError> {
    decoded
        .iter()
        .rev()
        .find(|f| f.name == count_field)
        .and_then(|f| f.value.as_u64())
        .ok_or(DecodeError::MissingCount { field, count_field })
}

#[cfg(test)]
mod tests {
    use super::d::*;
    use super::*;

    const INNER: &[FieldDef] = &[uint16("N"), array("Xs", Scalar::U8, "N")];
    const LAYOUT: &[FieldDef] = &[
        uint32("Count"),
        structs("Values", "Count", INNER),
        ptr("P"),
        string("S"),
        ansi("A"),
        uint32("Len"),
        blob("B", "Len"),
    ];

    fn payload(ptr4: bool) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(2u32.to_le_bytes());
        p.extend(1u16.to_le_bytes());
        p.push(7);
        p.extend(2u16.to_le_bytes());
        p.extend([8, 9]);
        if ptr4 {
            p.extend(0xdead_beefu32.to_le_bytes());
        } else {
            p.extend(0x1122_3344_5566_7788u64.to_le_bytes());
        }
        p.extend([b'h', 0, b'i', 0, 0, 0]);
        p.extend(b"ok\0");
        p.extend(3u32.to_le_bytes());
        p.extend([1, 2, 3]);
        p
    }

    #[test]
    fn decodes_nested_layout() {
        let d = decode_fields(LAYOUT, &payload(false), 8);
        assert_eq!(d.error, None);
        assert_eq!(d.extra_bytes, 0);
        let values = d.array("Values").unwrap();
        assert_eq!(values.len(), 2);
        assert_eq!(
            Decoded::field_of(&values[1], "Xs"),
            Some(&Value::Array(vec![Value::U8(8), Value::U8(9)]))
        );
        assert_eq!(d.get("P"), Some(&Value::Pointer(0x1122_3344_5566_7788)));
        assert_eq!(d.str("S"), Some("hi"));
        assert_eq!(d.str("A"), Some("ok"));
        assert_eq!(d.bytes("B"), Some(&[1u8, 2, 3][..]));
        let d4 = decode_fields(LAYOUT, &payload(true), 4);
        assert_eq!(d4.error, None);
        assert_eq!(d4.u64("P"), Some(0xdead_beef));
    }

    #[test]
    fn huge_count_is_an_error_not_an_allocation() {
        let mut p = u32::MAX.to_le_bytes().to_vec();
        p.extend([0; 16]);
        let d = decode_fields(LAYOUT, &p, 8);
        assert!(matches!(
            d.error,
            Some(DecodeError::CountTooLarge {
                field: "Values",
                count: 4294967295,
                ..
            })
        ));
        assert_eq!(d.fields.len(), 1);
    }

    #[test]
    fn truncation_keeps_what_was_read() {
        let full = payload(false);
        for cut in 0..full.len() {
            let d = decode_fields(LAYOUT, &full[..cut], 8);
            assert!(d.error.is_some(), "cut at {cut}");
            assert_eq!(d.extra_bytes, 0);
        }
        let d = decode_fields(LAYOUT, &full[..10], 8);
        // Count, then a partial Values array (first struct complete, second cut inside Xs).
        assert_eq!(d.fields.len(), 2);
        assert_eq!(d.array("Values").unwrap().len(), 2);
    }

    #[test]
    fn bad_pointer_size() {
        let d = decode_fields(LAYOUT, &payload(false), 3);
        assert_eq!(d.error, Some(DecodeError::BadPointerSize(3)));
    }

    #[test]
    fn unterminated_strings() {
        let d = decode_fields(&[string("S")], &[b'a', 0, b'b'], 8);
        assert_eq!(
            d.error,
            Some(DecodeError::UnterminatedString {
                field: "S",
                offset: 0
            })
        );
        let d = decode_fields(&[ansi("S")], b"abc", 8);
        assert!(matches!(
            d.error,
            Some(DecodeError::UnterminatedString { .. })
        ));
    }

    #[test]
    fn missing_count_is_reported() {
        let d = decode_fields(&[array("X", Scalar::U8, "Nope")], &[1, 2], 8);
        assert_eq!(
            d.error,
            Some(DecodeError::MissingCount {
                field: "X",
                count_field: "Nope"
            })
        );
    }
}
