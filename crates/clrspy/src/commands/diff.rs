//! `clrspy diff BASE NEW`: two traces compared (clrspy-export's `diff`), or two heap
//! snapshots (as `heap diff`); exit 1 when `--fail-if` was crossed.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clrspy_analysis::inventory::Inventory;
use clrspy_analysis::Analysis;
use clrspy_export::diff::{self, DiffOptions, Per, Side};
use clrspy_export::report::{self, ReportKind};

use crate::cli::{DiffArgs, HeapAction, HeapArgs};
use crate::input;
use crate::output::{CliError, CliResult};

/// The reports whose models the diff reads.
const KINDS: [ReportKind; 8] = [
    ReportKind::Cpu,
    ReportKind::Waits,
    ReportKind::Alloc,
    ReportKind::Exceptions,
    ReportKind::Contention,
    ReportKind::Gc,
    ReportKind::Requests,
    ReportKind::Http,
];

/// Runs `clrspy diff`.
pub fn run(args: &DiffArgs) -> CliResult<ExitCode> {
    let (b, n) = (&args.base, &args.new);
    match (super::heap::is_snapshot(b), super::heap::is_snapshot(n)) {
        (true, true) => return heap_diff(args),
        (true, false) | (false, true) => {
            return Err(CliError::new(format!(
                "{} is a heap snapshot and {} is not: diff compares two traces or two snapshots",
                if super::heap::is_snapshot(b) { b } else { n }.display(),
                if super::heap::is_snapshot(b) { n } else { b }.display(),
            ))
            .code(2))
        }
        _ => {}
    }
    match (b.is_dir(), n.is_dir()) {
        (true, true) => return run_folders(args),
        (true, false) | (false, true) => {
            return Err(CliError::new(
                "diff compares two traces or two folders of `record --children`, not one of each",
            )
            .code(2))
        }
        _ => {}
    }
    let ops = |p: &Path| -> CliResult<Option<u64>> {
        match &args.per {
            Some(Per::Ops(name)) => Ok(Some(count_events(p, name)?)),
            _ => Ok(None),
        }
    };
    // One analysis at a time unless a picture needs both: the figures are all the diff keeps.
    let pictures = args.svg.is_some() || args.html.is_some() || args.speedscope.is_some();
    let base_a = analyze(b, args)?;
    let base = Side::new(&base_a, b.display().to_string(), ops(b)?);
    let base_a = pictures.then_some(base_a);
    let new_a = analyze(n, args)?;
    let new = Side::new(&new_a, n.display().to_string(), ops(n)?);
    let o = DiffOptions {
        per: args.per.clone(),
        top: args.top,
        fail_if: args.fail_if.clone(),
    };
    let d = diff::diff(&base, &new, &o).map_err(|e| {
        CliError::new(e)
            .hint("--per seconds divides by each trace's length; --per ops:EVENT by an event of the app's")
            .code(2)
    })?;
    type Picture =
        fn(&Analysis, &Analysis, &diff::TraceDiff, &mut dyn Write) -> std::io::Result<()>;
    let views: [(&Option<std::path::PathBuf>, Picture); 3] = [
        (&args.svg, diff::write_flamegraph),
        (&args.html, diff::write_html),
        (&args.speedscope, diff::write_speedscope),
    ];
    for (path, write) in views {
        let (Some(path), Some(base_a)) = (path, &base_a) else {
            continue;
        };
        let mut buf = Vec::new();
        write(base_a, &new_a, &d, &mut buf)?;
        // Owner-only, as every file clrspy writes of a process's data.
        clrspy_collect::private::create_private(path)
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("Wrote {}.", path.display());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = serde_json::to_value(&d).map_err(|e| CliError::new(e.to_string()))?;
        report::write_json(&mut out, &v)?;
    } else {
        d.write_text(&mut out, &super::report::text_style())?;
    }
    out.flush()?;
    if !d.failed.is_empty() {
        eprintln!(
            "diff: {} {} crossed --fail-if",
            d.failed.len(),
            if d.failed.len() == 1 { "row" } else { "rows" }
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Analyses one side with the models the diff reads.
fn analyze(path: &Path, args: &DiffArgs) -> CliResult<Analysis> {
    let options = clrspy_analysis::Options {
        models: report::models_for(&KINDS),
        images: args.images.sources(),
        ..clrspy_analysis::Options::default()
    };
    super::report::analyze(path, options)
}

/// Events named `name` in a trace (`Provider/Event` or the event's name, any case), for
/// `--per ops:EVENT`.
fn count_events(path: &Path, name: &str) -> CliResult<u64> {
    let trace = input::open(path)?;
    let mut reader = trace.reader()?;
    let inv = Inventory::run(&mut reader, |_| {});
    let n = inv
        .per_event
        .iter()
        .filter(|e| {
            e.name.eq_ignore_ascii_case(name)
                || format!("{}/{}", e.provider, e.name).eq_ignore_ascii_case(name)
        })
        .map(|e| e.count)
        .sum();
    if n == 0 {
        return Err(CliError::new(format!(
            "{} has no event named {name} to divide by",
            path.display()
        ))
        .hint(format!(
            "`clrspy info {}` lists the trace's events by provider and name",
            path.display()
        ))
        .code(2));
    }
    Ok(n)
}

/// Two heap snapshots: `heap diff BASE NEW`.
fn heap_diff(args: &DiffArgs) -> CliResult<ExitCode> {
    if args.per.is_some()
        || args.fail_if.is_some()
        || args.svg.is_some()
        || args.speedscope.is_some()
    {
        return Err(CliError::new(
            "--per, --fail-if, --svg and --speedscope compare traces; two heap snapshots compare by type as `heap diff` does (--html and --json too)",
        )
        .code(2));
    }
    super::heap::run_heap(&HeapArgs {
        action: Some(HeapAction::Diff {
            old: args.base.clone(),
            new: Some(args.new.clone()),
            json: args.json,
            top: args.top.max(20),
            html: args.html.clone(),
        }),
        file: None,
        top: 20,
        type_name: None,
        json: args.json,
    })
}

/// One trace of a folder, read.
struct Member {
    /// Its file name.
    name: String,
    /// Its process's command line (or program), the key it is matched by.
    command_line: Option<String>,
    /// Its figures.
    side: Side,
}

/// `clrspy diff BASE_DIR NEW_DIR`: the folders of two `record --children` runs, each trace of
/// one matched with the trace of the other whose process had the same command line (in file
/// name order when several had), and each pair compared.
fn run_folders(args: &DiffArgs) -> CliResult<ExitCode> {
    let pictures = args.svg.is_some() || args.html.is_some() || args.speedscope.is_some();
    if pictures || matches!(args.per, Some(Per::Ops(_))) {
        return Err(CliError::new(
            "--svg, --html, --speedscope and --per ops:EVENT compare two traces: name one trace of each folder",
        )
        .code(2));
    }
    let read = |dir: &Path| -> CliResult<Vec<Member>> {
        let traces = report::processes::traces_in(dir)
            .map_err(|e| CliError::new(format!("{}: {e}", dir.display())))?;
        if traces.is_empty() {
            return Err(CliError::new(format!("{}: no .nettrace files in it", dir.display()))
                .hint("record a process tree with `clrspy record --children -o FOLDER -- COMMAND`")
                .code(2));
        }
        let mut out = Vec::new();
        for t in traces {
            let a = analyze(&t, args)?;
            let name = t
                .file_name()
                .map_or_else(|| t.display().to_string(), |n| n.to_string_lossy().into());
            let command_line = a.command_line.clone().or_else(|| a.process_name.clone());
            out.push(Member {
                side: Side::new(&a, t.display().to_string(), None),
                name,
                command_line,
            });
        }
        Ok(out)
    };
    let (base, mut new) = (read(&args.base)?, read(&args.new)?);
    let o = DiffOptions {
        per: args.per.clone(),
        top: args.top,
        fail_if: args.fail_if.clone(),
    };
    let mut pairs = Vec::new();
    let mut unmatched_base = Vec::new();
    let mut failed = 0;
    for m in base {
        let found = m.command_line.as_ref().and_then(|c| {
            new.iter()
                .position(|n| n.command_line.as_deref() == Some(c.as_str()))
        });
        let Some(i) = found else {
            unmatched_base.push(m.name);
            continue;
        };
        let other = new.remove(i);
        match diff::diff(&m.side, &other.side, &o) {
            Ok(d) => {
                failed += d.failed.len();
                pairs.push((m.command_line.unwrap_or_default(), Ok(d)));
            }
            Err(e) => pairs.push((m.command_line.unwrap_or_default(), Err(e))),
        }
    }
    let unmatched_new: Vec<String> = new.into_iter().map(|m| m.name).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = serde_json::json!({
            "pairs": pairs.iter().map(|(c, d)| match d {
                Ok(d) => serde_json::json!({"command_line": c, "diff": d}),
                Err(e) => serde_json::json!({"command_line": c, "error": e}),
            }).collect::<Vec<_>>(),
            "unmatched_base": unmatched_base,
            "unmatched_new": unmatched_new,
        });
        report::write_json(&mut out, &v)?;
    } else {
        let style = super::report::text_style();
        for (c, d) in &pairs {
            writeln!(out, "=== {c}")?;
            match d {
                Ok(d) => d.write_text(&mut out, &style)?,
                Err(e) => writeln!(out, "not compared: {e}")?,
            }
            writeln!(out)?;
        }
        for (side, names) in [("base", &unmatched_base), ("new", &unmatched_new)] {
            if !names.is_empty() {
                writeln!(
                    out,
                    "Only in the {side} folder (no process with the same command line): {}",
                    names.join(", ")
                )?;
            }
        }
    }
    out.flush()?;
    if failed > 0 {
        eprintln!(
            "diff: {failed} {} crossed --fail-if",
            if failed == 1 { "row" } else { "rows" }
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
