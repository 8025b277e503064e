//! The recording run: a resolved target recorded into a file (named after it unless given),
//! attached or launched, with what a front end needs to show along the way. Flags, signals and
//! printing stay with the front end.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use diagnostics_client::SessionConfig;

use crate::launch::{launch_live, ChildOutput, ExtraRuntimes, LaunchOptions};
use crate::session::{record_via, LiveFeeds};
use crate::target::{default_output, launch_name, Resolved};
use crate::{Progress, Recording, Result, StopSignal, Summary};

/// How to record.
#[derive(Clone, Debug)]
pub struct RunOptions<'a> {
    /// The session: providers, buffer, rundown, stacks.
    pub config: &'a SessionConfig,
    /// The output file (None: named after the target and the time, in the current directory).
    pub output: Option<PathBuf>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Thread CPU reading interval (Linux), None for none.
    pub thread_cpu: Option<Duration>,
    /// Stop requests.
    pub stop: &'a StopSignal,
    /// What to do with other runtimes a launched program starts.
    pub extra_runtimes: ExtraRuntimes,
    /// Where a launched program's standard output goes.
    pub child_stdout: ChildOutput,
    /// Keep only about this many bytes of the newest stream (a ring); None for all of it.
    pub ring: Option<u64>,
    /// More environment variables for a launched program.
    pub child_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

/// The moment recording starts, for a front end's first line.
#[derive(Clone, Copy, Debug)]
pub enum Started<'a> {
    /// Attached to a running process.
    Attach {
        /// "pid 42" or "app (pid 42)".
        label: &'a str,
        /// The trace file.
        out: &'a Path,
    },
    /// A program was started.
    Launch {
        /// The program as given.
        program: &'a Path,
        /// The app's name as `ps` and attach say it (`Web` for `dotnet Web.dll`).
        name: &'a str,
        /// Its pid.
        pid: u32,
        /// The trace file.
        out: &'a Path,
    },
}

/// What a front end hears during a run.
pub trait RunObserver {
    /// Recording starts (attach) or the program was started (launch).
    fn started(&mut self, what: Started<'_>);
    /// The status, after every read.
    fn progress(&mut self, _p: &Progress) {}
}

/// How a launched program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildEnd {
    /// The child's pid.
    pub pid: u32,
    /// How it ended (None when clrspy could not tell).
    pub status: Option<ExitStatus>,
    /// True when clrspy ended it because the recording stopped first.
    pub terminated_by_clrspy: bool,
    /// Other .NET programs it started that connected to clrspy and were let run untraced.
    pub extra_runtimes: u64,
}

/// What a run left.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The recording.
    pub summary: Summary,
    /// For a launch, how the program ended.
    pub child: Option<ChildEnd>,
}

/// Records `target` as `opts` say, feeding `live` too.
pub fn run(
    target: Resolved,
    opts: &RunOptions<'_>,
    live: LiveFeeds<'_>,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome> {
    match target {
        Resolved::Attach { endpoint, label } => {
            let out = opts
                .output
                .clone()
                .unwrap_or_else(|| default_output(&label));
            let rec = recording(opts, &out);
            // An unwritable path fails before anything is said or touched.
            drop(crate::sink::FileSink::create(&out)?);
            // "Recording" is said once the session is open: what the user does from then on
            // is in the trace (said before, a burst of requests right after it was missed).
            let observer = std::cell::RefCell::new(observer);
            let to: std::sync::Arc<dyn diagnostics_client::Connector> =
                std::sync::Arc::new(endpoint.clone());
            let summary = record_via(
                to,
                endpoint.pid,
                &rec,
                live,
                &mut || {
                    observer.borrow_mut().started(Started::Attach {
                        label: &label,
                        out: &out,
                    });
                    Ok(())
                },
                &mut |p| observer.borrow_mut().progress(p),
            )?;
            Ok(RunOutcome {
                summary,
                child: None,
            })
        }
        Resolved::Launch(command) => {
            let Some((program, args)) = command.split_first() else {
                return Err(crate::Error::Spawn {
                    program: PathBuf::new(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "no command given",
                    ),
                });
            };
            let name = launch_name(&command);
            let out = opts.output.clone().unwrap_or_else(|| default_output(&name));
            // A launched program's methods are named from its own JIT events: the rundown at
            // the end may never come (the program ends, or is killed, first).
            let config = with_method_loads(opts.config);
            let rec = Recording {
                config: &config,
                ..recording(opts, &out)
            };
            let lopts = LaunchOptions {
                extra_runtimes: opts.extra_runtimes,
                stdout: opts.child_stdout,
                env: opts.child_env.clone(),
            };
            // Started and progress both need the observer: take turns through a cell.
            let observer = std::cell::RefCell::new(observer);
            let mut on_spawned = |pid: u32| {
                observer.borrow_mut().started(Started::Launch {
                    program: Path::new(program),
                    name: &name,
                    pid,
                    out: &out,
                })
            };
            let mut on_progress = |p: &Progress| observer.borrow_mut().progress(p);
            let l = launch_live(
                program,
                args,
                &rec,
                lopts,
                live,
                &mut on_spawned,
                &mut on_progress,
            )?;
            Ok(RunOutcome {
                summary: l.summary,
                child: Some(ChildEnd {
                    pid: l.pid,
                    status: l.status,
                    terminated_by_clrspy: l.terminated_by_clrspy,
                    extra_runtimes: l.extra_runtimes,
                }),
            })
        }
    }
}

/// The runtime's JIT and loader keywords (method and module loads, with names).
const METHOD_LOAD_KEYWORDS: u64 = 0x10 | 0x8;
/// Method/LoadVerbose (the event with names) is written at the verbose level.
const VERBOSE: u32 = 5;

/// `config` with the runtime's method-load events on from the start: its JIT and loader
/// keywords at the verbose level, added to the runtime provider (or as one).
pub fn with_method_loads(config: &SessionConfig) -> SessionConfig {
    let mut config = config.clone();
    let runtime = clr_events::RUNTIME_PROVIDER;
    match config.providers.iter_mut().find(|p| p.name == runtime) {
        Some(p) => {
            p.keywords |= METHOD_LOAD_KEYWORDS;
            p.level = p.level.max(VERBOSE);
        }
        None => config.providers.push(diagnostics_client::Provider {
            name: runtime.into(),
            keywords: METHOD_LOAD_KEYWORDS,
            level: VERBOSE,
            arguments: None,
        }),
    }
    config
}

fn recording<'a>(opts: &RunOptions<'a>, out: &'a Path) -> Recording<'a> {
    Recording {
        config: opts.config,
        out: Some(out),
        duration: opts.duration,
        stop: opts.stop,
        thread_cpu: opts.thread_cpu,
        ring: opts.ring,
    }
}
