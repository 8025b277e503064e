//! The machinery under the typed views: a cursor that walks a payload along an event's
//! layout (the same field tables [`crate::layout`] decodes with) and hands out the fields a
//! view asks for, in payload order, as plain numbers or borrowed UTF-16 text — no allocation,
//! no [`crate::Value`]s. A field the event's version does not have is `None` to the view; a
//! field the version has but the payload cuts short is a [`ViewError`] naming the event and
//! the field.

use std::fmt;

use crate::layout::{FieldDef, FieldKind, Scalar};
use crate::{layout_for, DecodeError, KnownProvider};

/// Why a typed view could not be read from a payload: the event, its version and what went
/// wrong (which names the field).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{event} (version {version}): {error}")]
pub struct ViewError {
    /// The event's name, e.g. `GC/Start`.
    pub event: &'static str,
    /// The event version the payload claimed.
    pub version: u8,
    /// What went wrong.
    pub error: DecodeError,
}

/// A NUL-terminated UTF-16LE string of a payload, borrowed (without its terminator).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Utf16Str<'a> {
    bytes: &'a [u8],
}

impl<'a> Utf16Str<'a> {
    /// Wraps UTF-16LE bytes (an odd last byte is ignored).
    pub fn new(bytes: &'a [u8]) -> Utf16Str<'a> {
        Utf16Str { bytes }
    }

    /// The raw UTF-16LE bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 2
    }

    /// The UTF-16 code units.
    pub fn units(&self) -> impl Iterator<Item = u16> + 'a {
        self.bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
    }

    /// The characters, with unpaired surrogates replaced by U+FFFD.
    pub fn chars(&self) -> impl Iterator<Item = char> + 'a {
        char::decode_utf16(self.units()).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    /// The text as a `String` (invalid UTF-16 replaced).
    pub fn to_string_lossy(&self) -> String {
        let mut s = String::with_capacity(self.bytes.len() / 2);
        // Names are nearly always ASCII: copy those units straight, decode from the first
        // other one on.
        let mut k = 0;
        for c in self.bytes.chunks_exact(2) {
            if c[1] != 0 || c[0] >= 0x80 {
                break;
            }
            s.push(char::from(c[0]));
            k += 2;
        }
        if k < self.bytes.len() {
            s.extend(Utf16Str::new(&self.bytes[k..]).chars());
        }
        s
    }

    /// True when the text equals `s`.
    pub fn eq_str(&self, s: &str) -> bool {
        self.units().eq(s.encode_utf16())
    }
}

impl fmt::Display for Utf16Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        for c in self.chars() {
            f.write_char(c)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Utf16Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string_lossy(), f)
    }
}

/// Integer fields remembered for the counts of later arrays.
const COUNTS: usize = 8;

/// Walks one payload (or one struct element) along a field list.
#[derive(Clone)]
pub struct Cursor<'a> {
    event: &'static str,
    version: u8,
    defs: &'static [FieldDef],
    next: usize,
    data: &'a [u8],
    pos: usize,
    pointer_size: u8,
    /// Integer fields read so far (name, type, bytes): the counts of later arrays.
    counts: [(&'static str, Scalar, &'a [u8]); COUNTS],
    n_counts: usize,
}

/// A field's raw bytes, as found by the cursor.
enum Raw<'a> {
    Scalar(Scalar, &'a [u8]),
    /// A counted array of fixed-size values: their type and bytes.
    Fixed(Scalar, &'a [u8]),
    /// A string array, blob or struct list (stepped over).
    Other,
}

impl<'a> Cursor<'a> {
    /// A cursor over the layout of `(provider, id, version)`.
    pub(crate) fn for_event(
        provider: KnownProvider,
        id: u32,
        version: u8,
        payload: &'a [u8],
        pointer_size: u8,
    ) -> Result<Cursor<'a>, ViewError> {
        let Some(l) = layout_for(provider, id, version) else {
            return Err(ViewError {
                event: crate::event_name_for(provider, id, version).unwrap_or("event"),
                version,
                error: DecodeError::NoLayout,
            });
        };
        Cursor::new(l.name, version, l.fields(), payload, pointer_size)
    }

    pub(crate) fn new(
        event: &'static str,
        version: u8,
        defs: &'static [FieldDef],
        data: &'a [u8],
        pointer_size: u8,
    ) -> Result<Cursor<'a>, ViewError> {
        let c = Cursor {
            event,
            version,
            defs,
            next: 0,
            data,
            pos: 0,
            pointer_size,
            counts: [("", Scalar::U8, &[]); COUNTS],
            n_counts: 0,
        };
        if pointer_size != 4 && pointer_size != 8 {
            return Err(c.err(DecodeError::BadPointerSize(pointer_size)));
        }
        Ok(c)
    }

    fn err(&self, error: DecodeError) -> ViewError {
        ViewError {
            event: self.event,
            version: self.version,
            error,
        }
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], ViewError> {
        let rest = self.data.len() - self.pos;
        if n > rest {
            return Err(self.err(DecodeError::Truncated {
                field,
                offset: self.pos,
                needed: n,
                available: rest,
            }));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn count_of(&self, field: &'static str, count: &'static str) -> Result<u64, ViewError> {
        self.counts[..self.n_counts]
            .iter()
            .rev()
            .find(|c| c.0 == count)
            .and_then(|c| int_value(c.1, c.2))
            .ok_or_else(|| {
                self.err(DecodeError::MissingCount {
                    field,
                    count_field: count,
                })
            })
    }

    fn scalar(&mut self, field: &'static str, s: Scalar) -> Result<&'a [u8], ViewError> {
        let bytes = match s {
            Scalar::UnicodeString => {
                let rest = &self.data[self.pos..];
                let end = rest
                    .chunks_exact(2)
                    .position(|c| c == [0, 0])
                    .ok_or(self.err(DecodeError::UnterminatedString {
                        field,
                        offset: self.pos,
                    }))?;
                let b = self.take(field, end * 2 + 2)?;
                &b[..end * 2]
            }
            Scalar::AnsiString => {
                let rest = &self.data[self.pos..];
                let end = rest.iter().position(|&c| c == 0).ok_or(self.err(
                    DecodeError::UnterminatedString {
                        field,
                        offset: self.pos,
                    },
                ))?;
                let b = self.take(field, end + 1)?;
                &b[..end]
            }
            s => self.take(field, s.min_size(self.pointer_size))?,
        };
        if !matches!(
            s,
            Scalar::UnicodeString | Scalar::AnsiString | Scalar::Guid | Scalar::F32 | Scalar::F64
        ) {
            if self.n_counts < COUNTS {
                self.counts[self.n_counts] = (field, s, bytes);
                self.n_counts += 1;
            } else {
                self.counts.rotate_left(1);
                self.counts[COUNTS - 1] = (field, s, bytes);
            }
        }
        Ok(bytes)
    }

    /// Reads (or steps over) the next field.
    fn step(&mut self, def: &FieldDef) -> Result<Raw<'a>, ViewError> {
        Ok(match def.kind {
            FieldKind::Scalar(s) => Raw::Scalar(s, self.scalar(def.name, s)?),
            FieldKind::Array { elem, count } => {
                let n = self.count_of(def.name, count)?;
                let size = elem.min_size(self.pointer_size) as u64;
                if matches!(elem, Scalar::UnicodeString | Scalar::AnsiString) {
                    for _ in 0..n {
                        self.scalar(def.name, elem)?;
                    }
                    Raw::Other
                } else {
                    let start = self.pos;
                    self.skip_counted(def.name, n, size)?;
                    let data: &'a [u8] = self.data;
                    Raw::Fixed(elem, &data[start..self.pos])
                }
            }
            FieldKind::Blob { len } => {
                let n = self.count_of(def.name, len)?;
                self.skip_counted(def.name, n, 1)?;
                Raw::Other
            }
            FieldKind::Structs { count, fields } => {
                let n = self.count_of(def.name, count)?;
                let start = self.pos;
                let data: &'a [u8] = self.data;
                // Step over the elements so later fields can be read.
                let mut sub = self.sub(fields, &data[start..]);
                let mut k = 0u64;
                while k < n {
                    sub.skip_all()?;
                    k += 1;
                }
                self.pos = start + sub.pos;
                Raw::Other
            }
        })
    }

    fn skip_counted(&mut self, field: &'static str, n: u64, size: u64) -> Result<(), ViewError> {
        let rest = (self.data.len() - self.pos) as u64;
        match n.checked_mul(size) {
            Some(total) if total <= rest => {
                self.pos += total as usize;
                Ok(())
            }
            _ => Err(self.err(DecodeError::CountTooLarge {
                field,
                count: n,
                min_size: size as usize,
                offset: self.pos,
                available: rest as usize,
            })),
        }
    }

    fn sub(&self, defs: &'static [FieldDef], data: &'a [u8]) -> Cursor<'a> {
        Cursor {
            event: self.event,
            version: self.version,
            defs,
            next: 0,
            data,
            pos: 0,
            pointer_size: self.pointer_size,
            counts: [("", Scalar::U8, &[]); COUNTS],
            n_counts: 0,
        }
    }

    /// Steps over every remaining field (one struct element).
    fn skip_all(&mut self) -> Result<(), ViewError> {
        while let Some(def) = self.defs.get(self.next) {
            self.next += 1;
            self.step(def)?;
        }
        // The next element starts with fresh counts.
        self.next = 0;
        self.n_counts = 0;
        Ok(())
    }

    /// Finds `name` among the fields not read yet, stepping over the ones before it; `None`
    /// when this layout has no such field after the current one (nothing is consumed then).
    fn find(&mut self, name: &'static str) -> Result<Option<Raw<'a>>, ViewError> {
        let Some(target) = self.locate(name) else {
            return Ok(None);
        };
        while self.next < target {
            let def = &self.defs[self.next];
            self.next += 1;
            self.step(def)?;
        }
        let def = &self.defs[target];
        self.next = target + 1;
        self.step(def).map(Some)
    }

    /// The index of field `name` at or after the next one.
    fn locate(&self, name: &'static str) -> Option<usize> {
        // Views ask in payload order: usually it is the next field (and the same literal).
        let same = |d: &FieldDef| std::ptr::eq(d.name, name) || d.name == name;
        if self.defs.get(self.next).is_some_and(same) {
            return Some(self.next);
        }
        let rest = self.defs.get(self.next..)?;
        rest.iter().position(same).map(|k| self.next + k)
    }

    fn missing(&self, field: &'static str) -> ViewError {
        self.err(DecodeError::MissingField { field })
    }

    /// An integer field (any width, pointers and booleans too) that this version may lack.
    pub(crate) fn opt_u64(&mut self, name: &'static str) -> Result<Option<u64>, ViewError> {
        match self.find(name)? {
            None => Ok(None),
            Some(Raw::Scalar(s, b)) => match int_value(s, b) {
                Some(v) => Ok(Some(v)),
                None => Err(self.err(DecodeError::WrongType { field: name })),
            },
            Some(_) => Err(self.err(DecodeError::WrongType { field: name })),
        }
    }

    /// An integer field every version of the event has.
    pub(crate) fn u64(&mut self, name: &'static str) -> Result<u64, ViewError> {
        self.opt_u64(name)?.ok_or_else(|| self.missing(name))
    }

    /// A `u32` (or narrower) field.
    pub(crate) fn u32(&mut self, name: &'static str) -> Result<u32, ViewError> {
        let v = self.u64(name)?;
        u32::try_from(v).map_err(|_| self.err(DecodeError::WrongType { field: name }))
    }

    /// An optional `u32` (or narrower) field.
    pub(crate) fn opt_u32(&mut self, name: &'static str) -> Result<Option<u32>, ViewError> {
        match self.opt_u64(name)? {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| self.err(DecodeError::WrongType { field: name })),
        }
    }

    /// An optional GUID field (its 16 bytes as the payload holds them).
    pub(crate) fn opt_guid(&mut self, name: &'static str) -> Result<Option<[u8; 16]>, ViewError> {
        match self.find(name)? {
            None => Ok(None),
            Some(Raw::Scalar(Scalar::Guid, b)) => Ok(Some(arr(b))),
            Some(_) => Err(self.err(DecodeError::WrongType { field: name })),
        }
    }

    /// An optional floating-point field.
    pub(crate) fn opt_f64(&mut self, name: &'static str) -> Result<Option<f64>, ViewError> {
        match self.find(name)? {
            None => Ok(None),
            Some(Raw::Scalar(Scalar::F64, b)) => Ok(Some(f64::from_le_bytes(arr(b)))),
            Some(Raw::Scalar(Scalar::F32, b)) => Ok(Some(f64::from(f32::from_le_bytes(arr(b))))),
            Some(_) => Err(self.err(DecodeError::WrongType { field: name })),
        }
    }

    /// A floating-point field every version has.
    pub(crate) fn f64(&mut self, name: &'static str) -> Result<f64, ViewError> {
        self.opt_f64(name)?.ok_or_else(|| self.missing(name))
    }

    /// An optional UTF-16 string field.
    pub(crate) fn opt_str(
        &mut self,
        name: &'static str,
    ) -> Result<Option<Utf16Str<'a>>, ViewError> {
        match self.find(name)? {
            None => Ok(None),
            Some(Raw::Scalar(Scalar::UnicodeString, b)) => Ok(Some(Utf16Str::new(b))),
            Some(_) => Err(self.err(DecodeError::WrongType { field: name })),
        }
    }

    /// A UTF-16 string field every version has.
    pub(crate) fn str(&mut self, name: &'static str) -> Result<Utf16Str<'a>, ViewError> {
        self.opt_str(name)?.ok_or_else(|| self.missing(name))
    }

    /// A counted array of integers (any fixed width, pointers too).
    pub(crate) fn ints(&mut self, name: &'static str) -> Result<Ints<'a>, ViewError> {
        match self.find(name)? {
            Some(Raw::Fixed(elem, bytes)) if int_value(elem, &[0; 8]).is_some() => Ok(Ints {
                elem,
                size: elem.min_size(self.pointer_size),
                bytes,
            }),
            None => Err(self.missing(name)),
            Some(_) => Err(self.err(DecodeError::WrongType { field: name })),
        }
    }

    /// A counted list of structs: its elements, read lazily.
    pub(crate) fn structs<T: Element<'a>>(
        &mut self,
        name: &'static str,
    ) -> Result<Elements<'a, T>, ViewError> {
        // The elements are read one by one as the caller iterates, so a damaged element
        // still lets the earlier ones through; the outer fields after the list are not read.
        let Some(target) = self.locate(name) else {
            return Err(self.missing(name));
        };
        while self.next < target {
            let def = &self.defs[self.next];
            self.next += 1;
            self.step(def)?;
        }
        let def = &self.defs[target];
        self.next = target + 1;
        let FieldKind::Structs { count, fields } = def.kind else {
            return Err(self.err(DecodeError::WrongType { field: name }));
        };
        let n = self.count_of(name, count)?;
        let data: &'a [u8] = self.data;
        let sub = self.sub(fields, &data[self.pos..]);
        self.pos = self.data.len();
        Ok(Elements {
            cursor: Some(sub),
            left: n,
            _t: std::marker::PhantomData,
        })
    }

    /// Starts the next element of a struct list.
    fn restart(&mut self) {
        self.next = 0;
        self.n_counts = 0;
    }
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = b.len().min(N);
    a[..n].copy_from_slice(&b[..n]);
    a
}

fn int_value(s: Scalar, b: &[u8]) -> Option<u64> {
    Some(match s {
        Scalar::U8 => u64::from(*b.first()?),
        Scalar::U16 => u64::from(u16::from_le_bytes(arr(b))),
        Scalar::U32 | Scalar::Bool32 => u64::from(u32::from_le_bytes(arr(b))),
        Scalar::U64 => u64::from_le_bytes(arr(b)),
        Scalar::Pointer if b.len() == 4 => u64::from(u32::from_le_bytes(arr(b))),
        Scalar::Pointer => u64::from_le_bytes(arr(b)),
        Scalar::I16 => i16::from_le_bytes(arr(b)) as u64,
        Scalar::I32 => i32::from_le_bytes(arr(b)) as u64,
        Scalar::I64 => i64::from_le_bytes(arr(b)) as u64,
        _ => return None,
    })
}

/// A counted array of integers, read from the payload as iterated (the payload held every
/// element: a short one is an error before this is returned).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Ints<'a> {
    elem: Scalar,
    size: usize,
    bytes: &'a [u8],
}

impl<'a> Ints<'a> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len().checked_div(self.size).unwrap_or(0)
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        let elem = self.elem;
        self.bytes
            .chunks_exact(self.size.max(1))
            .filter_map(move |c| int_value(elem, c))
    }
}

impl Default for Ints<'_> {
    fn default() -> Self {
        Ints {
            elem: Scalar::U64,
            size: 8,
            bytes: &[],
        }
    }
}

impl std::fmt::Debug for Ints<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One element of a counted struct list (the bulk events' `Values`).
pub trait Element<'a>: Sized {
    /// Reads one element from the cursor.
    #[doc(hidden)]
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError>;
}

/// The elements of a counted struct list, read one at a time straight from the payload. The
/// count comes from the payload and only bounds the iteration (nothing is allocated by it);
/// after an error (a truncated or damaged element) the iterator yields that error once and
/// then ends.
pub struct Elements<'a, T> {
    cursor: Option<Cursor<'a>>,
    left: u64,
    _t: std::marker::PhantomData<T>,
}

impl<'a, T> Elements<'a, T> {
    /// Elements not read yet, as the payload claims (an upper bound: a damaged payload ends
    /// sooner).
    pub(crate) fn claimed_remaining(&self) -> u64 {
        if self.cursor.is_some() {
            self.left
        } else {
            0
        }
    }
}

impl<T> fmt::Debug for Elements<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Elements")
            .field("claimed_remaining", &self.claimed_remaining())
            .finish()
    }
}

impl<T> Clone for Elements<'_, T> {
    fn clone(&self) -> Self {
        Elements {
            cursor: self.cursor.clone(),
            left: self.left,
            _t: std::marker::PhantomData,
        }
    }
}

impl<'a, T: Element<'a>> Iterator for Elements<'a, T> {
    type Item = Result<T, ViewError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            self.cursor = None;
        }
        let c = self.cursor.as_mut()?;
        c.restart();
        match T::read(c) {
            Ok(v) => {
                // Step over fields the element's reader did not ask for.
                if let Err(e) = c.skip_all() {
                    self.cursor = None;
                    return Some(Err(e));
                }
                self.left -= 1;
                Some(Ok(v))
            }
            Err(e) => {
                self.cursor = None;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Each element takes at least one byte: never more than the bytes left.
        match &self.cursor {
            None => (0, Some(0)),
            Some(c) => {
                let bytes = (c.data.len() - c.pos) as u64;
                (0, Some(self.left.min(bytes + 1) as usize))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_text() {
        let b: Vec<u8> = "Añ€".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let s = Utf16Str::new(&b);
        assert_eq!(s.to_string(), "Añ€");
        assert!(s.eq_str("Añ€") && !s.eq_str("A"));
        assert!(Utf16Str::default().is_empty());
        assert_eq!(Utf16Str::new(&[0x00, 0xD8]).to_string(), "\u{FFFD}");
    }
}
