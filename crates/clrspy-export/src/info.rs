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

impl InfoView<'_> {
    /// The JSON view (keys documented in README's `clrspy info`).
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
        json!({
            "file": self.file,
            "format_version": inv.format_version(),
            "format": format!("{:?}", h.format),
            "start_time_utc": nettrace::format_unix_ns(h.start_unix_ns()),
            "process_id": h.process_id,
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
            "dropped_events": stats.dropped_events,
            "truncated": inv.truncated(),
            "has_rundown": inv.has_rundown(),
            "method_loads": inv.method_loads(),
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
        })
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
        writeln!(out, "Pointer size:   {} bytes", h.pointer_size)?;
        if let Some(c) = h.cpu_count {
            writeln!(out, "CPUs:           {c}")?;
        }
        if let Some(s) = h.sampling_interval_ns {
            writeln!(out, "Sampling:       every {:.3} ms", f64::from(s) / 1e6)?;
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
        if stats.dropped_events > 0 {
            writeln!(
                out,
                "Dropped:        {} events lost by the runtime (gaps in sequence numbers)",
                group(stats.dropped_events)
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
