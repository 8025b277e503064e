//! `clrspy events`: one line (or one JSON object) per event.

use std::io::{BufWriter, Write};

use clr_events::EventFields;
use clrspy_export::event_json::EventJsonWriter;
use nettrace::{Event, TimeOrder};

use crate::cli::EventsArgs;
use crate::input;
use crate::names;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// Renders one event as a text line (with its newline).
fn render_text(ev: &Event<'_>, name: &str, decoded: &EventFields, args: &EventsArgs) -> String {
    // clrspy's own events (thread readings, run-queue, process info) belong to no thread
    // (older traces stamped them 0).
    let own = ev.provider() == clr_events::clrspy::PROVIDER;
    let tid = if ev.thread_id == clrspy_export::event_json::NO_THREAD || (own && ev.thread_id == 0)
    {
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
        line.push(' ');
        line.push_str(&f.name);
        line.push('=');
        line.push_str(&f.value.to_string());
    }
    if let Some(e) = &decoded.error {
        line.push_str(&format!(" [decode error: {e}]"));
    }
    if !args.no_stacks && !ev.stack.is_empty() {
        line.push_str(&format!(" stack[{}]=", ev.stack.len()));
        for (i, ip) in ev.stack.ips().enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push_str(&format!("{ip:x}"));
        }
    }
    line.push('\n');
    line
}

/// Runs `clrspy events`.
pub fn run(args: &EventsArgs) -> CliResult<std::process::ExitCode> {
    let trace = input::open(&args.input.trace)?;
    let mut reader = trace.reader()?;
    let ps = reader.header().pointer_size;
    let mut progress = Progress::new(trace.len());
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout);
    let mut shown = 0u64;
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut order = TimeOrder::new();
    let mut scratch = Vec::new();
    let mut json = EventJsonWriter::new();
    let mut error = None;
    while shown < limit {
        let ev = match reader.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        progress.update(ev.offset);
        if let Some(p) = &args.provider {
            if !p.is_match(ev.provider()) {
                continue;
            }
        }
        let name = names::event_name(&ev);
        if let Some(pat) = &args.event {
            if !(pat.is_match(&name)
                || pat.is_match(ev.metadata_name())
                || pat.as_str() == ev.event_id().to_string())
            {
                continue;
            }
        }
        shown += 1;
        let (ts, sorted) = (ev.timestamp, ev.is_sorted);
        let buf = if args.file_order {
            scratch.clear();
            &mut scratch
        } else {
            order.pending()
        };
        let decoded = clr_events::decode_any(&ev, ps);
        if args.json {
            json.write(buf, &ev, &name, &decoded);
        } else {
            buf.extend_from_slice(render_text(&ev, &name, &decoded, args).as_bytes());
        }
        if args.file_order {
            out.write_all(&scratch)?;
            continue;
        }
        order.hold(&mut out, ts, sorted, reader.stats().sequence_points)?;
    }
    order.finish(&mut out)?;
    progress.finish();
    out.flush()?;
    if let Some(e) = error {
        return Err(CliError::new(format!(
            "{}: {e}; every complete event before it was listed",
            trace.display()
        ))
        .code(3));
    }
    Ok(std::process::ExitCode::SUCCESS)
}
