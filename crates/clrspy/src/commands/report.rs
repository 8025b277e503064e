//! `clrspy report`: analyse the trace, build the chosen report from clrspy-export's registry,
//! print its text view (sized to the terminal) or its JSON view.

use std::io::{IsTerminal, Write};

use clrspy_analysis::{Analysis, Options, StackFilter};
use clrspy_export::report::{
    self, processes, ReportKind, ReportOptions, ReportView, TextStyle, TreeOptions,
};

use crate::cli::{ReportArgs, TracePoint};
use crate::input;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// The text style of stdout: the terminal's width and bold headings on a terminal; plain and
/// with whole names when piped (scripts and `grep` see every name as it is).
pub(crate) fn text_style() -> TextStyle {
    if std::io::stdout().is_terminal() {
        TextStyle {
            width: terminal_size::terminal_size()
                .map(|(w, _)| usize::from(w.0))
                .unwrap_or(100)
                .max(60),
            bold: true,
        }
    } else {
        TextStyle::default()
    }
}

/// The analysis window of `--from`/`--to`, checked.
pub(crate) fn window(from: &Option<TracePoint>, to: &Option<TracePoint>) -> CliResult<Options> {
    if let (Some(f), Some(t)) = (from, to) {
        if t.ns <= f.ns {
            return Err(CliError::new(format!(
                "--to ({}) must be after --from ({}): the window is empty",
                t.text, f.text
            ))
            .code(2));
        }
    }
    Ok(Options {
        from_ns: from.as_ref().map(|p| p.ns),
        to_ns: to.as_ref().map(|p| p.ns),
        ..Options::default()
    })
}

/// The report options of the command line.
pub(crate) fn report_options(args: &ReportArgs) -> ReportOptions {
    ReportOptions {
        top: args.top,
        filter: StackFilter {
            thread: args.thread,
            focus: args.focus.clone(),
            exclude: args.exclude.clone(),
            just_my_code: args.grouping.rule(),
            native: args.grouping.native_view(),
        },
        callers: args.callers.clone(),
        tree: (args.tree || args.callers.is_some()).then_some(TreeOptions {
            // The caller tree goes up to the roots unless a depth is given.
            depth: args.depth.unwrap_or(if args.callers.is_some() {
                usize::MAX
            } else {
                30
            }),
            width: args.width,
            cutoff: args.cutoff,
            // Without --depth, the hottest path goes on to its leaf.
            follow_hottest: args.depth.is_none(),
        }),
        trace: args.input.trace.display().to_string(),
        lines: args.lines,
        narrowed: args.from.is_some()
            || args.to.is_some()
            || args.thread.is_some()
            || args.focus.is_some()
            || !args.exclude.is_empty(),
    }
}

/// Runs `clrspy report`.
pub fn run(args: &ReportArgs) -> CliResult<std::process::ExitCode> {
    if let Some(pid) = args.process_id {
        // `report hangs -p PID`: the report's name lands where a trace's path would.
        if args.input.trace.as_os_str() != "hangs" || args.kind != ReportKind::Summary {
            return Err(CliError::new(
                "-p PID goes with `report hangs` only: the other reports read a trace",
            )
            .hint(format!(
                "clrspy report hangs -p {pid}, or clrspy record -p {pid} then clrspy report TRACE"
            ))
            .code(2));
        }
        return super::hangs_now::run(pid, args.json);
    }
    if args.input.trace.is_dir() {
        return run_folder(args);
    }
    let mut options = window(&args.from, &args.to)?;
    options.images = args.images.sources();
    // Only the models this report reads run.
    options.models = report::models_for(&[args.kind]);
    if let Some(path) = &args.requests_jsonl {
        options.rows =
            Some(report::rows_file(args.kind, path).map_err(|e| CliError::new(e).code(2))?);
    }
    let a = analyze(&args.input.trace, options.clone())?;
    if let (Some(rows), Some(path)) = (&options.rows, &args.requests_jsonl) {
        let n = report::finish_rows(rows, path).map_err(CliError::new)?;
        eprintln!("{n} requests written to {}", path.display());
    }
    let r = report::build(args.kind, &a, &report_options(args));
    if !args.json {
        let from = args.from.as_ref().map(|p| (p.text.as_str(), p.ns));
        let to = args.to.as_ref().map(|p| (p.text.as_str(), p.ns));
        if let Some(line) = report::window_line(from, to) {
            println!("{line}");
        }
    }
    print(r.as_ref(), args.json)?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `clrspy report FOLDER`: the process tree of `record --children`, one trace at a time.
fn run_folder(args: &ReportArgs) -> CliResult<std::process::ExitCode> {
    let dir = &args.input.trace;
    let kind = args.kind.name();
    if args.kind != ReportKind::Summary {
        let d = dir.display();
        return Err(CliError::new(format!(
            "{d} is a folder: its report is the process tree's; `{kind}` reads one trace"
        ))
        .hint(format!(
            "clrspy report {d} (the tree), or clrspy report {d}/TRACE {kind}"
        ))
        .code(2));
    }
    let mut options = window(&args.from, &args.to)?;
    options.models = report::models_for(&[ReportKind::Cpu, ReportKind::Threads]);
    let mut one = |t: &std::path::Path| analyze(t, options.clone()).map_err(|e| e.to_string());
    let r = processes::of_folder(dir, args.top, &mut one).map_err(|e| {
        CliError::new(e)
            .hint("record a process tree with `clrspy record --children -o FOLDER -- COMMAND`")
    })?;
    print(&r, args.json)?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Prints a report's JSON or text view on stdout.
pub(crate) fn print(r: &dyn ReportView, json: bool) -> CliResult<()> {
    let mut out = std::io::stdout().lock();
    if json {
        report::write_json(&mut out, &r.json())?;
    } else {
        r.write_text(&mut out, &text_style())?;
    }
    out.flush()?;
    Ok(())
}

/// Analyses a trace file (with a progress bar on large ones).
pub(crate) fn analyze(path: &std::path::Path, options: Options) -> CliResult<Analysis> {
    analyze_trace(&input::open(path)?, options)
}

/// Analyses an opened trace (with a progress bar on large ones).
pub(crate) fn analyze_trace(trace: &input::OpenTrace, options: Options) -> CliResult<Analysis> {
    let mut reader = trace.reader()?;
    let mut progress = Progress::new(trace.len());
    let a = Analysis::run(&mut reader, options, &mut |pos| progress.update(pos))
        .map_err(|e| CliError::new(format!("{}: {e}", trace.display())))?;
    progress.finish();
    warn_about(&a);
    Ok(a)
}

/// Says what an analysis could not read: damage, payloads no view could decode.
pub(crate) fn warn_about(a: &Analysis) {
    if let Some(e) = &a.read_error {
        eprintln!("warning: the trace is damaged or cut; the report covers the events before: {e}");
    }
    for d in a.decode_errors() {
        eprintln!(
            "warning: {} {} events could not be decoded, counts that use them are low: {}",
            d.count, d.event, d.first_error
        );
    }
}
