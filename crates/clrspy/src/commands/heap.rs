//! `clrspy gcdump` (take a heap snapshot, or convert a trace's heap dump to `.gcdump`),
//! `clrspy heap FILE` (what is alive and what holds it) and `clrspy heap diff OLD NEW`.
//! The work is in gcdump, clrspy-analysis' heap model and clrspy-collect's heapsnap; this
//! file parses, prints and chooses exit codes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clrspy_analysis::heap::HeapModel;
use clrspy_collect::Resolved;
use clrspy_export::report::{write_json, TextStyle};
use clrspy_export::views::{self, FileOptions, Input, InputKind, ViewOptions};
use clrspy_export::Format;

use super::heap_input::{self, Which};
use super::record::resolve_target;
use crate::cli::{ConvertArgs, GcdumpArgs, HeapAction, HeapArgs};
use crate::output::{CliError, CliResult};

/// Runs `clrspy gcdump`.
pub fn run_gcdump(args: &GcdumpArgs) -> CliResult<std::process::ExitCode> {
    if let Some(trace) = &args.from {
        let out = args.output.clone().unwrap_or_else(|| {
            PathBuf::from(format!("{}.gcdump", crate::input::trace_stem(trace)))
        });
        let t0 = Instant::now();
        let dump = super::heap_snap::load_trace(trace)?;
        super::heap_snap::write_dump(&dump, &out)?;
        eprintln!(
            "Wrote {} ({} objects) in {:.2} s.",
            out.display(),
            dump.graph.object_count(),
            t0.elapsed().as_secs_f64()
        );
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if args.process_id.is_none() && args.name.is_none() {
        return Err(
            CliError::new("gcdump needs a process (-p PID or -n NAME) or --from TRACE").code(2),
        );
    }
    let timeout = args.timeout;
    let target = resolve_target(&crate::cli::TargetArgs {
        process_id: args.process_id,
        name: args.name.clone(),
        command: Vec::new(),
    })?;
    let Resolved::Attach { endpoint, label } = target else {
        return Err(CliError::new("gcdump attaches to a running process").code(2));
    };
    let out = args.output.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "{}_{}.gcdump",
            endpoint.pid,
            clrspy_values::time::file_stamp(std::time::SystemTime::now())
        ))
    });
    super::heap_snap::announce(&label, endpoint.pid, timeout, args.yes)?;
    let t0 = Instant::now();
    let stop = clrspy_cli::stop_signal();
    let taken = super::heap_snap::take(&endpoint, &label, &out, timeout, stop)?;
    eprintln!(
        "Wrote {} ({} objects, {:.1} MB; recorded {:.1} MB of events in {:.2} s, total {:.2} s).",
        out.display(),
        taken.dump.graph.object_count(),
        taken.file_bytes as f64 / 1048576.0,
        taken.recorded_bytes as f64 / 1048576.0,
        taken.recorded.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

/// A `.gcdump` or a trace with heap dump events.
pub(crate) fn load(path: &Path) -> CliResult<gcdump::HeapDump> {
    let mut say = super::heap_snap::progress_printer();
    clrspy_live::heap::open_snapshot(path, &mut say).map_err(super::heap_snap::read_error)
}

/// Runs `clrspy heap`: loads the snapshots and prints a heap view of the registry.
pub fn run_heap(args: &HeapArgs) -> CliResult<std::process::ExitCode> {
    let mut o = ViewOptions {
        type_name: args.type_name.clone(),
        ..ViewOptions::default()
    };
    if let Some(HeapAction::Watch(w)) = &args.action {
        return super::heap_watch::run(w);
    }
    if let Some(HeapAction::Diff {
        old,
        new,
        json,
        top,
        html,
    }) = &args.action
    {
        let old_s = heap_input::open(old, Which::Before)?;
        let new_s =
            match new {
                Some(new) => heap_input::open(new, Which::After)?,
                None if old_s.in_zip() => heap_input::open(old, Which::After)?,
                None => return Err(CliError::new(
                    "heap diff needs two snapshots (OLD NEW), or a bundle's zip that holds both",
                )
                .code(2)),
            };
        eprintln!("Comparing {} with {}.", old_s.label, new_s.label);
        let (old_m, new_m) = (
            HeapModel::new(load(old_s.path())?.graph),
            HeapModel::new(load(new_s.path())?.graph),
        );
        o.report.top = *top;
        let input = Input::HeapDiff(&old_m, &new_m);
        if let Some(out) = html {
            let title = format!(
                "{} → {}",
                file_name(Path::new(&old_s.label)),
                file_name(Path::new(&new_s.label))
            );
            write_file(Format::Html, &input, &title, out)?;
            eprintln!("Wrote {}.", out.display());
        }
        return print("heap-diff", &input, &o, *json);
    }
    let Some(file) = &args.file else {
        return Err(
            CliError::new("heap needs a FILE (.gcdump or a trace with heap dump events)").code(2),
        );
    };
    let t0 = Instant::now();
    let snapshot = heap_input::open(file, Which::After)?;
    if snapshot.in_zip() {
        eprintln!("Reading {}.", snapshot.label);
    }
    let model = HeapModel::new(load(snapshot.path())?.graph);
    o.elapsed = Some(t0.elapsed());
    o.report.top = args.top;
    let name = if args.type_name.is_some() && !args.json {
        "heap-type"
    } else {
        "heap"
    };
    print(name, &Input::Heap(&model), &o, args.json)
}

/// Builds the view `name` and prints it, as JSON or text.
fn print(
    name: &str,
    input: &Input,
    o: &ViewOptions,
    json: bool,
) -> CliResult<std::process::ExitCode> {
    let view = views::find(name)
        .ok_or_else(|| CliError::new(format!("no view '{name}'")))?
        .build(input, o)
        .map_err(|e| CliError::view(e, ""))?;
    let mut out = std::io::stdout().lock();
    if json {
        write_json(&mut out, &view.json())?;
    } else {
        view.write_text(&mut out, &TextStyle::default())?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes a heap input in `format` to `out` (`-`: stdout) through the view registry's file
/// entries; returns the stacks written.
fn write_file(format: Format, input: &Input, title: &str, out: &Path) -> CliResult<usize> {
    let def = views::file(format, input.kind()).map_err(|e| CliError::view(e, "").code(2))?;
    let o = FileOptions {
        title: title.to_string(),
        html: Default::default(),
    };
    def.write_file(input, &o, out)
        .map_err(|e| CliError::new(e.to_string()))
}

/// True when `clrspy convert` is given a heap snapshot (`.gcdump`), not a trace (a file
/// that cannot be read is left to the trace's reader to report).
pub(crate) fn is_snapshot(path: &Path) -> bool {
    path.is_file() && gcdump::is_gcdump(path).unwrap_or(false)
}

/// `clrspy convert FILE.gcdump --to FORMAT`: the snapshot's root paths weighted by retained
/// bytes, or its HTML page, beside it unless `-o` says where.
pub(crate) fn convert_snapshot(args: &ConvertArgs) -> CliResult<std::process::ExitCode> {
    let path = &args.input.trace;
    let format = args.to;
    // Refuse a trace-only format before the (long) load.
    views::file(format, InputKind::Heap)
        .map_err(|e| CliError::view(e, &format!("{}: ", path.display())).code(2))?;
    if args.thread.is_some() || args.grouping.rule().is_some() {
        return Err(CliError::new(
            "--thread and --just-my-code are for traces; a heap snapshot has no threads or frames",
        )
        .code(2));
    }
    let model = HeapModel::new(load(path)?.graph);
    let out = args.output.clone().unwrap_or_else(|| {
        let stem = file_name(path);
        let stem = stem.strip_suffix(".gcdump").unwrap_or(&stem);
        path.with_file_name(format!("{stem}.{}", format.extension()))
    });
    let stacks = write_file(format, &Input::Heap(&model), &file_name(path), &out)?;
    if format.is_stacks_only() && stacks == 0 {
        eprintln!("warning: no object of the snapshot is reachable from a root: no paths");
    }
    if out != Path::new("-") {
        let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        eprintln!("Wrote {} ({} bytes).", out.display(), size);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
