//! `clrspy stack`: the managed stack of every thread of a running process now, as text or
//! JSON. The snapshot is taken by clrspy-live's [`take_stacks`] (one short sampling session,
//! named by its rundown) and written by clrspy-export's `thread_stacks`; `--native` replaces
//! each thread's frames with its whole stack from the runtime's crash report
//! ([`add_native_frames`]).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clrspy_export::thread_stacks;
use clrspy_live::stack::{add_native_frames, take_stacks, StackOptions};

use clrspy_cli::{Failure, ProcessArgs};

/// `clrspy stack`'s options.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The process.
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Write JSON: `{"pid", "complete", "threads": [{"thread_id", "name", "state", "managed",
    /// "frames", ...}], "notes", "session_ms", "sampled_after_ms"}`.
    #[arg(long)]
    pub json: bool,
    /// Whole stacks, native frames too, from the runtime's crash report (createdump): the
    /// process is paused while it is written (about a second).
    #[arg(long)]
    pub native: bool,
    /// Give up after this long (what was taken is printed, and clrspy exits with 1).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_timeout)]
    pub timeout: Duration,
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// Runs `clrspy stack`: exit code 0, or 1 when the snapshot is partial (timed out; stderr
/// says what is missing).
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    let (endpoint, _) = args.process.resolve("stack")?;
    let opts = StackOptions {
        timeout: args.timeout,
        ..StackOptions::default()
    };
    let (mut snap, report) = take_stacks(&endpoint, &opts)
        .map_err(|e| Failure::new(format!("taking the stacks of pid {}: {e}", endpoint.pid)))?;
    if args.native {
        eprintln!(
            "clrspy: --native: the runtime's createdump pauses pid {} while it writes the crash report ...",
            endpoint.pid
        );
        // The timeout bounds the whole command: the report gets what the session left.
        let left = args
            .timeout
            .saturating_sub(report.elapsed)
            .max(std::time::Duration::from_secs(1));
        match add_native_frames(&endpoint, &mut snap, left) {
            Ok(r) => snap.notes.push(format!(
                "native frames from the runtime's crash report ({} threads; {:.2} s)",
                r.threads,
                r.elapsed.as_secs_f64()
            )),
            Err(e) => {
                snap.complete = false;
                snap.notes.push(format!("no native frames: {e}"));
            }
        }
    }
    for n in &snap.notes {
        eprintln!("clrspy: {n}");
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let mut v = thread_stacks::to_json(&snap);
        // How long the session took (the native frames' time is in the notes).
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "session_ms".into(),
                serde_json::Value::from(report.elapsed.as_millis() as u64),
            );
            o.insert(
                "sampled_after_ms".into(),
                report
                    .sampled_after
                    .map_or(serde_json::Value::Null, |d| (d.as_millis() as u64).into()),
            );
        }
        serde_json::to_writer_pretty(&mut out, &v)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        thread_stacks::write_text(&snap, &mut out)
    };
    match written.and_then(|()| out.flush()) {
        // `clrspy stack -p 42 | head`: the reader had enough.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r?,
    }
    if !snap.complete {
        eprintln!(
            "clrspy: the stacks of pid {} are partial: {} of {} threads with managed frames",
            endpoint.pid,
            snap.managed_threads(),
            snap.threads.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
