//! `top`'s session and view state: the live session on the target (attached, with the
//! rundown that names code jitted before; or a program launched for it), what the view shows
//! and the window of totals it keeps.

use std::time::Duration;

use clrspy_collect::{ChildOutput, Resolved, StopReason};
use clrspy_live::top::{Mode, SortBy, TopSession, TopWindow};
use diagnostics_client::procfs::thread_count;

use clrspy_cli::{Failure, TargetArgs};

/// The session behind the view, and what the header calls its target.
pub(super) struct Live {
    pub(super) session: TopSession,
    /// "pid 42", "app (pid 42)", or the launched program.
    label: String,
}

impl Live {
    /// Starts the session on the target (a launched program's output goes to /dev/null: the
    /// view owns the terminal).
    pub(super) fn start(target: &TargetArgs, duration: Option<Duration>) -> Result<Live, Failure> {
        match target.resolve("top")? {
            Resolved::Attach { endpoint, label } => Ok(Live {
                session: TopSession::attach(endpoint, duration)?,
                label,
            }),
            Resolved::Launch(command) => {
                let label = command
                    .first()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Ok(Live {
                    session: TopSession::launch(command, duration, ChildOutput::Null)?,
                    label,
                })
            }
        }
    }

    /// True once the session ended (the target exited, `--duration` passed, or it failed).
    pub(super) fn ended(&self) -> bool {
        self.session.ended()
    }

    /// What the header says of the target: its label, and its name once the trace gave it.
    pub(super) fn title(&self) -> String {
        let name = self
            .session
            .process_name()
            .filter(|n| !self.label.contains(n.as_str()));
        match (name, self.session.pid()) {
            (Some(n), Some(p)) => format!("{n} (pid {p})"),
            (None, Some(p)) if !self.label.contains(&p.to_string()) => {
                format!("{} (pid {p})", self.label)
            }
            _ => self.label.clone(),
        }
    }

    /// Stops the session and waits for it; why it failed, if it did. Says so when the target
    /// ended it.
    pub(super) fn finish(self) -> Result<(), Failure> {
        let pid = self.session.pid();
        let (summary, child) = self.session.finish()?;
        if summary.reason == StopReason::TargetEnded {
            match (child, pid) {
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
    /// The process's thread count at the last refresh that could read it.
    pub(super) threads: Option<u64>,
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
            threads: None,
        }
    }

    /// Takes a refresh's snapshot into the window (not while paused).
    pub(super) fn refresh(&mut self, live: &Live) {
        if self.paused {
            return;
        }
        if let Some(t) = live.session.totals() {
            self.window.push(t);
        }
        // The last count read stays when the process is gone.
        if let Some(n) = live.session.pid().and_then(thread_count) {
            self.threads = Some(n);
        }
    }
}
