//! Decoding an event's payload for display: the runtime's own events with built-in layouts
//! (`clr-events`), self-describing events with their metadata; and turning values into JSON.

use nettrace::{Event, Field, Value};
use serde_json::{json, Map};

/// A decoded payload.
pub struct Decoded {
    /// Fields in order.
    pub fields: Vec<Field>,
    /// A decoding problem (fields before it are kept).
    pub error: Option<String>,
}

/// Decodes an event's payload as well as the tool knows how.
pub fn decode(ev: &Event<'_>, pointer_size: u8) -> Decoded {
    if let Some(layout) = clr_events::layout(ev.provider(), ev.event_id(), ev.version()) {
        let d = layout.decode(ev.payload, pointer_size);
        return Decoded {
            fields: d.fields,
            error: d.error.map(|e| e.to_string()),
        };
    }
    if !ev.metadata.fields.is_empty() {
        let d = ev.decode_with_metadata();
        return Decoded {
            fields: d.fields,
            error: d.error,
        };
    }
    if ev.payload.is_empty() {
        return Decoded {
            fields: Vec::new(),
            error: None,
        };
    }
    Decoded {
        fields: vec![Field::new("payload", Value::Bytes(ev.payload.to_vec()))],
        error: None,
    }
}

/// A value as JSON: integers as numbers, pointers as `"0x..."` strings, GUIDs, times and byte
/// arrays as strings.
pub fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Bool(b) => json!(b),
        Value::I8(x) => json!(x),
        Value::U8(x) => json!(x),
        Value::I16(x) => json!(x),
        Value::U16(x) => json!(x),
        Value::I32(x) => json!(x),
        Value::U32(x) => json!(x),
        Value::I64(x) => json!(x),
        Value::U64(x) => json!(x),
        Value::Pointer(x) => json!(format!("0x{x:x}")),
        Value::F32(x) => serde_json::Number::from_f64(f64::from(*x))
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::F64(x) => serde_json::Number::from_f64(*x)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Char(c) => json!(c.to_string()),
        Value::Guid(g) => json!(g.to_string()),
        Value::DateTime(t) => json!(t.to_string()),
        Value::String(s) => json!(s),
        Value::Bytes(_) => json!(v.to_string()),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(value_json).collect()),
        Value::Object(fields) => fields_json(fields),
    }
}

/// Fields as a JSON object (in order).
pub fn fields_json(fields: &[Field]) -> serde_json::Value {
    let mut m = Map::new();
    for f in fields {
        m.insert(f.name.to_string(), value_json(&f.value));
    }
    serde_json::Value::Object(m)
}

/// Appends `v` in lowercase hex (no prefix, no leading zeros; `0` for zero).
pub fn push_hex(out: &mut Vec<u8>, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut tmp = [0u8; 16];
    let n = (64 - v.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, slot) in tmp[..n].iter_mut().enumerate() {
        *slot = DIGITS[((v >> (4 * (n - 1 - i))) & 0xf) as usize];
    }
    out.extend_from_slice(&tmp[..n]);
}

/// Appends bytes as two lowercase hex digits each.
fn push_hex_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for &x in bytes {
        out.push(DIGITS[usize::from(x >> 4)]);
        out.push(DIGITS[usize::from(x & 0xf)]);
    }
}

/// Appends a value as serde_json writes it (writing to a `Vec` cannot fail).
macro_rules! push_ser {
    ($out:expr, $v:expr) => {{
        let _ = serde_json::to_writer(&mut *$out, $v);
    }};
}

/// Appends `v` as JSON, byte for byte what `value_json(v).to_string()` gives, without building
/// a `serde_json::Value`.
pub fn write_value_json(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::I8(x) => push_ser!(out, x),
        Value::U8(x) => push_ser!(out, x),
        Value::I16(x) => push_ser!(out, x),
        Value::U16(x) => push_ser!(out, x),
        Value::I32(x) => push_ser!(out, x),
        Value::U32(x) => push_ser!(out, x),
        Value::I64(x) => push_ser!(out, x),
        Value::U64(x) => push_ser!(out, x),
        Value::Pointer(x) => {
            out.extend_from_slice(b"\"0x");
            push_hex(out, *x);
            out.push(b'"');
        }
        // serde_json writes a non-finite float as `null`, as `Number::from_f64` makes it.
        Value::F32(x) => push_ser!(out, &f64::from(*x)),
        Value::F64(x) => push_ser!(out, x),
        Value::Char(c) => push_ser!(out, c),
        Value::Guid(g) => {
            // As `Guid`'s `Display`: the first three groups little-endian.
            let b = &g.0;
            out.push(b'"');
            push_hex_bytes(out, &[b[3], b[2], b[1], b[0]]);
            out.push(b'-');
            push_hex_bytes(out, &[b[5], b[4]]);
            out.push(b'-');
            push_hex_bytes(out, &[b[7], b[6]]);
            out.push(b'-');
            push_hex_bytes(out, &b[8..10]);
            out.push(b'-');
            push_hex_bytes(out, &b[10..16]);
            out.push(b'"');
        }
        Value::Bytes(bytes) => {
            out.extend_from_slice(b"\"0x");
            push_hex_bytes(out, bytes);
            out.push(b'"');
        }
        Value::DateTime(_) => push_ser!(out, &v.to_string()),
        Value::String(s) => push_ser!(out, s.as_str()),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value_json(out, item);
            }
            out.push(b']');
        }
        Value::Object(fields) => write_fields_json(out, fields),
    }
}

/// Appends fields as a JSON object, byte for byte what `fields_json(fields).to_string()` gives.
pub fn write_fields_json(out: &mut Vec<u8>, fields: &[Field]) {
    let duplicate = fields
        .iter()
        .enumerate()
        .any(|(i, f)| fields[..i].iter().any(|g| g.name == f.name));
    if duplicate {
        // A repeated name keeps its first place and its last value: the map decides.
        push_ser!(out, &fields_json(fields));
        return;
    }
    out.push(b'{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_ser!(out, &*f.name);
        out.push(b':');
        write_value_json(out, &f.value);
    }
    out.push(b'}');
}

/// Appends `text` as a JSON string, escaped as [`push_json_str`] does.
pub fn push_json_bytes(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        let mut s = String::new();
        push_json_str(&mut s, text);
        out.extend_from_slice(s.as_bytes());
    }
}

/// Appends `text` as a JSON string (quoted and escaped).
pub fn push_json_str(out: &mut String, text: &str) {
    use std::fmt::Write as _;
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use nettrace::{Field, Guid, Value};

    #[test]
    fn direct_json_matches_serde_json_values() {
        let time = nettrace::SystemTime {
            year: 2026,
            month: 11,
            day: 23,
            hour: 12,
            millisecond: 7,
            ..Default::default()
        };
        let mut guid = [0u8; 16];
        for (i, b) in guid.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(5);
        }
        let scalars = vec![
            Value::Bool(true),
            Value::Bool(false),
            Value::I8(-128),
            Value::U8(255),
            Value::I16(-3),
            Value::U16(65535),
            Value::I32(i32::MIN),
            Value::U32(u32::MAX),
            Value::I64(i64::MIN),
            Value::U64(u64::MAX),
            Value::Pointer(0),
            Value::Pointer(0x7f00_dead_beef),
            Value::F32(1.5),
            Value::F32(f32::NAN),
            Value::F64(0.1),
            Value::F64(-1e300),
            Value::F64(f64::INFINITY),
            Value::F64(3.0),
            Value::Char('"'),
            Value::Char('\u{1}'),
            Value::Guid(Guid(guid)),
            Value::Guid(Guid([0; 16])),
            Value::DateTime(time),
            Value::String("a \"quoted\" \\ tab\t bell\u{7} form\u{c} back\u{8} ünï ✓".into()),
            Value::String(String::new()),
            Value::Bytes(vec![0, 1, 0xab, 0xff]),
            Value::Bytes(Vec::new()),
        ];
        let mut fields: Vec<Field> = scalars
            .iter()
            .enumerate()
            .map(|(i, v)| Field::new(format!("f{i}\n"), v.clone()))
            .collect();
        fields.push(Field::new("arr", Value::Array(scalars.clone())));
        fields.push(Field::new(
            "obj",
            Value::Object(vec![
                Field::new("x", Value::I32(1)),
                Field::new("y", Value::Array(Vec::new())),
            ]),
        ));
        let dup = vec![
            Field::new("a", Value::I32(1)),
            Field::new("b", Value::I32(2)),
            Field::new("a", Value::I32(3)),
        ];
        for set in [fields, dup, Vec::new()] {
            let mut out = Vec::new();
            super::write_fields_json(&mut out, &set);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                super::fields_json(&set).to_string()
            );
        }
        for v in [0u64, 1, 0xf, 0x10, 0xabc, u64::MAX] {
            let mut out = Vec::new();
            super::push_hex(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v:x}"));
        }
    }

    #[test]
    fn json_strings_round_trip_through_serde() {
        for text in [
            "plain",
            "quote \" and \\ back",
            "tab\tnew\nline\u{1}",
            "ünïcode ✓",
        ] {
            let mut s = String::new();
            super::push_json_str(&mut s, text);
            let back: String = serde_json::from_str(&s).unwrap();
            assert_eq!(back, text);
        }
    }
}
