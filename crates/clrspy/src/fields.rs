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
