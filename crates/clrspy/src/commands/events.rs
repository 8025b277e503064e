//! `clrspy events`: one line (or one JSON object) per event.

use std::io::{BufWriter, Write};

use serde_json::json;

use crate::cli::EventsArgs;
use crate::fields;
use crate::input;
use crate::names;
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
    let mut io_err: Option<std::io::Error> = None;
    let limit = args.limit.unwrap_or(u64::MAX);
    let result = reader.for_each_event(|ev| {
        progress.update(ev.offset);
        if shown >= limit {
            return false;
        }
        if let Some(p) = &args.provider {
            if !names::matches(p, ev.provider()) {
                return true;
            }
        }
        let name = names::event_name(ev);
        if let Some(pat) = &args.event {
            let id = ev.event_id().to_string();
            if !(names::matches(pat, &name)
                || names::matches(pat, ev.metadata_name())
                || *pat == id)
            {
                return true;
            }
        }
        shown += 1;
        let decoded = fields::decode(ev, ps);
        let r = if args.json {
            let stack: Vec<String> = ev.stack.ips().map(|ip| format!("0x{ip:x}")).collect();
            let mut v = json!({
                "provider": ev.provider(),
                "event_id": ev.event_id(),
                "version": ev.version(),
                "name": name,
                "timestamp_ns": ev.timestamp_ns(),
                "thread_id": ev.thread_id,
                "process_id": ev.process_id,
                "processor": ev.processor,
                "level": ev.level(),
                "opcode": ev.opcode(),
                "keywords": format!("0x{:x}", ev.keywords()),
                "stack": stack,
                "fields": fields::fields_json(&decoded.fields),
            });
            if !ev.activity_id.is_zero() {
                v["activity_id"] = json!(ev.activity_id.to_string());
            }
            if !ev.related_activity_id.is_zero() {
                v["related_activity_id"] = json!(ev.related_activity_id.to_string());
            }
            if let Some(e) = &decoded.error {
                v["decode_error"] = json!(e);
            }
            serde_json::to_writer(&mut out, &v)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
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
            writeln!(out, "{line}")
        };
        if let Err(e) = r {
            io_err = Some(e);
            return false;
        }
        true
    });
    progress.finish();
    if let Some(e) = io_err {
        return Err(e.into());
    }
    out.flush()?;
    if let Err(e) = result {
        return Err(CliError::new(format!(
            "{}: {e}; every complete event before it was listed",
            trace.display()
        ))
        .code(3));
    }
    Ok(std::process::ExitCode::SUCCESS)
}
