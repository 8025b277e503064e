//! `top`'s session on a process: [`session_config`] recorded into a
//! live analysis with the threads' CPU readings, attached (with a rundown session naming the
//! code jitted before) or from a launched program's first instruction; the totals of its
//! snapshots for a [`TopWindow`](super::TopWindow).

use std::ffi::OsString;
use std::thread::JoinHandle;
use std::time::Duration;

use clrspy_analysis::Options;
use clrspy_collect::{ChildOutput, LaunchOptions, Summary};
use diagnostics_client::{Endpoint, Provider, SessionConfig};

use super::window::Totals;
use crate::{ChildEnd, LiveAnalysis, LiveSession, SessionError, SessionSpec};

/// The runtime's keywords of the `cpu` profile (GC, loader, JIT, exceptions, contention,
/// thread pool...); `top` reads them at the verbose level, which adds `GC/AllocationTick`.
pub(super) const RUNTIME_KEYWORDS: u64 = 0x0014_C14F_CCBD;

/// The session `top` records: the sampler every millisecond, the runtime's events with
/// stacks (allocation ticks included), no rundown at the end (names come from
/// [`name_jitted_code`](crate::name_jitted_code) at the start and the JIT's events after),
/// and a small buffer (the events are read as they come).
pub fn session_config() -> SessionConfig {
    SessionConfig {
        circular_buffer_mb: 64,
        rundown_keyword: 0,
        stackwalk: true,
        providers: vec![
            Provider {
                name: clr_events::SAMPLE_PROFILER_PROVIDER.into(),
                keywords: 0,
                level: 5,
                arguments: None,
            },
            Provider {
                name: clr_events::RUNTIME_PROVIDER.into(),
                keywords: RUNTIME_KEYWORDS,
                level: 5,
                arguments: None,
            },
        ],
    }
}

/// `top`'s session on a process, running on its own thread.
pub struct TopSession {
    session: LiveSession,
    analysis: LiveAnalysis,
    /// The attached process's pid (a launched one's comes from the session).
    attached_pid: Option<u32>,
    /// The rundown session naming code jitted before the attach.
    naming: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TopSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopSession")
            .field("pid", &self.pid())
            .field("ended", &self.ended())
            .finish()
    }
}

/// The session's spec: `top`'s providers, no file, the readings.
fn spec(duration: Option<Duration>) -> SessionSpec {
    SessionSpec {
        config: session_config(),
        out: None,
        duration,
        thread_cpu: Some(clrspy_collect::procstat::THREAD_CPU_INTERVAL),
        lossless: false,
    }
}

impl TopSession {
    /// Attaches to the process behind `endpoint` for `duration` (None: until
    /// [`TopSession::finish`] or its exit), and names the code it jitted before from a second,
    /// short rundown session, on a thread of its own (until it is done, such code shows as
    /// addresses). Errors of the session come from [`TopSession::finish`].
    pub fn attach(endpoint: Endpoint, duration: Option<Duration>) -> std::io::Result<TopSession> {
        let analysis = LiveAnalysis::new(Options::default());
        let pid = endpoint.pid;
        let session =
            LiveSession::attach(endpoint.clone(), spec(duration), vec![analysis.consumer()])?;
        let names = analysis.clone();
        let naming = std::thread::Builder::new()
            .name("clrspy-top-names".into())
            .spawn(move || {
                // Unnamed methods stay addresses: the view still works without names.
                let _ = crate::name_jitted_code(&endpoint, &names);
            })?;
        Ok(TopSession {
            session,
            analysis,
            attached_pid: Some(pid),
            naming: Some(naming),
        })
    }

    /// Starts `command` (program and arguments) and watches it from its first instruction;
    /// `stdout` says where its output goes. The session ends with the program.
    pub fn launch(
        command: Vec<OsString>,
        duration: Option<Duration>,
        stdout: ChildOutput,
    ) -> std::io::Result<TopSession> {
        let analysis = LiveAnalysis::new(Options::default());
        let opts = LaunchOptions {
            stdout,
            ..LaunchOptions::default()
        };
        let session =
            LiveSession::launch(command, spec(duration), vec![analysis.consumer()], opts)?;
        Ok(TopSession {
            session,
            analysis,
            attached_pid: None,
            naming: None,
        })
    }

    /// The target's pid, once known.
    pub fn pid(&self) -> Option<u32> {
        self.attached_pid.or_else(|| self.session.child_pid())
    }

    /// True once the session ended (the target exited, the duration passed, or it failed).
    pub fn ended(&self) -> bool {
        self.analysis.end().is_some() || !self.session.is_running()
    }

    /// The totals of a snapshot now (None before the session's first events).
    pub fn totals(&self) -> Option<Totals> {
        self.analysis.snapshot().map(|a| Totals::of(&a))
    }

    /// The process's name (its entry assembly or executable), once the session said it.
    pub fn process_name(&self) -> Option<String> {
        self.analysis.with(|a| a.process_name.clone()).flatten()
    }

    /// Stops the session (a launched program is asked to end) and waits for it: its summary
    /// (`reason` says whether the target ended it) and how a launched program ended.
    pub fn finish(mut self) -> Result<(Summary, Option<ChildEnd>), SessionError> {
        self.session.stop();
        if let Some(n) = self.naming.take() {
            let _ = n.join();
        }
        self.session.join_child()
    }
}
