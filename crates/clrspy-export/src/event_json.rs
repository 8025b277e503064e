//! The JSON view of one event: the line `clrspy events --json` writes, as docs/commands.md
//! documents it — provider, id, version, name, time, thread, process, processor, level,
//! opcode, keywords, stack, the decoded fields, then activity ids and a decoding error when
//! there are any. Text that may need escaping (names, string fields, messages) is written by
//! serde_json; what never does — the fixed keys, punctuation, pointers and stacks as
//! `"0x..."`, byte arrays, booleans — is written directly, byte for byte as serde_json writes
//! it (the payload's fields as `FieldsJson` serializes them; going through serde for every
//! key and pointer cost a fifth more time on pointer-heavy traces). Stacks already written are reused
//! by id (checked against the stack's bytes, so an id reused after the runtime's table flush is
//! written afresh).

use std::collections::HashMap;

use clr_events::EventFields;
use nettrace::{Event, Field, Value};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

/// Stacks cached at most (the cache starts over past this).
const MAX_CACHED_STACKS: usize = 65_536;

/// Writes events as JSON lines, reusing the JSON of stacks seen before.
#[derive(Debug, Default)]
pub struct EventJsonWriter {
    /// By stack id: the stack's bytes and its JSON array.
    stacks: HashMap<u32, (Vec<u8>, Vec<u8>)>,
}

/// The thread id of the events clrspy writes into a trace itself (they belong to no thread):
/// `thread_id` is `null` for them in JSON.
pub use clr_events::clrspy::NO_THREAD;

/// Appends `v` as serde_json writes it (writing to a `Vec` cannot fail, and every value here
/// serializes).
fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// The digits of `v` as `0x...` (lowercase, no leading zeros) in a buffer on the stack, and
/// how many bytes of it are used.
fn hex_digits(v: u64) -> ([u8; 18], usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 18];
    buf[..2].copy_from_slice(b"0x");
    let n = (64 - v.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, slot) in buf[2..2 + n].iter_mut().enumerate() {
        *slot = DIGITS[((v >> (4 * (n - 1 - i))) & 0xf) as usize];
    }
    (buf, 2 + n)
}

/// Appends `v` as a `"0x..."` JSON string: ASCII digits only, so nothing to escape (this is
/// the hot path of large dumps: pointers and stacks).
fn put_hex(out: &mut Vec<u8>, v: u64) {
    let (buf, n) = hex_digits(v);
    out.push(b'"');
    out.extend_from_slice(&buf[..n]);
    out.push(b'"');
}

/// A number as a `"0x..."` string (lowercase, no leading zeros).
struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (buf, n) = hex_digits(self.0);
        // Only ASCII digits were written.
        s.serialize_str(std::str::from_utf8(&buf[..n]).unwrap_or_default())
    }
}

/// Appends fields as [`FieldsJson`] serializes them, writing what never needs escaping
/// (punctuation, pointers, byte arrays, integers) directly; names and strings go through
/// serde_json.
fn put_fields(out: &mut Vec<u8>, fields: &[Field]) {
    let repeated = |i: usize, f: &Field| fields[..i].iter().any(|g| g.name == f.name);
    let duplicate = fields.iter().enumerate().any(|(i, f)| repeated(i, f));
    out.push(b'{');
    let mut first = true;
    for (i, f) in fields.iter().enumerate() {
        let mut value = &f.value;
        if duplicate {
            if repeated(i, f) {
                continue;
            }
            value = fields[i..]
                .iter()
                .rev()
                .find(|g| g.name == f.name)
                .map_or(value, |g| &g.value);
        }
        if !first {
            out.push(b',');
        }
        first = false;
        put(out, &*f.name);
        out.push(b':');
        put_value(out, value);
    }
    out.push(b'}');
}

/// Appends a value as [`ValueJson`] serializes it (see [`put_fields`]).
fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Pointer(x) => put_hex(out, *x),
        Value::Bytes(bytes) => {
            const DIGITS: &[u8; 16] = b"0123456789abcdef";
            out.reserve(4 + 2 * bytes.len());
            out.extend_from_slice(b"\"0x");
            for &b in bytes {
                out.push(DIGITS[usize::from(b >> 4)]);
                out.push(DIGITS[usize::from(b & 0xf)]);
            }
            out.push(b'"');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                put_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(fields) => put_fields(out, fields),
        // Integers, floats (`null` when not finite), chars, strings, GUIDs and times: as
        // serde_json writes them.
        v => put(out, &ValueJson(v)),
    }
}

/// Fields as a JSON object in order; a repeated name keeps its first place and its last value.
pub(crate) struct FieldsJson<'a>(pub &'a [Field]);

impl Serialize for FieldsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = self.0;
        let repeated = |i: usize, f: &Field| fields[..i].iter().any(|g| g.name == f.name);
        let duplicate = fields.iter().enumerate().any(|(i, f)| repeated(i, f));
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (i, f) in fields.iter().enumerate() {
            let mut value = &f.value;
            if duplicate {
                if repeated(i, f) {
                    continue;
                }
                value = fields[i..]
                    .iter()
                    .rev()
                    .find(|g| g.name == f.name)
                    .map_or(value, |g| &g.value);
            }
            map.serialize_entry(&*f.name, &ValueJson(value))?;
        }
        map.end()
    }
}

/// A value as JSON: integers as numbers, pointers as `"0x..."` strings, GUIDs, times and byte
/// arrays as strings, a float that is not finite as `null`.
pub(crate) struct ValueJson<'a>(pub &'a Value);

impl Serialize for ValueJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::I8(x) => s.serialize_i8(*x),
            Value::U8(x) => s.serialize_u8(*x),
            Value::I16(x) => s.serialize_i16(*x),
            Value::U16(x) => s.serialize_u16(*x),
            Value::I32(x) => s.serialize_i32(*x),
            Value::U32(x) => s.serialize_u32(*x),
            Value::I64(x) => s.serialize_i64(*x),
            Value::U64(x) => s.serialize_u64(*x),
            Value::F32(x) => s.serialize_f64(f64::from(*x)),
            Value::F64(x) => s.serialize_f64(*x),
            Value::Char(c) => s.serialize_char(*c),
            Value::String(text) => s.serialize_str(text),
            Value::Pointer(x) => Hex(*x).serialize(s),
            Value::Bytes(bytes) => {
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                let mut text = String::with_capacity(2 + 2 * bytes.len());
                text.push_str("0x");
                for &b in bytes {
                    text.push(char::from(DIGITS[usize::from(b >> 4)]));
                    text.push(char::from(DIGITS[usize::from(b & 0xf)]));
                }
                s.serialize_str(&text)
            }
            v @ (Value::Guid(_) | Value::DateTime(_)) => s.collect_str(v),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&ValueJson(item))?;
                }
                seq.end()
            }
            Value::Object(fields) => FieldsJson(fields).serialize(s),
        }
    }
}

/// Appends an event's stack as a JSON array of `"0x..."` strings.
fn put_stack(out: &mut Vec<u8>, ev: &Event<'_>) {
    out.push(b'[');
    for (i, ip) in ev.stack.ips().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_hex(out, ip);
    }
    out.push(b']');
}

impl EventJsonWriter {
    /// A writer with no stacks seen.
    pub fn new() -> EventJsonWriter {
        EventJsonWriter::default()
    }

    /// Appends the stack's JSON, from the cache when the same stack was written before.
    fn put_stack(&mut self, out: &mut Vec<u8>, ev: &Event<'_>) {
        if ev.stack_id == 0 {
            put_stack(out, ev);
            return;
        }
        let raw = ev.stack.bytes();
        if let Some((bytes, json)) = self.stacks.get(&ev.stack_id) {
            if bytes.as_slice() == raw {
                out.extend_from_slice(json);
                return;
            }
        }
        let at = out.len();
        put_stack(out, ev);
        if self.stacks.len() >= MAX_CACHED_STACKS {
            self.stacks.clear();
        }
        self.stacks
            .insert(ev.stack_id, (raw.to_vec(), out[at..].to_vec()));
    }

    /// Appends `ev` as one JSON line (with its newline): `name` is its name (see
    /// clrspy-analysis' inventory) and `fields` its decoded payload.
    pub fn write(&mut self, out: &mut Vec<u8>, ev: &Event<'_>, name: &str, fields: &EventFields) {
        out.extend_from_slice(b"{\"provider\":");
        put(out, ev.provider());
        out.extend_from_slice(b",\"event_id\":");
        put(out, &ev.event_id());
        out.extend_from_slice(b",\"version\":");
        put(out, &ev.version());
        out.extend_from_slice(b",\"name\":");
        put(out, name);
        out.extend_from_slice(b",\"timestamp_ns\":");
        put(out, &ev.timestamp_ns());
        out.extend_from_slice(b",\"thread_id\":");
        if ev.thread_id == NO_THREAD {
            out.extend_from_slice(b"null");
        } else {
            put(out, &ev.thread_id);
        }
        out.extend_from_slice(b",\"process_id\":");
        put(out, &ev.process_id);
        out.extend_from_slice(b",\"processor\":");
        put(out, &ev.processor);
        out.extend_from_slice(b",\"level\":");
        put(out, &ev.level());
        out.extend_from_slice(b",\"opcode\":");
        put(out, &ev.opcode());
        out.extend_from_slice(b",\"keywords\":");
        put_hex(out, ev.keywords());
        out.extend_from_slice(b",\"stack\":");
        self.put_stack(out, ev);
        out.extend_from_slice(b",\"fields\":");
        put_fields(out, &fields.fields);
        if !ev.activity_id.is_zero() {
            out.extend_from_slice(b",\"activity_id\":");
            put(out, &ev.activity_id.to_string());
        }
        if !ev.related_activity_id.is_zero() {
            out.extend_from_slice(b",\"related_activity_id\":");
            put(out, &ev.related_activity_id.to_string());
        }
        if let Some(e) = &fields.error {
            out.extend_from_slice(b",\"decode_error\":");
            put(out, e.as_str());
        }
        out.extend_from_slice(b"}\n");
    }
}

#[cfg(test)]
mod tests {
    use nettrace::{Field, Guid, Value};
    use serde_json::json;

    use super::*;

    fn text(fields: &[Field]) -> String {
        serde_json::to_string(&FieldsJson(fields)).unwrap()
    }

    #[test]
    fn values_as_documented() {
        let mut guid = [0u8; 16];
        for (i, b) in guid.iter_mut().enumerate() {
            *b = i as u8;
        }
        let fields = vec![
            Field::new("b", Value::Bool(true)),
            Field::new("i8", Value::I8(-128)),
            Field::new("u64", Value::U64(u64::MAX)),
            Field::new("i64", Value::I64(i64::MIN)),
            Field::new("p", Value::Pointer(0x7f00_dead_beef)),
            Field::new("p0", Value::Pointer(0)),
            Field::new("f", Value::F32(1.5)),
            Field::new("nan", Value::F32(f32::NAN)),
            Field::new("inf", Value::F64(f64::INFINITY)),
            Field::new("d", Value::F64(0.1)),
            Field::new("c", Value::Char('"')),
            Field::new("g", Value::Guid(Guid(guid))),
            Field::new("s", Value::String("tab\t \"q\" \\ ✓".into())),
            Field::new("bytes", Value::Bytes(vec![0, 0xab, 0xff])),
            Field::new("arr", Value::Array(vec![Value::U8(1), Value::Pointer(16)])),
            Field::new("obj", Value::Object(vec![Field::new("x", Value::I32(-1))])),
        ];
        let back: serde_json::Value = serde_json::from_str(&text(&fields)).unwrap();
        assert_eq!(
            back,
            json!({
                "b": true, "i8": -128, "u64": u64::MAX, "i64": i64::MIN,
                "p": "0x7f00deadbeef", "p0": "0x0", "f": 1.5, "nan": null, "inf": null,
                "d": 0.1, "c": "\"", "g": "03020100-0504-0706-0809-0a0b0c0d0e0f",
                "s": "tab\t \"q\" \\ ✓", "bytes": "0x00abff", "arr": [1, "0x10"],
                "obj": {"x": -1}
            })
        );
        // In order, compact.
        assert!(text(&fields).starts_with("{\"b\":true,\"i8\":-128,"));
    }

    #[test]
    fn direct_writing_matches_serde() {
        let fields = vec![
            Field::new("p", Value::Pointer(0x7f00_dead_beef)),
            Field::new("p0", Value::Pointer(0)),
            Field::new("pmax", Value::Pointer(u64::MAX)),
            Field::new("b", Value::Bool(false)),
            Field::new("t", Value::Bool(true)),
            Field::new("n\"ame", Value::String("a\u{1}\"\n".into())),
            Field::new("nan", Value::F64(f64::NAN)),
            Field::new("neg", Value::F64(-0.0)),
            Field::new("c", Value::Char('\\')),
            Field::new("bytes", Value::Bytes(vec![0, 0xab, 0xff])),
            Field::new("empty", Value::Bytes(vec![])),
            Field::new("arr", Value::Array(vec![Value::U8(1), Value::Pointer(16)])),
            Field::new("none", Value::Array(vec![])),
            Field::new("obj", Value::Object(vec![Field::new("x", Value::I32(-1))])),
            Field::new("p", Value::Pointer(0xabc)),
        ];
        for fields in [&fields[..], &fields[..14], &[]] {
            let mut out = Vec::new();
            put_fields(&mut out, fields);
            assert_eq!(String::from_utf8(out).unwrap(), text(fields));
        }
    }

    #[test]
    fn a_repeated_name_keeps_its_first_place_and_last_value() {
        let dup = vec![
            Field::new("a", Value::I32(1)),
            Field::new("b", Value::I32(2)),
            Field::new("a", Value::I32(3)),
        ];
        assert_eq!(text(&dup), "{\"a\":3,\"b\":2}");
        assert_eq!(text(&[]), "{}");
    }

    #[test]
    fn event_lines_in_documented_order_with_cached_stacks() {
        use nettrace::{EventMetadata, EventRecord, TraceReader, TraceWriter, WriterOptions};
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let id = w
            .define(&EventMetadata {
                provider: "My-Source".into(),
                event_id: 3,
                ..Default::default()
            })
            .unwrap();
        for ts in [10, 20] {
            w.write(&EventRecord {
                metadata_id: id,
                thread_id: 7,
                capture_thread_id: 7,
                timestamp: ts,
                stack: &[0x1000, 0xabc],
                payload: &[1, 2],
                ..Default::default()
            })
            .unwrap();
        }
        let bytes = w.finish().unwrap();
        let mut r = TraceReader::new(&bytes).unwrap();
        let mut writer = EventJsonWriter::new();
        let mut out = Vec::new();
        while let Some(ev) = r.next_event().unwrap() {
            let fields = clr_events::decode_any(&ev, 8);
            writer.write(&mut out, &ev, "Three", &fields);
        }
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        for (line, ts) in lines.iter().zip([10, 20]) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
            assert_eq!(
                keys,
                [
                    "provider",
                    "event_id",
                    "version",
                    "name",
                    "timestamp_ns",
                    "thread_id",
                    "process_id",
                    "processor",
                    "level",
                    "opcode",
                    "keywords",
                    "stack",
                    "fields"
                ]
            );
            assert_eq!(v["stack"], json!(["0x1000", "0xabc"]));
            assert_eq!(v["fields"], json!({"payload": "0x0102"}));
            assert_eq!(v["timestamp_ns"], json!(ts));
        }
    }
}
