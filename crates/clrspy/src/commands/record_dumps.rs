//! `record`'s dump flags (`--dump-on-exception`, `--dump-on-crash` and their options) turned
//! into clrspy-collect's `ExceptionDumps` and `CrashCapture`, and what those did said on the
//! terminal (the delay from the throw, the size before and after compression, the crash).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clrspy_collect::{Compression, DumpNotice, DumpOutcome, DumpPlan, DumpSpec, ExceptionDumps};

use crate::output::{CliError, CliResult};

/// The dump options of `record`, as given.
#[derive(Clone, Debug, Default)]
pub(crate) struct DumpArgs<'a> {
    /// Exception type patterns (comma-separated lists allowed).
    pub on_exception: &'a [String],
    /// At most this many dumps.
    pub max: u32,
    /// mini, heap, triage, full.
    pub kind: &'a str,
    /// none, gzip, zstd.
    pub compress: &'a str,
    /// Where (default: the trace's directory).
    pub dir: Option<&'a Path>,
    /// The hold hook (ClrspyHold.dll): hold the throwing thread until the dump is written.
    pub hold_hook: Option<&'a Path>,
    /// createdump's crash report beside each dump.
    pub crash_report: bool,
}

/// What `record` adds to a plain recording: the ring and stop triggers, dumps and crashes.
#[derive(Default)]
pub(crate) struct Extras {
    /// The ring and the stop triggers.
    pub capture: super::capture::Capture,
    /// Dumps on exceptions.
    pub exceptions: Option<ExceptionDumps>,
    /// A launched program's crash report (and dump).
    pub crash: Option<clrspy_collect::CrashCapture>,
    /// More consumers of the live events (`profile`'s live analysis).
    pub consumers: Vec<Box<dyn clrspy_collect::EventConsumer>>,
}

/// The directory dumps and reports go to: `dir`, or the trace's.
fn out_dir(dir: Option<&Path>, trace: Option<&Path>) -> CliResult<PathBuf> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => trace
            .and_then(Path::parent)
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if !dir.is_dir() {
        return Err(CliError::new(format!(
            "the dump directory {} does not exist",
            dir.display()
        ))
        .code(2));
    }
    Ok(dir)
}

/// The crash capture of a launched program recorded into `trace`; None when the trace's
/// directory is missing (the recording then fails with its own error).
pub(crate) fn crash_capture(
    args: &DumpArgs<'_>,
    dump_on_crash: bool,
    trace: &Path,
) -> CliResult<Option<clrspy_collect::CrashCapture>> {
    let (kind, compress) = kind_and_compression(args)?;
    let dir = match out_dir(args.dir, Some(trace)) {
        Ok(d) => d,
        Err(e) if args.dir.is_some() => return Err(e),
        Err(_) => return Ok(None),
    };
    Ok(Some(clrspy_collect::CrashCapture {
        dir,
        stem: trace
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".into()),
        dump: dump_on_crash.then_some(kind),
        compress,
    }))
}

fn kind_and_compression(
    args: &DumpArgs<'_>,
) -> CliResult<(diagnostics_client::DumpType, Compression)> {
    let kind = clrspy_collect::parse_dump_type(args.kind).ok_or_else(|| {
        CliError::new(format!("unknown dump type '{}'", args.kind))
            .hint("use mini, heap, triage or full")
            .code(2)
    })?;
    let compress = Compression::parse(args.compress).ok_or_else(|| {
        CliError::new(format!("unknown dump compression '{}'", args.compress))
            .hint("use gzip, zstd or none")
            .code(2)
    })?;
    Ok((kind, compress))
}

/// Megabytes, one decimal.
pub(crate) fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
}

/// The dumps on exceptions `args` ask for, None when no exception type was given; `trace` is
/// the trace file the dumps are named after (None: the default name, in the current
/// directory).
pub(crate) fn exception_dumps(
    args: &DumpArgs<'_>,
    trace: Option<&Path>,
) -> CliResult<Option<ExceptionDumps>> {
    let patterns = clrspy_collect::exception_patterns(args.on_exception);
    if patterns.is_empty() {
        return Ok(None);
    }
    let (kind, compress) = kind_and_compression(args)?;
    let dir = out_dir(args.dir, trace)?;
    let stem = trace
        .and_then(Path::file_stem)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dump".into());
    let plan = DumpPlan {
        dir,
        stem,
        spec: DumpSpec {
            kind,
            compress,
            crash_report: args.crash_report,
            timeout: Duration::from_secs(300),
        },
        max: args.max,
    };
    let Some(dumps) = ExceptionDumps::new(patterns, plan) else {
        return Ok(None);
    };
    match args.hold_hook {
        Some(hook) if !hook.is_file() => {
            Err(CliError::new(format!("no hook at {}", hook.display()))
                .hint("build it with hooks/build.sh (needs the .NET SDK)")
                .code(2))
        }
        Some(hook) => Ok(Some(dumps.hold_with(hook))),
        None => Ok(Some(dumps)),
    }
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
