//! The watcher's poll loop: finds every new .NET process — by polling the runtimes' diagnostic sockets
//! (in `/tmp`, and in containers' own `/tmp` through `/proc/PID/root`) a few times a second,
//! and, with a listen socket, as runtimes connect to it held at their first instruction — and
//! applies the matching rules on a thread per process. Reloads the rules on request (a bad
//! file keeps the old ones), and on stop finishes the open traces whole. Everything it decides
//! goes to the decisions log and to the caller's line printer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diagnostics_client::{procfs, EndpointWatcher};

use crate::dispatch::on_new_process;
use crate::port::{belongs_to_port, Port};
use crate::state::{DecisionPrinter, WatchState};
use crate::view::WatchView;
use clrspy_rules::RuleSet;
use clrspy_rules::{Decision, DecisionKind, DecisionLog};

/// How to watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// The rules file (read again on reload).
    pub rules_path: PathBuf,
    /// The output folder: the log, and a folder per rule.
    pub out: PathBuf,
    /// A socket to listen on as a reverse diagnostic port.
    pub listen: Option<PathBuf>,
    /// How often the diagnostic sockets are listed.
    pub poll: Duration,
}

/// Requests to a running watcher, safe to set from a signal handler.
#[derive(Debug, Default)]
pub struct WatchControl {
    stop: AtomicU32,
    reload: AtomicBool,
}

impl WatchControl {
    /// No requests.
    pub const fn new() -> WatchControl {
        WatchControl {
            stop: AtomicU32::new(0),
            reload: AtomicBool::new(false),
        }
    }

    /// Asks the watcher to stop (open traces are finished whole); a second request stops
    /// waiting for their rundowns.
    pub fn request_stop(&self) {
        self.stop.fetch_add(1, Ordering::SeqCst);
    }

    /// Asks the watcher to read its rules file again.
    pub fn request_reload(&self) {
        self.reload.store(true, Ordering::SeqCst);
    }

    pub(crate) fn stops(&self) -> u32 {
        self.stop.load(Ordering::SeqCst)
    }

    #[cfg(test)]
    pub(crate) fn reload_requested(&self) -> bool {
        self.reload.load(Ordering::SeqCst)
    }
}

/// What a watch did, once stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchEnd {
    /// Actions taken.
    pub actions: u64,
    /// Actions that failed.
    pub failures: u64,
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// The output folder or its log cannot be written.
    #[error("cannot write to the output folder {}: {source}", path.display())]
    Output {
        /// The folder or file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The listen socket cannot be opened.
    #[error("cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket path.
        path: PathBuf,
        /// The error.
        source: diagnostics_client::Error,
    },
}

/// Watches until `control` asks to stop: applies `rules` to every new .NET process, and to
/// those running already; every decision goes to the log in `opts.out` and to `printer`.
pub fn watch(
    rules: RuleSet,
    opts: &WatchOptions,
    control: &WatchControl,
    printer: DecisionPrinter,
) -> Result<WatchEnd, WatchError> {
    watch_with_view(rules, opts, control, printer, WatchView::new())
}

/// [`watch`], showing its state in `view` as it goes (the agent's `/rules` reads it).
pub fn watch_with_view(
    rules: RuleSet,
    opts: &WatchOptions,
    control: &WatchControl,
    printer: DecisionPrinter,
    view: Arc<WatchView>,
) -> Result<WatchEnd, WatchError> {
    let out_err = |path: &Path, source| WatchError::Output {
        path: path.to_path_buf(),
        source,
    };
    clrspy_collect::private::create_private_dir(&opts.out).map_err(|e| out_err(&opts.out, e))?;
    let log = DecisionLog::open(&opts.out, clrspy_collect::private::append_private)
        .map_err(|e| out_err(&opts.out, e))?;
    let state = Arc::new(WatchState::new(
        &opts.out,
        rules,
        log,
        printer,
        opts.listen.clone(),
        view,
    ));
    let port = match &opts.listen {
        Some(path) => {
            Some(
                Port::start(path, state.clone()).map_err(|source| WatchError::Listen {
                    path: path.clone(),
                    source,
                })?,
            )
        }
        None => None,
    };
    let mut d = Decision::new(DecisionKind::Started);
    d.detail = Some(format!(
        "{} rule(s) from {}{}",
        state.rules().rules.len(),
        opts.rules_path.display(),
        opts.listen
            .as_ref()
            .map(|p| format!("; listening on {}", p.display()))
            .unwrap_or_default()
    ));
    state.emit(d);
    let mut found = EndpointWatcher::new();
    while control.stops() == 0 {
        if control.reload.swap(false, Ordering::SeqCst) {
            reload(&state, &opts.rules_path);
        }
        poll(&state, &mut found);
        if let Ok(mut w) = state.workers.lock() {
            w.retain(|w| !w.is_finished());
        }
        sleep_unless_stopped(opts.poll, control);
    }
    state.stopping.store(true, Ordering::SeqCst);
    let open = state.traces.lock().map(|t| t.len()).unwrap_or(0);
    let mut d = Decision::new(DecisionKind::Stopping);
    d.detail = Some(format!("finishing {open} open trace(s)"));
    state.emit(d);
    drop(port);
    finish(&state, control);
    let end = WatchEnd {
        actions: state.actions.load(Ordering::SeqCst),
        failures: state.failures.load(Ordering::SeqCst),
    };
    let mut d = Decision::new(DecisionKind::Stopped);
    d.detail = Some(format!(
        "{} action(s), {} failed",
        end.actions, end.failures
    ));
    state.emit(d);
    Ok(end)
}

/// Stops the open traces (each finishes whole) and waits for every thread; a second stop
/// request is passed on (the traces stop waiting for their rundowns).
fn finish(state: &WatchState, control: &WatchControl) {
    let mut passed = 0;
    let pass_on = |n: u32| {
        if let Ok(t) = state.traces.lock() {
            for s in t.iter() {
                while s.count() < n {
                    s.request();
                }
            }
        }
    };
    pass_on(1);
    // Bounded: a trace gives up its rundown after a second request, which comes from the
    // user or, after two minutes, from here.
    let until = Instant::now() + Duration::from_secs(120);
    let busy = || {
        state
            .workers
            .lock()
            .map(|w| w.iter().any(|w| !w.is_finished()))
            .unwrap_or(false)
    };
    while busy() {
        let want = if Instant::now() > until {
            2
        } else {
            control.stops().min(2)
        };
        if want > passed {
            passed = want;
        }
        pass_on(passed.max(1));
        std::thread::sleep(Duration::from_millis(50));
    }
    let workers = state
        .workers
        .lock()
        .map(|mut w| std::mem::take(&mut *w))
        .unwrap_or_default();
    for w in workers {
        let _ = w.join();
    }
}

fn sleep_unless_stopped(d: Duration, control: &WatchControl) {
    let until = Instant::now() + d;
    while Instant::now() < until && control.stops() == 0 {
        std::thread::sleep(
            until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
        );
    }
}

/// Reads the rules file again; a bad one keeps the rules in force.
fn reload(state: &WatchState, path: &Path) {
    match RuleSet::load(path) {
        Ok(set) => {
            let mut d = Decision::new(DecisionKind::Reloaded);
            d.detail = Some(format!(
                "{} rule(s) from {}",
                set.rules.len(),
                path.display()
            ));
            state.view.set_rules(&set);
            if let Ok(mut r) = state.rules.write() {
                *r = Arc::new(set);
            }
            state.emit(d);
        }
        Err(e) => {
            let mut d = Decision::new(DecisionKind::ReloadFailed);
            d.detail = Some(format!("{e}; the previous rules stay in force"));
            state.emit(d);
        }
    }
}

/// True when `ep`'s socket is older than its process (started at `ticks` after boot): a
/// runtime's socket left behind, its pid since reused by a process that is not .NET.
fn stale(ep: &diagnostics_client::Endpoint, ticks: u64) -> bool {
    let Ok(made) = std::fs::metadata(&ep.path).and_then(|m| m.modified()) else {
        return false;
    };
    let Some(started) = procfs::time_after_boot(ticks) else {
        return false;
    };
    made + Duration::from_secs(2) < started
}

/// Lists the runtimes' sockets and starts a thread for each process not seen before (a pid
/// reused by a new process counts as new: its socket's name differs).
fn poll(state: &Arc<WatchState>, found: &mut EndpointWatcher) {
    for ep in found.changes().appeared {
        let started = procfs::start_ticks(ep.pid).unwrap_or(0);
        if stale(&ep, started) || belongs_to_port(state, ep.pid) {
            continue;
        }
        state.spawn(format!("clrspy-watch-{}", ep.pid), move |s| {
            on_new_process(s, ep)
        });
    }
    if let Ok(mut c) = state.claimed.lock() {
        c.retain(|p| procfs::alive(*p));
    }
    if let Ok(mut m) = state.matched.lock() {
        m.prune();
    }
    if let Ok(mut w) = state.crash_watched.lock() {
        w.retain(|(p, _, _), _| procfs::alive(*p));
    }
    if let Ok(mut h) = state.hooked.lock() {
        h.retain(|(p, _, _)| procfs::alive(*p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn lines(out: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(out.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[test]
    fn a_bad_reload_keeps_the_rules_a_good_one_replaces_them_and_stop_ends_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let rules = dir.path().join("rules.json");
        let good = r#"{"rules":[{"name":"a","match":{"name":"no-such-process-here"},"dump":{}}]}"#;
        std::fs::write(&rules, good).unwrap();
        let out = dir.path().join("out");
        let opts = WatchOptions {
            rules_path: rules.clone(),
            out: out.clone(),
            listen: None,
            poll: Duration::from_millis(20),
        };
        let control = Arc::new(WatchControl::new());
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let (c, s) = (control.clone(), said.clone());
        let set = RuleSet::load(&rules).unwrap();
        let t = std::thread::spawn(move || {
            let say: DecisionPrinter = Box::new(move |d| s.lock().unwrap().push(d.human()));
            watch(set, &opts, &c, say)
        });
        let wait_for = |event: &str, n: usize| {
            for _ in 0..500 {
                if lines(&out).iter().filter(|l| l["event"] == event).count() >= n {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!("no {event} line: {:?}", lines(&out));
        };
        wait_for("started", 1);
        std::fs::write(
            &rules,
            "{\"rules\":[{\"name\":\"a\",\n\"match\":{\"name\":\"\"},\"dump\":{}}]}",
        )
        .unwrap();
        control.request_reload();
        wait_for("reload_failed", 1);
        let failed = lines(&out)
            .into_iter()
            .find(|l| l["event"] == "reload_failed")
            .unwrap();
        let why = failed["detail"].as_str().unwrap();
        assert!(why.contains("rules.json:2:"), "{why}");
        assert!(why.contains("previous rules stay in force"), "{why}");
        std::fs::write(&rules, good.replace("\"a\"", "\"b\"")).unwrap();
        control.request_reload();
        wait_for("reloaded", 1);
        control.request_stop();
        let end = t.join().unwrap().unwrap();
        assert_eq!(end, WatchEnd::default());
        let all = lines(&out);
        assert_eq!(all.last().unwrap()["event"], "stopped", "{all:?}");
        assert!(said
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("reload_failed")));
    }

    #[test]
    fn an_unwritable_output_folder_is_an_error_before_watching() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        let opts = WatchOptions {
            rules_path: dir.path().join("r.json"),
            out: file.join("sub"),
            listen: None,
            poll: Duration::from_millis(20),
        };
        let set = RuleSet::parse(
            r#"{"rules":[{"name":"a","match":{"name":"x"},"dump":{}}]}"#,
            clrspy_rules::Syntax::Json,
        )
        .unwrap();
        let e = watch(set, &opts, &WatchControl::new(), Box::new(|_| {})).unwrap_err();
        assert!(e.to_string().contains("a-file/sub"), "{e}");
    }
}
