//! Decoding a self-describing payload (EventSource/TraceLogging events) with the field layout
//! from its metadata. Fields decoded before a problem are kept; the problem is reported.

use crate::cursor::{Cursor, CursorError};
use crate::metadata::{FieldDesc, FieldType};
use crate::value::{Field, Value};

/// Hard limit on array elements decoded for one field (the format's `u16` counts fit).
const MAX_ELEMENTS: usize = 65_535;

/// A payload decoded by its metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodedPayload {
    /// Fields in order, up to the first that did not fit.
    pub fields: Vec<Field>,
    /// What went wrong, naming the field and payload offset; `None` when all fields decoded.
    pub error: Option<String>,
    /// Payload bytes left after the last field.
    pub extra_bytes: usize,
}

/// Decodes `payload` with `fields`. Never panics.
pub fn decode_payload(fields: &[FieldDesc], payload: &[u8]) -> DecodedPayload {
    let mut c = Cursor::new(payload, 0);
    let mut out = DecodedPayload::default();
    for f in fields {
        let at = c.position();
        match decode_value(&f.ty, &mut c, payload) {
            Ok(v) => out.fields.push(Field::new(f.name.clone(), v)),
            Err(e) => {
                out.error = Some(format!("field '{}' at payload offset {at}: {e}", f.name));
                return out;
            }
        }
    }
    out.extra_bytes = c.remaining();
    out
}

/// A Windows FILETIME (100 ns intervals since 1601) as an ISO-8601 UTC string with its full
/// 100 ns precision.
fn filetime_to_string(ft: u64) -> Value {
    const EPOCH_DIFF_SECS: i64 = 11_644_473_600;
    let secs = (ft / 10_000_000) as i64 - EPOCH_DIFF_SECS;
    let ticks = ft % 10_000_000;
    let ns = secs
        .saturating_mul(1_000_000_000)
        .saturating_add(ticks as i64 * 100);
    Value::String(clrspy_values::time::format_utc(ns, 7))
}

fn decode_value(ty: &FieldType, c: &mut Cursor<'_>, payload: &[u8]) -> Result<Value, CursorError> {
    Ok(match ty {
        FieldType::Bool32 => Value::Bool(c.u32()? != 0),
        FieldType::Char16 => {
            let u = c.u16()?;
            Value::Char(char::from_u32(u.into()).unwrap_or(char::REPLACEMENT_CHARACTER))
        }
        FieldType::Char8 => Value::Char(char::from(c.u8()?)),
        FieldType::I8 => Value::I8(c.u8()? as i8),
        FieldType::U8 => Value::U8(c.u8()?),
        FieldType::I16 => Value::I16(c.i16()?),
        FieldType::U16 => Value::U16(c.u16()?),
        FieldType::I32 => Value::I32(c.i32()?),
        FieldType::U32 => Value::U32(c.u32()?),
        FieldType::I64 => Value::I64(c.i64()?),
        FieldType::U64 => Value::U64(c.u64()?),
        FieldType::F32 => Value::F32(c.f32()?),
        FieldType::F64 => Value::F64(c.f64()?),
        FieldType::Decimal => Value::Bytes(c.bytes(16)?.to_vec()),
        FieldType::DateTime => filetime_to_string(c.u64()?),
        FieldType::Guid => Value::Guid(c.guid()?),
        FieldType::String16 => Value::String(c.utf16z()?),
        FieldType::VarInt => Value::I64(c.vari64()?),
        FieldType::VarUInt => Value::U64(c.varu64()?),
        FieldType::Object(fields) => {
            let mut out = Vec::with_capacity(fields.len());
            for f in fields {
                out.push(Field::new(f.name.clone(), decode_value(&f.ty, c, payload)?));
            }
            Value::Object(out)
        }
        FieldType::Array(elem) => {
            let n = c.u16()? as usize;
            decode_array(elem, n, c, payload)?
        }
        FieldType::FixedArray(elem, n) => decode_array(elem, *n as usize, c, payload)?,
        FieldType::RelLoc(elem) | FieldType::DataLoc(elem) => {
            let loc = c.u32()?;
            let size = (loc >> 16) as usize;
            let pos = (loc & 0xffff) as usize;
            let start = if matches!(ty, FieldType::RelLoc(_)) {
                c.position() + pos
            } else {
                pos
            };
            let elem_size = elem.fixed_size().unwrap_or(1).max(1);
            let region =
                payload
                    .get(start..start.saturating_add(size))
                    .ok_or(CursorError::Eof {
                        offset: start as u64,
                        needed: size,
                        available: payload.len().saturating_sub(start),
                    })?;
            let mut rc = Cursor::new(region, start as u64);
            decode_array(elem, size / elem_size, &mut rc, payload)?
        }
    })
}

fn decode_array(
    elem: &FieldType,
    n: usize,
    c: &mut Cursor<'_>,
    payload: &[u8],
) -> Result<Value, CursorError> {
    if matches!(elem, FieldType::U8) {
        return Ok(Value::Bytes(c.bytes(n)?.to_vec()));
    }
    if matches!(elem, FieldType::Char16) {
        // An array of UTF-16 code units is a string (how EventSource writes char[]).
        let b = c.bytes(n.saturating_mul(2))?;
        let units: Vec<u16> = b
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect();
        return Ok(Value::String(String::from_utf16_lossy(&units)));
    }
    // Every element takes at least one byte: refuse counts the rest cannot hold.
    if n > c.remaining() || n > MAX_ELEMENTS {
        return Err(CursorError::Eof {
            offset: c.offset(),
            needed: n,
            available: c.remaining(),
        });
    }
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(decode_value(elem, c, payload)?);
    }
    Ok(Value::Array(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(name: &str, ty: FieldType) -> FieldDesc {
        FieldDesc {
            name: name.into(),
            ty,
        }
    }

    #[test]
    fn decodes_primitives_strings_arrays_and_objects() {
        let mut p = Vec::new();
        p.extend_from_slice(&7i32.to_le_bytes());
        for u in "hi".encode_utf16() {
            p.extend_from_slice(&u.to_le_bytes());
        }
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&2u32.to_le_bytes());
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&9u64.to_le_bytes());
        let fields = vec![
            fd("a", FieldType::I32),
            fd("s", FieldType::String16),
            fd("arr", FieldType::Array(Box::new(FieldType::U32))),
            fd(
                "o",
                FieldType::Object(vec![fd("b", FieldType::Bool32), fd("u", FieldType::U64)]),
            ),
        ];
        let d = decode_payload(&fields, &p);
        assert_eq!(d.error, None);
        assert_eq!(d.fields[0].value, Value::I32(7));
        assert_eq!(d.fields[1].value, Value::String("hi".into()));
        assert_eq!(
            d.fields[2].value,
            Value::Array(vec![Value::U32(1), Value::U32(2)])
        );
        assert_eq!(
            d.fields[3].value,
            Value::Object(vec![
                Field::new("b", Value::Bool(true)),
                Field::new("u", Value::U64(9))
            ])
        );
    }

    #[test]
    fn keeps_fields_before_a_short_payload() {
        let fields = vec![fd("a", FieldType::I32), fd("b", FieldType::I64)];
        let d = decode_payload(&fields, &[1, 0, 0, 0, 1, 2]);
        assert_eq!(d.fields.len(), 1);
        assert!(d.error.unwrap().contains("field 'b'"));
    }

    #[test]
    fn filetime_converts() {
        // 2020-01-01T00:00:00.1234567Z
        let v = filetime_to_string(132_223_104_001_234_567);
        assert_eq!(v, Value::String("2020-01-01T00:00:00.1234567Z".into()));
    }
}
