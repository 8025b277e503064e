//! `clrspy profile`: record with the providers the chosen reports need, keep the trace, and
//! print the reports — the one-shot workflow (`clrspy profile -- dotnet app.dll`).

use clrspy_analysis::Options;
use diagnostics_client::{Provider, SessionConfig, DEFAULT_RUNDOWN_KEYWORD};

use super::record::{duration_arg, execute, resolve_target};
use super::report::{analyze, print};
use crate::cli::{ProfileArgs, ReportArgs, ReportKind, TraceArg};
use crate::output::CliResult;

/// The runtime's keywords: GC, loader, JIT (for names), contention, exceptions.
const GC: u64 = 0x1;
const LOADER_AND_JIT: u64 = 0x8 | 0x10;
const CONTENTION: u64 = 0x4000;
const EXCEPTION: u64 = 0x8000;
/// The default runtime keywords of the cpu profile (dotnet-trace's cpu-sampling set).
const COMMON: u64 = 0x0014_C14F_CCBD;

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

/// The providers for `kinds`.
pub fn providers_for(kinds: &[ReportKind]) -> Vec<Provider> {
    let mut keywords = LOADER_AND_JIT;
    let mut level = 4;
    let mut samples = false;
    for k in kinds {
        match k {
            ReportKind::Cpu | ReportKind::Waits | ReportKind::Threads | ReportKind::Summary => {
                samples = true;
                keywords |= COMMON;
            }
            ReportKind::Gc => keywords |= GC,
            ReportKind::Alloc => {
                keywords |= GC;
                level = 5; // allocation ticks are verbose
            }
            ReportKind::Exceptions => keywords |= EXCEPTION,
            ReportKind::Contention => {
                keywords |= CONTENTION;
                level = 5;
            }
        }
    }
    let mut p = vec![Provider {
        name: clr_events::RUNTIME_PROVIDER.into(),
        keywords,
        level,
        arguments: None,
    }];
    if samples {
        p.push(Provider {
            name: clr_events::SAMPLE_PROFILER_PROVIDER.into(),
            keywords: 0,
            level: 5,
            arguments: None,
        });
    }
    p
}

/// Runs `clrspy profile`.
pub fn run(args: &ProfileArgs) -> CliResult<std::process::ExitCode> {
    let kinds = chosen(args);
    let duration = duration_arg(args.duration.as_deref())?;
    let config = SessionConfig {
        circular_buffer_mb: 256,
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: true,
        providers: providers_for(&kinds),
    };
    let target = resolve_target(args.process_id, args.name.as_deref(), &args.command)?;
    let outcome = execute(
        target,
        &config,
        args.output.clone(),
        duration,
        Some(std::time::Duration::from_millis(20)),
    )?;
    let path = outcome.summary.path.clone();
    if let Some(format) = args.format {
        super::record::convert_after(&path, format)?;
    }
    let mut a = analyze(&path, Options::default())?;
    let report_args = |kind| ReportArgs {
        input: TraceArg {
            trace: path.clone(),
        },
        kind,
        top: args.top,
        tree: false,
        depth: 30,
        width: 8,
        cutoff: 1.0,
        focus: None,
        exclude: Vec::new(),
        thread: None,
        from: None,
        to: None,
        json: args.json,
    };
    if args.json {
        print(
            &mut a,
            &report_args(ReportKind::Summary),
            ReportKind::Summary,
        )?;
    } else {
        use std::io::Write;
        let mut out = std::io::stdout();
        writeln!(out)?;
        print(
            &mut a,
            &report_args(ReportKind::Summary),
            ReportKind::Summary,
        )?;
        for k in kinds {
            writeln!(out, "\n{}", "─".repeat(40))?;
            print(&mut a, &report_args(k), k)?;
        }
        writeln!(out, "\nThe trace is kept in {}.", path.display())?;
    }
    Ok(outcome.exit)
}
