//! `clrspy gcdump` (take a heap snapshot, or convert a trace's heap dump to `.gcdump`),
//! `clrspy heap FILE` (what is alive and what holds it) and `clrspy heap diff OLD NEW`.
//! The work is in gcdump, clrspy-analysis' heap model and clrspy-collect's heapsnap; this
//! file parses, prints and chooses exit codes.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_analysis::heap::{diff::diff, from_trace, HeapModel};
use clrspy_collect::heapsnap::{record_heap_dump, HeapDumpProgress};
use clrspy_collect::{Resolved, StopSignal};

use super::record::resolve_target;
use crate::cli::{GcdumpArgs, HeapAction, HeapArgs};
use crate::output::{collect_error, CliError, CliResult};

/// Runs `clrspy gcdump`.
pub fn run_gcdump(args: &GcdumpArgs) -> CliResult<std::process::ExitCode> {
    if let Some(trace) = &args.from {
        let out = args.output.clone().unwrap_or_else(|| {
            PathBuf::from(format!("{}.gcdump", crate::input::trace_stem(trace)))
        });
        let t0 = Instant::now();
        let dump = load_trace(trace)?;
        write_dump(&dump, &out)?;
        eprintln!(
            "Wrote {} ({} objects) in {:.2} s.",
            out.display(),
            objects_of(&dump),
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
    let heap_mb = managed_heap_hint(endpoint.pid);
    eprintln!(
        "Taking a heap snapshot of {label}: the runtime runs a full, blocking GC (the process pauses while the heap is walked{heap_mb}); timeout {:.0} s.",
        timeout.as_secs_f64()
    );
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let temp = tempfile::Builder::new()
        .prefix(".clrspy-heap-")
        .suffix(".nettrace")
        .tempfile_in(&dir)
        .map_err(|e| {
            CliError::new(format!(
                "cannot create a temporary trace in {}: {e}",
                dir.display()
            ))
        })?;
    static STOP: StopSignal = StopSignal::new();
    let _ = ctrlc::set_handler(|| STOP.request());
    let shared = Arc::new(HeapDumpProgress::default());
    let t0 = Instant::now();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let seen = shared.clone();
    let mut last = Instant::now();
    let summary = record_heap_dump(
        &endpoint,
        temp.path(),
        timeout,
        &STOP,
        shared.clone(),
        &mut |_p| {
            if tty && last.elapsed() > Duration::from_millis(250) {
                last = Instant::now();
                eprint!("\r  {} objects so far ...", seen.objects());
            }
        },
    )
    .map_err(collect_error)?;
    if tty {
        eprint!("\r\x1b[K");
    }
    let recorded = t0.elapsed();
    if !shared.complete() {
        eprintln!(
            "warning: the heap dump did not complete on the live stream within {:.0} s ({} objects seen); checking the trace",
            timeout.as_secs_f64(),
            shared.objects()
        );
    }
    let dump = load_trace(temp.path()).map_err(|e| {
        CliError::new(format!("no snapshot of {label}: {}", e))
            .hint("a bigger heap needs a longer --timeout; lost events mean the runtime's buffer overflowed")
    })?;
    write_dump(&dump, &out)?;
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "Wrote {} ({} objects, {:.1} MB; recorded {:.1} MB of events in {:.2} s, total {:.2} s).",
        out.display(),
        objects_of(&dump),
        size as f64 / 1048576.0,
        summary.bytes as f64 / 1048576.0,
        recorded.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

/// ", heap about N MB" from the process's memory, when /proc tells.
fn managed_heap_hint(pid: u32) -> String {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return String::new();
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| format!("; its resident memory is {:.0} MB", kb as f64 / 1024.0))
        .unwrap_or_default()
}

fn objects_of(d: &gcdump::HeapDump) -> u64 {
    let g = &d.graph;
    (0..g.node_count() as u32)
        .filter(|&i| g.node_size(i) > 0)
        .count() as u64
}

fn write_dump(dump: &gcdump::HeapDump, out: &Path) -> CliResult<()> {
    let f = std::fs::File::create(out)
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", out.display())))?;
    gcdump::write(std::io::BufWriter::new(f), dump)
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", out.display())))
}

/// A trace's heap dump as a `.gcdump` graph.
fn load_trace(path: &Path) -> CliResult<gcdump::HeapDump> {
    let trace = crate::input::open(path)?;
    let mut reader = trace.reader()?;
    let h = from_trace::graph_from_trace(&mut reader, &mut |_| ())
        .map_err(|e| CliError::new(format!("{}: {e}", trace.display())))?;
    if h.unresolved_roots > 0 || h.unresolved_edges > 0 {
        eprintln!(
            "note: {} references and {} roots named addresses that are no object of the dump (left out, as other readers do)",
            h.unresolved_edges, h.unresolved_roots
        );
    }
    Ok(h.dump)
}

/// A `.gcdump` or a trace with heap dump events.
fn load(path: &Path) -> CliResult<gcdump::HeapDump> {
    let mut head = [0u8; 24];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| CliError::new(format!("cannot open {}: {e}", path.display())))?;
    if head[..n].windows(18).any(|w| w == b"!FastSerialization") {
        return gcdump::open(path).map_err(|e| CliError::new(format!("{}: {e}", path.display())));
    }
    load_trace(path)
}

/// Runs `clrspy heap`.
pub fn run_heap(args: &HeapArgs) -> CliResult<std::process::ExitCode> {
    if let Some(HeapAction::Diff {
        old,
        new,
        json,
        top,
    }) = &args.action
    {
        return run_diff(old, new, *json, *top);
    }
    let Some(file) = &args.file else {
        return Err(
            CliError::new("heap needs a FILE (.gcdump or a trace with heap dump events)").code(2),
        );
    };
    let t0 = Instant::now();
    let dump = load(file)?;
    let model = HeapModel::new(dump.graph);
    let elapsed = t0.elapsed();
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut v = serde_json::json!({
            "objects": model.objects(),
            "bytes": model.bytes(),
            "unreachable_objects": model.unreachable_objects(),
            "types": model.types().iter().take(args.top).collect::<Vec<_>>(),
            "roots": model.roots().iter().take(args.top).collect::<Vec<_>>(),
        });
        if let Some(t) = &args.type_name {
            v["type"] = type_json(&model, t);
        }
        let text = serde_json::to_string_pretty(&v).map_err(|e| CliError::new(e.to_string()))?;
        writeln!(out, "{text}")?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if let Some(t) = &args.type_name {
        print_type(&mut out, &model, t)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} objects, {} (analysed in {:.2} s){}",
        group(model.objects()),
        bytes(model.bytes()),
        elapsed.as_secs_f64(),
        if model.unreachable_objects() > 0 {
            format!(
                "; {} unreachable from any root",
                group(model.unreachable_objects())
            )
        } else {
            String::new()
        }
    )?;
    writeln!(out, "\nTypes by retained bytes:")?;
    writeln!(
        out,
        "{:>14} {:>14} {:>12}  Type",
        "Retained", "Shallow", "Count"
    )?;
    for t in model.types().iter().take(args.top) {
        writeln!(
            out,
            "{:>14} {:>14} {:>12}  {}",
            bytes(t.retained_bytes),
            bytes(t.bytes),
            group(t.count),
            t.name
        )?;
    }
    let mut by_shallow: Vec<_> = model.types().iter().collect();
    by_shallow.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    writeln!(out, "\nTypes by shallow bytes:")?;
    writeln!(out, "{:>14} {:>12}  Type", "Shallow", "Count")?;
    for t in by_shallow.iter().take(args.top) {
        writeln!(
            out,
            "{:>14} {:>12}  {}",
            bytes(t.bytes),
            group(t.count),
            t.name
        )?;
    }
    writeln!(
        out,
        "\nRoots by held bytes (each object to the first root that reaches it, statics first; retained: what only that root keeps):"
    )?;
    writeln!(
        out,
        "{:>14} {:>14} {:>10}  {:<16} Root",
        "Held", "Retained", "Objects", "Kind"
    )?;
    for r in model.roots().iter().take(args.top) {
        let kind = serde_json::to_value(r.kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        writeln!(
            out,
            "{:>14} {:>14} {:>10}  {:<16} {}",
            bytes(r.held_bytes),
            bytes(r.retained_bytes),
            group(r.objects),
            kind,
            r.name
        )?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn type_json(model: &HeapModel, t: &str) -> serde_json::Value {
    let stats = model.types().iter().find(|s| s.name == t);
    serde_json::json!({
        "type": t,
        "count": stats.map_or(0, |s| s.count),
        "bytes": stats.map_or(0, |s| s.bytes),
        "retained_bytes": stats.map_or(0, |s| s.retained_bytes),
        "paths": model.paths_to_type(t, 5),
    })
}

fn print_type(out: &mut impl Write, model: &HeapModel, t: &str) -> CliResult<()> {
    let Some(s) = model.types().iter().find(|s| s.name == t) else {
        let near: Vec<&str> = model
            .types()
            .iter()
            .filter(|s| s.name.contains(t))
            .take(5)
            .map(|s| s.name.as_str())
            .collect();
        let mut e = CliError::new(format!("no objects of type {t} in the snapshot"));
        if !near.is_empty() {
            e = e.hint(format!(
                "types with that in their name: {}",
                near.join(", ")
            ));
        }
        return Err(e);
    };
    writeln!(
        out,
        "{}: {} objects, {} shallow, {} retained",
        s.name,
        group(s.count),
        bytes(s.bytes),
        bytes(s.retained_bytes)
    )?;
    writeln!(out, "\nShortest paths from the roots:")?;
    for p in model.paths_to_type(t, 5) {
        writeln!(
            out,
            "{:>12} objects  {}",
            group(p.objects),
            p.steps.join(" → ")
        )?;
    }
    Ok(())
}

fn run_diff(old: &Path, new: &Path, json: bool, top: usize) -> CliResult<std::process::ExitCode> {
    let old_m = HeapModel::new(load(old)?.graph);
    let new_m = HeapModel::new(load(new)?.graph);
    let d = diff(&old_m, &new_m);
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "objects_old": old_m.objects(),
            "objects_new": new_m.objects(),
            "bytes_old": old_m.bytes(),
            "bytes_new": new_m.bytes(),
            "types": d,
        });
        let text = serde_json::to_string_pretty(&v).map_err(|e| CliError::new(e.to_string()))?;
        writeln!(out, "{text}")?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} → {} objects, {} → {}",
        group(old_m.objects()),
        group(new_m.objects()),
        bytes(old_m.bytes()),
        bytes(new_m.bytes())
    )?;
    writeln!(
        out,
        "\n{:>12} {:>12} {:>12} {:>14} {:>14}  Type",
        "Count old", "Count new", "Δ count", "Bytes new", "Δ bytes"
    )?;
    for t in d.iter().take(top) {
        let new_mark = if t.count_old == 0 { "  (new)" } else { "" };
        writeln!(
            out,
            "{:>12} {:>12} {:>+12} {:>14} {:>+14}  {}{new_mark}",
            group(t.count_old),
            group(t.count_new),
            t.count_delta,
            bytes(t.bytes_new),
            t.bytes_delta,
            t.name
        )?;
    }
    let grew: Vec<_> = d.iter().filter(|t| t.bytes_delta > 0).take(3).collect();
    if grew.is_empty() {
        writeln!(out, "\nNo type grew.")?;
    } else {
        let names: Vec<String> = grew
            .iter()
            .map(|t| {
                format!(
                    "{} (+{} objects, +{})",
                    t.name,
                    t.count_delta,
                    bytes(t.bytes_delta as u64)
                )
            })
            .collect();
        let holder = new_m
            .paths_to_type(&grew[0].name, 1)
            .into_iter()
            .next()
            .map(|p| format!("; in NEW they are held by {}", p.steps.join(" → ")))
            .unwrap_or_default();
        writeln!(out, "\nGrew most: {}{holder}", names.join(", "))?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}
