//! Decoding any event's payload as well as clrspy knows how: the runtime's own events with the
//! built-in layouts of this crate, self-describing events (EventSource, TraceLogging) with the
//! metadata the trace carries, and anything else as its raw bytes (a `payload` field).

use nettrace::{Event, Field, Value};

/// An event's payload, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct EventFields {
    /// Fields in order.
    pub fields: Vec<Field>,
    /// Why decoding stopped early, if it did (the fields before it are kept).
    pub error: Option<String>,
}

/// Decodes `ev`'s payload: with this crate's layout when one exists for its provider, id and
/// version; else with the trace's metadata when it describes fields; else an empty payload as
/// no fields and any other as one `payload` field holding the bytes. `pointer_size` is the
/// trace's (4 or 8).
pub fn decode_any(ev: &Event<'_>, pointer_size: u8) -> EventFields {
    if let Some(layout) = crate::layout(ev.provider(), ev.event_id(), ev.version()) {
        let d = layout.decode(ev.payload, pointer_size);
        return EventFields {
            fields: d.fields,
            error: d.error.map(|e| e.to_string()),
        };
    }
    if !ev.metadata.fields.is_empty() {
        let d = ev.decode_with_metadata();
        return EventFields {
            fields: d.fields,
            error: d.error,
        };
    }
    let fields = if ev.payload.is_empty() {
        Vec::new()
    } else {
        vec![Field::new("payload", Value::Bytes(ev.payload.to_vec()))]
    };
    EventFields {
        fields,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use nettrace::{
        EventMetadata, EventRecord, FieldDesc, FieldType, TraceReader, TraceWriter, Value,
        WriterOptions,
    };

    use super::*;

    /// Writes one event per (metadata, payload), reads them back and decodes each.
    fn decoded(events: &[(EventMetadata, Vec<u8>)]) -> Vec<EventFields> {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        for (i, (meta, payload)) in events.iter().enumerate() {
            let id = w.define(meta).unwrap();
            w.write(&EventRecord {
                metadata_id: id,
                thread_id: 1,
                capture_thread_id: 1,
                timestamp: 100 + i as i64,
                payload,
                ..Default::default()
            })
            .unwrap();
        }
        let bytes = w.finish().unwrap();
        let mut r = TraceReader::new(&bytes).unwrap();
        let mut out = Vec::new();
        while let Some(ev) = r.next_event().unwrap() {
            out.push(decode_any(&ev, 8));
        }
        out
    }

    #[test]
    fn each_source_of_fields() {
        let meta = |provider: &str, id: u32, fields: Vec<FieldDesc>| EventMetadata {
            provider: provider.into(),
            event_id: id,
            fields,
            ..Default::default()
        };
        let own = vec![FieldDesc {
            name: "Count".into(),
            ty: FieldType::I32,
        }];
        // GC/Start v0 (id 1): Count, Reason (u32 each) from the built-in layout.
        let gc_start = [7u32.to_le_bytes(), 1u32.to_le_bytes()].concat();
        let d = decoded(&[
            (meta(crate::RUNTIME_PROVIDER, 1, Vec::new()), gc_start),
            (meta("My-Source", 5, own), 42i32.to_le_bytes().to_vec()),
            (meta("My-Source", 6, Vec::new()), vec![1, 2, 3]),
            (meta("My-Source", 7, Vec::new()), Vec::new()),
            // A built-in layout cut short: the fields before the cut and why.
            (meta(crate::RUNTIME_PROVIDER, 1, Vec::new()), vec![7, 0]),
        ]);
        assert_eq!(d[0].fields[0].name, "Count");
        assert_eq!(d[0].fields[0].value, Value::U32(7));
        assert!(d[0].error.is_none());
        assert_eq!(d[1].fields[0].name, "Count");
        assert_eq!(d[1].fields[0].value, Value::I32(42));
        assert_eq!(d[2].fields[0].name, "payload");
        assert_eq!(d[2].fields[0].value, Value::Bytes(vec![1, 2, 3]));
        assert!(d[3].fields.is_empty() && d[3].error.is_none());
        assert!(d[4].error.is_some());
    }
}
