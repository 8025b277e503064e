//! `clrspy report`: the analysis models as tables (sized to the terminal) or JSON.

use std::io::{IsTerminal, Write};

use clrspy_analysis::report::{
    alloc_report, contention_report, exceptions_report, gc_report, stack_report, threads_report,
    MethodWeight, StackReport,
};
use clrspy_analysis::{Analysis, Metric, Options, StackFilter};
use serde_json::json;

use crate::cli::{ReportArgs, ReportKind};
use crate::input;
use crate::output::{CliError, CliResult};
use crate::progress::Progress;

/// Terminal width for tables (100 when not a terminal, so piped output stays stable).
fn width() -> usize {
    if std::io::stdout().is_terminal() {
        terminal_size::terminal_size()
            .map(|(w, _)| usize::from(w.0))
            .unwrap_or(100)
            .max(60)
    } else {
        100
    }
}

/// Bold on a terminal.
fn heading(s: &str) -> String {
    if std::io::stdout().is_terminal() {
        format!("\x1b[1m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// Shortens a name to `max` characters, keeping its end (the method name).
fn fit(name: &str, max: usize) -> String {
    let n = name.chars().count();
    if n <= max || max < 4 {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n - (max - 1)).collect();
    format!("…{tail}")
}

fn seconds_arg(s: &Option<String>) -> CliResult<Option<i64>> {
    s.as_deref()
        .map(|v| {
            super::record::parse_duration(v)
                .map(|d| d.as_nanos() as i64)
                .or_else(|e| {
                    // A window may start at the trace's start (durations must be positive).
                    let n = v.trim().trim_end_matches(['m', 's', 'h']);
                    match n.trim().parse::<f64>() {
                        Ok(0.0) => Ok(0),
                        _ => Err(e),
                    }
                })
                .map_err(|e| CliError::new(e).code(2))
        })
        .transpose()
}

fn method_table(out: &mut impl Write, rows: &[MethodWeight], unit: &str) -> std::io::Result<()> {
    let w = width();
    writeln!(out, "  {:>10} {:>7}  Method", unit, "%")?;
    for r in rows {
        let value = if unit == "ms" {
            format!("{:.1}", r.ms)
        } else if unit == "bytes" {
            human_bytes(r.samples as u64)
        } else {
            format!("{:.0}", r.samples)
        };
        writeln!(
            out,
            "  {value:>10} {:>6.1}%  {}",
            r.percent,
            fit(&r.method, w.saturating_sub(23))
        )?;
    }
    Ok(())
}

fn human_bytes(n: u64) -> String {
    let v = n as f64;
    if v >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GB", v / (1024.0 * 1024.0 * 1024.0))
    } else if v >= 1024.0 * 1024.0 {
        format!("{:.1} MB", v / (1024.0 * 1024.0))
    } else if v >= 1024.0 {
        format!("{:.1} KB", v / 1024.0)
    } else {
        format!("{n} B")
    }
}

fn print_stack_report(
    out: &mut impl Write,
    r: &StackReport,
    args: &ReportArgs,
) -> std::io::Result<()> {
    let what = if r.metric == Metric::Cpu {
        "CPU"
    } else {
        "Waiting"
    };
    writeln!(
        out,
        "{}",
        heading(&format!(
            "{what} time: {:.1} ms ({:.0} samples of {:.3} ms)",
            r.total_ms, r.total_samples, r.sample_interval_ms
        ))
    )?;
    writeln!(out, "  how: {}", r.method_note)?;
    writeln!(
        out,
        "\n{}",
        heading("Top methods, exclusive (the frame itself)")
    )?;
    method_table(out, &r.top_exclusive, "samples")?;
    writeln!(
        out,
        "\n{}",
        heading("Top methods, inclusive (with callees)")
    )?;
    method_table(out, &r.top_inclusive, "samples")?;
    if let Some(tree) = &r.tree {
        writeln!(out, "\n{}", heading("Call tree (inclusive %, exclusive %)"))?;
        let total = tree.inclusive.max(f64::MIN_POSITIVE);
        let w = width();
        fn walk(
            out: &mut impl Write,
            n: &clrspy_analysis::profile::TreeNode,
            depth: usize,
            total: f64,
            args: &ReportArgs,
            w: usize,
        ) -> std::io::Result<()> {
            if depth > args.depth {
                return Ok(());
            }
            let indent = "  ".repeat(depth.min(40));
            let line = format!(
                "{:>6.1}% {:>6.1}%  {indent}",
                n.inclusive / total * 100.0,
                n.exclusive / total * 100.0
            );
            let room = w.saturating_sub(line.chars().count()).max(20);
            writeln!(out, "{line}{}", fit(&n.name, room))?;
            let mut hidden = 0;
            for (i, c) in n.children.iter().enumerate() {
                if i >= args.width || c.inclusive / total * 100.0 < args.cutoff {
                    hidden += 1;
                    continue;
                }
                walk(out, c, depth + 1, total, args, w)?;
            }
            if hidden > 0 && depth < args.depth {
                writeln!(out, "{:>16}{indent}  ({hidden} more below the cutoff)", "")?;
            }
            Ok(())
        }
        walk(out, tree, 0, total, args, w)?;
    }
    Ok(())
}

/// Runs `clrspy report`.
pub fn run(args: &ReportArgs) -> CliResult<std::process::ExitCode> {
    let options = Options {
        from_ns: seconds_arg(&args.from)?,
        to_ns: seconds_arg(&args.to)?,
        ..Options::default()
    };
    let mut a = analyze(&args.input.trace, options)?;
    print(&mut a, args, args.kind)?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Analyses a trace file (with a progress bar on large ones).
pub(crate) fn analyze(path: &std::path::Path, options: Options) -> CliResult<Analysis> {
    let trace = input::open(path)?;
    let mut reader = trace.reader()?;
    let mut progress = Progress::new(trace.len());
    let a = Analysis::run(&mut reader, options, &mut |pos| progress.update(pos))
        .map_err(|e| CliError::new(format!("{}: {e}", trace.display())))?;
    progress.finish();
    if let Some(e) = &a.read_error {
        eprintln!("warning: the trace is damaged or cut; the report covers the events before: {e}");
    }
    Ok(a)
}

/// Writes a report as pretty JSON and a newline.
fn json_out(out: &mut impl Write, v: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v).map_err(std::io::Error::from)?;
    writeln!(out)
}

/// Prints one report of an analysis.
pub(crate) fn print(a: &mut Analysis, args: &ReportArgs, kind: ReportKind) -> CliResult<()> {
    let filter = StackFilter {
        thread: args.thread,
        focus: args.focus.clone(),
        exclude: args.exclude.clone(),
    };
    let top = args.top.max(1);
    let mut out = std::io::stdout().lock();
    let j = args.json;
    let a = &mut *a;
    match kind {
        ReportKind::Cpu | ReportKind::Waits => {
            let metric = if kind == ReportKind::Cpu {
                Metric::Cpu
            } else {
                Metric::Wait
            };
            let r = stack_report(a, metric, &filter, top, args.tree);
            if j {
                json_out(&mut out, &r)?;
            } else {
                print_stack_report(&mut out, &r, args)?;
            }
        }
        ReportKind::Alloc => {
            let r = alloc_report(a, top);
            if j {
                json_out(&mut out, &r)?;
            } else {
                writeln!(
                    out,
                    "{}",
                    heading(&format!(
                        "Allocations: {} estimated from {} allocation ticks (one per ~100 KB)",
                        human_bytes(r.total_bytes),
                        r.ticks
                    ))
                )?;
                if r.ticks == 0 {
                    writeln!(
                        out,
                        "  none in this trace: record with --profile alloc (or gc-verbose)"
                    )?;
                }
                let w = width();
                writeln!(
                    out,
                    "  {:>10} {:>7} {:>7} {:>6}  Type",
                    "bytes", "%", "ticks", "heap"
                )?;
                for t in &r.types {
                    writeln!(
                        out,
                        "  {:>10} {:>6.1}% {:>7} {:>6}  {}",
                        human_bytes(t.bytes),
                        t.percent,
                        t.count,
                        format!("{:?}", t.heap).to_lowercase(),
                        fit(&t.type_name, w.saturating_sub(38))
                    )?;
                }
                writeln!(out, "\n{}", heading("Allocating methods"))?;
                method_table(&mut out, &r.top_methods, "bytes")?;
            }
        }
        ReportKind::Exceptions => {
            let r = exceptions_report(a, top);
            if j {
                json_out(&mut out, &r)?;
            } else {
                writeln!(
                    out,
                    "{}",
                    heading(&format!("Exceptions: {} thrown", r.total))
                )?;
                let w = width();
                for t in &r.types {
                    writeln!(
                        out,
                        "\n  {:>8}  {}",
                        t.count,
                        fit(&t.type_name, w.saturating_sub(12))
                    )?;
                    for m in t.messages.iter().take(3) {
                        writeln!(
                            out,
                            "  {:>8}    message: {}",
                            m.count,
                            fit(&m.name, w.saturating_sub(23))
                        )?;
                    }
                    if let Some(s) = t.throw_sites.first() {
                        let site = s
                            .frames
                            .iter()
                            .find(|f| !f.starts_with('['))
                            .cloned()
                            .unwrap_or_default();
                        writeln!(
                            out,
                            "  {:>8}    thrown in: {}",
                            s.count,
                            fit(&site, w.saturating_sub(25))
                        )?;
                    }
                    for c in t.catch_sites.iter().take(2) {
                        writeln!(
                            out,
                            "  {:>8}    caught in: {}",
                            c.count,
                            fit(&c.name, w.saturating_sub(25))
                        )?;
                    }
                }
            }
        }
        ReportKind::Contention => {
            let r = contention_report(a, top);
            if j {
                json_out(&mut out, &r)?;
            } else {
                writeln!(
                    out,
                    "{}",
                    heading(&format!(
                        "Lock contention: {} waits, {:.1} ms waited",
                        r.count, r.total_wait_ms
                    ))
                )?;
                if r.count == 0 {
                    writeln!(
                        out,
                        "  none in this trace: record with --profile contention"
                    )?;
                }
                writeln!(out, "\n{}", heading("Methods that waited"))?;
                method_table(&mut out, &r.top_exclusive, "ms")?;
                writeln!(out, "\n{}", heading("Locks"))?;
                for l in &r.locks {
                    writeln!(
                        out,
                        "  {:>10.1} ms {:>7} waits  lock {}  owners {:?}",
                        l.wait_ms, l.count, l.lock_id, l.owner_threads
                    )?;
                }
            }
        }
        ReportKind::Gc => {
            let r = gc_report(a);
            if j {
                json_out(&mut out, &r)?;
            } else {
                let t = &r.totals;
                writeln!(
                    out,
                    "{}",
                    heading(&format!(
                        "GCs: {} (gen0 {}, gen1 {}, gen2 {}; induced gen2 {})",
                        t.count,
                        t.per_generation[0],
                        t.per_generation[1],
                        t.per_generation[2],
                        t.induced
                    ))
                )?;
                writeln!(out, "  pauses: total {:.1} ms, max {:.2} ms, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; {:.2}% of the time paused", t.total_pause_ms, t.max_pause_ms, t.p50_pause_ms, t.p95_pause_ms, t.p99_pause_ms, t.paused_percent)?;
                if let Some(rate) = t.allocation_mb_per_s {
                    writeln!(out, "  allocation rate: {rate:.1} MB/s")?;
                }
                if let Some(p) = t.peak_heap_mb {
                    writeln!(out, "  peak heap after a GC: {p:.1} MB")?;
                }
                writeln!(
                    out,
                    "  by reason: {}",
                    t.per_reason
                        .iter()
                        .map(|c| format!("{} {}", c.name, c.count))
                        .collect::<Vec<_>>()
                        .join(", ")
                )?;
                writeln!(
                    out,
                    "\n  {:>6} {:>4} {:<18} {:<13} {:>10} {:>9} {:>10} {:>9}",
                    "GC#", "gen", "reason", "type", "start ms", "pause ms", "heap MB", "promo MB"
                )?;
                let skip = r.gcs.len().saturating_sub(top.max(50));
                if skip > 0 {
                    writeln!(
                        out,
                        "  ({skip} earlier GCs not shown; --top N or --json for all)"
                    )?;
                }
                for g in r.gcs.iter().skip(skip) {
                    let opt =
                        |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into());
                    writeln!(
                        out,
                        "  {:>6} {:>4} {:<18} {:<13} {:>10.1} {:>9.2} {:>10} {:>9}",
                        g.number,
                        g.generation,
                        g.reason,
                        g.kind,
                        g.start_ms,
                        g.pause_ms,
                        opt(g.heap_after_mb),
                        opt(g.promoted_mb)
                    )?;
                }
            }
        }
        ReportKind::Threads => {
            let r = threads_report(a, top);
            if j {
                json_out(&mut out, &r)?;
            } else {
                writeln!(out, "{}", heading(&format!("Threads: {} sampled; thread pool max {} workers, {} starvation adjustments", r.threads.len(), r.max_workers, r.starvation_adjustments)))?;
                let w = width();
                writeln!(
                    out,
                    "  {:>8} {:<16} {:>10} {:>10} {:<8}  Most seen in",
                    "tid", "name", "cpu ms", "wait ms", "mostly"
                )?;
                for t in &r.threads {
                    writeln!(
                        out,
                        "  {:>8} {:<16} {:>10.1} {:>10.1} {:<8}  {}",
                        t.thread,
                        fit(t.name.as_deref().unwrap_or("-"), 16),
                        t.cpu_ms,
                        t.wait_ms,
                        t.mostly,
                        fit(&t.top_frame, w.saturating_sub(62))
                    )?;
                }
                if !r.adjustments.is_empty() {
                    writeln!(
                        out,
                        "  pool adjustments: {}",
                        r.adjustments
                            .iter()
                            .map(|c| format!("{} {}", c.name, c.count))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )?;
                }
            }
        }
        ReportKind::Summary => summary(&mut out, a, args, &filter)?,
    }
    Ok(())
}

fn summary(
    out: &mut std::io::StdoutLock<'_>,
    a: &mut Analysis,
    args: &ReportArgs,
    filter: &StackFilter,
) -> std::io::Result<()> {
    let path = args.input.trace.display().to_string();
    let cpu = stack_report(a, Metric::Cpu, filter, 5, false);
    let waits = stack_report(a, Metric::Wait, filter, 5, false);
    let gc = gc_report(a);
    let alloc = alloc_report(a, 5);
    let exc = exceptions_report(a, 5);
    let cont = contention_report(a, 5);
    if args.json {
        let v = json!({
            "trace": path,
            "duration_ms": a.duration_ns as f64 / 1e6,
            "events": a.events,
            "dropped_events": a.dropped_events,
            "has_rundown": a.has_rundown,
            "has_thread_cpu": a.has_thread_cpu,
            "read_error": a.read_error,
            "cpu": cpu,
            "waits": waits,
            "gc": {"totals": gc.totals},
            "alloc": alloc,
            "exceptions": exc,
            "contention": cont,
        });
        serde_json::to_writer_pretty(&mut *out, &v).map_err(std::io::Error::from)?;
        return writeln!(out);
    }
    writeln!(
        out,
        "{}",
        heading(&format!(
            "{path}: {:.2} s, {} events",
            a.duration_ns as f64 / 1e9,
            a.events
        ))
    )?;
    if a.dropped_events > 0 {
        writeln!(
            out,
            "  {} events were lost by the runtime (buffer full): counts are low",
            a.dropped_events
        )?;
    }
    if !a.has_rundown && a.cpu.source() != clrspy_analysis::cpu::CpuSource::None {
        writeln!(
            out,
            "  no rundown in this trace: methods jitted before the recording may show as [native]"
        )?;
    }
    let mut hints: Vec<String> = Vec::new();
    if cpu.total_samples > 0.0 || waits.total_samples > 0.0 {
        writeln!(
            out,
            "\n{}",
            heading(&format!(
                "CPU {:.0} ms, waiting {:.0} ms ({})",
                cpu.total_ms,
                waits.total_ms,
                serde_json::to_value(cpu.method)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            ))
        )?;
        writeln!(out, "  hottest (CPU, exclusive):")?;
        method_table(out, &cpu.top_exclusive, "samples")?;
        if let Some(w) = waits
            .top_inclusive
            .iter()
            .find(|m| !m.method.starts_with('['))
        {
            writeln!(
                out,
                "  most waited in: {} ({:.1}% of waiting)",
                w.method, w.percent
            )?;
        }
        hints.push(format!(
            "clrspy report {path} cpu --tree   (call tree of CPU time)"
        ));
        hints.push(format!(
            "clrspy report {path} waits        (where threads block)"
        ));
    } else {
        hints.push("no CPU samples: record with --profile cpu for hot methods".into());
    }
    if gc.totals.count > 0 {
        let t = &gc.totals;
        writeln!(out, "\n{}", heading(&format!("GC: {} collections (gen0 {}, gen1 {}, gen2 {}), paused {:.1} ms total, max {:.2} ms, {:.2}% of the time", t.count, t.per_generation[0], t.per_generation[1], t.per_generation[2], t.total_pause_ms, t.max_pause_ms, t.paused_percent)))?;
        hints.push(format!(
            "clrspy report {path} gc           (one row per GC)"
        ));
    }
    if alloc.ticks > 0 {
        writeln!(
            out,
            "\n{}",
            heading(&format!("Allocations: ~{}", human_bytes(alloc.total_bytes)))
        )?;
        for t in alloc.types.iter().take(3) {
            writeln!(
                out,
                "  {:>10} {:>5.1}%  {}",
                human_bytes(t.bytes),
                t.percent,
                t.type_name
            )?;
        }
        hints.push(format!(
            "clrspy report {path} alloc        (types and allocating stacks)"
        ));
    }
    if exc.total > 0 {
        writeln!(
            out,
            "\n{}",
            heading(&format!("Exceptions: {} thrown", exc.total))
        )?;
        for t in exc.types.iter().take(3) {
            writeln!(out, "  {:>8}  {}", t.count, t.type_name)?;
        }
        hints.push(format!(
            "clrspy report {path} exceptions   (messages, throw and catch sites)"
        ));
    }
    if cont.count > 0 {
        writeln!(
            out,
            "\n{}",
            heading(&format!(
                "Lock contention: {} waits, {:.1} ms",
                cont.count, cont.total_wait_ms
            ))
        )?;
        if let Some(m) = cont.top_exclusive.first() {
            writeln!(out, "  most waited: {} ({:.1} ms)", m.method, m.ms)?;
        }
        hints.push(format!(
            "clrspy report {path} contention   (who waited on which lock)"
        ));
    }
    writeln!(out, "\n{}", heading("Next"))?;
    for h in hints {
        writeln!(out, "  {h}")?;
    }
    Ok(())
}
