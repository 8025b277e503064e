//! `clrspy dump analyze`: a core dump read by the runtime's own data access library, in a child
//! process (clrspy itself, run with the worker's hidden command), shown as text or JSON.

use std::io::Write;

use coredump::model::Analysis;
use coredump::worker::{analyze_in_child, Options, RootTarget};

use crate::cli::{DumpAnalyzeArgs, DumpView};
use crate::output::{CliError, CliResult};

/// Runs `clrspy dump analyze`.
pub fn run(args: &DumpAnalyzeArgs) -> CliResult<std::process::ExitCode> {
    if !args.file.is_file() {
        return Err(CliError::new(format!("no dump at {}", args.file.display()))
            .hint("clrspy dump -p PID writes one"));
    }
    let exe = std::env::current_exe().map_err(|e| {
        CliError::new(format!(
            "cannot find clrspy's own binary to run the analysis: {e}"
        ))
    })?;
    let gcroot = if args.view == DumpView::Gcroot {
        Some(root_target(args)?)
    } else {
        if args.address.is_some() {
            return Err(CliError::new("an ADDRESS goes with the gcroot view only")
                .hint("clrspy dump analyze DUMP gcroot ADDRESS")
                .code(2));
        }
        None
    };
    let options = Options {
        dac: args.dac.clone(),
        heap: args.view == DumpView::Heap,
        gcroot,
    };
    let mut a = analyze_in_child(&exe, &args.file, &options).map_err(|e| {
        let mut err = CliError::new(e.to_string());
        if matches!(e, coredump::Error::NotACore(_)) {
            err = err.hint("a trace goes to `clrspy report`, a .gcdump to `clrspy heap`");
        }
        err
    })?;
    if let (Some(p), Some(h)) = (&args.type_name, a.heap.as_mut()) {
        let pattern =
            clrspy_values::NamePattern::new(p).map_err(|e| CliError::new(e.to_string()))?;
        let lower = p.to_ascii_lowercase();
        h.types.retain(|t| {
            if pattern.has_wildcards() {
                pattern.is_match(&t.name)
            } else {
                t.name.to_ascii_lowercase().contains(&lower)
            }
        });
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &a, args.view)?;
    } else {
        let w: &mut dyn Write = &mut out;
        match args.view {
            DumpView::Summary => coredump::text::write_summary(w, &a)?,
            DumpView::Threads => coredump::text::write_threads(w, &a)?,
            DumpView::Locks => coredump::text::write_locks(w, &a)?,
            DumpView::Exceptions => coredump::text::write_exceptions(w, &a)?,
            DumpView::Heap => coredump::text::write_heap(w, &a, args.top)?,
            DumpView::Modules => coredump::text::write_modules(w, &a)?,
            DumpView::Gcroot => coredump::text::write_gcroots(w, &a)?,
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The object or type `gcroot` looks for.
fn root_target(args: &DumpAnalyzeArgs) -> CliResult<RootTarget> {
    match (&args.address, &args.type_name) {
        (Some(a), None) => u64::from_str_radix(a.trim_start_matches("0x"), 16)
            .map(RootTarget::Address)
            .map_err(|_| {
                CliError::new(format!(
                    "not an address: {a} (hex, as the views print them)"
                ))
                .code(2)
            }),
        (None, Some(t)) => Ok(RootTarget::Type(t.clone())),
        _ => Err(CliError::new("gcroot takes an ADDRESS or --type PATTERN")
            .hint("clrspy dump analyze DUMP gcroot 0x7f3e9c9c8320, or gcroot --type '*Customer'")
            .code(2)),
    }
}

/// The view's part of the analysis with the dump's facts (the summary: all of it).
fn write_json(out: &mut dyn Write, a: &Analysis, view: DumpView) -> CliResult<()> {
    let value = serde_json::to_value(a).map_err(|e| CliError::new(e.to_string()))?;
    let keys: &[&str] = match view {
        DumpView::Summary => &[],
        DumpView::Threads => &["threads"],
        DumpView::Locks => &["locks", "deadlocks"],
        DumpView::Exceptions => &["exceptions"],
        DumpView::Heap => &["heap"],
        DumpView::Modules => &["modules"],
        DumpView::Gcroot => &["gcroots"],
    };
    let value = if keys.is_empty() {
        value
    } else {
        let mut m = serde_json::Map::new();
        for k in ["dump"].iter().chain(keys).chain(&["warnings"]) {
            if let Some(v) = value.get(*k) {
                m.insert((*k).to_string(), v.clone());
            }
        }
        serde_json::Value::Object(m)
    };
    let text = serde_json::to_string_pretty(&value).map_err(|e| CliError::new(e.to_string()))?;
    writeln!(out, "{text}")?;
    Ok(())
}
