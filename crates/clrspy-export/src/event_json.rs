//! The JSON view of one event: the line `clrspy events --json` writes, as README.md
//! documents it — provider, id, version, name, time, thread, process, processor, level,
//! opcode, keywords, stack, the decoded fields, then activity ids and a decoding error when
//! there are any. Written with serde_json; stacks already written are reused by id (checked
//! against the stack's bytes, so an id reused after the runtime's table flush is written
//! afresh).

use std::collections::HashMap;

use clr_events::EventFields;
use nettrace::{Event, Field, Guid, Value};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;

/// Stacks cached at most (the cache starts over past this).
const MAX_CACHED_STACKS: usize = 65_536;

/// Writes events as JSON lines, reusing the JSON of stacks seen before.
#[derive(Debug, Default)]
pub struct EventJsonWriter {
    /// By stack id: the stack's bytes and its JSON array.
    stacks: HashMap<u32, (Vec<u8>, Box<RawValue>)>,
}

/// One event line, in the documented field order.
#[derive(Serialize)]
struct EventLine<'a> {
    provider: &'a str,
    event_id: u32,
    version: u8,
    name: &'a str,
    timestamp_ns: i64,
    thread_id: u64,
    process_id: Option<u64>,
    processor: Option<u32>,
    level: u8,
    opcode: u8,
    keywords: Hex,
    stack: &'a RawValue,
    fields: FieldsJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activity_id: Option<GuidJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    related_activity_id: Option<GuidJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decode_error: Option<&'a str>,
}

/// A number as a `"0x..."` string (lowercase, no leading zeros).
struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("0x{:x}", self.0))
    }
}

/// A GUID as its usual string.
struct GuidJson(Guid);

impl Serialize for GuidJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// Fields as a JSON object in order; a repeated name keeps its first place and its last value.
pub struct FieldsJson<'a>(pub &'a [Field]);

impl Serialize for FieldsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = self.0;
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (i, f) in fields.iter().enumerate() {
            if fields[..i].iter().any(|g| g.name == f.name) {
                continue;
            }
            let last = fields[i..]
                .iter()
                .rev()
                .find(|g| g.name == f.name)
                .map_or(&f.value, |g| &g.value);
            map.serialize_entry(&*f.name, &ValueJson(last))?;
        }
        map.end()
    }
}

/// A value as JSON: integers as numbers, pointers as `"0x..."` strings, GUIDs, times and byte
/// arrays as strings, a float that is not finite as `null`.
pub struct ValueJson<'a>(pub &'a Value);

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
            v @ (Value::Pointer(_) | Value::Guid(_) | Value::DateTime(_) | Value::Bytes(_)) => {
                s.collect_str(v)
            }
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

/// An event's stack as a JSON array of `"0x..."` strings.
fn stack_json(ev: &Event<'_>) -> Box<RawValue> {
    struct Ips<'e, 'a>(&'e Event<'a>);
    impl Serialize for Ips<'_, '_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.stack.ips().map(Hex))
        }
    }
    serde_json::to_string(&Ips(ev))
        .ok()
        .and_then(|text| RawValue::from_string(text).ok())
        .unwrap_or_else(empty_array)
}

/// `[]`, as a raw value.
fn empty_array() -> Box<RawValue> {
    RawValue::from_string("[]".into()).unwrap_or_default()
}

impl EventJsonWriter {
    /// A writer with no stacks seen.
    pub fn new() -> EventJsonWriter {
        EventJsonWriter::default()
    }

    /// Appends `ev` as one JSON line (with its newline): `name` is its name (see
    /// clrspy-analysis' inventory) and `fields` its decoded payload.
    pub fn write(&mut self, out: &mut Vec<u8>, ev: &Event<'_>, name: &str, fields: &EventFields) {
        let fresh;
        let stack: &RawValue = if ev.stack_id == 0 {
            fresh = stack_json(ev);
            &fresh
        } else {
            let raw = ev.stack.bytes();
            let cached = self
                .stacks
                .get(&ev.stack_id)
                .is_some_and(|(bytes, _)| bytes.as_slice() == raw);
            if !cached {
                if self.stacks.len() >= MAX_CACHED_STACKS {
                    self.stacks.clear();
                }
                self.stacks
                    .insert(ev.stack_id, (raw.to_vec(), stack_json(ev)));
            }
            match self.stacks.get(&ev.stack_id) {
                Some((_, json)) => json,
                None => {
                    fresh = stack_json(ev);
                    &fresh
                }
            }
        };
        let line = EventLine {
            provider: ev.provider(),
            event_id: ev.event_id(),
            version: ev.version(),
            name,
            timestamp_ns: ev.timestamp_ns(),
            thread_id: ev.thread_id,
            process_id: ev.process_id,
            processor: ev.processor,
            level: ev.level(),
            opcode: ev.opcode(),
            keywords: Hex(ev.keywords()),
            stack,
            fields: FieldsJson(&fields.fields),
            activity_id: (!ev.activity_id.is_zero()).then_some(GuidJson(ev.activity_id)),
            related_activity_id: (!ev.related_activity_id.is_zero())
                .then_some(GuidJson(ev.related_activity_id)),
            decode_error: fields.error.as_deref(),
        };
        // Writing to a `Vec` cannot fail, and every value here serializes.
        let _ = serde_json::to_writer(&mut *out, &line);
        out.push(b'\n');
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
