//! The views of a trace's [`Inventory`] (`clrspy info`): JSON with stable keys, and text.

use std::io::{self, Write};

use clrspy_analysis::inventory::Inventory;
use serde_json::json;

use crate::units::{group, human_bytes};

/// An inventory with the file it came from.
pub struct InfoView<'a> {
    /// What the trace holds.
    pub inventory: &'a Inventory,
    /// The file, as the user named it.
    pub file: String,
    /// Its size in bytes (of the trace itself, for a zip the entry's).
    pub bytes_total: u64,
}

/// The ring buffer's line: what it kept, and that the older events went by design.
fn write_ring(
    out: &mut dyn Write,
    r: &clr_events::clrspy::Ring,
    inv: &Inventory,
) -> io::Result<()> {
    if r.dropped_blocks == 0 {
        return writeln!(
            out,
            "Ring buffer:    {}, never full: nothing was dropped",
            human_bytes(r.budget_bytes)
        );
    }
    writeln!(
        out,
        "Ring buffer:    kept the newest {} of the {} received; older events were dropped by design",
        human_bytes(r.budget_bytes),
        human_bytes(r.received_bytes)
    )?;
    // The Duration line counts from the session's start: say which part of it is in the file.
    if let (Some(first), Some(last)) = (inv.first_ns(), inv.last_ns()) {
        writeln!(
            out,
            "                the events kept cover the last {:.3} s (from {:.3} s on)",
            (last - first).max(0) as f64 / 1e9,
            first.max(0) as f64 / 1e9
        )?;
    }
    Ok(())
}

impl InfoView<'_> {
    /// The JSON view (keys documented in docs/commands.md, `clrspy info`).
    pub fn json(&self) -> serde_json::Value {
        let inv = self.inventory;
        let (h, stats) = (&inv.header, &inv.stats);
        let per_event: Vec<_> = inv
            .per_event
            .iter()
            .map(|e| {
                json!({"provider": e.provider, "event_id": e.event_id, "version": e.version, "name": e.name, "count": e.count})
            })
            .collect();
        let per_provider: Vec<_> = inv
            .per_provider()
            .into_iter()
            .map(|(p, n)| json!({"provider": p, "count": n}))
            .collect();
        let mut v = json!({
            "file": self.file,
            "format_version": inv.format_version(),
            "format": format!("{:?}", h.format),
            "start_time_utc": nettrace::format_unix_ns(h.start_unix_ns()),
            "process_id": h.process_id,
            "command_line": inv.command_line,
            "pointer_size": h.pointer_size,
            "cpu_count": h.cpu_count,
            "sampling_interval_ns": h.sampling_interval_ns,
            "ticks_per_second": h.ticks_per_second,
            "duration_ns": inv.duration_ns(),
            "first_event_ns": inv.first_ns(),
            "last_event_ns": inv.last_ns(),
            "events": stats.events,
            "events_with_stack": inv.events_with_stack,
            "stacks": stats.stacks,
            "metadata_rows": stats.metadata_rows,
            "dropped_events": inv.lost_events(),
            "truncated": inv.truncated(),
            "has_rundown": inv.has_rundown(),
            "method_loads": inv.method_loads(),
            "kernel_samples": inv.kernel_samples,
            "kernel_samples_per_cpu_second": inv.kernel_samples_per_cpu_second().map(|r| r.round()),
            "kernel_rate_hz": inv.kernel_sampler.map(|k| k.rate_hz),
            "kernel_records_lost": inv.kernel_sampler.map(|k| k.lost),
            "runtime_samples": inv.runtime_samples,
            "ended_cleanly": stats.ended_cleanly,
            "bytes_read": stats.bytes_read,
            "bytes_total": self.bytes_total,
            "error": inv.error,
            "trigger": inv.trigger.as_ref().map(|t| json!({
                "trigger": t.trigger,
                "reason": t.reason,
                "event": t.event,
                "event_ns": t.event_ns,
                "after_ms": t.after_ms,
            })),
            "per_provider": per_provider,
            "per_event": per_event,
        });
        // Only a ring's trace has the key: other traces' JSON stays as it was.
        if let (Some(r), Some(m)) = (&inv.ring, v.as_object_mut()) {
            m.insert(
                "ring".into(),
                json!({
                    "budget_bytes": r.budget_bytes,
                    "received_bytes": r.received_bytes,
                    "dropped_blocks": r.dropped_blocks,
                    "dropped_bytes": r.dropped_bytes,
                    "events_before_kept": stats.dropped_at_start,
                    "kept_from_ns": inv.first_ns(),
                }),
            );
        }
        v
    }

    /// The text view.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let inv = self.inventory;
        let (h, stats) = (&inv.header, &inv.stats);
        let fmt_name = match inv.format_version() {
            3 => "NetPerf v3".to_string(),
            6 => format!("NetTrace v6.{}", h.v6_minor),
            v => format!("NetTrace v{v}"),
        };
        writeln!(
            out,
            "File:           {} ({})",
            self.file,
            human_bytes(self.bytes_total)
        )?;
        writeln!(out, "Format:         {fmt_name}")?;
        writeln!(
            out,
            "Started (UTC):  {}",
            nettrace::format_unix_ns(h.start_unix_ns())
        )?;
        if let Some(pid) = h.process_id {
            writeln!(out, "Process id:     {pid}")?;
        }
        if let Some(line) = &inv.command_line {
            writeln!(out, "Command line:   {line}")?;
        }
        writeln!(out, "Pointer size:   {} bytes", h.pointer_size)?;
        if let Some(c) = h.cpu_count {
            writeln!(out, "CPUs:           {c}")?;
        }
        if let Some(s) = h.sampling_interval_ns {
            writeln!(out, "Sampling:       every {:.3} ms", f64::from(s) / 1e6)?;
        }
        let kernel = inv.kernel_samples;
        if kernel > 0 {
            writeln!(
                out,
                "CPU samples:    {} taken by the kernel (the kernel sampler: perf_event_open cpu-clock, on a CPU only; the runtime was not suspended)",
                group(kernel)
            )?;
            let mut rate = Vec::new();
            if let Some(r) = inv.kernel_samples_per_cpu_second() {
                rate.push(format!("{r:.0} per CPU-second of the target's threads"));
            }
            if let Some(k) = inv.kernel_sampler {
                rate.push(format!("asked {} Hz", k.rate_hz));
                rate.push(match k.lost {
                    0 => "no record lost".to_string(),
                    n => format!("{} records lost (a full ring)", group(n)),
                });
            }
            if !rate.is_empty() {
                writeln!(out, "                {}", rate.join("; "))?;
            }
        }
        if let Some(d) = inv.duration_ns() {
            writeln!(
                out,
                "Duration:       {:.3} s (trace start to last event)",
                d as f64 / 1e9
            )?;
        }
        writeln!(
            out,
            "Events:         {} ({} with a stack; {} stack table entries)",
            group(stats.events),
            group(inv.events_with_stack),
            group(stats.stacks)
        )?;
        if let Some(r) = &inv.ring {
            write_ring(out, r, inv)?;
        }
        let lost = inv.lost_events();
        if lost > 0 {
            writeln!(
                out,
                "Dropped:        {} events lost by the runtime (gaps in sequence numbers)",
                group(lost)
            )?;
        }
        match (&inv.error, inv.truncated()) {
            (Some(e), _) => writeln!(
                out,
                "Status:         DAMAGED: read {} of {} bytes; stopped {e}",
                group(stats.bytes_read),
                group(self.bytes_total)
            )?,
            (None, true) => writeln!(out, "Status:         TRUNCATED: no end-of-stream marker")?,
            (None, false) => writeln!(out, "Status:         complete (ended cleanly)")?,
        }
        if let Some(t) = &inv.trigger {
            let at = match t.event_ns {
                Some(ns) => format!(" at {:.3} s on {}", ns as f64 / 1e9, t.event),
                None => String::new(),
            };
            writeln!(
                out,
                "Stopped by:     trigger {}{at}: {}; recorded {:.1} s more",
                t.trigger,
                t.reason,
                f64::from(t.after_ms) / 1e3
            )?;
        }
        if !inv.has_rundown() {
            let loads = inv.method_loads();
            if loads > 0 {
                writeln!(
                    out,
                    "Method names:   no rundown, {} method loads: code jitted before the recording has no names in reports",
                    group(loads)
                )?;
            } else {
                writeln!(
                    out,
                    "Method names:   no rundown and no method loads: jitted code has no names in reports"
                )?;
            }
        }
        writeln!(out)?;
        writeln!(out, "{:>12}  Provider", "Events")?;
        let mut provs = inv.per_provider();
        provs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (p, n) in provs {
            writeln!(out, "{:>12}  {p}", group(n))?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:>12}  {:<44} {:>5} {:>3}  Provider",
            "Events", "Event", "Id", "Ver"
        )?;
        let mut rows: Vec<_> = inv.per_event.iter().collect();
        rows.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| {
                (&a.provider, a.event_id, a.version).cmp(&(&b.provider, b.event_id, b.version))
            })
        });
        for r in rows {
            writeln!(
                out,
                "{:>12}  {:<44} {:>5} {:>3}  {}",
                group(r.count),
                r.name,
                r.event_id,
                r.version,
                r.provider
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{
        EventMetadata, EventRecord, Item, Scanner, TraceWriter, WriteFormat, WriterOptions,
    };

    /// A V6 trace (blocks need no re-framing when cut out) of a thread busy only during the
    /// first 300 events and one busy throughout, ending with clrspy's `Ring` event when
    /// `ring`; then, as a ring would, its first `drop` event and sequence-point blocks cut
    /// away, and one more event block in the middle (a loss after the first kept events).
    fn cut_trace(ring: bool, drop: usize) -> Vec<u8> {
        let opts = WriterOptions {
            format: WriteFormat::V6,
            block_size: 1024,
            blocks_per_sequence_point: 4,
            ..WriterOptions::default()
        };
        let mut w = TraceWriter::new(Vec::new(), opts).unwrap();
        let tick = w
            .define(&EventMetadata {
                provider: "Test".into(),
                event_id: 1,
                event_name: "Tick".into(),
                ..EventMetadata::default()
            })
            .unwrap();
        let ids: Vec<u32> = clr_events::clrspy::metadata()
            .iter()
            .map(|m| w.define(m).unwrap())
            .collect();
        for i in 0..4000u64 {
            let payload = i.to_le_bytes();
            for t in [1, 999].into_iter().filter(|&t| t == 1 || i < 300) {
                w.write(&EventRecord {
                    metadata_id: tick,
                    thread_id: t,
                    capture_thread_id: t,
                    timestamp: i as i64 * 1000,
                    payload: &payload,
                    ..EventRecord::default()
                })
                .unwrap();
            }
        }
        if ring {
            let at = clr_events::clrspy::EVENTS
                .iter()
                .position(|e| e.id == clr_events::clrspy::ids::RING)
                .unwrap();
            let mut p = Vec::new();
            clr_events::clrspy::Ring {
                budget_bytes: 8 << 20,
                received_bytes: 40 << 20,
                dropped_blocks: drop as u64,
                dropped_bytes: 32 << 20,
            }
            .encode(&mut p);
            w.write(&EventRecord {
                metadata_id: ids[at],
                thread_id: 5,
                capture_thread_id: 5,
                timestamp: 4_000_000,
                payload: &p,
                ..EventRecord::default()
            })
            .unwrap();
        }
        let full = w.finish().unwrap();
        let mut out = Vec::new();
        let mut seen = 0;
        Scanner::new()
            .feed_all(&full, |i| {
                let r = i.offset() as usize..i.end() as usize;
                let keep = match i {
                    Item::Block(b) if !b.is_persistent() => {
                        seen += 1;
                        seen > drop && seen != drop + 12
                    }
                    _ => true,
                };
                if keep {
                    out.extend_from_slice(&full[r]);
                }
            })
            .unwrap();
        out
    }

    fn text(bytes: &[u8]) -> (Inventory, String) {
        let mut r = nettrace::TraceReader::new(bytes).unwrap();
        let inventory = Inventory::run(&mut r, |_| {});
        let view = InfoView {
            inventory: &inventory,
            file: "t.nettrace".into(),
            bytes_total: bytes.len() as u64,
        };
        let mut out = Vec::new();
        view.write_text(&mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        (inventory, s)
    }

    #[test]
    fn a_ring_trace_says_its_start_was_dropped_by_design_and_counts_only_later_gaps() {
        let (inv, t) = text(&cut_trace(true, 30));
        let st = &inv.stats;
        assert!(st.dropped_at_start > 0, "{st:?}");
        let lost = st.dropped_events - st.dropped_at_start;
        assert!(lost > 0, "the block cut in the middle: {st:?}");
        assert_eq!(inv.lost_events(), lost);
        assert!(
            t.contains("Ring buffer:    kept the newest 8.0 MB of the 40.0 MB received; older events were dropped by design\n"),
            "{t}"
        );
        let (first, last) = (inv.first_ns().unwrap(), inv.last_ns().unwrap());
        assert!(
            t.contains(&format!(
                "                the events kept cover the last {:.3} s (from {:.3} s on)\n",
                (last - first) as f64 / 1e9,
                first as f64 / 1e9
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!(
                "Dropped:        {} events lost by the runtime",
                group(lost)
            )),
            "{t}"
        );
        let v = InfoView {
            inventory: &inv,
            file: "t".into(),
            bytes_total: 0,
        }
        .json();
        assert_eq!(v["dropped_events"], lost);
        assert_eq!(v["ring"]["events_before_kept"], st.dropped_at_start);

        // The same cut without the note: every gap counts as before, and no ring key.
        let (inv, t) = text(&cut_trace(false, 30));
        assert!(inv.ring.is_none());
        assert_eq!(inv.lost_events(), inv.stats.dropped_events);
        assert!(!t.contains("Ring buffer"), "{t}");
        let dropped = format!(
            "Dropped:        {} events lost by the runtime",
            group(inv.stats.dropped_events)
        );
        assert!(t.contains(&dropped), "{t}");
        let v = InfoView {
            inventory: &inv,
            file: "t".into(),
            bytes_total: 0,
        }
        .json();
        assert!(v.get("ring").is_none());
    }
}
