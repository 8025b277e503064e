//! `clrspy convert`: a trace in the format of a viewer. One analysis pass, then the format
//! registry's [`clrspy_export::export`].

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clrspy_analysis::{Analysis, Metric, Options, StackFilter};
use clrspy_export::{export, ExportOptions, Format};

use crate::cli::ConvertArgs;
use crate::input::{self, OpenTrace};
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// The default output path: the trace's path with the format's extension.
pub fn default_output(trace: &Path, format: Format) -> PathBuf {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    let stem = name
        .strip_suffix(".zip")
        .unwrap_or(&name)
        .trim_end_matches(".nettrace")
        .trim_end_matches(".netperf")
        .to_string();
    trace.with_file_name(format!("{stem}.{}", format.extension()))
}

/// Converts `trace` into `format`, writing `out` (`-` = stdout). Returns the path written.
pub fn convert(
    trace_path: &Path,
    format: Format,
    metric: Metric,
    thread: Option<u64>,
    out: Option<&Path>,
) -> CliResult<Option<PathBuf>> {
    let trace = input::open(trace_path)?;
    let mut reader = trace.reader()?;
    let mut progress = Progress::new(trace.len());
    let mut a = Analysis::run(&mut reader, Options::default(), &mut |p| progress.update(p))
        .map_err(|e| CliError::new(format!("{}: {e}", trace.display())))?;
    progress.finish();
    if let Some(e) = &a.read_error {
        eprintln!("warning: the trace is damaged or cut; converting the events before: {e}");
    }
    let start_unix_ns = Some(reader.header().start_unix_ns());
    write(
        &mut a,
        &trace,
        trace_path,
        start_unix_ns,
        format,
        metric,
        thread,
        out,
    )
}

/// Writes an analysed trace in `format` (the analysis of `trace`, opened at `trace_path`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    a: &mut Analysis,
    trace: &OpenTrace,
    trace_path: &Path,
    start_unix_ns: Option<i64>,
    format: Format,
    metric: Metric,
    thread: Option<u64>,
    out: Option<&Path>,
) -> CliResult<Option<PathBuf>> {
    let options = ExportOptions {
        metric,
        filter: StackFilter {
            thread,
            ..StackFilter::default()
        },
        title: format!(
            "{} — {}",
            trace_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            metric.name()
        ),
        start_unix_ns,
    };
    let path = match out {
        Some(p) if p == Path::new("-") => None,
        Some(p) => Some(p.to_path_buf()),
        None => Some(default_output(trace_path, format)),
    };
    let mut sink: Box<dyn Write> = match &path {
        None => Box::new(std::io::stdout().lock()),
        Some(p) => {
            Box::new(BufWriter::new(std::fs::File::create(p).map_err(|e| {
                CliError::new(format!("cannot write {}: {e}", p.display()))
            })?))
        }
    };
    let again = || {
        trace
            .reader()
            .map_err(|e| std::io::Error::other(e.to_string()))
    };
    let done = export(format, a, &options, again, &mut sink)
        .and_then(|d| sink.flush().map(|_| d))
        .map_err(|e| match &path {
            Some(p) => CliError::new(format!("writing {}: {e}", p.display())),
            None => CliError::from(e),
        })?;
    if done.stacks == 0 && format.metrics().contains(&metric) {
        eprintln!(
            "warning: the trace has no {} stacks (record with --profile {})",
            metric.name(),
            if metric == Metric::Alloc {
                "alloc"
            } else {
                "cpu"
            }
        );
    }
    if let Some(e) = done.stopped_early {
        eprintln!(
            "warning: the second pass over the trace stopped early; the timeline ends there: {e}"
        );
    }
    Ok(path)
}

/// `--format` of record and profile: converts a finished recording next to it.
pub(crate) fn convert_after(trace: &Path, format: Format) -> CliResult<()> {
    if let Some(p) = convert(trace, format, Metric::Cpu, None, None)? {
        eprintln!("Converted to {}.", p.display());
    }
    Ok(())
}

/// Runs `clrspy convert`.
pub fn run(args: &ConvertArgs) -> CliResult<std::process::ExitCode> {
    if let Some(p) = convert(
        &args.input.trace,
        args.to,
        args.metric,
        args.thread,
        args.output.as_deref(),
    )? {
        let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        eprintln!("Wrote {} ({} bytes).", p.display(), size);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
