//! The watcher's state: the rules in force, the decisions log and printer, each rule's
//! counts, the files being written and the traces open, the processes claimed by the listen
//! port or matched by rules with `children`, the crash and hook watches, and the threads.
//! Shared by the poll loop, the listen port's acceptor and the per-process threads.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use clrspy_collect::StopSignal;

use crate::children::Matched;
use crate::fatal::Background;
use crate::procfs::start_ticks;
use crate::view::WatchView;
use clrspy_collect::crash::message::FatalMessages;
use clrspy_rules::RuleSet;
use clrspy_rules::RuleState;
use clrspy_rules::{Decision, DecisionKind, DecisionLog};

/// Prints a decision's short line for people (the caller's terminal).
pub type DecisionPrinter = Box<dyn FnMut(&Decision) + Send>;

/// The watcher's whole state, shared by the poll loop, the listen port's acceptor and the
/// per-process threads.
pub(crate) struct WatchState {
    pub(crate) out: PathBuf,
    pub(crate) rules: RwLock<Arc<RuleSet>>,
    log: Mutex<DecisionLog>,
    printer: Mutex<DecisionPrinter>,
    pub(crate) states: Mutex<HashMap<String, RuleState>>,
    /// Files being written (never removed by a budget).
    pub(crate) open_files: Mutex<Vec<PathBuf>>,
    /// The stop signals of the open traces.
    pub(crate) traces: Mutex<Vec<Arc<StopSignal>>>,
    /// Host pids the listen port handles (the poller leaves them alone).
    pub(crate) claimed: Mutex<HashSet<u32>>,
    /// The processes rules with `children` matched (their descendants match too).
    pub(crate) matched: Mutex<Matched>,
    /// The (pid, start ticks, rule) watched for a crash, and the exceptions kept for it.
    pub(crate) crash_watched: Mutex<HashMap<(u32, u64, String), Arc<FatalMessages>>>,
    /// The (pid, start ticks, rule) whose exceptions the hold hook handles.
    pub(crate) hooked: Mutex<HashSet<(u32, u64, String)>>,
    pub(crate) disk_full: AtomicBool,
    pub(crate) stopping: AtomicBool,
    pub(crate) actions: AtomicU64,
    pub(crate) failures: AtomicU64,
    /// The listen socket's path, to recognise the processes pointed at it.
    pub(crate) listen: Option<PathBuf>,
    /// The per-process threads.
    pub(crate) workers: Mutex<Vec<JoinHandle<()>>>,
    /// The caller's read-only view (fed by [`WatchState::emit`]).
    pub(crate) view: Arc<WatchView>,
}

impl WatchState {
    /// The state of a watch writing to `out` (its log open there) with `rules`.
    pub(crate) fn new(
        out: &Path,
        rules: RuleSet,
        log: DecisionLog,
        printer: DecisionPrinter,
        listen: Option<PathBuf>,
        view: Arc<WatchView>,
    ) -> WatchState {
        view.set_rules(&rules);
        WatchState {
            out: out.to_path_buf(),
            rules: RwLock::new(Arc::new(rules)),
            log: Mutex::new(log),
            printer: Mutex::new(printer),
            states: Mutex::new(HashMap::new()),
            open_files: Mutex::new(Vec::new()),
            traces: Mutex::new(Vec::new()),
            claimed: Mutex::new(HashSet::new()),
            matched: Mutex::new(Matched::default()),
            crash_watched: Mutex::new(HashMap::new()),
            hooked: Mutex::new(HashSet::new()),
            disk_full: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            actions: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            listen,
            workers: Mutex::new(Vec::new()),
            view,
        }
    }

    /// Logs `d` and prints its line.
    pub(crate) fn emit(&self, d: Decision) {
        let failed = self.log.lock().ok().and_then(|mut l| l.write(&d));
        self.view.record(&d);
        if let Ok(mut print) = self.printer.lock() {
            print(&d);
            if let Some(e) = failed {
                let mut w = Decision::new(DecisionKind::Error);
                w.detail = Some(format!(
                    "cannot write the decisions log: {e}; watching goes on"
                ));
                print(&w);
            }
        }
    }

    /// Runs `f` on a thread of its own, joined when the watch ends.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        name: String,
        f: impl FnOnce(&Arc<WatchState>) + Send + 'static,
    ) {
        let s = self.clone();
        match std::thread::Builder::new().name(name).spawn(move || f(&s)) {
            Ok(h) => {
                if let Ok(mut w) = self.workers.lock() {
                    w.push(h);
                }
            }
            Err(e) => {
                let mut d = Decision::new(DecisionKind::Error);
                d.detail = Some(format!("cannot start a thread: {e}"));
                self.emit(d);
            }
        }
    }

    /// True when rule `rule`'s exceptions in process `pid` are held by the hook (the usual
    /// watch is not wanted).
    pub(crate) fn held_by_hook(&self, pid: u32, rule: &str) -> bool {
        let ticks = start_ticks(pid).unwrap_or(0);
        self.hooked
            .lock()
            .is_ok_and(|h| h.contains(&(pid, ticks, rule.to_string())))
    }

    /// The rules now.
    pub(crate) fn rules(&self) -> Arc<RuleSet> {
        self.rules
            .read()
            .map(|r| r.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }
}

impl Background for Arc<WatchState> {
    fn run(&self, name: String, f: impl FnOnce(&AtomicBool) + Send + 'static) {
        self.spawn(name, move |s| f(&s.stopping));
    }
}

/// Registers an open trace: watch's stop reaches its signal, budgets spare its file.
pub(crate) fn track(state: &WatchState, stop: &Arc<StopSignal>, out: &Path) {
    if let Ok(mut v) = state.traces.lock() {
        v.push(stop.clone());
    }
    if let Ok(mut o) = state.open_files.lock() {
        o.push(out.to_path_buf());
    }
}

/// Unregisters a trace [`track`] registered.
pub(crate) fn untrack(state: &WatchState, stop: &Arc<StopSignal>, out: &Path) {
    if let Ok(mut v) = state.traces.lock() {
        v.retain(|s| !Arc::ptr_eq(s, stop));
    }
    if let Ok(mut o) = state.open_files.lock() {
        o.retain(|p| p != out);
    }
}
