//! `clrspy events`: one line (or one JSON object) per event.

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use nettrace::{Event, TimeOrder};

use crate::cli::EventsArgs;
use crate::fields;
use crate::input;
use crate::names;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// Stacks already written as JSON arrays, by stack id (checked against the stack's bytes, so
/// a stack id reused after the runtime's table flush is written afresh).
#[derive(Default)]
struct StackCache {
    map: HashMap<u32, (Vec<u8>, Vec<u8>)>,
}

/// Stacks cached at most (the cache starts over past this).
const MAX_CACHED_STACKS: usize = 65_536;

impl StackCache {
    /// Appends the event's stack as a JSON array of `"0x..."` strings.
    fn write(&mut self, out: &mut Vec<u8>, ev: &Event<'_>) {
        let raw = ev.stack.bytes();
        if ev.stack_id == 0 {
            write_stack(out, ev);
            return;
        }
        if let Some((bytes, json)) = self.map.get(&ev.stack_id) {
            if bytes.as_slice() == raw {
                out.extend_from_slice(json);
                return;
            }
        }
        let at = out.len();
        write_stack(out, ev);
        if self.map.len() >= MAX_CACHED_STACKS {
            self.map.clear();
        }
        self.map
            .insert(ev.stack_id, (raw.to_vec(), out[at..].to_vec()));
    }
}

fn write_stack(out: &mut Vec<u8>, ev: &Event<'_>) {
    out.push(b'[');
    for (i, ip) in ev.stack.ips().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"\"0x");
        fields::push_hex(out, ip);
        out.push(b'"');
    }
    out.push(b']');
}

/// Appends `v` in decimal.
fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

fn push_opt(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => push_u64(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends one event as a JSON line (with its newline). Written directly, byte by byte what
/// README.md documents: this is the hot path of large dumps.
fn render_json(out: &mut Vec<u8>, ev: &Event<'_>, name: &str, ps: u8, stacks: &mut StackCache) {
    let decoded = fields::decode(ev, ps);
    out.extend_from_slice(b"{\"provider\":");
    fields::push_json_bytes(out, ev.provider());
    out.extend_from_slice(b",\"event_id\":");
    push_u64(out, ev.event_id().into());
    out.extend_from_slice(b",\"version\":");
    push_u64(out, ev.version().into());
    out.extend_from_slice(b",\"name\":");
    fields::push_json_bytes(out, name);
    out.extend_from_slice(b",\"timestamp_ns\":");
    push_i64(out, ev.timestamp_ns());
    out.extend_from_slice(b",\"thread_id\":");
    push_u64(out, ev.thread_id);
    out.extend_from_slice(b",\"process_id\":");
    push_opt(out, ev.process_id);
    out.extend_from_slice(b",\"processor\":");
    push_opt(out, ev.processor.map(u64::from));
    out.extend_from_slice(b",\"level\":");
    push_u64(out, ev.level().into());
    out.extend_from_slice(b",\"opcode\":");
    push_u64(out, ev.opcode().into());
    out.extend_from_slice(b",\"keywords\":\"0x");
    fields::push_hex(out, ev.keywords());
    out.extend_from_slice(b"\",\"stack\":");
    stacks.write(out, ev);
    out.extend_from_slice(b",\"fields\":");
    fields::write_fields_json(out, &decoded.fields);
    if !ev.activity_id.is_zero() {
        let _ = write!(out, ",\"activity_id\":\"{}\"", ev.activity_id);
    }
    if !ev.related_activity_id.is_zero() {
        let _ = write!(
            out,
            ",\"related_activity_id\":\"{}\"",
            ev.related_activity_id
        );
    }
    if let Some(e) = &decoded.error {
        out.extend_from_slice(b",\"decode_error\":");
        fields::push_json_bytes(out, e);
    }
    out.extend_from_slice(b"}\n");
}

/// Renders one event as a text line (with its newline).
fn render_text(ev: &Event<'_>, name: &str, ps: u8, args: &EventsArgs) -> String {
    let decoded = fields::decode(ev, ps);
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
    let mut stacks = StackCache::default();
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
        if args.json {
            render_json(buf, &ev, &name, ps, &mut stacks);
        } else {
            buf.extend_from_slice(render_text(&ev, &name, ps, args).as_bytes());
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
