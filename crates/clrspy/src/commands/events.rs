//! `clrspy events`: one line (or one JSON object) per event.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
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
/// says no earlier event can follow. The lines live end to end in one buffer (no allocation per
/// line); the heap holds (timestamp, arrival, start, end).
struct Sorter {
    heap: BinaryHeap<Reverse<(i64, u64, usize, usize)>>,
    lines: Vec<u8>,
    /// The end of the last held line: bytes after it are a line still being written.
    held_end: usize,
    held_bytes: usize,
    next: u64,
}

/// Lines held at most; past this they are written as they are (order may then be off).
const MAX_HELD: usize = 1_000_000;

/// Buffer size past which written lines are squeezed out of it when they are most of it.
const COMPACT_AT: usize = 64 << 20;

impl Sorter {
    fn new() -> Sorter {
        Sorter {
            heap: BinaryHeap::new(),
            lines: Vec::new(),
            held_end: 0,
            held_bytes: 0,
            next: 0,
        }
    }

    /// Holds the line appended to `lines` since the last one.
    fn push(&mut self, ts: i64) {
        let (start, end) = (self.held_end, self.lines.len());
        self.held_end = end;
        self.held_bytes += end - start;
        self.heap.push(Reverse((ts, self.next, start, end)));
        self.next += 1;
    }

    /// Writes held lines with timestamps up to `until` (all of them for `None`).
    fn flush(&mut self, out: &mut impl Write, until: Option<i64>) -> std::io::Result<()> {
        while let Some(Reverse((ts, _, _, _))) = self.heap.peek() {
            if until.is_some_and(|u| *ts > u) && self.heap.len() <= MAX_HELD {
                break;
            }
            if let Some(Reverse((_, _, s, e))) = self.heap.pop() {
                out.write_all(&self.lines[s..e])?;
                self.held_bytes -= e - s;
            }
        }
        if self.heap.is_empty() {
            self.lines.drain(..self.held_end);
            self.held_end = 0;
        } else if self.lines.len() > COMPACT_AT && self.lines.len() > 4 * self.held_bytes {
            self.compact();
        }
        Ok(())
    }

    /// Moves the held lines to a fresh buffer, dropping the written ones.
    fn compact(&mut self) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        let mut fresh = Vec::with_capacity(self.held_bytes * 2);
        for Reverse((_, _, s, e)) in entries.iter_mut() {
            let at = fresh.len();
            fresh.extend_from_slice(&self.lines[*s..*e]);
            *e = at + (*e - *s);
            *s = at;
        }
        let tail = self.held_end;
        self.held_end = fresh.len();
        fresh.extend_from_slice(&self.lines[tail..]);
        self.lines = fresh;
        self.heap = BinaryHeap::from(entries);
    }
}

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
    let mut sorter = Sorter::new();
    let mut scratch = Vec::new();
    let mut stacks = StackCache::default();
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
            &mut sorter.lines
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
        // A sequence point read since the last event: everything before it comes first.
        let sp = reader.stats().sequence_points;
        if sp != sequence_points {
            sequence_points = sp;
            sorter.flush(&mut out, None)?;
        }
        sorter.push(ts);
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

#[cfg(test)]
mod tests {
    use super::Sorter;

    fn hold(s: &mut Sorter, ts: i64, text: &str) {
        s.lines.extend_from_slice(text.as_bytes());
        s.push(ts);
    }

    #[test]
    fn held_lines_come_out_in_time_order_across_flushes_and_compaction() {
        let mut s = Sorter::new();
        let mut out = Vec::new();
        hold(&mut s, 30, "c\n");
        hold(&mut s, 10, "a\n");
        hold(&mut s, 20, "b1\n");
        hold(&mut s, 20, "b2\n");
        s.flush(&mut out, Some(20)).unwrap();
        assert_eq!(out, b"a\nb1\nb2\n");
        // A line being written while the held ones move (sequence point, compaction).
        s.lines.extend_from_slice(b"e\n");
        s.compact();
        s.push(50);
        hold(&mut s, 40, "d\n");
        s.flush(&mut out, None).unwrap();
        assert_eq!(out, b"a\nb1\nb2\nc\nd\ne\n");
        assert!(s.lines.is_empty() && s.held_end == 0 && s.held_bytes == 0);
        // The line after a full flush keeps its bytes.
        s.lines.extend_from_slice(b"f\n");
        s.flush(&mut out, None).unwrap();
        s.push(60);
        s.flush(&mut out, None).unwrap();
        assert!(out.ends_with(b"e\nf\n"));
    }
}
