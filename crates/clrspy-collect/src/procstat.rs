//! Reading a process's threads and code mappings from /proc while it is recorded: each thread's
//! CPU time and run-queue time (`/proc/<pid>/task/<tid>/schedstat`: nanoseconds on CPU, then
//! nanoseconds runnable but waiting for a CPU; `stat`'s utime+stime in clock ticks where
//! schedstat is missing, and no run-queue time then), state, name and end, and the executable mappings of
//! `/proc/<pid>/maps` (to name native frames `module!+offset`). Linux only; elsewhere every
//! reading is empty.

use std::collections::HashMap;
use std::time::Duration;

/// How often each thread's CPU time is read into a trace unless the caller says otherwise:
/// `record`'s `--thread-cpu-interval` default, and what watch, top and the agent use. It is
/// what tells CPU from waiting.
pub const THREAD_CPU_INTERVAL: Duration = Duration::from_millis(20);

/// One thread's reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadReading {
    /// OS thread id.
    pub tid: u32,
    /// CPU time used so far, ns.
    pub cpu_ns: u64,
    /// Time so far runnable but waiting for a CPU, ns (schedstat's second field); `None`
    /// without schedstat.
    pub runqueue_ns: Option<u64>,
    /// Scheduler state: R running, S sleeping, D disk wait, ...; `GONE` once, when the
    /// thread has ended (its last values repeated).
    pub state: u8,
    /// The thread's name, only when first seen or renamed.
    pub name: Option<String>,
}

/// The state of a thread's reading once it is gone.
pub(crate) const GONE: u8 = b'X';

/// Parses a `schedstat` line: (ns on CPU, ns waiting on a run queue).
pub(crate) fn parse_schedstat(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace();
    let cpu = f.next()?.parse().ok()?;
    let runq = f.next()?.parse().ok()?;
    Some((cpu, runq))
}

/// What was last reported of a thread.
#[derive(Debug)]
struct Last {
    cpu_ns: u64,
    runqueue_ns: Option<u64>,
    state: u8,
    name: String,
}

/// An executable mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// The mapped file.
    pub path: String,
}

/// Parses a `stat` line: (state, name, utime + stime in clock ticks). The name sits in
/// parentheses and may itself contain spaces and parentheses: it ends at the last ')'.
pub(crate) fn parse_stat(line: &str) -> Option<(u8, String, u64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let name = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] = state (field 3); utime, stime are fields 14 and 15.
    let state = *rest.first()?.as_bytes().first()?;
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((state, name, utime.saturating_add(stime)))
}

/// Parses one `maps` line into an executable, file-backed mapping (a deleted file's path
/// keeps its ` (deleted)`), or the kernel's virtual library (`[vdso]`: `clock_gettime` and
/// friends run there, called by `Stopwatch` and `DateTime.UtcNow`).
pub(crate) fn parse_maps_line(line: &str) -> Option<Mapping> {
    let m = diagnostics_client::procfs::parse_maps_line(line)?;
    if !m.executable() || !(m.path.starts_with('/') || m.path == crate::native::VDSO) {
        return None;
    }
    Some(Mapping {
        start: m.start,
        end: m.end,
        offset: m.offset,
        path: m.path.to_string(),
    })
}

/// Reads a process's threads and mappings, reporting only what changed since the last call.
#[derive(Debug)]
pub struct ProcSampler {
    pid: u32,
    last: HashMap<u32, Last>,
    mappings: HashMap<u64, Mapping>,
    ticks_per_second: u64,
    /// Calls to [`ProcSampler::threads`] so far.
    calls: u64,
    /// Each thread's `schedstat`, kept open and read again from its start (one system call
    /// a reading, not three), for the first [`OPEN_MAX`] threads.
    schedstat: HashMap<u32, std::fs::File>,
    /// Where CPU times come from: "schedstat" (ns) or "stat" (clock ticks).
    pub source: &'static str,
}

/// Thread states and names (from `stat`) are re-read every this many readings; CPU times (from
/// `schedstat`, one small read) every time.
const STAT_EVERY: u64 = 10;
/// The most `schedstat` files kept open (a process with more threads has the rest opened at
/// each reading: the kernel sampler holds two descriptors a thread already).
const OPEN_MAX: usize = 256;

impl ProcSampler {
    /// A sampler of process `pid` (as seen from here).
    pub fn new(pid: u32) -> ProcSampler {
        ProcSampler {
            pid,
            last: HashMap::new(),
            mappings: HashMap::new(),
            ticks_per_second: diagnostics_client::procfs::clock_ticks_per_second().unwrap_or(100),
            calls: 0,
            schedstat: HashMap::new(),
            source: "schedstat",
        }
    }

    /// True when the process is still there.
    pub fn alive(&self) -> bool {
        diagnostics_client::procfs::alive(self.pid)
    }

    /// The threads whose CPU time, run-queue time or state changed since the last call (all
    /// of them the first time), with names for threads seen for the first time or renamed,
    /// and a `GONE` reading for each thread that ended since.
    pub fn threads(&mut self) -> Vec<ThreadReading> {
        let mut out = Vec::new();
        let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return out;
        };
        let mut seen = std::collections::HashSet::new();
        for entry in dir.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // A thread can end between the listing and the reads: skip it quietly.
            if let Some(r) = self.read_thread(tid, &entry.path()) {
                seen.insert(tid);
                out.extend(r);
            }
        }
        let gone: Vec<u32> = self
            .last
            .keys()
            .copied()
            .filter(|t| !seen.contains(t))
            .collect();
        for tid in gone {
            self.schedstat.remove(&tid);
            if let Some(l) = self.last.remove(&tid) {
                out.push(ThreadReading {
                    tid,
                    cpu_ns: l.cpu_ns,
                    runqueue_ns: l.runqueue_ns,
                    state: GONE,
                    name: None,
                });
            }
        }
        self.calls += 1;
        out.sort_by_key(|r| r.tid);
        out
    }

    /// Thread `tid`'s `schedstat` (under `base`), from the file kept open when there is one.
    fn read_schedstat(&mut self, tid: u32, base: &std::path::Path) -> Option<String> {
        use std::os::unix::fs::FileExt;
        if !self.schedstat.contains_key(&tid) {
            let f = std::fs::File::open(base.join("schedstat")).ok()?;
            if self.schedstat.len() >= OPEN_MAX {
                let mut buf = [0u8; 128];
                let n = f.read_at(&mut buf, 0).ok()?;
                return Some(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
            self.schedstat.insert(tid, f);
        }
        let mut buf = [0u8; 128];
        match self.schedstat.get(&tid)?.read_at(&mut buf, 0) {
            Ok(n) if n > 0 => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
            // The thread ended (ESRCH): its file goes.
            _ => {
                self.schedstat.remove(&tid);
                None
            }
        }
    }

    /// Reads one thread: `None` when it could not be read (it ended), `Some(None)` when it
    /// did not change.
    fn read_thread(&mut self, tid: u32, base: &std::path::Path) -> Option<Option<ThreadReading>> {
        let sched = self
            .read_schedstat(tid, base)
            .and_then(|s| parse_schedstat(&s));
        let prev = self.last.get(&tid);
        let full = prev.is_none() || sched.is_none() || self.calls.is_multiple_of(STAT_EVERY);
        let (state, name, cpu_ns) = match (full, prev, sched) {
            (false, Some(p), Some((ns, _))) => (p.state, p.name.clone(), ns),
            _ => {
                let stat = std::fs::read_to_string(base.join("stat")).ok()?;
                let (state, name, ticks) = parse_stat(&stat)?;
                let cpu_ns = match sched {
                    Some((ns, _)) => ns,
                    None => {
                        self.source = "stat";
                        ticks.saturating_mul(1_000_000_000) / self.ticks_per_second
                    }
                };
                (state, name, cpu_ns)
            }
        };
        let runqueue_ns = sched.map(|s| s.1);
        let prev = self.last.get(&tid);
        let renamed = prev.is_none_or(|p| p.name != name);
        let same = prev.is_some_and(|p| {
            p.cpu_ns == cpu_ns && p.state == state && p.runqueue_ns == runqueue_ns
        });
        if same && !renamed {
            return Some(None);
        }
        let r = ThreadReading {
            tid,
            cpu_ns,
            runqueue_ns,
            state,
            name: renamed.then(|| name.clone()),
        };
        self.last.insert(
            tid,
            Last {
                cpu_ns,
                runqueue_ns,
                state,
                name,
            },
        );
        Some(Some(r))
    }

    /// Every executable mapping seen so far.
    pub fn mappings(&self) -> Vec<Mapping> {
        self.mappings.values().cloned().collect()
    }

    /// Executable mappings not reported before.
    pub(crate) fn new_mappings(&mut self) -> Vec<Mapping> {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in maps.lines().filter_map(parse_maps_line) {
            if self.mappings.get(&m.start).is_some_and(|old| *old == m) {
                continue;
            }
            self.mappings.insert(m.start, m.clone());
            out.push(m);
        }
        out
    }
}

/// This process's own CPU time so far (user + system, every thread), ns; `None` where the
/// platform does not say.
pub fn own_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: an all-zero rusage is a valid value for getrusage to fill in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes into the rusage we own.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return None;
        }
        let us = |t: libc::timeval| {
            (t.tv_sec as u64)
                .saturating_mul(1_000_000)
                .saturating_add(t.tv_usec as u64)
        };
        Some(
            us(ru.ru_utime)
                .saturating_add(us(ru.ru_stime))
                .saturating_mul(1000),
        )
    }
    #[cfg(not(unix))]
    None
}

/// The calling thread's own CPU time so far (user + system), ns; `None` where the platform
/// does not say.
pub fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: an all-zero timespec is a valid value for clock_gettime to fill in.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: clock_gettime writes into the timespec we own.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
            return None;
        }
        Some(
            (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64),
        )
    }
    #[cfg(not(unix))]
    None
}

/// CLOCK_MONOTONIC in nanoseconds: the clock the .NET runtime stamps EventPipe events with on
/// Linux (QueryPerformanceCounter, 1 GHz).
pub(crate) fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec we own.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } == 0 {
            return (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names() {
        let line = "123 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_stat(line), Some((b'S', "my (odd) name".into(), 300)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R"), None);
        assert_eq!(parse_schedstat("123 456 7\n"), Some((123, 456)));
        assert_eq!(parse_schedstat("123"), None);
    }

    #[test]
    fn maps_lines() {
        let m = parse_maps_line(
            "7f00aa000000-7f00aa100000 r-xp 00002000 08:01 1234   /usr/lib/libcoreclr.so",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.offset),
            (0x7f00aa000000, 0x7f00aa100000, 0x2000)
        );
        assert_eq!(m.path, "/usr/lib/libcoreclr.so");
        assert!(parse_maps_line("7f00-7f01 rw-p 0 00:00 0 [heap]").is_none());
        assert!(parse_maps_line("7f00-7f01 r-xp 0 00:00 0").is_none());
        let vdso = parse_maps_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0  [vdso]").unwrap();
        assert_eq!((vdso.start, vdso.path.as_str()), (0x7ffd1000, "[vdso]"));
        assert!(parse_maps_line("7ffd0000-7ffd1000 r--p 00000000 00:00 0  [vvar]").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_spinning_thread_gains_cpu_and_a_sleeping_one_does_not() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let spinner = std::thread::spawn(move || {
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            let mut x = 0u64;
            while !s2.load(Ordering::Relaxed) {
                x = x.wrapping_add(1);
                std::hint::black_box(x);
            }
        });
        let (tx2, rx2) = std::sync::mpsc::channel();
        let (wake, sleep_until) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tx2.send(unsafe { libc::gettid() } as u32).unwrap();
            // Blocked until the test ends (bounded, in case it never says).
            let _ = sleep_until.recv_timeout(std::time::Duration::from_secs(30));
        });
        let spin_tid = rx.recv().unwrap();
        let sleep_tid = rx2.recv().unwrap();
        let mut s = ProcSampler::new(std::process::id());
        let first = s.threads();
        let cpu = |r: &[ThreadReading], t: u32| r.iter().find(|x| x.tid == t).map(|x| x.cpu_ns);
        let a = cpu(&first, spin_tid).unwrap();
        let b = cpu(&first, sleep_tid).unwrap();
        // Read until the spinner has run 100 ms (a loaded machine gives it less than its wall
        // time), at most 10 s.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut spun = 0;
        let mut slept = None;
        while spun <= 100_000_000 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let now = s.threads();
            if let Some(a2) = cpu(&now, spin_tid) {
                spun = a2 - a;
            }
            if let Some(b2) = cpu(&now, sleep_tid) {
                slept = Some(b2 - b);
            }
        }
        assert!(spun > 100_000_000, "spinner gained only {spun} ns in 10 s");
        // The sleeper did not change: it is not reported again (or gained almost nothing).
        assert!(slept.is_none_or(|d| d < 10_000_000), "{slept:?}");
        let _ = wake.send(());
        assert!(!s.new_mappings().is_empty());
        assert!(s.new_mappings().is_empty());
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        sleeper.join().unwrap();
        // Both threads ended: each is reported gone once, with its last values.
        let end = s.threads();
        for t in [spin_tid, sleep_tid] {
            let r = end.iter().find(|x| x.tid == t).unwrap();
            assert_eq!(r.state, GONE);
            assert!(r.runqueue_ns.is_some());
        }
        assert!(s.threads().iter().all(|x| x.state != GONE));
        assert!(monotonic_ns() > 0);
    }
}
