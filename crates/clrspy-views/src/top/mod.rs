//! `clrspy top`: the hottest methods of the last few seconds of a running process — a
//! full-screen view on a terminal ([`screen`]), a plain-text snapshot every interval
//! otherwise ([`text`]). The session and the windowed table are clrspy-live's
//! ([`clrspy_live::top`]); this module starts them and drives the view.

mod screen;
mod text;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use clrspy_analysis::Options;
use clrspy_collect::{ChildOutput, LaunchOptions, Resolved};
use clrspy_live::top::{session_config, thread_count, Mode, SortBy, TopWindow, Totals};
use clrspy_live::{LiveAnalysis, LiveSession, SessionSpec};

use crate::{Failure, TargetArgs};

/// How often the threads' CPU is read (what `record` does by default).
const THREAD_CPU_INTERVAL: Duration = Duration::from_millis(20);

/// `clrspy top`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The process: `-p`, `-n` or `-- COMMAND`.
    #[command(flatten)]
    pub target: TargetArgs,
    /// How often the view refreshes (1s, 500ms; see Values).
    #[arg(long, visible_alias = "interval", value_name = "TIME", default_value = "1s", value_parser = positive_duration)]
    pub refresh: Duration,
    /// The last stretch of time the table covers.
    #[arg(long, value_name = "TIME", default_value = "5s", value_parser = positive_duration)]
    pub window: Duration,
    /// Rows of each snapshot without a terminal.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Stop after this long (otherwise `q`, Ctrl+C or the target's exit).
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub duration: Option<Duration>,
    /// What the table weighs at the start (keys c, w, a switch on a terminal).
    #[arg(long, value_enum, default_value = "cpu")]
    pub mode: ModeArg,
    /// The column the table is ordered by at the start (key s switches on a terminal).
    #[arg(long, value_enum, default_value = "exclusive")]
    pub sort: SortArg,
}

/// `--mode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    /// CPU time by method.
    Cpu,
    /// Waiting (off-CPU) time by method.
    Wait,
    /// Allocated bytes by allocating method.
    Alloc,
    /// Allocated bytes by type.
    AllocType,
}

/// `--sort`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortArg {
    /// The method's own time or bytes.
    Exclusive,
    /// With what it called.
    Inclusive,
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// Set by Ctrl+C (SIGINT) outside the full-screen view, where it is not a key.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The session behind the view: the live analysis, and how to find the process.
pub(crate) struct Live {
    session: LiveSession,
    analysis: LiveAnalysis,
    /// The attached process's pid (a launched one's comes from the session).
    attached_pid: Option<u32>,
    /// What the header calls the target.
    label: String,
    /// The rundown session naming code jitted before the attach.
    naming: Option<JoinHandle<()>>,
}

impl Live {
    /// Starts the session on the target (a launched program's output goes to /dev/null: the
    /// view owns the terminal).
    fn start(args: &Args) -> Result<Live, Failure> {
        let analysis = LiveAnalysis::new(Options::default());
        let spec = SessionSpec {
            config: session_config(),
            out: None,
            duration: args.duration,
            thread_cpu: Some(THREAD_CPU_INTERVAL),
            lossless: false,
        };
        match args.target.resolve("top")? {
            Resolved::Attach { endpoint, label } => {
                let pid = endpoint.pid;
                let session =
                    LiveSession::attach(endpoint.clone(), spec, vec![analysis.consumer()])?;
                let names = analysis.clone();
                let naming = std::thread::Builder::new()
                    .name("clrspy-top-names".into())
                    .spawn(move || {
                        // Unnamed methods stay addresses: the view still works without names.
                        let _ = clrspy_live::name_jitted_code(&endpoint, &names);
                    })?;
                Ok(Live {
                    session,
                    analysis,
                    attached_pid: Some(pid),
                    label,
                    naming: Some(naming),
                })
            }
            Resolved::Launch(command) => {
                let label = command
                    .first()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let opts = LaunchOptions {
                    stdout: ChildOutput::Null,
                    ..LaunchOptions::default()
                };
                let session = LiveSession::launch(command, spec, vec![analysis.consumer()], opts)?;
                Ok(Live {
                    session,
                    analysis,
                    attached_pid: None,
                    label,
                    naming: None,
                })
            }
        }
    }

    /// The target's pid, once known.
    fn pid(&self) -> Option<u32> {
        self.attached_pid.or_else(|| self.session.child_pid())
    }

    /// True once the session ended (the target exited, `--duration` passed, or it failed).
    fn ended(&self) -> bool {
        self.analysis.end().is_some() || !self.session.is_running()
    }

    /// The totals of a snapshot now (None before the session's first events).
    fn totals(&self) -> Option<Totals> {
        self.analysis.snapshot().map(|a| Totals::of(&a))
    }

    /// What the header says of the target: its label, and its name once the trace gave it.
    fn title(&self) -> String {
        let name = self
            .analysis
            .with(|a| a.process_name.clone())
            .flatten()
            .filter(|n| !self.label.contains(n.as_str()));
        match (name, self.pid()) {
            (Some(n), Some(p)) => format!("{n} (pid {p})"),
            (None, Some(p)) if !self.label.contains(&p.to_string()) => {
                format!("{} (pid {p})", self.label)
            }
            _ => self.label.clone(),
        }
    }

    /// Stops the session and waits for it; why it failed, if it did.
    fn finish(mut self) -> Result<(), Failure> {
        let ended_alone = self.ended();
        self.session.stop();
        if let Some(n) = self.naming.take() {
            let _ = n.join();
        }
        let (_, child) = self.session.join_child()?;
        if ended_alone {
            match (child, self.attached_pid) {
                (Some(c), _) => eprintln!("clrspy top: the program (pid {}) exited", c.pid),
                (None, Some(pid)) if thread_count(pid).is_none() => {
                    eprintln!("clrspy top: the process (pid {pid}) exited")
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// What the view shows and how; the keys change it.
#[derive(Clone, Debug)]
pub(crate) struct ViewState {
    mode: Mode,
    sort: SortBy,
    paused: bool,
    window: TopWindow,
    refresh: Duration,
    window_len: Duration,
}

impl ViewState {
    fn new(args: &Args) -> ViewState {
        ViewState {
            mode: match args.mode {
                ModeArg::Cpu => Mode::Cpu,
                ModeArg::Wait => Mode::Wait,
                ModeArg::Alloc => Mode::AllocByMethod,
                ModeArg::AllocType => Mode::AllocByType,
            },
            sort: match args.sort {
                SortArg::Exclusive => SortBy::Exclusive,
                SortArg::Inclusive => SortBy::Inclusive,
            },
            paused: false,
            window: TopWindow::new(args.window),
            refresh: args.refresh,
            window_len: args.window,
        }
    }

    /// Takes a refresh's snapshot into the window (not while paused).
    fn refresh(&mut self, live: &Live) {
        if self.paused {
            return;
        }
        if let Some(t) = live.totals() {
            self.window.push(t);
        }
    }
}

/// Runs `clrspy top`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    if args.window < args.refresh {
        return Err(Failure::usage(
            "--window must be at least as long as --refresh",
        ));
    }
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    // Outside the full-screen view Ctrl+C is a signal: stop the session, print the last table.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    let live = Live::start(args)?;
    let mut state = ViewState::new(args);
    let shown = if tty {
        screen::run(&live, &mut state)
    } else {
        text::run(&live, &mut state, args.top)
    };
    let finished = live.finish();
    shown?;
    finished?;
    Ok(ExitCode::SUCCESS)
}

/// The thread count of the header (None before the target's pid is known).
fn threads(live: &Live) -> Option<usize> {
    live.pid().and_then(thread_count)
}
