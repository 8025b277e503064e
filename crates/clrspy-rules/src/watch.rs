//! The watcher: finds every new .NET process — by polling the runtimes' diagnostic sockets
//! (in `/tmp`, and in containers' own `/tmp` through `/proc/PID/root`) a few times a second,
//! and, with a listen socket, as runtimes connect to it held at their first instruction — and
//! applies the matching rules on a thread per process. Reloads the rules on request (a bad
//! file keeps the old ones), and on stop finishes the open traces whole. Everything it decides
//! goes to the decisions log and to the caller's line printer.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrspy_collect::StopSignal;

use crate::budget::RuleState;
use crate::discover::Discovery;
use crate::log::{Decision, DecisionLog};
use crate::parse::RuleSet;

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

    fn stops(&self) -> u32 {
        self.stop.load(Ordering::SeqCst)
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

/// A printer for the short human lines.
pub type Say = Box<dyn FnMut(&Decision) + Send>;

/// State shared by the loop, the port's acceptor and the per-process threads.
pub(crate) struct Shared {
    pub(crate) out: PathBuf,
    pub(crate) rules: RwLock<Arc<RuleSet>>,
    log: Mutex<DecisionLog>,
    say: Mutex<Say>,
    pub(crate) states: Mutex<HashMap<String, RuleState>>,
    /// Files being written (never removed by a budget).
    pub(crate) open_files: Mutex<Vec<PathBuf>>,
    /// The stop signals of the open traces.
    pub(crate) traces: Mutex<Vec<Arc<StopSignal>>>,
    /// Host pids the listen port handles (the poller leaves them alone).
    pub(crate) claimed: Mutex<HashSet<u32>>,
    /// The processes rules with `children` matched (their descendants match too).
    pub(crate) matched: Mutex<crate::tree::Matched>,
    /// The (pid, start ticks, rule) watched for a crash, and the exceptions kept for it.
    pub(crate) crash_watched: Mutex<HashMap<(u32, u64, String), Arc<crate::fatal::Messages>>>,
    /// The (pid, start ticks, rule) whose exceptions the hold hook handles.
    pub(crate) hooked: Mutex<HashSet<(u32, u64, String)>>,
    pub(crate) disk_full: AtomicBool,
    pub(crate) stopping: AtomicBool,
    pub(crate) actions: AtomicU64,
    pub(crate) failures: AtomicU64,
    /// The listen socket's path, to recognise the processes pointed at it.
    pub(crate) listen: Option<PathBuf>,
    /// The per-process threads.
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    /// The state of a watch writing to `out` (its log open there) with `rules`.
    pub(crate) fn new(
        out: &Path,
        rules: RuleSet,
        log: DecisionLog,
        say: Say,
        listen: Option<PathBuf>,
    ) -> Shared {
        Shared {
            out: out.to_path_buf(),
            rules: RwLock::new(Arc::new(rules)),
            log: Mutex::new(log),
            say: Mutex::new(say),
            states: Mutex::new(HashMap::new()),
            open_files: Mutex::new(Vec::new()),
            traces: Mutex::new(Vec::new()),
            claimed: Mutex::new(HashSet::new()),
            matched: Mutex::new(crate::tree::Matched::default()),
            crash_watched: Mutex::new(HashMap::new()),
            hooked: Mutex::new(HashSet::new()),
            disk_full: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            actions: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            listen,
            workers: Mutex::new(Vec::new()),
        }
    }

    /// Logs `d` and prints its line.
    pub(crate) fn emit(&self, d: Decision) {
        let failed = self.log.lock().ok().and_then(|mut l| l.write(&d));
        if let Ok(mut say) = self.say.lock() {
            say(&d);
            if let Some(e) = failed {
                let mut w = Decision::new("error");
                w.detail = Some(format!(
                    "cannot write the decisions log: {e}; watching goes on"
                ));
                say(&w);
            }
        }
    }

    /// Runs `f` on a thread of its own, joined when the watch ends.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        name: String,
        f: impl FnOnce(&Arc<Shared>) + Send + 'static,
    ) {
        let s = self.clone();
        match std::thread::Builder::new().name(name).spawn(move || f(&s)) {
            Ok(h) => {
                if let Ok(mut w) = self.workers.lock() {
                    w.push(h);
                }
            }
            Err(e) => {
                let mut d = Decision::new("error");
                d.detail = Some(format!("cannot start a thread: {e}"));
                self.emit(d);
            }
        }
    }

    /// The rules now.
    pub(crate) fn rules(&self) -> Arc<RuleSet> {
        self.rules
            .read()
            .map(|r| r.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }
}

/// Watches until `control` asks to stop: applies `rules` to every new .NET process, and to
/// those running already.
pub fn watch(
    rules: RuleSet,
    opts: &WatchOptions,
    control: &WatchControl,
    say: Say,
) -> Result<WatchEnd, WatchError> {
    let out_err = |path: &Path, source| WatchError::Output {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(&opts.out).map_err(|e| out_err(&opts.out, e))?;
    let log = DecisionLog::open(&opts.out).map_err(|e| out_err(&opts.out, e))?;
    let shared = Arc::new(Shared::new(&opts.out, rules, log, say, opts.listen.clone()));
    let port =
        match &opts.listen {
            Some(path) => Some(crate::port::Port::start(path, shared.clone()).map_err(
                |source| WatchError::Listen {
                    path: path.clone(),
                    source,
                },
            )?),
            None => None,
        };
    let mut d = Decision::new("started");
    d.detail = Some(format!(
        "{} rule(s) from {}{}",
        shared.rules().rules.len(),
        opts.rules_path.display(),
        opts.listen
            .as_ref()
            .map(|p| format!("; listening on {}", p.display()))
            .unwrap_or_default()
    ));
    shared.emit(d);
    let mut seen: HashMap<u32, PathBuf> = HashMap::new();
    let mut found = Discovery::new();
    while control.stops() == 0 {
        if control.reload.swap(false, Ordering::SeqCst) {
            reload(&shared, &opts.rules_path);
        }
        poll(&shared, &mut found, &mut seen);
        if let Ok(mut w) = shared.workers.lock() {
            w.retain(|w| !w.is_finished());
        }
        sleep_unless_stopped(opts.poll, control);
    }
    shared.stopping.store(true, Ordering::SeqCst);
    let open = shared.traces.lock().map(|t| t.len()).unwrap_or(0);
    let mut d = Decision::new("stopping");
    d.detail = Some(format!("finishing {open} open trace(s)"));
    shared.emit(d);
    drop(port);
    finish(&shared, control);
    let end = WatchEnd {
        actions: shared.actions.load(Ordering::SeqCst),
        failures: shared.failures.load(Ordering::SeqCst),
    };
    let mut d = Decision::new("stopped");
    d.detail = Some(format!(
        "{} action(s), {} failed",
        end.actions, end.failures
    ));
    shared.emit(d);
    Ok(end)
}

/// Stops the open traces (each finishes whole) and waits for every thread; a second stop
/// request is passed on (the traces stop waiting for their rundowns).
fn finish(shared: &Shared, control: &WatchControl) {
    let mut passed = 0;
    let pass_on = |n: u32| {
        if let Ok(t) = shared.traces.lock() {
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
        shared
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
    let workers = shared
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
fn reload(shared: &Shared, path: &Path) {
    match RuleSet::load(path) {
        Ok(set) => {
            let mut d = Decision::new("reloaded");
            d.detail = Some(format!(
                "{} rule(s) from {}",
                set.rules.len(),
                path.display()
            ));
            if let Ok(mut r) = shared.rules.write() {
                *r = Arc::new(set);
            }
            shared.emit(d);
        }
        Err(e) => {
            let mut d = Decision::new("reload_failed");
            d.detail = Some(format!("{e}; the previous rules stay in force"));
            shared.emit(d);
        }
    }
}

/// True when `ep`'s socket is older than its process (started at `ticks` after boot): a
/// runtime's socket left behind, its pid since reused by a process that is not .NET.
fn stale(ep: &diagnostics_client::Endpoint, ticks: u64) -> bool {
    let Ok(made) = std::fs::metadata(&ep.path).and_then(|m| m.modified()) else {
        return false;
    };
    let Some(started) = crate::act::start_time(ticks) else {
        return false;
    };
    made + Duration::from_secs(2) < started
}

/// Lists the runtimes' sockets and starts a thread for each process not seen before (a pid
/// reused by a new process counts as new: its socket's name differs).
fn poll(shared: &Arc<Shared>, found: &mut Discovery, seen: &mut HashMap<u32, PathBuf>) {
    let endpoints = found.endpoints();
    let live: HashSet<u32> = endpoints.iter().map(|e| e.pid).collect();
    seen.retain(|pid, _| live.contains(pid));
    for ep in endpoints {
        // A reused pid's runtime makes a socket of another name: the pair is the process.
        if seen.get(&ep.pid) == Some(&ep.path) {
            continue;
        }
        seen.insert(ep.pid, ep.path.clone());
        let started = crate::act::start_ticks(ep.pid).unwrap_or(0);
        if stale(&ep, started) || crate::port::belongs_to_port(shared, ep.pid) {
            continue;
        }
        shared.spawn(format!("clrspy-watch-{}", ep.pid), move |s| {
            crate::act::on_new_process(s, ep)
        });
    }
    if let Ok(mut c) = shared.claimed.lock() {
        c.retain(|p| Path::new(&format!("/proc/{p}")).exists());
    }
    if let Ok(mut m) = shared.matched.lock() {
        m.prune();
    }
    if let Ok(mut w) = shared.crash_watched.lock() {
        w.retain(|(p, _, _), _| Path::new(&format!("/proc/{p}")).exists());
    }
    if let Ok(mut h) = shared.hooked.lock() {
        h.retain(|(p, _, _)| Path::new(&format!("/proc/{p}")).exists());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let say: Say = Box::new(move |d| s.lock().unwrap().push(d.human()));
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
            crate::parse::Syntax::Json,
        )
        .unwrap();
        let e = watch(set, &opts, &WatchControl::new(), Box::new(|_| {})).unwrap_err();
        assert!(e.to_string().contains("a-file/sub"), "{e}");
    }
}
