//! The text view of one event: the line `clrspy events` writes — time in ms, thread (or
//! `clrspy` for clrspy's own events, which belong to no thread), provider/name, the decoded
//! fields as `name=value`, a decoding error, and the stack's addresses.

use std::fmt::Write;

use clr_events::EventFields;
use nettrace::Event;

use crate::event_json::NO_THREAD;

/// Appends `ev`'s line (with its newline) to `out`: `name` is its name as users know it,
/// `decoded` its fields; `stacks` false leaves the stack out.
pub fn write_event_text(
    out: &mut Vec<u8>,
    ev: &Event<'_>,
    name: &str,
    decoded: &EventFields,
    stacks: bool,
) {
    // clrspy's own events (thread readings, run-queue, process info) belong to no thread
    // (older traces stamped them 0).
    let own = ev.provider() == clr_events::clrspy::PROVIDER;
    let tid = if ev.thread_id == NO_THREAD || (own && ev.thread_id == 0) {
        "clrspy".to_string()
    } else {
        ev.thread_id.to_string()
    };
    let mut line = format!(
        "{:>14.6} ms  tid {:<7} {}/{}",
        ev.timestamp_ns() as f64 / 1e6,
        tid,
        ev.provider(),
        name
    );
    for f in &decoded.fields {
        let _ = write!(line, " {}={}", f.name, f.value);
    }
    if let Some(e) = &decoded.error {
        let _ = write!(line, " [decode error: {e}]");
    }
    if stacks && !ev.stack.is_empty() {
        let _ = write!(line, " stack[{}]=", ev.stack.len());
        for (i, ip) in ev.stack.ips().enumerate() {
            if i > 0 {
                line.push(',');
            }
            let _ = write!(line, "{ip:x}");
        }
    }
    line.push('\n');
    out.extend_from_slice(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{EventMetadata, EventRecord, TraceReader, TraceWriter, WriterOptions};

    #[test]
    fn a_line_per_event_with_fields_and_stack() {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let meta = EventMetadata {
            provider: "My-Source".into(),
            event_id: 3,
            ..Default::default()
        };
        let id = w.define(&meta).unwrap();
        let own = w
            .define(&EventMetadata {
                provider: clr_events::clrspy::PROVIDER.into(),
                event_id: 99,
                ..Default::default()
            })
            .unwrap();
        for (m, thread) in [(id, 7), (own, 0)] {
            let e = EventRecord {
                metadata_id: m,
                thread_id: thread,
                capture_thread_id: thread,
                timestamp: 10,
                stack: &[0x1000, 0xabc],
                payload: &[1, 2],
                ..Default::default()
            };
            w.write(&e).unwrap();
        }
        let bytes = w.finish().unwrap();
        let mut r = TraceReader::new(&bytes).unwrap();
        let (mut with, mut without) = (Vec::new(), Vec::new());
        while let Some(ev) = r.next_event().unwrap() {
            let fields = clr_events::decode_any(&ev, 8);
            write_event_text(&mut with, &ev, "Three", &fields, true);
            write_event_text(&mut without, &ev, "Three", &fields, false);
        }
        let with = String::from_utf8(with).unwrap();
        let lines: Vec<&str> = with.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].ends_with(" ms  tid 7       My-Source/Three payload=0x0102 stack[2]=1000,abc"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains(" ms  tid clrspy  "), "{}", lines[1]);
        let without = String::from_utf8(without).unwrap();
        assert!(!without.contains("stack["), "{without}");
        assert!(without.lines().next().unwrap().ends_with("payload=0x0102"));
    }
}
