//! `clrspy events`: one line (or one JSON object) per event.

use std::io::{BufWriter, Write};

use clrspy_export::event_filter::EventFilter;
use clrspy_export::event_json::EventJsonWriter;
use clrspy_export::event_text::write_event_text;
use nettrace::TimeOrder;

use crate::cli::EventsArgs;
use crate::input;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

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
    let filter = EventFilter {
        provider: args.provider.clone(),
        event: args.event.clone(),
    };
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
        let Some(name) = filter.select(&ev) else {
            continue;
        };
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
            write_event_text(buf, &ev, &name, &decoded, !args.no_stacks);
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
