//! `clrspy info`: what a trace holds, and whether it is whole.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::json;

use crate::cli::InfoArgs;
use crate::input;
use crate::names;
use crate::output::CliResult;
use crate::progress::Progress;

struct Row {
    name: String,
    count: u64,
}

fn flush_fast(
    per_event: &mut BTreeMap<(String, u32, u8), Row>,
    provider: String,
    id: u32,
    version: u8,
    n: u64,
) {
    // The slow path inserted the row (with its name) before any fast-path count.
    if let Some(row) = per_event.get_mut(&(provider, id, version)) {
        row.count += n;
    }
}

/// Thousands separators for counts.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs `clrspy info`.
pub fn run(args: &InfoArgs) -> CliResult<std::process::ExitCode> {
    let trace = input::open(&args.input.trace)?;
    let total_bytes = trace.len();
    let mut reader = trace.reader()?;
    // Counting is keyed by metadata id first (cheap), then by (provider, id, version).
    let mut per_event: BTreeMap<(String, u32, u8), Row> = BTreeMap::new();
    let mut fast: HashMap<(u32, u8), (String, u32, u64)> = HashMap::new();
    let mut with_stack = 0u64;
    let mut progress = Progress::new(total_bytes);
    let result = reader.for_each_event(|ev| {
        progress.update(ev.offset);
        if !ev.stack.is_empty() {
            with_stack += 1;
        }
        let version = ev.version();
        if let Some((p, id, n)) = fast.get_mut(&(ev.metadata.metadata_id, version)) {
            if *id == ev.event_id() && p == ev.provider() {
                *n += 1;
                return true;
            }
        }
        // First event of this metadata row (or a row id reused after a V6 metadata flush).
        if let Some((p, id, n)) = fast.remove(&(ev.metadata.metadata_id, version)) {
            flush_fast(&mut per_event, p, id, version, n);
        }
        let key = (ev.provider().to_string(), ev.event_id(), version);
        per_event.entry(key).or_insert_with(|| Row {
            name: names::event_name(ev).into_owned(),
            count: 0,
        });
        fast.insert(
            (ev.metadata.metadata_id, version),
            (ev.provider().to_string(), ev.event_id(), 1),
        );
        true
    });
    for ((_, version), (p, id, n)) in fast.drain() {
        flush_fast(&mut per_event, p, id, version, n);
    }
    progress.finish();
    let h = reader.header().clone();
    let stats = reader.stats().clone();
    let error = result.err();
    let mut per_provider: BTreeMap<&str, u64> = BTreeMap::new();
    for ((p, _, _), r) in &per_event {
        *per_provider.entry(p.as_str()).or_default() += r.count;
    }
    let clock = h.clock();
    let format_version = match h.format {
        nettrace::FormatVersion::NetTrace4 if stats.v5_metadata_tags => 5,
        f => f.number(),
    };
    let first_ns = stats.min_timestamp.map(|t| clock.ns_since_start(t));
    let last_ns = stats.max_timestamp.map(|t| clock.ns_since_start(t));
    let duration_ns = last_ns.map(|l| l.max(0) - first_ns.unwrap_or(0).min(0));
    let start_utc = nettrace::format_unix_ns(h.start_unix_ns());
    let truncated = !stats.ended_cleanly;

    let mut out = std::io::stdout().lock();
    if args.json {
        let per_event_json: Vec<_> = per_event
            .iter()
            .map(|((p, id, v), r)| {
                json!({"provider": p, "event_id": id, "version": v, "name": r.name, "count": r.count})
            })
            .collect();
        let per_provider_json: Vec<_> = per_provider
            .iter()
            .map(|(p, n)| json!({"provider": p, "count": n}))
            .collect();
        let v = json!({
            "file": trace.display(),
            "format_version": format_version,
            "format": format!("{:?}", h.format),
            "start_time_utc": start_utc,
            "process_id": h.process_id,
            "pointer_size": h.pointer_size,
            "cpu_count": h.cpu_count,
            "sampling_interval_ns": h.sampling_interval_ns,
            "ticks_per_second": h.ticks_per_second,
            "duration_ns": duration_ns,
            "first_event_ns": first_ns,
            "last_event_ns": last_ns,
            "events": stats.events,
            "events_with_stack": with_stack,
            "stacks": stats.stacks,
            "metadata_rows": stats.metadata_rows,
            "dropped_events": stats.dropped_events,
            "truncated": truncated,
            "ended_cleanly": stats.ended_cleanly,
            "bytes_read": stats.bytes_read,
            "bytes_total": total_bytes,
            "error": error.as_ref().map(|e| e.to_string()),
            "per_provider": per_provider_json,
            "per_event": per_event_json,
        });
        serde_json::to_writer_pretty(&mut out, &v).map_err(std::io::Error::from)?;
        writeln!(out)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }

    let fmt_name = match format_version {
        3 => "NetPerf v3".to_string(),
        6 => format!("NetTrace v6.{}", h.v6_minor),
        v => format!("NetTrace v{v}"),
    };
    writeln!(
        out,
        "File:           {} ({})",
        trace.display(),
        clrspy_export::units::human_bytes(total_bytes)
    )?;
    writeln!(out, "Format:         {fmt_name}")?;
    writeln!(out, "Started (UTC):  {start_utc}")?;
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
    if let Some(d) = duration_ns {
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
        group(with_stack),
        group(stats.stacks)
    )?;
    if stats.dropped_events > 0 {
        writeln!(
            out,
            "Dropped:        {} events lost by the runtime (gaps in sequence numbers)",
            group(stats.dropped_events)
        )?;
    }
    match (&error, truncated) {
        (Some(e), _) => writeln!(
            out,
            "Status:         DAMAGED: read {} of {} bytes; stopped {e}",
            group(stats.bytes_read),
            group(total_bytes)
        )?,
        (None, true) => writeln!(out, "Status:         TRUNCATED: no end-of-stream marker")?,
        (None, false) => writeln!(out, "Status:         complete (ended cleanly)")?,
    }
    writeln!(out)?;
    writeln!(out, "{:>12}  Provider", "Events")?;
    let mut provs: Vec<_> = per_provider.iter().collect();
    provs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (p, n) in provs {
        writeln!(out, "{:>12}  {p}", group(*n))?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:>12}  {:<44} {:>5} {:>3}  Provider",
        "Events", "Event", "Id", "Ver"
    )?;
    let mut rows: Vec<_> = per_event.iter().collect();
    rows.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    for ((p, id, v), r) in rows {
        writeln!(
            out,
            "{:>12}  {:<44} {:>5} {:>3}  {p}",
            group(r.count),
            r.name,
            id,
            v
        )?;
    }
    if let Some(e) = &error {
        eprintln!(
            "clrspy: warning: {}: {e}; every complete event before it was counted",
            trace.display()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}
