//! A recording with what `record` adds to a plain one — the ring and the stop triggers, dumps
//! on exceptions, a launched program's crash report, more live consumers, the kernel sampler
//! and heap snapshots — wired once, for `clrspy record` and `profile` now and the agent later.
//! The caller keeps its front end (a [`RunObserver`], the stop signal) and says what happens:
//! [`Extras::prepare`] assembles the session, [`Prepared::run`] records, [`Extras::finish`]
//! waits for the dumps and snapshots asked for.

use std::path::PathBuf;
use std::time::Duration;

use clrspy_collect::kernel::{self, Chosen, SamplerChoice};
use clrspy_collect::trigger::Triggers;
use clrspy_collect::{
    ChildOutput, CrashCapture, DumpOutcome, EventConsumer, ExceptionDumps, ExtraRuntimes,
    LiveFeeds, OnDump, Progress, Resolved, RunObserver, RunOptions, RunOutcome, Started,
    StopSignal,
};
use diagnostics_client::SessionConfig;

use crate::heap::worker::Snapshots;

pub mod closing;
pub mod notices;

/// What a recording adds to a plain one.
#[derive(Default)]
pub struct Extras {
    /// Keep only this many bytes of the newest stream.
    pub ring: Option<u64>,
    /// The stop triggers.
    pub triggers: Option<Triggers>,
    /// Dumps on exceptions.
    pub exceptions: Option<ExceptionDumps>,
    /// A launched program's crash report (and dump).
    pub crash: Option<CrashCapture>,
    /// More consumers of the live events (`profile`'s live analysis).
    pub consumers: Vec<Box<dyn EventConsumer>>,
    /// Who takes the CPU samples.
    pub sampler: SamplerChoice,
    /// The heap snapshot worker (an attached process), with `--snapshot-heap` on the trigger.
    pub heap: Option<Snapshots>,
}

/// What became of the kernel sampler asked for or preferred.
pub enum KernelNote {
    /// A launched program: its runtime is sampled from when it connects, held at its start
    /// (a refusal then is one of the summary's notes).
    AtStart(u32),
    /// CPU samples come from the kernel at this rate; true when in user mode only (see
    /// [`clrspy_collect::kernel::USER_MODE_ONLY`]).
    On(u32, bool),
    /// The kernel's sampler was asked for or preferred and is not used, and why: the
    /// runtime's sampler is used.
    Runtime(String),
}

/// A recording ready to run: its session, live feeds and the launched program's environment.
pub struct Prepared<'a> {
    config: SessionConfig,
    live: LiveFeeds<'static>,
    child_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    ring: Option<u64>,
    dumps: Option<&'a ExceptionDumps>,
}

/// Where and how long a prepared recording records.
pub struct RunSpec<'a> {
    /// The output file (None: named after the target and the time).
    pub output: Option<PathBuf>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Thread CPU reading interval, None for none.
    pub thread_cpu: Option<Duration>,
    /// Stop requests.
    pub stop: &'a StopSignal,
    /// Where a launched program's standard output goes.
    pub child_stdout: ChildOutput,
}

impl Extras {
    /// Assembles the recording of `target` with `config`: the kernel sampler (told to
    /// `on_kernel`), the exception dumps started (their notices to `on_dump`), the crash
    /// report's environment, the heap worker and the triggers installed.
    pub fn prepare(
        &mut self,
        target: &Resolved,
        config: &SessionConfig,
        on_dump: OnDump,
        on_kernel: &mut dyn FnMut(KernelNote),
    ) -> Result<Prepared<'_>, clrspy_collect::Error> {
        let mut live = LiveFeeds {
            consumers: std::mem::take(&mut self.consumers),
            ..LiveFeeds::default()
        };
        let mut config = config.clone();
        match target {
            Resolved::Attach { endpoint, .. } => {
                match kernel::choose(endpoint.pid, self.sampler, &mut config) {
                    Chosen::Runtime(None) => {}
                    Chosen::Runtime(Some(why)) => on_kernel(KernelNote::Runtime(why)),
                    Chosen::Kernel(s, rate, user_only) => {
                        on_kernel(KernelNote::On(rate, user_only));
                        live.kernel_sampler = Some(*s);
                    }
                }
            }
            _ => {
                let (choice, why) = kernel::preflight(self.sampler, &config);
                live.sampler = choice;
                match (choice.kernel_rate(), why) {
                    (Some(rate), _) => on_kernel(KernelNote::AtStart(rate)),
                    (None, Some(why)) => on_kernel(KernelNote::Runtime(why)),
                    (None, None) => {}
                }
            }
        }
        let mut child_env = self.crash.as_ref().map(|c| c.env()).unwrap_or_default();
        if let Some(d) = self.exceptions.as_mut() {
            let pid = match target {
                Resolved::Attach { endpoint, .. } => Some(endpoint.pid),
                _ => None,
            };
            let (consumer, env) = d.start(pid, on_dump)?.into_parts();
            live.consumers.extend(consumer);
            child_env.extend(env);
        }
        match &self.heap {
            Some(h) => h.install(self.triggers.as_ref(), &mut live),
            None => {
                if let Some(t) = &self.triggers {
                    t.install(&mut live);
                }
            }
        }
        Ok(Prepared {
            config,
            live,
            child_env,
            ring: self.ring,
            dumps: self.exceptions.as_ref(),
        })
    }

    /// Waits for the dumps and heap snapshots asked for: what the dumps did.
    pub fn finish(&mut self) -> Vec<DumpOutcome> {
        let dumped = self
            .exceptions
            .as_mut()
            .map(|d| d.finish())
            .unwrap_or_default();
        if let Some(h) = self.heap.take() {
            h.finish();
        }
        dumped
    }
}

impl Prepared<'_> {
    /// Records `target` as `spec` says, `observer` told when it starts and how it goes.
    pub fn run(
        self,
        target: Resolved,
        spec: RunSpec<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<RunOutcome, clrspy_collect::Error> {
        let opts = RunOptions {
            config: &self.config,
            output: spec.output,
            duration: spec.duration,
            thread_cpu: spec.thread_cpu,
            stop: spec.stop,
            extra_runtimes: ExtraRuntimes::Resume,
            child_stdout: spec.child_stdout,
            ring: self.ring,
            child_env: self.child_env,
        };
        let mut observer = TellDumps {
            inner: observer,
            dumps: self.dumps,
        };
        clrspy_collect::run(target, &opts, self.live, &mut observer)
    }
}

/// The front end's observer, the launched program's pid handed to the exception dumps first.
struct TellDumps<'a, 'b> {
    inner: &'b mut dyn RunObserver,
    dumps: Option<&'a ExceptionDumps>,
}

impl RunObserver for TellDumps<'_, '_> {
    fn started(&mut self, what: Started<'_>) {
        if let (Started::Launch { pid, .. }, Some(d)) = (&what, self.dumps) {
            d.set_pid(*pid);
        }
        self.inner.started(what);
    }

    fn progress(&mut self, p: &Progress) {
        self.inner.progress(p);
    }
}
