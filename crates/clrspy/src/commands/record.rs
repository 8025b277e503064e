//! `clrspy record`: an EventPipe trace from a running process, streamed to disk.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clrspy_collect::kernel::SamplerChoice;
use clrspy_collect::{ChildOutput, Progress, RunObserver, Started, Summary, TreeOptions};
use clrspy_live::recording::closing::{closing_lines, started_line, StatusText};
use clrspy_live::recording::notices::kernel_line;
use clrspy_live::recording::{Extras, RunSpec};
use diagnostics_client::{SessionConfig, DEFAULT_RUNDOWN_KEYWORD};

use super::capture::Capture;
use super::record_dumps::options_error;
use crate::cli::RecordArgs;
use crate::output::{collect_error, program_exit_code, CliError, CliResult};

/// What to record: a running process, or a program to start.
pub(crate) type Target = clrspy_collect::Resolved;

/// Finds the target from `-p`, `-n` or `-- command`.
pub(crate) fn resolve_target(t: &crate::cli::TargetArgs) -> CliResult<Target> {
    clrspy_collect::Target::from_args(t.process_id, t.name.as_deref(), &t.command)
        .resolve()
        .map_err(collect_error)
}

/// The live status line on a terminal, redrawn at most four times a second.
struct StatusLine {
    enabled: bool,
    last_draw: Instant,
    text: StatusText,
}

impl StatusLine {
    fn new(enabled: bool) -> StatusLine {
        StatusLine {
            enabled,
            last_draw: Instant::now(),
            text: StatusText::new(),
        }
    }

    fn update(&mut self, p: &Progress) {
        if !self.enabled || self.last_draw.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last_draw = Instant::now();
        eprint!("\r{}   ", self.text.line(p));
    }

    fn finish(&self) {
        if self.enabled {
            eprintln!();
        }
    }
}

/// Runs `clrspy record`.
pub fn run(args: &RecordArgs) -> CliResult<std::process::ExitCode> {
    if args.list_profiles {
        clrspy_export::profiles::write_profiles(&mut std::io::stdout().lock())?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let providers = clr_events::provider_spec::resolve(
        args.profile.as_deref(),
        args.providers.as_deref(),
        args.clrevents.as_deref(),
        args.clrevents_level.as_deref(),
    )
    .map(|specs| {
        specs
            .into_iter()
            .map(clrspy_collect::session_provider)
            .collect()
    })
    .map_err(|e| {
        CliError::new(e)
            .hint("`clrspy record --list-profiles` lists the profiles")
            .code(2)
    })?;
    let mut config = SessionConfig {
        circular_buffer_mb: args.buffer_size,
        rundown_keyword: if args.no_rundown {
            0
        } else {
            DEFAULT_RUNDOWN_KEYWORD
        },
        stackwalk: !args.no_stacks,
        providers,
    };
    let thread_cpu = (!args.no_thread_cpu).then_some(args.thread_cpu_interval);
    let sampler = match (args.sampler.choice(), args.no_thread_cpu) {
        (SamplerChoice::Kernel(_), true) => {
            return Err(CliError::new(
                "--sampler kernel needs the thread CPU readings (not --no-thread-cpu)",
            )
            .code(2))
        }
        (SamplerChoice::Auto(_), true) => {
            eprintln!(
                "{}.",
                clrspy_collect::kernel::runtime_instead(
                    "the kernel's sampler needs the thread CPU readings, which --no-thread-cpu leaves out"
                )
            );
            SamplerChoice::Runtime
        }
        (choice, _) => choice,
    };
    let capture = Capture::from_args(args)?;
    if let Some(t) = &capture.triggers {
        t.apply(&mut config);
    }
    if args.children {
        if capture.ring.is_some() || capture.triggers.is_some() {
            return Err(
                CliError::new("--ring and --stop-on do not work with --children yet").code(2),
            );
        }
        return children(args, &config, (args.duration, thread_cpu), sampler);
    }
    let target = resolve_target(&args.target)?;
    let dump_options = super::record_dumps::dump_options(args, None);
    if args.dump_hold_hook.is_some() && !matches!(target, Target::Launch(_)) {
        return Err(CliError::new(
            "--dump-hold-hook works for a program started with -- (the hook is loaded at its start)",
        )
        .code(2));
    }
    // A launched program's trace is named here, so its crash report can be named after it.
    let output = match &target {
        Target::Launch(command) if args.output.is_none() => Some(clrspy_collect::default_output(
            &clrspy_collect::launch_name(command),
        )),
        _ => args.output.clone(),
    };
    if args.snapshot_heap && !matches!(target, Target::Attach { .. }) {
        return Err(CliError::new(
            "--snapshot-heap works for a running process (-p or -n) for now",
        )
        .code(2));
    }
    // The exception dumps are named after the trace the user named (or `dump`).
    let exceptions = dump_options
        .exception_dumps(output.as_deref())
        .map_err(options_error)?;
    // An attached process's trace is named here too, so its heap snapshots go beside it.
    let (output, heap) = match &target {
        Target::Attach { endpoint, label } => {
            let out = output.unwrap_or_else(|| clrspy_collect::default_output(label));
            let heap = super::record_heap::start(
                endpoint.clone(),
                label.clone(),
                out.clone(),
                args.snapshot_heap,
            );
            (Some(out), Some(heap))
        }
        _ => (output, None),
    };
    let mut extras = Extras {
        heap,
        ring: capture.ring,
        triggers: capture.triggers,
        exceptions,
        sampler,
        ..Extras::default()
    };
    if let (Target::Launch(_), Some(out), false) = (&target, &output, args.no_crash_report) {
        extras.crash = dump_options
            .crash_capture(args.dump_on_crash, out)
            .map_err(options_error)?;
    }
    let config = match &extras.exceptions {
        Some(d) => d.session_config(&config),
        None => config,
    };
    let outcome = execute(
        target,
        &config,
        output,
        args.duration,
        thread_cpu,
        ChildOutput::Inherit,
        &mut extras,
    )?;
    if let Some(format) = args.format {
        super::convert::convert_after(outcome.summary.file(), format)?;
    }
    Ok(outcome.exit)
}

/// `record --children -o DIR -- COMMAND`.
fn children(
    args: &RecordArgs,
    config: &SessionConfig,
    (duration, thread_cpu): (Option<Duration>, Option<Duration>),
    sampler: SamplerChoice,
) -> CliResult<std::process::ExitCode> {
    let stop = clrspy_cli::stop_signal();
    let Some(dir) = args.output.as_deref() else {
        return Err(
            CliError::new("--children needs -o DIR: one trace per process goes there").code(2),
        );
    };
    if args.dump_hold_hook.is_some() {
        return Err(CliError::new("--dump-hold-hook does not work with --children").code(2));
    }
    let dump_options = super::record_dumps::dump_options(args, Some(dir));
    let _ = std::fs::create_dir_all(dir);
    // Dumps on exceptions: one trigger per process, one limit for the tree; files
    // dump_<pid>_<n>.dmp.gz in DIR.
    let mut exceptions = dump_options
        .exception_dumps(Some(&dir.join("dump")))
        .map_err(options_error)?;
    let config = match &exceptions {
        Some(d) => d.session_config(config),
        None => config.clone(),
    };
    let consumers = exceptions
        .as_mut()
        .map(|d| d.start_tree(super::record_dumps::say_dumps()));
    let crash = if args.no_crash_report {
        None
    } else {
        dump_options
            .crash_capture(args.dump_on_crash, &dir.join("tree"))
            .map_err(options_error)?
    };
    // Every process of the tree is sampled as this process could be: said once, here.
    let (sampler, why) = clrspy_collect::kernel::preflight(sampler, &config);
    if let Some(why) = why {
        eprintln!("{}.", clrspy_collect::kernel::runtime_instead(&why));
    }
    let opts = TreeOptions {
        config: &config,
        dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        duration,
        thread_cpu,
        stop,
        stdout: ChildOutput::Inherit,
        env: crash.as_ref().map(|c| c.env()).unwrap_or_default(),
        max_processes: 256,
        drain: Duration::from_secs(30),
        consumers,
        sampler,
    };
    let code = super::tree::run(&args.target.command, dir, &opts);
    let dumped = exceptions.as_mut().map(|d| d.finish()).unwrap_or_default();
    let code = code?;
    super::record_dumps::report(&dumped);
    if let Some(c) = &crash {
        super::record_dumps::report_crashes(c, None);
    }
    Ok(std::process::ExitCode::from(code))
}

/// What a recording left.
pub(crate) struct Outcome {
    /// The recording.
    pub summary: Summary,
    /// clrspy's exit code: success, or the launched program's own code.
    pub exit: std::process::ExitCode,
}

/// The front end of a run: the first line, the status line (attach only: a launched child
/// writes to the same terminal).
struct Console {
    duration: Option<Duration>,
    interactive: bool,
    status: StatusLine,
    launched: bool,
    /// True once the user was told a trigger fired.
    told_trigger: bool,
}

impl RunObserver for Console {
    fn started(&mut self, what: Started<'_>) {
        self.launched = matches!(what, Started::Launch { .. });
        eprintln!("{}", started_line(&what, self.duration, self.interactive));
    }

    fn progress(&mut self, p: &Progress) {
        if let (Some(left), false) = (p.stopping_in, self.told_trigger) {
            self.told_trigger = true;
            self.status.finish();
            eprintln!(
                "A stop trigger fired: recording {:.1} s more.",
                left.as_secs_f64()
            );
        }
        if !self.launched {
            self.status.update(p);
        }
    }
}

/// Records `target` with `config` into `output` (or a default name), until the duration,
/// Ctrl+C, Enter (attach on a terminal) or the target's end.
pub(crate) fn execute(
    target: Target,
    config: &SessionConfig,
    output: Option<PathBuf>,
    duration: Option<Duration>,
    thread_cpu: Option<Duration>,
    child_stdout: ChildOutput,
    extras: &mut Extras,
) -> CliResult<Outcome> {
    // Ctrl+C, SIGTERM and SIGHUP count as stop requests (the second one stops waiting for the
    // rundown).
    let stop = clrspy_cli::stop_signal();
    let attach = matches!(target, Target::Attach { .. });
    let interactive = attach && std::io::stdin().is_terminal();
    if interactive {
        // Enter stops too; the reader thread ends with the process.
        std::thread::spawn(|| {
            let mut line = String::new();
            if std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                clrspy_cli::stop_signal().request();
            }
        });
    }
    let prepared = extras
        .prepare(
            &target,
            config,
            super::record_dumps::say_dumps(),
            &mut |n| eprintln!("{}", kernel_line(&n)),
        )
        .map_err(collect_error)?;
    let spec = RunSpec {
        output,
        duration,
        thread_cpu,
        stop,
        child_stdout,
    };
    let mut console = Console {
        duration,
        interactive,
        status: StatusLine::new(attach && std::io::stderr().is_terminal()),
        launched: false,
        told_trigger: false,
    };
    let outcome = prepared.run(target, spec, &mut console);
    console.status.finish();
    let dumped = extras.finish();
    let outcome = outcome.map_err(collect_error)?;
    for line in closing_lines(&outcome.summary, extras.triggers.as_ref()) {
        eprintln!("{line}");
    }
    super::record_dumps::report(&dumped);
    if let Some(c) = &extras.crash {
        super::record_dumps::report_crashes(c, Some(outcome.summary.file()));
    }
    let exit = match outcome.child {
        None => std::process::ExitCode::SUCCESS,
        Some(child) => {
            if child.extra_runtimes > 0 {
                let n = child.extra_runtimes;
                eprintln!(
                    "{n} other .NET process{} started by the program ran untraced.",
                    if n == 1 { "" } else { "es" }
                );
            }
            std::process::ExitCode::from(program_exit_code(
                child.status,
                child.terminated_by_clrspy,
            ))
        }
    };
    Ok(Outcome {
        summary: outcome.summary,
        exit,
    })
}
