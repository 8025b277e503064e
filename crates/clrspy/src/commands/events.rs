//! `clrspy events`: one line (or one JSON object) per event.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufWriter, Write};

use nettrace::Event;

use crate::cli::EventsArgs;
use crate::fields;
use crate::input;
use crate::names;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// Lines waiting to be written in timestamp order: the runtime writes each thread's events in
/// order but interleaves threads, so lines are held until a sequence point or a "sorted" event
/// says no earlier event can follow.
struct Sorter {
    heap: BinaryHeap<Reverse<(i64, u64, String)>>,
    next: u64,
}

/// Lines held at most; past this they are written as they are (order may then be off).
const MAX_HELD: usize = 1_000_000;

impl Sorter {
    fn push(&mut self, ts: i64, line: String) {
        self.heap.push(Reverse((ts, self.next, line)));
        self.next += 1;
    }

    /// Writes held lines with timestamps up to `until` (all of them for `None`).
    fn flush(&mut self, out: &mut impl Write, until: Option<i64>) -> std::io::Result<()> {
        while let Some(Reverse((ts, _, _))) = self.heap.peek() {
            if until.is_some_and(|u| *ts > u) && self.heap.len() <= MAX_HELD {
                break;
            }
            if let Some(Reverse((_, _, line))) = self.heap.pop() {
                out.write_all(line.as_bytes())?;
            }
        }
        Ok(())
    }
}

/// Renders one event as a text line or a JSON line (with its newline).
fn render(ev: &Event<'_>, name: &str, ps: u8, args: &EventsArgs) -> String {
    let decoded = fields::decode(ev, ps);
    if args.json {
        // Written directly (not through serde_json::Value): this is the hot path of large dumps.
        use std::fmt::Write as _;
        let mut s = String::with_capacity(256 + 20 * ev.stack.len());
        s.push_str("{\"provider\":");
        fields::push_json_str(&mut s, ev.provider());
        let _ = write!(
            s,
            ",\"event_id\":{},\"version\":{},\"name\":",
            ev.event_id(),
            ev.version()
        );
        fields::push_json_str(&mut s, name);
        let _ = write!(
            s,
            ",\"timestamp_ns\":{},\"thread_id\":{},\"process_id\":{},\"processor\":{},\"level\":{},\"opcode\":{},\"keywords\":\"0x{:x}\",\"stack\":[",
            ev.timestamp_ns(),
            ev.thread_id,
            ev.process_id.map_or("null".to_string(), |p| p.to_string()),
            ev.processor.map_or("null".to_string(), |p| p.to_string()),
            ev.level(),
            ev.opcode(),
            ev.keywords()
        );
        for (i, ip) in ev.stack.ips().enumerate() {
            let _ = write!(s, "{}\"0x{ip:x}\"", if i > 0 { "," } else { "" });
        }
        s.push_str("],\"fields\":");
        s.push_str(&fields::fields_json(&decoded.fields).to_string());
        if !ev.activity_id.is_zero() {
            let _ = write!(s, ",\"activity_id\":\"{}\"", ev.activity_id);
        }
        if !ev.related_activity_id.is_zero() {
            let _ = write!(s, ",\"related_activity_id\":\"{}\"", ev.related_activity_id);
        }
        if let Some(e) = &decoded.error {
            s.push_str(",\"decode_error\":");
            fields::push_json_str(&mut s, e);
        }
        s.push_str("}\n");
        s
    } else {
        let mut line = format!(
            "{:>14.6} ms  tid {:<7} {}/{}",
            ev.timestamp_ns() as f64 / 1e6,
            ev.thread_id,
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
    let mut sorter = Sorter {
        heap: BinaryHeap::new(),
        next: 0,
    };
    let mut sequence_points = 0;
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
            if !names::matches(p, ev.provider()) {
                continue;
            }
        }
        let name = names::event_name(&ev);
        if let Some(pat) = &args.event {
            if !(names::matches(pat, &name)
                || names::matches(pat, ev.metadata_name())
                || *pat == ev.event_id().to_string())
            {
                continue;
            }
        }
        shown += 1;
        let line = render(&ev, &name, ps, args);
        let (ts, sorted) = (ev.timestamp, ev.is_sorted);
        if args.file_order {
            out.write_all(line.as_bytes())?;
            continue;
        }
        // A sequence point read since the last event: everything before it comes first.
        let sp = reader.stats().sequence_points;
        if sp != sequence_points {
            sequence_points = sp;
            sorter.flush(&mut out, None)?;
        }
        sorter.push(ts, line);
        if sorted {
            sorter.flush(&mut out, Some(ts))?;
        }
    }
    sorter.flush(&mut out, None)?;
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
