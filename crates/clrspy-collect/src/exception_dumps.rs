//! Dumps on first-chance exceptions, wired once for every caller (`record
//! --dump-on-exception`, `record --children`, a watch rule's `on_exception` dumps and their
//! hold mode): the exception types asked for, the session's exception events, the dump worker
//! (or, in hold mode, the hook's server) with its plan and an optional gate, the trigger for
//! the recording's event tap, and the outcomes at the end. Callers say what to do with each
//! dump through their [`OnDump`] and keep the words to themselves.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use diagnostics_client::SessionConfig;

use crate::dumper::{
    with_exception_events, DumpGate, DumpHandle, DumpOutcome, DumpPlan, Dumper, ExceptionTrigger,
    OnDump,
};
use crate::tap::EventConsumer;
use crate::tree::ConsumerFactory;
use crate::{HoldServer, Result};

/// Environment variables for a launched program (the hold hook's).
pub type Env = Vec<(OsString, OsString)>;

/// How the dumps were set going by [`ExceptionDumps::start`].
pub enum DumpsStarted {
    /// The trigger to add to the recording's event tap (EventPipe mode).
    Trigger(ExceptionTrigger),
    /// Hold mode: the hook's variables for the program (the hook asks the server itself).
    Hold(Env),
}

impl DumpsStarted {
    /// The trigger as an event consumer, and the program's environment (one of them empty).
    pub fn into_parts(self) -> (Option<Box<dyn EventConsumer>>, Env) {
        match self {
            DumpsStarted::Trigger(t) => (Some(Box::new(t)), Vec::new()),
            DumpsStarted::Hold(env) => (None, env),
        }
    }
}

/// Dumps on the first-chance exceptions of one recording, one process tree or one watched
/// process.
pub struct ExceptionDumps {
    patterns: Vec<String>,
    plan: DumpPlan,
    hold_hook: Option<PathBuf>,
    gate: Option<Arc<dyn DumpGate>>,
    dumper: Option<Dumper>,
    handle: Option<DumpHandle>,
    hold: Option<HoldServer>,
}

/// The exception type patterns of `given`, each item possibly a comma-separated list; blanks
/// dropped.
pub(crate) fn exception_patterns<S: AsRef<str>>(given: &[S]) -> Vec<String> {
    given
        .iter()
        .flat_map(|s| s.as_ref().split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

impl ExceptionDumps {
    /// Dumps on exceptions matching `patterns` (see
    /// `exception_type_matches`) by `plan`; None when no
    /// pattern is given (no dumps asked).
    pub fn new(patterns: Vec<String>, plan: DumpPlan) -> Option<ExceptionDumps> {
        (!patterns.is_empty()).then_some(ExceptionDumps {
            patterns,
            plan,
            hold_hook: None,
            gate: None,
            dumper: None,
            handle: None,
            hold: None,
        })
    }

    /// Hold mode: the program loads the hook at `hook` (ClrspyHold.dll, an existing file), and
    /// the throwing thread waits until its dump is written.
    pub fn hold_with(mut self, hook: &Path) -> ExceptionDumps {
        self.hold_hook = Some(std::path::absolute(hook).unwrap_or_else(|_| hook.to_path_buf()));
        self
    }

    /// Each dump admitted by `gate` too (after the plan's limit, before it starts).
    pub fn gated(mut self, gate: Arc<dyn DumpGate>) -> ExceptionDumps {
        self.gate = Some(gate);
        self
    }

    /// The exception type patterns.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The dump plan.
    pub fn plan(&self) -> &DumpPlan {
        &self.plan
    }

    /// `config` with the runtime's exception events on.
    pub fn session_config(&self, config: &SessionConfig) -> SessionConfig {
        with_exception_events(config)
    }

    /// Starts the worker (dumping `pid` when the events do not say), telling `on_dump` of each
    /// dump, and returns the trigger for the recording's event tap; in hold mode, starts the
    /// hook's server instead and returns the program's variables for the hook.
    pub fn start(&mut self, pid: Option<u32>, on_dump: OnDump) -> Result<DumpsStarted> {
        if let Some(hook) = &self.hold_hook {
            let server = HoldServer::start_gated(self.plan.clone(), self.gate.clone(), on_dump)?;
            let env = server.env(hook, &self.patterns, self.plan.max);
            self.hold = Some(server);
            return Ok(DumpsStarted::Hold(env));
        }
        let handle = self.start_worker(pid, on_dump);
        Ok(DumpsStarted::Trigger(ExceptionTrigger::new(
            self.patterns.clone(),
            handle,
        )))
    }

    /// Starts the worker for a process tree; the factory makes each process's trigger, all
    /// asking the one worker (one limit for the tree).
    pub fn start_tree(&mut self, on_dump: OnDump) -> ConsumerFactory {
        let handle = self.start_worker(None, on_dump);
        let patterns = self.patterns.clone();
        Arc::new(move |pid: u32, _name: &str| {
            let t = ExceptionTrigger::for_pid(patterns.clone(), handle.clone(), pid);
            vec![Box::new(t) as Box<dyn EventConsumer>]
        })
    }

    fn start_worker(&mut self, pid: Option<u32>, on_dump: OnDump) -> DumpHandle {
        let dumper = Dumper::start(self.plan.clone(), pid, on_dump);
        let handle = match &self.gate {
            Some(g) => dumper.handle().gated(g.clone()),
            None => dumper.handle(),
        };
        self.dumper = Some(dumper);
        self.handle = Some(handle.clone());
        handle
    }

    /// True once the worker may take no more dumps (its limit or its gate's is reached);
    /// false before [`ExceptionDumps::start`] and in hold mode.
    pub fn exhausted(&self) -> bool {
        self.handle.as_ref().is_some_and(DumpHandle::exhausted)
    }

    /// The process to dump when the events do not name it (a launched program, once started).
    pub fn set_pid(&self, pid: u32) {
        if let Some(d) = &self.dumper {
            d.set_pid(pid);
        }
    }

    /// Waits for the dumps under way (and stops the hook's server); returns how they went.
    pub fn finish(&mut self) -> Vec<DumpOutcome> {
        self.handle = None;
        let mut v = self.dumper.take().map(Dumper::finish).unwrap_or_default();
        v.extend(self.hold.take().map(HoldServer::finish).unwrap_or_default());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compression, DumpSpec};

    fn plan(dir: &Path) -> DumpPlan {
        DumpPlan {
            dir: dir.to_path_buf(),
            stem: "t".into(),
            spec: DumpSpec {
                kind: diagnostics_client::DumpType::Normal,
                compress: Compression::None,
                crash_report: false,
                timeout: std::time::Duration::from_secs(1),
                max_file_bytes: None,
            },
            max: 0,
        }
    }

    #[test]
    fn patterns_split_and_none_means_no_dumps() {
        assert_eq!(
            exception_patterns(&[" A.B , C*", "", "D"]),
            vec!["A.B", "C*", "D"]
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(ExceptionDumps::new(Vec::new(), plan(dir.path())).is_none());
        let mut d = ExceptionDumps::new(vec!["X".into()], plan(dir.path())).unwrap();
        assert!(!d.exhausted());
        let started = d.start(None, Box::new(|_| {})).unwrap();
        let (trigger, env) = started.into_parts();
        assert!(trigger.is_some() && env.is_empty());
        // A plan of no dumps is exhausted at once.
        assert!(d.exhausted());
        assert!(d.finish().is_empty());
    }
}
