//! A bound on a live test binary's whole run: a test that waits for ever (a child that never
//! says it is ready, a process that never ends) must fail the run with a report of where it
//! waited, not hold CI until its own time runs out. Started by the first `live()` call; after
//! [`LIMIT`] (or `CLRSPY_TEST_LIMIT_S` seconds) it writes what every thread of the test binary
//! is blocked in and every process it started, kills those processes, and exits with 101.

use std::io::Write;
use std::sync::Once;
use std::time::Duration;

/// The longest a live test binary may run (the slowest takes about two minutes).
pub const LIMIT: Duration = Duration::from_secs(20 * 60);

/// Starts the watchdog once per test binary.
pub fn start() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let limit = std::env::var("CLRSPY_TEST_LIMIT_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(LIMIT, Duration::from_secs);
        let _ = std::thread::Builder::new()
            .name("test-watchdog".into())
            .spawn(move || {
                std::thread::sleep(limit);
                expire(limit);
            });
    });
}

/// Writes the report straight to the standard error (not the test harness's capture), kills
/// the processes this binary started, and exits.
fn expire(limit: Duration) -> ! {
    let me = std::process::id();
    let mut report = format!(
        "\n*** test watchdog: {} ran over {} s; a test is waiting for something that will not come.\n\
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
