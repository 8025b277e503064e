//! `record`'s dump flags (`--dump-on-exception`, `--dump-on-crash` and their options) as
//! clrspy-collect's `DumpOptions`, and what the dumps did said on the terminal (the delay from the throw, the size before and after compression, the crash).

use std::path::Path;

use clrspy_collect::{DumpNotice, DumpOptions, DumpOptionsError, DumpOutcome};

use crate::cli::RecordArgs;
use crate::output::CliError;

/// The dump options of `record`'s flags; `dir` overrides `--dump-dir` (`--children`: the
/// traces' directory).
pub(crate) fn dump_options(args: &RecordArgs, dir: Option<&Path>) -> DumpOptions {
    DumpOptions {
        on_exception: args.dump_on_exception.clone(),
        max: args.max_dumps,
        kind: args.dump_type.value,
        compress: args.dump_compress,
        dir: args.dump_dir.as_deref().or(dir).map(Path::to_path_buf),
        hold_hook: args.dump_hold_hook.clone(),
        crash_report: args.dump_crash_report,
    }
}

/// The user's error for dump options that cannot be used.
pub(crate) fn options_error(e: DumpOptionsError) -> CliError {
    let err = CliError::new(e.to_string()).code(2);
    match e {
        DumpOptionsError::NoHook(_) => {
            err.hint("build it with hooks/build.sh (needs the .NET SDK)")
        }
        _ => err,
    }
}

/// Megabytes, one decimal.
pub(crate) fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
}

/// What the dump worker says, printed as it says it.
pub(crate) fn say_dumps() -> clrspy_collect::OnDump {
    Box::new(say)
}

/// Prints what the worker says, as it says it.
fn say(n: &DumpNotice<'_>) {
    match n {
        DumpNotice::Started {
            n,
            request,
            path,
            delay,
        } => {
            let delay = delay
                .map(|d| format!(", {:.1} ms after the event", d.as_secs_f64() * 1e3))
                .unwrap_or_default();
            eprintln!(
                "Dump {n} ({}{delay}): writing {} ...",
                request.reason,
                path.display()
            );
        }
        DumpNotice::Done(o) => match &o.result {
            Ok(r) => {
                let how = if r.raw_bytes == r.file_bytes
                    && r.path.extension().is_some_and(|e| e == "dmp")
                {
                    mb(r.raw_bytes)
                } else {
                    format!(
                        "{} raw, {} compressed ({:.0}%){}",
                        mb(r.raw_bytes),
                        mb(r.file_bytes),
                        100.0 * r.file_bytes as f64 / r.raw_bytes.max(1) as f64,
                        if r.streamed {
                            ", compressed as it was written"
                        } else {
                            ", written raw then compressed"
                        }
                    )
                };
                eprintln!(
                    "Dump {}: wrote {} ({how}) in {:.2} s.",
                    o.n,
                    r.path.display(),
                    r.elapsed.as_secs_f64()
                );
                if let Some(c) = &r.crash_report {
                    eprintln!("Dump {}: threads and stacks in {}", o.n, c.display());
                }
            }
            Err(e) => eprintln!("Dump {}: failed: {e}", o.n),
        },
    }
}

/// The closing line about the exception dumps of a recording (nothing when none were asked).
pub(crate) fn report(dumped: &[DumpOutcome]) {
    let ok: Vec<_> = dumped
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    let failed = dumped.len() - ok.len();
    if dumped.is_empty() {
        return;
    }
    let raw: u64 = ok.iter().map(|r| r.raw_bytes).sum();
    let file: u64 = ok.iter().map(|r| r.file_bytes).sum();
    eprintln!(
        "Exception dumps: {} written ({} raw, {} on disk){}.",
        ok.len(),
        mb(raw),
        mb(file),
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    );
}

/// After a launched program ended: prints each crash the capture found (see
/// [`clrspy_collect::CrashCapture::findings`]), its report and its compressed dump.
pub(crate) fn report_crashes(capture: &clrspy_collect::CrashCapture, trace: Option<&Path>) {
    let found = capture.findings(trace);
    for c in &found.crashes {
        let text = match &c.text {
            Ok(t) => t,
            Err(e) => {
                eprintln!("warning: the crash report is unreadable: {e}");
                continue;
            }
        };
        eprint!("{text}");
        eprintln!("Crash report: {}", c.report.display());
        match &c.dump {
            Some(Ok(d)) => eprintln!(
                "Crash dump: {} ({} raw, {} on disk, compressed in {:.2} s after the crash)",
                d.path.display(),
                mb(d.raw_bytes),
                mb(d.file_bytes),
                d.elapsed.as_secs_f64()
            ),
            Some(Err((raw, e))) => eprintln!("warning: the crash dump {}: {e}", raw.display()),
            None => {}
        }
    }
    if let Some((out, Err(e))) = &found.text_file {
        eprintln!("warning: cannot write {}: {e}", out.display());
    }
}
