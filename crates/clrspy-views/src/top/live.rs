//! `top`'s session and view state: the live session on the target (attached, with the
//! rundown that names code jitted before; or a program launched for it), what the view shows
//! and the window of totals it keeps.

use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::Duration;

use clrspy_analysis::Options;
use clrspy_collect::{ChildOutput, LaunchOptions, Resolved, StopReason};
use clrspy_live::top::{session_config, thread_count, Mode, SortBy, TopWindow, Totals};
use clrspy_live::{LiveAnalysis, LiveSession, SessionSpec};

use crate::{Failure, TargetArgs};

/// How often the threads' CPU is read (what `record` does by default).
const THREAD_CPU_INTERVAL: Duration = Duration::from_millis(20);

/// Set by Ctrl+C (SIGINT) outside the full-screen view, where it is not a key.
pub(super) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The session behind the view: the live analysis, and how to find the process.
pub(super) struct Live {
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
    pub(super) fn start(target: &TargetArgs, duration: Option<Duration>) -> Result<Live, Failure> {
        let analysis = LiveAnalysis::new(Options::default());
        let spec = SessionSpec {
            config: session_config(),
            out: None,
            duration,
            thread_cpu: Some(THREAD_CPU_INTERVAL),
            lossless: false,
        };
        match target.resolve("top")? {
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
    pub(super) fn pid(&self) -> Option<u32> {
        self.attached_pid.or_else(|| self.session.child_pid())
    }

    /// True once the session ended (the target exited, `--duration` passed, or it failed).
    pub(super) fn ended(&self) -> bool {
        self.analysis.end().is_some() || !self.session.is_running()
    }

    /// The totals of a snapshot now (None before the session's first events).
    pub(super) fn totals(&self) -> Option<Totals> {
        self.analysis.snapshot().map(|a| Totals::of(&a))
    }

    /// What the header says of the target: its label, and its name once the trace gave it.
    pub(super) fn title(&self) -> String {
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
    pub(super) fn finish(mut self) -> Result<(), Failure> {
        self.session.stop();
        if let Some(n) = self.naming.take() {
            let _ = n.join();
        }
        let (summary, child) = self.session.join_child()?;
        if summary.reason == StopReason::TargetEnded {
            match (child, self.attached_pid) {
                (Some(c), _) => eprintln!("clrspy top: the program (pid {}) exited", c.pid),
                (None, Some(pid)) => {
                    eprintln!("clrspy top: the process (pid {pid}) exited or ended the session")
                }
                (None, None) => {}
            }
        }
        Ok(())
    }
}

/// What the view shows and how; the keys change it.
#[derive(Clone, Debug)]
pub(super) struct ViewState {
    pub(super) mode: Mode,
    pub(super) sort: SortBy,
    pub(super) paused: bool,
    pub(super) window: TopWindow,
    pub(super) refresh: Duration,
    pub(super) window_len: Duration,
}

impl ViewState {
    /// The view at the start: `mode` ordered by `sort`, refreshed every `refresh` over the
    /// last `window`.
    pub(super) fn new(mode: Mode, sort: SortBy, refresh: Duration, window: Duration) -> ViewState {
        ViewState {
            mode,
            sort,
            paused: false,
            window: TopWindow::new(window),
            refresh,
            window_len: window,
        }
    }

    /// Takes a refresh's snapshot into the window (not while paused).
    pub(super) fn refresh(&mut self, live: &Live) {
        if self.paused {
            return;
        }
        if let Some(t) = live.totals() {
            self.window.push(t);
        }
    }
}

/// The thread count of the header (None before the target's pid is known).
pub(super) fn threads(live: &Live) -> Option<usize> {
    live.pid().and_then(thread_count)
}
