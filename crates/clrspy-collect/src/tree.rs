//! Process trees: a launched program and every .NET program it starts, directly or through
//! other programs, each recorded whole into its own trace (`<dir>/<name>_<pid>.nettrace`) from
//! its first instruction. The ports variable is inherited and left set, so every runtime of
//! the tree connects to clrspy's socket and waits; each gets a session on its first connection
//! and is resumed on its next, and its trace ends when it exits (the stream ends) or when the
//! recording stops.
//!
//! Build servers (the compiler server, MSBuild nodes with node reuse) outlive the program that
//! started them. When the launched program ends, the runtimes still running get the ports
//! variable cleared (so what they start later does not wait for a socket that is gone), then
//! their sessions are stopped with rundown, and they are left running untraced. Runtimes that
//! connect after that, or beyond the limit on traced processes, are resumed untraced.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diagnostics_client::{
    procfs, resume_runtime, start_session, Admission, Connector, HeldRuntime, ReverseHub,
    ReverseServer, SessionConfig,
};

use crate::launch::{
    clear_ports_variable, end_child, forward_interrupt, ported_command, socket_path, ChildOutput,
};
use crate::session::{pump, LiveFeeds, COMMAND_TIMEOUT};
use crate::sink::FileSink;
use crate::{Error, Recording, Result, StopSignal, Summary};

/// How to record a process tree.
pub struct TreeOptions<'a> {
    /// The session of every process (method loads are added, as for a launch).
    pub config: &'a SessionConfig,
    /// Where the traces go (must exist).
    pub dir: PathBuf,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Thread CPU reading interval per process (Linux), None for none.
    pub thread_cpu: Option<Duration>,
    /// Stop requests (the first stops every session with rundown, the second gives up
    /// waiting for the rundowns).
    pub stop: &'a StopSignal,
    /// Where the launched program's standard output goes.
    pub stdout: ChildOutput,
    /// More environment variables for the program (inherited by the tree).
    pub env: Vec<(OsString, OsString)>,
    /// Processes traced at most; more are let run untraced.
    pub max_processes: usize,
    /// How long the traces of processes still running after the launched program ended may
    /// take to finish (their rundown) before clrspy stops waiting.
    pub drain: Duration,
    /// Event consumers for each traced process, made when its recording starts (pid, name).
    pub consumers: Option<ConsumerFactory>,
    /// Who samples every traced process: a kernel sampler asked for is opened from the
    /// process's start (where it is not used, a note in that process's summary says why).
    pub sampler: crate::kernel::SamplerChoice,
}

/// Makes the event consumers of one process of a tree (from its pid and name).
pub type ConsumerFactory =
    Arc<dyn Fn(u32, &str) -> Vec<Box<dyn crate::EventConsumer>> + Send + Sync>;

impl std::fmt::Debug for TreeOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeOptions")
            .field("dir", &self.dir)
            .field("duration", &self.duration)
            .field("max_processes", &self.max_processes)
            .field("consumers", &self.consumers.is_some())
            .finish()
    }
}

/// One process's trace.
#[derive(Debug)]
pub struct TreeTrace {
    /// The process.
    pub pid: u32,
    /// Its name (entry assembly, or program).
    pub name: String,
    /// Its trace.
    pub path: PathBuf,
    /// The recording, or why it failed.
    pub result: Result<Summary>,
    /// True when it was still running when the launched program ended (a server): its session
    /// was stopped then and the process left running.
    pub outlived_root: bool,
}

/// What a tree recording says as it goes (on the caller's thread).
#[derive(Debug)]
pub enum TreeNotice<'a> {
    /// The program was started.
    Spawned {
        /// Its pid.
        pid: u32,
    },
    /// A process's recording started.
    Recording {
        /// The process.
        pid: u32,
        /// Its name.
        name: &'a str,
        /// Its trace.
        path: &'a Path,
    },
    /// A process's trace is finished.
    Ended(&'a TreeTrace),
    /// The launched program ended while these processes still ran: their sessions are being
    /// stopped.
    Outliving(&'a [(u32, String)]),
}

/// What a tree recording left.
#[derive(Debug)]
pub struct TreeOutcome {
    /// The launched program's pid.
    pub pid: u32,
    /// How it ended (None when clrspy could not tell).
    pub status: Option<ExitStatus>,
    /// True when clrspy ended it (the recording stopped before the program did).
    pub terminated_by_clrspy: bool,
    /// Every traced process, in the order their traces ended.
    pub traces: Vec<TreeTrace>,
    /// Runtimes that connected and were let run untraced.
    pub untraced: u64,
}

/// What the acceptor and the recorders tell the main loop.
enum Event {
    /// A runtime connected for the first time.
    New { pid: u32, port: Arc<HeldRuntime> },
    /// Its recording started.
    Recording {
        pid: u32,
        name: String,
        path: PathBuf,
    },
    /// Its trace ended.
    Done(Box<TreeTrace>),
}

/// Serves the tree's reverse port on a thread: a runtime that connects while `tracing` says so
/// is announced to the main loop (its recorder takes its connections); the others are let run
/// untraced (counted by the hub).
fn start_port(
    server: ReverseServer,
    events: Sender<Event>,
    tracing: Arc<AtomicBool>,
) -> diagnostics_client::Result<ReverseHub> {
    ReverseHub::start(server, "clrspy-tree-port", COMMAND_TIMEOUT, move |rt| {
        if !tracing.load(Ordering::SeqCst) {
            return Admission::Release(rt);
        }
        let pid = rt.advertisement().pid;
        // Once its recorder is gone, its connections are parked.
        let _ = events.send(Event::New {
            pid,
            port: Arc::new(rt),
        });
        Admission::Taken
    })
}

/// A process's name for its trace: the entry assembly of `dotnet [exec ...] X.dll`, else the
/// program's, made safe for a file name.
pub(crate) fn process_name(pid: u32) -> String {
    let args: Vec<OsString> = procfs::cmdline(pid)
        .unwrap_or_default()
        .into_iter()
        .map(OsString::from)
        .collect();
    let dll = args
        .iter()
        .skip(1)
        .find(|a| a.to_string_lossy().to_ascii_lowercase().ends_with(".dll"))
        .and_then(|a| Path::new(a).file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    let name = match dll {
        Some(n) => n,
        None if !args.is_empty() => crate::launch_name(&args),
        None => procfs::comm(pid).unwrap_or_default(),
    };
    let safe: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    if safe.is_empty() {
        "process".into()
    } else {
        safe
    }
}

/// What a recorder needs besides its runtime.
#[derive(Clone)]
struct RecorderSetup {
    config: SessionConfig,
    dir: PathBuf,
    duration: Option<Duration>,
    thread_cpu: Option<Duration>,
    consumers: Option<ConsumerFactory>,
    sampler: crate::kernel::SamplerChoice,
}

/// Records one runtime of the tree until its stream ends or `stop` asks.
fn record_runtime(
    pid: u32,
    port: Arc<HeldRuntime>,
    setup: &RecorderSetup,
    stop: &StopSignal,
    events: &Sender<Event>,
) -> TreeTrace {
    let name = process_name(pid);
    let path = setup.dir.join(format!("{name}_{pid}.nettrace"));
    let result = (|| {
        let file = FileSink::create(&path)?;
        let mut live = LiveFeeds {
            consumers: setup
                .consumers
                .as_ref()
                .map(|f| f(pid, &name))
                .unwrap_or_default(),
            sampler: setup.sampler,
            ..LiveFeeds::default()
        };
        let (config, refused) =
            crate::kernel::open_asked(pid, &setup.config, live.sampler, &mut live.kernel_sampler);
        let session = match start_session(port.as_ref(), &config, COMMAND_TIMEOUT) {
            Ok(s) => s,
            Err(e) => {
                // It must not wait for clrspy forever.
                let _ = resume_runtime(port.as_ref(), COMMAND_TIMEOUT);
                drop(file);
                let _ = std::fs::remove_file(&path);
                return Err(Error::from(e));
            }
        };
        let _ = events.send(Event::Recording {
            pid,
            name: name.clone(),
            path: path.clone(),
        });
        resume_runtime(port.as_ref(), COMMAND_TIMEOUT)?;
        let rec = Recording {
            config: &config,
            out: Some(&path),
            duration: setup.duration,
            stop,
            thread_cpu: setup.thread_cpu,
            ring: None,
        };
        let to: Arc<dyn Connector> = port.clone();
        let mut summary = pump(
            session,
            to,
            Some(Box::new(file)),
            pid,
            &rec,
            live,
            &mut |_| {},
        )?;
        summary.notes.extend(refused);
        Ok(summary)
    })();
    TreeTrace {
        pid,
        name,
        path,
        result,
        outlived_root: false,
    }
}

/// A runtime being recorded.
struct Running {
    port: Arc<HeldRuntime>,
    stop: Arc<StopSignal>,
    name: String,
    outlived: bool,
}

/// Starts `program args` with the ports variable set and records every .NET process of its
/// tree as `opts` say; `on` hears what happens.
pub fn record_tree(
    program: &OsStr,
    args: &[OsString],
    opts: &TreeOptions<'_>,
    on: &mut dyn FnMut(&TreeNotice<'_>),
) -> Result<TreeOutcome> {
    let server = ReverseServer::bind(&socket_path())?;
    let ports_value = server.diagnostic_ports_value();
    let (etx, erx) = channel::<Event>();
    let tracing = Arc::new(AtomicBool::new(true));
    let hub = start_port(server, etx.clone(), tracing.clone())?;
    let mut command = ported_command(program, args, &opts.env, &ports_value, opts.stdout);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(source) => {
            hub.stop();
            return Err(Error::Spawn {
                program: PathBuf::from(program),
                source,
            });
        }
    };
    let pid = child.id();
    on(&TreeNotice::Spawned { pid });
    let setup = RecorderSetup {
        config: crate::run::with_method_loads(opts.config),
        dir: opts.dir.clone(),
        duration: opts.duration,
        thread_cpu: opts.thread_cpu,
        consumers: opts.consumers.clone(),
        sampler: opts.sampler,
    };
    let mut tree = Tree {
        running: HashMap::new(),
        traces: Vec::new(),
        threads: Vec::new(),
        etx,
        setup,
        max: opts.max_processes,
        stopping: false,
    };
    let started = Instant::now();
    let mut status: Option<ExitStatus> = None;
    let mut stop_requests = 0;
    let mut drain_until: Option<Instant> = None;
    let mut gave_up = false;
    // Bounded: it ends when the program has ended (or was asked to stop) and every trace is
    // finished, or `drain` after that.
    loop {
        match erx.recv_timeout(Duration::from_millis(50)) {
            Ok(ev) => tree.event(ev, on, &tracing),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if status.is_none() {
            status = child.try_wait().ok().flatten();
            if status.is_some() {
                // The program ended: what still runs is a server; stop recording it.
                tracing.store(false, Ordering::SeqCst);
                tree.stop_outliving(on);
                drain_until = Some(Instant::now() + opts.drain);
            }
        }
        let asked = opts.stop.count();
        let timed_out = opts.duration.is_some_and(|d| started.elapsed() >= d);
        if asked > stop_requests || (timed_out && stop_requests == 0 && status.is_none()) {
            stop_requests = asked.max(1);
            tracing.store(false, Ordering::SeqCst);
            tree.stopping = true;
            for r in tree.running.values() {
                r.stop.request();
            }
            drain_until.get_or_insert(Instant::now() + opts.drain);
        }
        if drain_until.is_some_and(|t| Instant::now() >= t) && !gave_up {
            // The rundowns took too long: stop waiting for them.
            gave_up = true;
            for r in tree.running.values() {
                r.stop.request();
                r.stop.request();
            }
        }
        if (status.is_some() || stop_requests > 0) && tree.running.is_empty() {
            break;
        }
    }
    // Late events (a trace that ended as the loop did).
    while let Ok(ev) = erx.try_recv() {
        tree.event(ev, on, &tracing);
    }
    let mut terminated_by_clrspy = false;
    if status.is_none() {
        // Stopped before the program ended: pass the Ctrl+C on, as a launch does.
        if opts.stop.count() > 0 {
            forward_interrupt(&child);
        }
        let until = Instant::now() + Duration::from_secs(2);
        while status.is_none() && Instant::now() < until {
            status = child.try_wait().ok().flatten();
            std::thread::sleep(Duration::from_millis(20));
        }
        if status.is_none() {
            terminated_by_clrspy = true;
            status = end_child(&mut child, Duration::from_secs(5));
        }
    }
    let untraced = hub.stop();
    for t in tree.threads.drain(..) {
        if t.is_finished() {
            let _ = t.join();
        }
    }
    Ok(TreeOutcome {
        pid,
        status,
        terminated_by_clrspy,
        traces: tree.traces,
        untraced,
    })
}

/// The main loop's state.
struct Tree {
    running: HashMap<u32, Running>,
    traces: Vec<TreeTrace>,
    threads: Vec<std::thread::JoinHandle<()>>,
    etx: Sender<Event>,
    setup: RecorderSetup,
    max: usize,
    /// Sessions are being stopped: runtimes connecting now are stopped at once.
    stopping: bool,
}

impl Tree {
    fn event(&mut self, ev: Event, on: &mut dyn FnMut(&TreeNotice<'_>), tracing: &AtomicBool) {
        match ev {
            Event::New { pid, port } => {
                let stop = Arc::new(StopSignal::new());
                let (s, p, tx, setup) = (
                    stop.clone(),
                    port.clone(),
                    self.etx.clone(),
                    self.setup.clone(),
                );
                let spawned = std::thread::Builder::new()
                    .name(format!("clrspy-tree-{pid}"))
                    .spawn(move || {
                        let t = record_runtime(pid, p, &setup, &s, &tx);
                        let _ = tx.send(Event::Done(Box::new(t)));
                    });
                if let Ok(h) = spawned {
                    self.threads.push(h);
                    self.running.insert(
                        pid,
                        Running {
                            port,
                            stop: stop.clone(),
                            name: process_name(pid),
                            outlived: self.stopping,
                        },
                    );
                    if self.stopping {
                        // It connected as the others were being stopped.
                        stop.request();
                    }
                    if self.running.len() + self.traces.len() >= self.max {
                        tracing.store(false, Ordering::SeqCst);
                    }
                }
            }
            Event::Recording { pid, name, path } => on(&TreeNotice::Recording {
                pid,
                name: &name,
                path: &path,
            }),
            Event::Done(mut t) => {
                if let Some(r) = self.running.remove(&t.pid) {
                    t.outlived_root = r.outlived;
                }
                on(&TreeNotice::Ended(&t));
                self.traces.push(*t);
            }
        }
    }

    /// The program ended: the runtimes still recorded get the variable cleared, then their
    /// sessions are stopped (with rundown).
    fn stop_outliving(&mut self, on: &mut dyn FnMut(&TreeNotice<'_>)) {
        self.stopping = true;
        if self.running.is_empty() {
            return;
        }
        let names: Vec<(u32, String)> = self
            .running
            .iter()
            .map(|(p, r)| (*p, r.name.clone()))
            .collect();
        on(&TreeNotice::Outliving(&names));
        for r in self.running.values_mut() {
            r.outlived = true;
            clear_ports_variable(r.port.as_ref());
            r.stop.request();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_name() {
        // The test binary: no .dll argument, so the program's name.
        let n = process_name(std::process::id());
        assert!(!n.is_empty());
        assert!(
            n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{n}"
        );
        assert_eq!(process_name(u32::MAX - 1), "process");
    }
}
