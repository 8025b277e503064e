//! The repair view (`clrspy repair`): what a repair kept and lost, as one JSON object or as
//! sentences — a copy of a whole trace, a cut NetTrace made whole, or a NetPerf trace
//! converted to NetTrace.

use std::io::{self, Write};

use clrspy_analysis::repair_file::RepairedFile;
use serde_json::json;

/// A repaired trace, shown.
pub struct RepairView<'a> {
    /// The repair.
    pub repaired: &'a RepairedFile,
}

impl RepairView<'_> {
    /// One JSON object (keys in docs).
    pub fn json(&self) -> serde_json::Value {
        let (f, r) = (self.repaired, &self.repaired.repair);
        json!({
            "input": f.input,
            "output": f.output.display().to_string(),
            "was_whole": r.was_whole,
            "format": r.format.map(|f| format!("{f:?}")),
            "output_format": r.output_format.map(|f| format!("{f:?}")),
            "converted": r.converted,
            "events_converted": r.events_converted,
            "salvaged_events": r.salvaged_events,
            "bytes_in": r.bytes_in,
            "bytes_kept": r.bytes_kept,
            "bytes_dropped": r.bytes_in - r.bytes_kept,
            "bytes_out": r.bytes_out,
            "blocks_kept": r.blocks,
            "cut_at": r.cut_at,
            "damage": r.damage.as_ref().map(|e| e.to_string()),
            "events_readable_before": f.events_before,
            "events_kept": f.events_after,
            "output_whole": f.output_whole,
        })
    }

    /// What was kept and dropped, in sentences.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (f, r) = (self.repaired, &self.repaired.repair);
        let (input, output) = (&f.input, f.output.display());
        let (before, after) = (f.events_before, f.events_after);
        let dropped = r.bytes_in - r.bytes_kept;
        match (r.converted, r.was_whole) {
            (true, true) => {
                return writeln!(
                    out,
                    "{input} is a whole NetPerf trace: converted to NetTrace (V5) in {output} ({after} events, {} bytes).",
                    r.bytes_out
                );
            }
            (true, false) => writeln!(
                out,
                "Wrote {output}: NetPerf converted to NetTrace (V5), {after} events: every whole one in the first {} of {} bytes.",
                r.bytes_kept, r.bytes_in
            )?,
            (false, true) => {
                return writeln!(
                    out,
                    "{input} was already a whole trace: copied unchanged to {output} ({after} events, {} bytes).",
                    r.bytes_out
                );
            }
            (false, false) => writeln!(
                out,
                "Wrote {output}: a whole trace of {after} events in {} blocks ({} of {} bytes kept, then a valid end of stream).",
                r.blocks, r.bytes_kept, r.bytes_in
            )?,
        }
        let cut = if r.converted {
            "the trace stopped mid-event."
        } else {
            "a block cut short (the trace stopped mid-block)."
        };
        match (&r.damage, r.cut_at) {
            (Some(e), Some(at)) => writeln!(
                out,
                "Dropped {dropped} bytes from offset {at}: the trace is damaged {e}"
            )?,
            (None, Some(at)) => writeln!(out, "Dropped {dropped} bytes from offset {at}: {cut}")?,
            _ => writeln!(out, "Nothing dropped: only the end of stream was missing.")?,
        }
        if !r.converted && r.salvaged_events > 0 {
            writeln!(
                out,
                "Kept the {} whole events of the cut block in a block of their own.",
                r.salvaged_events
            )?;
        }
        if before > after {
            writeln!(
                out,
                "Readers see {after} events now; {before} could be read from the damaged file."
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_analysis::repair_file::repair_file;
    use clrspy_analysis::trace_file::OpenTrace;
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};

    fn trace(n: u64) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let meta = EventMetadata {
            provider: "P".into(),
            event_id: 1,
            ..EventMetadata::default()
        };
        let id = w.define(&meta).unwrap();
        for i in 0..n {
            let e = EventRecord {
                metadata_id: id,
                timestamp: 1000 + i as i64,
                payload: &[7; 64],
                ..EventRecord::default()
            };
            w.write(&e).unwrap();
            if i % 10 == 9 {
                w.flush_events().unwrap();
            }
        }
        w.finish().unwrap()
    }

    fn shown(bytes: &[u8]) -> (String, serde_json::Value) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("t.nettrace");
        std::fs::write(&input, bytes).unwrap();
        let r = repair_file(&OpenTrace::open(&input).unwrap(), None).unwrap();
        let view = RepairView { repaired: &r };
        let mut text = Vec::new();
        view.write_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        (
            text.replace(&dir.path().display().to_string(), "D"),
            view.json(),
        )
    }

    #[test]
    fn a_whole_trace_is_one_sentence() {
        let (text, json) = shown(&trace(20));
        assert!(
            text.starts_with("D/t.nettrace was already a whole trace: copied unchanged to D/t.repaired.nettrace (20 events,"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1);
        assert_eq!(json["events_kept"], 20);
        assert_eq!(json["bytes_dropped"], 0);
        assert_eq!(json["output_whole"], true);
    }

    #[test]
    fn a_cut_trace_says_what_was_dropped_and_where() {
        let whole = trace(40);
        let (text, json) = shown(&whole[..whole.len() - 100]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("Wrote D/t.repaired.nettrace: a whole trace of "),
            "{text}"
        );
        let at = json["cut_at"].as_u64().unwrap();
        let dropped = json["bytes_dropped"].as_u64().unwrap();
        assert!(
            text.contains(&format!("Dropped {dropped} bytes from offset {at}")),
            "{text}"
        );
        assert_eq!(json["was_whole"], false);
        assert_eq!(
            json["bytes_in"].as_u64().unwrap() - json["bytes_kept"].as_u64().unwrap(),
            dropped
        );
    }
}
