//! A bound on each live test: a test that waits for ever (a child that never says it is ready,
//! a process that never ends) must fail the run with a report of where it waited, not hold CI
//! until its own time runs out. Every `live()` call registers its test (the thread libtest runs
//! it on) until that thread ends; once a test has run over [`LIMIT`] (or `CLRSPY_TEST_LIMIT_S`
//! seconds), the watchdog writes which test it is, what every thread of the test binary is
//! blocked in and every process it started, kills those processes, and exits with 101.
//!
//! The bound is per test, not per binary: one test binary runs all the live tests, for longer
//! than any bound that fits one test. A test's time includes its waits for its turn
//! (`common::alone`, `common::machine`).

use std::cell::RefCell;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// The longest a live test may run, its waits for its turn included (the slowest takes about
/// two minutes).
pub const LIMIT: Duration = Duration::from_secs(20 * 60);

/// The live tests running now: a key of their own, their name, when they registered.
static RUNNING: Mutex<Vec<(u64, String, Instant)>> = Mutex::new(Vec::new());

/// Hands out the keys.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Removes its test from [`RUNNING`] when the test's thread ends (passed or failed).
struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|r| r.0 != self.0);
    }
}

thread_local! {
    static REGISTERED: RefCell<Option<Registered>> = const { RefCell::new(None) };
}

/// Registers the calling test (once per test) and starts the watchdog (once per test binary).
pub fn start() {
    REGISTERED.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            let key = NEXT.fetch_add(1, Ordering::Relaxed);
            let name = std::thread::current()
                .name()
                .unwrap_or("a test")
                .to_string();
            RUNNING
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((key, name, Instant::now()));
            *r = Some(Registered(key));
        }
    });
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let limit = std::env::var("CLRSPY_TEST_LIMIT_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(LIMIT, Duration::from_secs);
        let _ = std::thread::Builder::new()
            .name("test-watchdog".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_secs(1).min(limit));
                let over = RUNNING
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .find(|r| r.2.elapsed() >= limit)
                    .map(|r| r.1.clone());
                if let Some(test) = over {
                    expire(&test, limit);
                }
            });
    });
}

/// Writes the report straight to the standard error (not the test harness's capture), kills
/// the processes this binary started, and exits.
fn expire(test: &str, limit: Duration) -> ! {
    let me = std::process::id();
    let mut report = format!(
        "\n*** test watchdog: {test} in {} ran over {} s; it is waiting for something that will not come.\n\
         Threads of the test binary (name, kernel wait channel, syscall):\n",
        std::env::args().next().unwrap_or_default(),
        limit.as_secs()
    );
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let p = task.path();
        let read = |f: &str| {
            std::fs::read_to_string(p.join(f))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        report.push_str(&format!(
            "  {:?} {} wchan={} syscall={}\n",
            task.file_name(),
            read("comm"),
            read("wchan"),
            read("syscall").split(' ').next().unwrap_or("")
        ));
    }
    let descendants = descendants(me);
    report.push_str("Processes it started (pid, state, wchan, command line):\n");
    for pid in &descendants {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .unwrap_or("?");
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        report.push_str(&format!("  {pid} {state} {wchan} {}\n", cmd.trim()));
    }
    let _ = std::io::stderr().write_all(report.as_bytes());
    for pid in descendants {
        // SAFETY: kill has no memory preconditions.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    std::process::exit(101);
}

/// Every process below `root` (children first found by their parent pid in /proc).
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        for &(pid, ppid) in &parents {
            if ppid == p {
                out.push(pid);
                queue.push(pid);
            }
        }
    }
    out
}
