//! `clrspy doctor`: finds out the environment (`environment`), asks for the symptom on a
//! terminal when none was given (`prompt`), prints the plan for it — what to collect, why,
//! the exact commands, their cost and the trade-offs (`plans`) — and with `--run` carries
//! it out as one bundle (`clrspy bundle`'s `cmd::run_spec`).

mod environment;
mod plans;
mod prompt;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clrspy_analysis::log_stream::LogLevel;
use clrspy_cli::{Failure, ProcessArgs};
use clrspy_collect::Resolved;

pub(crate) use environment::Environment;
pub(crate) use plans::{default_output, plan_for};

use crate::gather::BundleSpec;
use crate::symptom::{self, Symptom};

/// `clrspy doctor`'s options.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The problem: high-cpu, memory-leak, slow-requests, hang, excessive-gc, http-errors,
    /// assembly-load or crash (asked on a terminal when not given).
    #[arg(long, value_name = "S", value_parser = symptom::parse_arg)]
    pub(crate) symptom: Option<Symptom>,
    /// Carry the plan out: gather one bundle for the symptom from the process.
    #[arg(long)]
    pub(crate) run: bool,
    /// The process (its runtime, user and memory shape the plan; needed by --run).
    #[command(flatten)]
    pub(crate) process: ProcessArgs,
    /// Print the plan as JSON: `symptom`, `environment`, `steps` [{`what`, `why`, `command`,
    /// `cost`}], `tradeoffs`.
    #[arg(long)]
    pub(crate) json: bool,
    /// The window to record (the plan's commands, and --run).
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_window)]
    pub(crate) duration: Duration,
    /// The bundle --run writes (default: clrspy-SYMPTOM-PID.zip here); its folder's free
    /// space is checked.
    #[arg(short = 'o', long, value_name = "FILE.zip")]
    pub(crate) output: Option<PathBuf>,
}

fn parse_window(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// Runs `clrspy doctor`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    // A process by name must be found; by id it need not be a .NET one (the plan then says
    // why clrspy cannot attach).
    let pid = match (args.process.process_id, &args.process.name) {
        (Some(pid), _) => Some(pid),
        (None, Some(_)) => Some(args.process.resolve("doctor")?.0.pid),
        (None, None) => None,
    };
    if args.run && pid.is_none() {
        return Err(Failure::usage(
            "doctor --run needs a process: -p PID or -n NAME",
        ));
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(args.symptom.unwrap_or(Symptom::HighCpu), pid));
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(
            || std::env::current_dir().unwrap_or_default(),
            Path::to_path_buf,
        );
    let env = Environment::detect(pid, &dir);
    let symptom = match args.symptom {
        Some(s) => s,
        None => ask()?,
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(symptom, pid));
    let plan = plan_for(symptom, &env, pid, args.duration, &output);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &plan).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        prompt::write_plan(&plan, &mut out)?;
    }
    out.flush()?;
    drop(out);
    if !args.run {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(t) = env.target.as_ref().filter(|t| !t.can_attach) {
        return Err(Failure::new(format!(
            "doctor --run: clrspy cannot attach to process {}",
            t.pid
        ))
        .hint("run clrspy as the process's user or as root, and check that `clrspy ps` lists it"));
    }
    let (endpoint, label) = args.process.resolve("doctor --run")?;
    let spec = bundle_spec(
        symptom,
        Resolved::Attach { endpoint, label },
        args.duration,
        output,
    );
    eprintln!(
        "Gathering the bundle for {} over {} (Ctrl+C ends the window early)...",
        symptom.name(),
        plans::duration_text(args.duration)
    );
    crate::cmd::run_spec(spec)
}

/// Asks for the symptom on a terminal; a usage error elsewhere.
fn ask() -> Result<Symptom, Failure> {
    let names: Vec<&str> = Symptom::ALL.iter().map(|s| s.name()).collect();
    let usage = || {
        Failure::usage(format!(
            "doctor needs --symptom S when it cannot ask (one of: {})",
            names.join(", ")
        ))
    };
    if !std::io::stdin().is_terminal() {
        return Err(usage());
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut err = std::io::stderr().lock();
    prompt::ask_symptom(&mut input, &mut err)?.ok_or_else(usage)
}

/// The bundle `--run` gathers: the symptom's (its profile, and what it takes beside the
/// trace: snapshots around the window for a leak, stacks first for a hang), redacted.
pub(crate) fn bundle_spec(
    symptom: Symptom,
    target: Resolved,
    duration: Duration,
    output: PathBuf,
) -> BundleSpec {
    BundleSpec {
        target,
        duration,
        output,
        symptom: Some(symptom),
        profile: None,
        providers: None,
        ring: None,
        triggers: None,
        require_trigger: false,
        with_heap: false,
        with_dump: false,
        log_level: LogLevel::Information,
        log_filter: None,
        log_files: Vec::new(),
        redact: true,
        command_line: std::env::args().collect(),
    }
}
