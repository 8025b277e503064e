//! `clrspy convert`: a trace in the format of a viewer. One analysis pass, then the exporter.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clrspy_analysis::{Analysis, Options, StackFilter};
use clrspy_export::{
    chromium, flamegraph, folded, html, pprof, speedscope, thread_label, weighted_stacks,
    StackMetric,
};

use crate::cli::{ConvertArgs, ConvertFormat, MetricArg};
use crate::input;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// The default output path: the trace's path with the format's extension.
pub fn default_output(trace: &Path, format: ConvertFormat) -> PathBuf {
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
    format: ConvertFormat,
    metric: MetricArg,
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
    let metric = match metric {
        MetricArg::Cpu => StackMetric::Cpu,
        MetricArg::Wait => StackMetric::Wait,
        MetricArg::Alloc => StackMetric::Alloc,
    };
    let filter = StackFilter {
        thread,
        ..StackFilter::default()
    };
    let stacks = weighted_stacks(&mut a, metric, &filter);
    if stacks.is_empty() {
        eprintln!(
            "warning: the trace has no {} stacks (record with --profile {})",
            metric.name(),
            if metric == StackMetric::Alloc {
                "alloc"
            } else {
                "cpu"
            }
        );
    }
    let title = format!(
        "{} — {}",
        trace_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        metric.name()
    );
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
    let label = |t: u64| thread_label(&a, t);
    let written = match format {
        ConvertFormat::Speedscope => speedscope::write(&mut sink, &stacks, metric, &title, &label),
        ConvertFormat::Folded => folded::write(&mut sink, &stacks, metric, &label, true),
        ConvertFormat::Flamegraph => flamegraph::write(&mut sink, &stacks, metric, &title, &label),
        ConvertFormat::Pprof => {
            // The session start (time_nanos) is in the trace's header.
            let options = pprof::Options {
                filter: filter.clone(),
                start_unix_ns: Some(trace.reader()?.header().start_unix_ns()),
            };
            pprof::write_with(&mut a, metric, &options, &mut sink)
        }
        ConvertFormat::Html => html::write(&mut a, &title, &mut sink),
        ConvertFormat::Chromium => {
            // Time order needs a second pass over the trace.
            let mut again = trace.reader()?;
            chromium::write(&mut a, &mut again, &mut sink)
        }
    };
    written
        .and_then(|_| sink.flush())
        .map_err(|e| match &path {
            Some(p) => CliError::new(format!("writing {}: {e}", p.display())),
            None => CliError::from(e),
        })?;
    Ok(path)
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
