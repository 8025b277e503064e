//! `clrspy convert`: a trace in the format of a viewer. One analysis pass, then the format
//! registry's [`clrspy_export::export`].

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clrspy_analysis::r2r::ImageSources;
use clrspy_analysis::{Analysis, Metric, NativeView, Options, StackFilter};
use clrspy_export::{conversion, export, ExportOptions, Format};

use crate::cli::ConvertArgs;
use crate::input::{self, OpenTrace};
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// What to write, and where.
pub(crate) struct Conversion<'a> {
    /// The format.
    pub format: Format,
    /// What the stacks weigh.
    pub metric: Metric,
    /// Only this thread.
    pub thread: Option<u64>,
    /// Fold framework frames ("just my code").
    pub just_my_code: Option<clrspy_analysis::JustMyCode>,
    /// How runs of native frames are shown.
    pub native: NativeView,
    /// The output (`-` = stdout; None = beside the trace).
    pub out: Option<&'a Path>,
    /// True when a view with no stacks is an error (`convert`); false prints a warning instead
    /// (`record`/`profile --format`, whose recording itself worked).
    pub empty_is_error: bool,
    /// Where precompiled code's names come from (`--symbols`, `--no-local-images`).
    pub images: ImageSources,
}

impl Conversion<'_> {
    /// The `--format` of `record` and `profile`: CPU stacks beside the trace, an empty view
    /// a warning (the recording itself worked).
    pub(crate) fn after_recording(format: Format) -> Conversion<'static> {
        Conversion {
            format,
            metric: Metric::Cpu,
            thread: None,
            just_my_code: None,
            native: NativeView::default(),
            out: None,
            empty_is_error: false,
            images: ImageSources::default(),
        }
    }
}

/// Converts the trace at `trace_path`. Returns the path written.
pub(crate) fn convert(trace_path: &Path, c: &Conversion<'_>) -> CliResult<Option<PathBuf>> {
    let trace = input::open(trace_path)?;
    let mut reader = trace.reader()?;
    let mut progress = Progress::new(trace.len());
    let options = Options {
        images: c.images.clone(),
        ..Options::default()
    };
    let a = Analysis::run(&mut reader, options, &mut |p| progress.update(p))
        .map_err(|e| CliError::new(format!("{}: {e}", trace.display())))?;
    progress.finish();
    if let Some(e) = &a.read_error {
        eprintln!("warning: the trace is damaged or cut; converting the events before: {e}");
    }
    write(&a, &trace, trace_path, c)
}

/// Writes an analysed trace (the analysis of `trace`, opened from `trace_path`).
pub(crate) fn write(
    a: &Analysis,
    trace: &OpenTrace,
    trace_path: &Path,
    c: &Conversion<'_>,
) -> CliResult<Option<PathBuf>> {
    let (format, metric) = (c.format, c.metric);
    let options = ExportOptions {
        metric,
        filter: StackFilter {
            thread: c.thread,
            just_my_code: c.just_my_code.clone(),
            native: c.native,
            ..StackFilter::default()
        },
        title: conversion::title(trace_path, metric),
        start_unix_ns: Some(trace.reader()?.header().start_unix_ns()),
    };
    let path = match c.out {
        Some(p) if p == Path::new("-") => None,
        Some(p) => Some(p.to_path_buf()),
        None => Some(conversion::default_output(trace_path, format)),
    };
    let mut sink: Box<dyn Write> = match &path {
        None => Box::new(std::io::stdout().lock()),
        Some(p) => Box::new(BufWriter::new(
            clrspy_collect::private::create_private(p)
                .map_err(|e| CliError::new(format!("cannot write {}: {e}", p.display())))?,
        )),
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
    drop(sink);
    if let Some(e) = done.stopped_early {
        eprintln!(
            "warning: the second pass over the trace stopped early; the timeline ends there: {e}"
        );
    }
    if done.stacks == 0 && format.metrics().contains(&metric) {
        let msg = conversion::no_stacks_message(a, metric, &options.filter);
        if format.is_stacks_only() {
            // An empty view is no result: say so, and leave no empty file behind.
            if let Some(p) = &path {
                let _ = std::fs::remove_file(p);
            }
            if c.empty_is_error {
                return Err(CliError::new(msg));
            }
            eprintln!("warning: no {} written: {msg}", format.name());
            return Ok(None);
        }
        eprintln!("warning: {msg}");
    }
    Ok(path)
}

/// `--format` of record: converts a finished recording next to it.
pub(crate) fn convert_after(trace: &Path, format: Format) -> CliResult<()> {
    if let Some(p) = convert(trace, &Conversion::after_recording(format))? {
        eprintln!("Converted to {}.", p.display());
    }
    Ok(())
}

/// Runs `clrspy convert`.
pub fn run(args: &ConvertArgs) -> CliResult<std::process::ExitCode> {
    let c = Conversion {
        format: args.to,
        metric: args.metric,
        thread: args.thread,
        just_my_code: args.grouping.rule(),
        native: args.grouping.native_view(),
        out: args.output.as_deref(),
        empty_is_error: true,
        images: args.images.sources(),
    };
    if let Some(p) = convert(&args.input.trace, &c)? {
        let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        eprintln!("Wrote {} ({} bytes).", p.display(), size);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
