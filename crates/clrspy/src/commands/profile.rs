//! `clrspy profile`: record with the providers the chosen reports need, keep the trace, and
//! print the reports — the one-shot workflow (`clrspy profile -- dotnet app.dll`).

use std::io::Write;

use clrspy_analysis::Options;
use clrspy_export::report::{self, ReportOptions};
use clrspy_export::ReportKind;
use diagnostics_client::SessionConfig;

use super::record::{execute, resolve_target};
use super::report::{analyze_trace, text_style, warn_about};
use crate::cli::ProfileArgs;
use crate::output::CliResult;

/// The reports asked for (all but allocations when none is named).
fn chosen(args: &ProfileArgs) -> Vec<ReportKind> {
    let none = !(args.cpu || args.alloc || args.exceptions || args.contention || args.gc);
    let mut k = Vec::new();
    if args.cpu || none {
        k.push(ReportKind::Cpu);
        k.push(ReportKind::Waits);
    }
    if args.gc || none {
        k.push(ReportKind::Gc);
    }
    if args.alloc {
        k.push(ReportKind::Alloc);
    }
    if args.exceptions || none {
        k.push(ReportKind::Exceptions);
    }
    if args.contention || none {
        k.push(ReportKind::Contention);
    }
    k
}

/// Runs `clrspy profile`.
pub fn run(args: &ProfileArgs) -> CliResult<std::process::ExitCode> {
    let kinds = chosen(args);
    let duration = args.duration;
    let config = SessionConfig {
        providers: report::providers_for(&kinds)
            .into_iter()
            .map(clrspy_collect::session_provider)
            .collect(),
        ..SessionConfig::default()
    };
    let target = resolve_target(&args.target)?;
    // With --json, stdout is the JSON alone: a launched program writes to stderr instead.
    let child_stdout = if args.json {
        if !args.target.command.is_empty() {
            eprintln!("clrspy: the program's standard output goes to standard error (--json)");
        }
        clrspy_collect::ChildOutput::ToStderr
    } else {
        clrspy_collect::ChildOutput::Inherit
    };
    // The reports come from an analysis fed while recording (the tap decodes what the file
    // holds); the file is read again only when the live view skipped part of it.
    let live = clrspy_live::LiveAnalysis::new(Options::default());
    let mut extras = clrspy_live::recording::Extras {
        consumers: vec![live.consumer()],
        sampler: args.sampler.choice(),
        ..Default::default()
    };
    let outcome = execute(
        target,
        &config,
        args.output.clone(),
        duration,
        Some(std::time::Duration::from_millis(20)),
        child_stdout,
        &mut extras,
    )?;
    let path = outcome.summary.file().to_path_buf();
    let trace = crate::input::open(&path)?;
    let whole = outcome.summary.tap_lost.is_none()
        && live
            .end()
            .is_some_and(|e| e.error.is_none() && e.lost.blocks == 0);
    let a = match live.snapshot().filter(|_| whole) {
        Some(a) => {
            warn_about(&a);
            a
        }
        None => analyze_trace(&trace, Options::default())?,
    };
    if let Some(format) = args.format {
        let c = super::convert::Conversion::after_recording(format);
        if let Some(p) = super::convert::write(&a, &trace, &path, &c)? {
            eprintln!("Converted to {}.", p.display());
        }
    }
    let options = ReportOptions {
        top: args.top,
        trace: path.display().to_string(),
        ..ReportOptions::default()
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        // One object: the trace, the summary, then each chosen report under its name.
        let mut all = serde_json::Map::new();
        all.insert("trace".into(), path.display().to_string().into());
        for k in std::iter::once(ReportKind::Summary).chain(kinds) {
            all.insert(k.name().into(), report::build(k, &a, &options).json());
        }
        report::write_json(&mut out, &serde_json::Value::Object(all))?;
    } else {
        let style = text_style();
        writeln!(out)?;
        report::build(ReportKind::Summary, &a, &options).write_text(&mut out, &style)?;
        for k in kinds {
            writeln!(out, "\n{}", "─".repeat(40))?;
            report::build(k, &a, &options).write_text(&mut out, &style)?;
        }
        writeln!(out, "\nThe trace is kept in {}.", path.display())?;
    }
    out.flush()?;
    Ok(outcome.exit)
}
