//! `clrspy gcdump` (take a heap snapshot, or convert a trace's heap dump to `.gcdump`),
//! `clrspy heap FILE` (what is alive and what holds it) and `clrspy heap diff OLD NEW`.
//! The work is in gcdump, clrspy-analysis' heap model and clrspy-collect's heapsnap; this
//! file parses, prints and chooses exit codes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clrspy_analysis::heap::HeapModel;
use clrspy_collect::Resolved;
use clrspy_export::report::{write_json, TextStyle};
use clrspy_export::views::{self, Input, ViewOptions};

use super::record::resolve_target;
use crate::cli::{GcdumpArgs, HeapAction, HeapArgs};
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
            clrspy_collect::utc_stamp()
        ))
    });
    super::heap_snap::announce(&label, endpoint.pid, timeout, args.yes)?;
    let t0 = Instant::now();
    let stop = super::heap_snap::stop_signal();
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
fn load(path: &Path) -> CliResult<gcdump::HeapDump> {
    let is_gcdump = gcdump::is_gcdump(path)
        .map_err(|e| CliError::new(format!("cannot open {}: {e}", path.display())))?;
    if is_gcdump {
        return gcdump::open(path).map_err(|e| CliError::new(format!("{}: {e}", path.display())));
    }
    super::heap_snap::load_trace(path)
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
    }) = &args.action
    {
        let (old_m, new_m) = (
            HeapModel::new(load(old)?.graph),
            HeapModel::new(load(new)?.graph),
        );
        o.report.top = *top;
        return print("heap-diff", &Input::HeapDiff(&old_m, &new_m), &o, *json);
    }
    let Some(file) = &args.file else {
        return Err(
            CliError::new("heap needs a FILE (.gcdump or a trace with heap dump events)").code(2),
        );
    };
    let t0 = Instant::now();
    let model = HeapModel::new(load(file)?.graph);
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
        .map_err(|e| match e.hint {
            Some(h) => CliError::new(e.message).hint(h),
            None => CliError::new(e.message),
        })?;
    let mut out = std::io::stdout().lock();
    if json {
        write_json(&mut out, &view.json())?;
    } else {
        view.write_text(&mut out, &TextStyle::default())?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}
