//! What to call a thread. Linux gives a new thread its creator's name, so every thread an app
//! starts with `new Thread()` from a request is `.NET TP Worker` to the kernel, though it is no
//! pool worker; one started from `Main` is named after the program. A thread is called a pool
//! worker here only when the runtime says so — the pool's worker events were written on it, or
//! its stack runs the pool's worker loop — and a thread whose name is not its own is called by
//! what started it: `thread started by thread 407 (.NET TP Worker)` when the trace saw it
//! created, else by the method its stack starts in.
//!
//! ```
//! use clrspy_analysis::thread_names::{ThreadFacts, StartedBy};
//! let waiter = ThreadFacts {
//!     name: Some(".NET TP Worker".into()),
//!     started: Some(StartedBy::App("App.Locks+<>c.<Deadlock>b__3_1".into())),
//!     ..ThreadFacts::default()
//! };
//! assert_eq!(waiter.display().as_deref(), Some("thread started by App.Locks.Deadlock"));
//! ```

/// The OS name the runtime gives its thread-pool workers.
pub(crate) const POOL_WORKER_NAME: &str = ".NET TP Worker";

/// Linux keeps 15 bytes of a thread's name (what /proc shows, and what clrspy records); the
/// runtime's and the libraries' own long thread names are known, and come back whole.
/// Names a program gives its own threads stay as the kernel kept them.
const LONG_THREAD_NAMES: &[&str] = &[
    ".NET Tiered Compilation Worker",
    ".NET Counter Poller",
    ".NET File Watcher",
    "Console logger queue processing thread",
];

/// The whole name of a known runtime or library thread whose name Linux cut to 15 bytes.
pub(crate) fn full_thread_name(kernel_name: &str) -> Option<&'static str> {
    if kernel_name.len() != 15 {
        return None;
    }
    LONG_THREAD_NAMES
        .iter()
        .copied()
        .find(|full| full.starts_with(kernel_name))
}

/// An OS name as reports show it: whole when it is a known long name Linux cut, and without
/// the spaces around it (a cut can end in one: `Console logger `).
pub fn clean_name(os_name: &str) -> String {
    full_thread_name(os_name)
        .unwrap_or(os_name)
        .trim()
        .to_string()
}

/// What a thread's stack says started it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartedBy {
    /// The thread pool, to run its worker loop.
    Pool,
    /// The app, with `new Thread(...)`: the method the thread was started with.
    App(String),
}

/// A frame of the thread pool's worker loop (a pool worker's outermost managed code).
fn is_pool_loop(frame: &str) -> bool {
    frame.starts_with("System.Threading.PortableThreadPool+WorkerThread.")
}

/// A frame of the runtime's start of a `new Thread()` (`Thread+StartHelper.Run`, `.Callback`).
fn is_thread_start(frame: &str) -> bool {
    frame.starts_with("System.Threading.Thread+StartHelper.")
}

/// Frames of the start path between the start helper and the app's method.
fn is_start_plumbing(frame: &str) -> bool {
    is_thread_start(frame)
        || frame.starts_with("System.Threading.ExecutionContext.Run")
        || frame.starts_with("System.Threading.Thread.StartCallback")
}

/// What a stack (frames innermost first) says started its thread, when its outer frames show
/// it: the pool's worker loop, or the runtime's start of a `new Thread()` (then the method it
/// runs: the frame just inside the start path).
pub fn started_by(frames: &[String]) -> Option<StartedBy> {
    if frames.iter().any(|f| is_pool_loop(f)) {
        return Some(StartedBy::Pool);
    }
    let start = frames.iter().position(|f| is_thread_start(f))?;
    let method = frames[..start]
        .iter()
        .rev()
        .find(|f| !is_start_plumbing(f))?;
    Some(StartedBy::App(method.clone()))
}

/// The method that wrote a thread's start method when it is a lambda or a local function
/// (`Ns.Type+<>c__DisplayClass4_0.<FormDeadlock>b__1` → `Ns.Type.FormDeadlock`): the code
/// that started the thread. None for a plain method (it says what runs, not who started it).
fn creating_method(start: &str) -> Option<String> {
    let start = start.split('(').next().unwrap_or(start);
    let (owner, member) = start.rsplit_once(".<")?;
    let (enclosing, _) = member.split_once('>')?;
    if enclosing.is_empty() {
        return None;
    }
    // The compiler's closure class is nested in the declaring type: `Type+<>c...`.
    let declaring = owner
        .rsplit_once('+')
        .filter(|(_, nested)| nested.starts_with("<>c"))
        .map_or(owner, |(t, _)| t);
    Some(format!("{declaring}.{enclosing}"))
}

/// What the trace or the runtime knows of one thread, to name it by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadFacts {
    /// Its OS name ([`clean_name`]), when known.
    pub name: Option<String>,
    /// True when the pool's worker events (`ThreadPoolWorkerThread/Start`, `/Stop`, `/Wait`)
    /// were written on it.
    pub pool_events: bool,
    /// What its stacks say started it.
    pub started: Option<StartedBy>,
    /// The thread that started it, as shown (`thread 407 (.NET TP Worker)`), when the trace
    /// saw it created (`Thread/Creating` on the creator, `Thread/Running` on it).
    pub creator: Option<String>,
    /// Names this thread would have from its creator, not its own: the creator's OS name,
    /// the process's main thread's.
    pub inheritable: Vec<String>,
}

impl ThreadFacts {
    /// True when the runtime says the thread is a pool worker.
    pub fn is_pool_worker(&self) -> bool {
        self.pool_events || self.started == Some(StartedBy::Pool)
    }

    /// True when the runtime says the thread is something else than a pool worker: the app
    /// started it, or the trace saw it created by a thread.
    fn known_not_pool(&self) -> bool {
        !self.is_pool_worker() && (self.creator.is_some() || self.started.is_some())
    }

    /// True when its OS name is not its own: inherited from its creator.
    pub fn name_inherited(&self) -> bool {
        let Some(n) = self.name.as_deref() else {
            return false;
        };
        if self.is_pool_worker() {
            return false;
        }
        (n == POOL_WORKER_NAME && self.known_not_pool()) || self.inheritable.iter().any(|i| i == n)
    }

    /// The name to show: its own name (a pool worker's is the runtime's), else what started
    /// it, else the OS name when nothing better is known (None: no name at all).
    pub fn display(&self) -> Option<String> {
        if !self.name_inherited() {
            if let Some(n) = &self.name {
                return Some(n.clone());
            }
        }
        if let Some(c) = &self.creator {
            return Some(format!("thread started by {c}"));
        }
        match &self.started {
            Some(StartedBy::App(m)) => Some(match creating_method(m) {
                Some(c) => format!("thread started by {c}"),
                None => format!("thread started to run {m}"),
            }),
            _ => self.name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(f: &[&str]) -> Vec<String> {
        f.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_cut_by_linux_come_back_whole_and_trimmed() {
        assert_eq!(
            full_thread_name(".NET Tiered Com"),
            Some(".NET Tiered Compilation Worker")
        );
        assert_eq!(
            clean_name("Console logger "),
            "Console logger queue processing thread"
        );
        assert_eq!(clean_name(" my thread  "), "my thread");
        // Short names are whole already; a program's own cut names are left as they are.
        assert_eq!(full_thread_name(POOL_WORKER_NAME), None);
        assert_eq!(clean_name("MyApp.Backgroun"), "MyApp.Backgroun");
    }

    #[test]
    fn the_stack_says_what_started_a_thread() {
        // A `new Thread(lambda)` as .NET 10 samples it (the start path's frames outermost).
        let app = frames(&[
            "System.Threading.Monitor.Enter_Slowpath",
            "DiagScenarios.Locks.TakeSecondThenFirst",
            "DiagScenarios.Locks+<>c__DisplayClass4_0.<FormDeadlock>b__1",
            "System.Threading.Thread+StartHelper.Callback",
            "System.Threading.ExecutionContext.RunInternal",
            "System.Threading.Thread+StartHelper.Run",
            "System.Threading.Thread.StartCallback",
            "libcoreclr.so!+0x1234",
        ]);
        let started = started_by(&app).unwrap();
        let StartedBy::App(m) = &started else {
            panic!("{started:?}")
        };
        assert_eq!(
            m,
            "DiagScenarios.Locks+<>c__DisplayClass4_0.<FormDeadlock>b__1"
        );
        assert_eq!(
            creating_method(m).as_deref(),
            Some("DiagScenarios.Locks.FormDeadlock")
        );
        // A method group: it says what runs, not who started it.
        let plain = frames(&[
            "DiagScenarios.Locks.WaitForFirst",
            "System.Threading.Thread+StartHelper.Callback",
        ]);
        assert_eq!(
            started_by(&plain),
            Some(StartedBy::App("DiagScenarios.Locks.WaitForFirst".into()))
        );
        assert_eq!(creating_method("DiagScenarios.Locks.WaitForFirst"), None);
        // A lambda with no closure, and a local function.
        assert_eq!(
            creating_method("App.Program+<>c.<Main>b__0_0").as_deref(),
            Some("App.Program.Main")
        );
        assert_eq!(
            creating_method("App.Worker.<Run>g__Loop|2_0()").as_deref(),
            Some("App.Worker.Run")
        );
        let worker = frames(&[
            "DiagScenarios.Locks.WaitForFirst",
            "System.Threading.ThreadPoolWorkQueue.Dispatch",
            "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart",
            "System.Threading.Thread.StartCallback",
        ]);
        assert_eq!(started_by(&worker), Some(StartedBy::Pool));
        assert_eq!(started_by(&frames(&["App.Main"])), None);
    }

    #[test]
    fn a_pool_worker_only_when_the_runtime_says_so() {
        let inherited = ThreadFacts {
            name: Some(POOL_WORKER_NAME.into()),
            started: Some(StartedBy::App("App.Locks.WaitForFirst".into())),
            ..ThreadFacts::default()
        };
        assert!(!inherited.is_pool_worker() && inherited.name_inherited());
        assert_eq!(
            inherited.display().as_deref(),
            Some("thread started to run App.Locks.WaitForFirst")
        );
        // The trace saw it created: its creator names it.
        let created = ThreadFacts {
            creator: Some("thread 407 (.NET TP Worker)".into()),
            ..inherited.clone()
        };
        assert_eq!(
            created.display().as_deref(),
            Some("thread started by thread 407 (.NET TP Worker)")
        );
        // Pool workers keep the runtime's name, by events or by stack.
        for w in [
            ThreadFacts {
                name: Some(POOL_WORKER_NAME.into()),
                pool_events: true,
                ..ThreadFacts::default()
            },
            ThreadFacts {
                name: Some(POOL_WORKER_NAME.into()),
                started: Some(StartedBy::Pool),
                creator: Some("thread 9 (.NET TP Gate)".into()),
                ..ThreadFacts::default()
            },
        ] {
            assert!(w.is_pool_worker());
            assert_eq!(w.display().as_deref(), Some(POOL_WORKER_NAME));
        }
        // Nothing known either way: the OS name stays.
        let unknown = ThreadFacts {
            name: Some(POOL_WORKER_NAME.into()),
            ..ThreadFacts::default()
        };
        assert_eq!(unknown.display().as_deref(), Some(POOL_WORKER_NAME));
        // A name of its own stays; the main thread's name on another thread is inherited.
        let named = ThreadFacts {
            name: Some("deadlock-a".into()),
            started: Some(StartedBy::App("App.Deadlock.Run".into())),
            inheritable: vec!["dotnet".into()],
            ..ThreadFacts::default()
        };
        assert_eq!(named.display().as_deref(), Some("deadlock-a"));
        let from_main = ThreadFacts {
            name: Some("dotnet".into()),
            ..named
        };
        assert_eq!(
            from_main.display().as_deref(),
            Some("thread started to run App.Deadlock.Run")
        );
        assert_eq!(ThreadFacts::default().display(), None);
    }
}
