//! `clrspy repair`: a cut or damaged trace made whole (nettrace's `repair`), and what was kept
//! and lost.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::cli::RepairArgs;
use crate::input;
use crate::output::{CliError, CliResult};

/// The default output, beside the input: `<stem>.repaired.nettrace`; for a NetPerf input
/// (converted to NetTrace) the user's name with the `.nettrace` extension, `<stem>.nettrace`,
/// unless such a file exists already.
fn default_output(input: &Path, format: Option<nettrace::FormatVersion>) -> PathBuf {
    let stem = crate::input::trace_stem(input);
    if format == Some(nettrace::FormatVersion::NetPerf3) {
        let p = input.with_file_name(format!("{stem}.nettrace"));
        if !p.exists() {
            return p;
        }
    }
    input.with_file_name(format!("{stem}.repaired.nettrace"))
}

/// Events a reader finds in `path`, and whether it read to a clean end.
fn events_in(trace: &input::OpenTrace) -> (u64, bool) {
    let Ok(mut r) = trace.reader() else {
        return (0, false);
    };
    let ok = r.for_each_event(|_| true).is_ok();
    (r.stats().events, ok && r.stats().ended_cleanly)
}

/// Runs `clrspy repair`.
pub fn run(args: &RepairArgs) -> CliResult<std::process::ExitCode> {
    let trace = input::open(&args.input.trace)?;
    let raw = std::io::BufReader::with_capacity(1 << 20, trace.raw()?);
    // The format decides the default extension: peek at it through a first scan.
    let format = trace.reader().ok().map(|r| r.header().format);
    let out_path = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.input.trace, format));
    let same = std::fs::canonicalize(&out_path)
        .ok()
        .zip(std::fs::canonicalize(&args.input.trace).ok())
        .is_some_and(|(a, b)| a == b);
    if same {
        return Err(CliError::new(format!(
            "{} is the input: repair writes a new file (give -o another path)",
            out_path.display()
        ))
        .code(2));
    }
    let mut out = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&out_path)
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", out_path.display())))?;
    let r = nettrace::repair(raw, &mut out).map_err(|e| {
        let _ = std::fs::remove_file(&out_path);
        CliError::new(format!("{}: {e}", trace.display()))
    })?;
    out.sync_all()
        .map_err(|e| CliError::new(format!("writing {}: {e}", out_path.display())))?;
    drop(out);
    let (before, _) = events_in(&trace);
    let (after, whole) = events_in(&input::open(&out_path)?);
    let dropped = r.bytes_in - r.bytes_kept;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let v = json!({
            "input": trace.display(),
            "output": out_path.display().to_string(),
            "was_whole": r.was_whole,
            "format": r.format.map(|f| format!("{f:?}")),
            "output_format": r.output_format.map(|f| format!("{f:?}")),
            "converted": r.converted,
            "events_converted": r.events_converted,
            "salvaged_events": r.salvaged_events,
            "bytes_in": r.bytes_in,
            "bytes_kept": r.bytes_kept,
            "bytes_dropped": dropped,
            "bytes_out": r.bytes_out,
            "blocks_kept": r.blocks,
            "cut_at": r.cut_at,
            "damage": r.damage.as_ref().map(|e| e.to_string()),
            "events_readable_before": before,
            "events_kept": after,
            "output_whole": whole,
        });
        clrspy_export::report::write_json(&mut stdout, &v)?;
    } else if r.converted {
        write_converted(&mut stdout, &trace.display(), &out_path, &r, before, after)?;
    } else if r.was_whole {
        writeln!(
            stdout,
            "{} was already a whole trace: copied unchanged to {} ({} events, {} bytes).",
            trace.display(),
            out_path.display(),
            after,
            r.bytes_out
        )?;
    } else {
        writeln!(
            stdout,
            "Wrote {}: a whole trace of {} events in {} blocks ({} of {} bytes kept, then a valid end of stream).",
            out_path.display(),
            after,
            r.blocks,
            r.bytes_kept,
            r.bytes_in
        )?;
        match (&r.damage, r.cut_at) {
            (Some(e), Some(at)) => writeln!(
                stdout,
                "Dropped {dropped} bytes from offset {at}: the trace is damaged {e}"
            )?,
            (None, Some(at)) => writeln!(
                stdout,
                "Dropped {dropped} bytes from offset {at}: a block cut short (the trace stopped mid-block)."
            )?,
            _ => writeln!(stdout, "Nothing dropped: only the end of stream was missing.")?,
        }
        if r.salvaged_events > 0 {
            writeln!(
                stdout,
                "Kept the {} whole events of the cut block in a block of their own.",
                r.salvaged_events
            )?;
        }
        if before > after {
            writeln!(
                stdout,
                "Readers see {after} events now; {before} could be read from the damaged file."
            )?;
        }
    }
    if !whole {
        return Err(CliError::new(format!(
            "{} still does not read to its end: please report this",
            out_path.display()
        )));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The text summary of a NetPerf input converted to NetTrace.
fn write_converted(
    out: &mut impl Write,
    input: &str,
    out_path: &Path,
    r: &nettrace::Repair,
    before: u64,
    after: u64,
) -> CliResult<()> {
    if r.was_whole {
        writeln!(
            out,
            "{input} is a whole NetPerf trace: converted to NetTrace (V5) in {} ({after} events, {} bytes).",
            out_path.display(),
            r.bytes_out
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "Wrote {}: NetPerf converted to NetTrace (V5), {after} events: every whole one in the first {} of {} bytes.",
        out_path.display(),
        r.bytes_kept,
        r.bytes_in
    )?;
    let dropped = r.bytes_in - r.bytes_kept;
    match (&r.damage, r.cut_at) {
        (Some(e), Some(at)) => writeln!(
            out,
            "Dropped {dropped} bytes from offset {at}: the trace is damaged {e}"
        )?,
        (None, Some(at)) => writeln!(
            out,
            "Dropped {dropped} bytes from offset {at}: the trace stopped mid-event."
        )?,
        _ => writeln!(out, "Nothing dropped: only the end of stream was missing.")?,
    }
    if before > after {
        writeln!(
            out,
            "Readers see {after} events now; {before} could be read from the damaged file."
        )?;
    }
    Ok(())
}
