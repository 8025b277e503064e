//! The commands: `clrspy bundle` (gather a bundle: [`crate::gather`]) and `clrspy bundle
//! verify FILE.zip` (`verify`); `clrspy doctor` is [`crate::doctor`]'s.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clr_events::trigger_spec::TriggerSpec;
use clrspy_analysis::log_stream::LogLevel;
use clrspy_cli::{Failure, TargetArgs};
use clrspy_collect::trigger::Triggers;
use clrspy_collect::Resolved;

use crate::gather::{gather, BundleSpec};
use crate::symptom::Symptom;

/// `clrspy bundle`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BundleArgs {
    /// `verify FILE.zip`.
    #[command(subcommand)]
    pub(crate) action: Option<BundleAction>,
    /// What to gather.
    #[command(flatten)]
    pub(crate) gather: GatherArgs,
}

/// `clrspy bundle`'s subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum BundleAction {
    /// Check every file of a bundle against its manifest's sizes and SHA-256 sums.
    #[command(after_help = "Examples:\n  clrspy bundle verify case.zip")]
    Verify {
        /// The bundle.
        #[arg(value_name = "FILE.zip")]
        file: PathBuf,
    },
}

/// What `clrspy bundle` gathers.
#[derive(clap::Args, Debug)]
pub(crate) struct GatherArgs {
    /// The process.
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// How long the window lasts (with --ring/--stop-on: the most it waits for a trigger).
    #[arg(long, value_name = "TIME", default_value = "60s", value_parser = positive)]
    pub(crate) duration: Duration,
    /// The zip to write (default: bundle_<name>_<pid>_<UTC time>.zip here).
    #[arg(short = 'o', long, value_name = "FILE.zip")]
    pub(crate) output: Option<PathBuf>,
    /// What is wrong: chooses the trace profile and what is taken beside it (high-cpu,
    /// memory-leak, slow-requests, hang, excessive-gc, http-errors, assembly-load, crash).
    #[arg(long, value_name = "SYMPTOM", value_parser = crate::symptom::parse_arg)]
    pub(crate) symptom: Option<Symptom>,
    /// The trace profile instead of the symptom's (`clrspy record --list-profiles`).
    #[arg(long, value_name = "PROFILE")]
    pub(crate) profile: Option<String>,
    /// More providers (`Name:Keywords:Level[:Args]`, comma-separated).
    #[arg(long, value_name = "SPECS")]
    pub(crate) providers: Option<String>,
    /// Keep only the newest SIZE of the trace (e.g. 256MB) until the window ends or a trigger
    /// fires: what led to the problem is kept.
    #[arg(long, value_name = "SIZE", value_parser = ring_size)]
    pub(crate) ring: Option<u64>,
    /// End the window a little after this happens (as `record --stop-on`: `cpu>80`,
    /// `exception=System.TimeoutException`, `gc-pause>200ms`, ...); repeatable.
    #[arg(long = "stop-on", value_name = "TRIGGER")]
    pub(crate) stop_on: Vec<String>,
    /// How long the window goes on after a trigger fires.
    #[arg(long, value_name = "TIME", value_parser = positive)]
    pub(crate) after_trigger: Option<Duration>,
    /// Also take, after the window: `heap` (a heap snapshot; it forces a full, blocking GC) or
    /// `dump` (a dump with the heap, gzip; it holds all of the process's memory, unredacted).
    #[arg(long = "with", value_name = "heap|dump", value_delimiter = ',', value_parser = ["heap", "dump"])]
    pub(crate) with: Vec<String>,
    /// The app's log messages kept: the lowest level.
    #[arg(long, value_name = "LEVEL", default_value = "Information", value_parser = level)]
    pub(crate) log_level: LogLevel,
    /// Levels by category for the app's log messages (`Microsoft.AspNetCore:Warning;MyApp:Debug`).
    #[arg(long, value_name = "SPECS")]
    pub(crate) log_filter: Option<String>,
    /// Log files to add (a path or a glob such as `/var/log/app/*.log`), redacted line by line;
    /// repeatable.
    #[arg(long = "logs", value_name = "GLOB")]
    pub(crate) logs: Vec<String>,
    /// Keep secrets (environment, command lines, log messages, the trace's strings) as they
    /// are: by default they are masked.
    #[arg(long)]
    pub(crate) no_redact: bool,
}

fn positive(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

fn ring_size(s: &str) -> Result<u64, String> {
    clrspy_collect::parse_ring_size(s).map_err(|e| e.to_string())
}

fn level(s: &str) -> Result<LogLevel, String> {
    LogLevel::parse(s).ok_or_else(|| {
        format!("unknown level '{s}' (Trace, Debug, Information, Warning, Error, Critical)")
    })
}

/// Runs `clrspy bundle`.
pub fn run(args: &BundleArgs) -> Result<ExitCode, Failure> {
    if let Some(BundleAction::Verify { file }) = &args.action {
        return verify(file);
    }
    let spec = spec(&args.gather, std::env::args().collect())?;
    run_spec(spec)
}

/// Gathers `spec`, saying each step on stderr: the bundle's exit code (a launched program's).
pub(crate) fn run_spec(spec: BundleSpec) -> Result<ExitCode, Failure> {
    let mut say = |l: &str| eprintln!("clrspy: {l}");
    let out = gather(spec, clrspy_cli::stop_signal(), &mut say)
        .map_err(|e| Failure::new(e.to_string()))?;
    let bytes = std::fs::metadata(&out.zip).map_or(0, |m| m.len());
    eprintln!(
        "Wrote {} ({} files, {:.1} MB; owner-only). Open index.html in it; check it with `clrspy bundle verify {}`.",
        out.zip.display(),
        out.manifest.files.len(),
        bytes as f64 / 1e6,
        out.zip.display()
    );
    write_conclusion(&out.manifest.findings);
    if !out.manifest.redacted.is_empty() {
        eprintln!(
            "{} secret{} redacted (MANIFEST.md says where).",
            out.manifest.redacted.len(),
            if out.manifest.redacted.len() == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    Ok(ExitCode::from(out.exit.unwrap_or(0)))
}

/// What the bundle says, last: its findings of warning and above (the trace's, with their
/// evidence and fix in `reports/findings.txt`; a leak's heap diff's in `heap/diff.txt`), or
/// that it shows no known mistake.
fn write_conclusion(findings: &[crate::manifest::FindingBrief]) {
    let shown: Vec<_> = findings.iter().filter(|f| f.severity != "info").collect();
    if shown.is_empty() {
        eprintln!(
            "No known .NET mistake shows in the trace ({} of severity info; reports/findings.txt in the bundle lists them).",
            findings.len()
        );
        return;
    }
    let heap = shown.iter().any(|f| f.id == "heap-growth");
    eprintln!(
        "Findings (their evidence and fix: reports/findings.txt{} in the bundle):",
        if heap { " and heap/diff.txt" } else { "" }
    );
    for f in shown {
        eprintln!("  {:<8} {}: {}", f.severity, f.id, f.said);
    }
}

/// The bundle's spec from the flags; `argv` is clrspy's own command line (for the manifest).
pub(crate) fn spec(a: &GatherArgs, argv: Vec<String>) -> Result<BundleSpec, Failure> {
    let target = a.target.resolve("bundle")?;
    if let Some(f) = &a.log_filter {
        clrspy_live::logs::check_filter(f).map_err(Failure::usage)?;
    }
    let specs = a
        .stop_on
        .iter()
        .map(|s| s.parse::<TriggerSpec>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::usage)?;
    let triggers = (!specs.is_empty()).then(|| {
        let mut t = Triggers::new(specs);
        if let Some(after) = a.after_trigger {
            t.after = after;
        }
        t
    });
    let output = a.output.clone().unwrap_or_else(|| default_output(&target));
    if output.extension().is_none_or(|e| e != "zip") {
        return Err(Failure::usage(format!(
            "{}: a bundle is a .zip file",
            output.display()
        )));
    }
    Ok(BundleSpec {
        target,
        duration: a.duration,
        output,
        symptom: a.symptom,
        profile: a.profile.clone(),
        providers: a.providers.clone(),
        ring: a.ring,
        triggers,
        require_trigger: false,
        with_heap: a.with.iter().any(|w| w == "heap"),
        with_dump: a.with.iter().any(|w| w == "dump"),
        log_level: a.log_level,
        log_filter: a.log_filter.clone(),
        log_files: a.logs.clone(),
        redact: !a.no_redact,
        command_line: argv,
    })
}

/// `bundle_<name>_<pid>_<UTC time>.zip` in the current folder.
fn default_output(target: &Resolved) -> PathBuf {
    let trace = match target {
        Resolved::Attach { label, .. } => clrspy_collect::default_output(label),
        Resolved::Launch(command) => {
            clrspy_collect::default_output(&clrspy_collect::launch_name(command))
        }
    };
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    PathBuf::from(format!("bundle_{stem}.zip"))
}

/// `clrspy bundle verify FILE.zip`: 0 when every file matches, 1 otherwise.
fn verify(file: &std::path::Path) -> Result<ExitCode, Failure> {
    let report = crate::verify::verify(file).map_err(|e| Failure::new(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    report.write_text(&mut out)?;
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
