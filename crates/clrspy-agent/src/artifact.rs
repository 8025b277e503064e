//! What a long-running action writes and how it is kept within bounds: the disk budget (the
//! arithmetic that admits or refuses a new job, given what the agent's folder holds —
//! clrspy-rules' `folder_bytes` — and the disk's free space — clrspy-collect's `disk`) and the
//! job itself — a child process of the clrspy binary (`clrspy dump`, `clrspy gcdump`)
//! writing into a folder of its own, watched while it runs: killed when asked to stop, when the
//! budget is exceeded or when it overruns its time, and its folder emptied then (and killed with
//! the agent: `PR_SET_PDEATHSIG`). A finished artifact is measured and hashed (SHA-256) by
//! streaming it, never held whole.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clrspy_collect::StopSignal;
use sha2::{Digest, Sha256};

/// The free space a job always leaves on the folder's disk (as clrspy-watch's `MIN_FREE`
/// leaves for its dumps, and more: a dump is written by the runtime as it goes).
pub(crate) const MIN_FREE: u64 = 64 << 20;

/// How often a running job is looked at (stop asked, budget, time).
const POLL: Duration = Duration::from_millis(100);

/// The disk budget: the most the agent's folder may hold, and the free space to leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// The most the folder may hold, bytes (`disk_mb`).
    pub(crate) limit: u64,
    /// The least free space to leave on its disk, bytes.
    pub(crate) min_free: u64,
}

impl Budget {
    /// The budget of `disk_mb` MB, leaving [`MIN_FREE`].
    pub(crate) fn from_mb(disk_mb: u64) -> Budget {
        Budget {
            limit: disk_mb.saturating_mul(1 << 20),
            min_free: MIN_FREE,
        }
    }

    /// Whether a job estimated at `estimate` bytes may start while the folder holds `used`,
    /// the jobs under way are estimated at `reserved` together, and the disk has `free`
    /// bytes (None: unknown, not checked). The refusal says why, in bytes and MB.
    pub(crate) fn admits(
        &self,
        used: u64,
        reserved: u64,
        estimate: u64,
        free: Option<u64>,
    ) -> Result<(), String> {
        let need = used.saturating_add(reserved).saturating_add(estimate);
        if need > self.limit {
            return Err(format!(
                "the agent's folder holds {} MB and the jobs under way may add {} MB; this one \
                 needs about {} MB more, over the disk budget of {} MB (disk_mb); delete finished \
                 operations or raise disk_mb",
                mb(used),
                mb(reserved),
                mb(estimate),
                mb(self.limit)
            ));
        }
        if let Some(free) = free {
            if free
                < self
                    .min_free
                    .saturating_add(estimate)
                    .saturating_add(reserved)
            {
                return Err(format!(
                    "the disk of the agent's folder has {} MB free; this job needs about {} MB \
                     and {} MB must stay free",
                    mb(free),
                    mb(estimate),
                    mb(self.min_free)
                ));
            }
        }
        Ok(())
    }

    /// What a stream's spool may still grow to while the folder holds `used` and its disk
    /// has `free` bytes (None: unknown), or why nothing (the 507's message).
    pub(crate) fn room(&self, used: u64, free: Option<u64>) -> Result<u64, String> {
        let left = self.limit.saturating_sub(used);
        let room = match free {
            Some(f) => left.min(f.saturating_sub(self.min_free)),
            None => left,
        };
        if room > 0 {
            return Ok(room);
        }
        if left == 0 {
            Err(format!(
                "the agent's folder holds {} MB, the whole disk budget of {} MB (disk_mb); \
                 retry when streams under way ended, delete finished operations or raise disk_mb",
                mb(used),
                mb(self.limit)
            ))
        } else {
            Err(format!(
                "the disk of the agent's folder has {} MB free, and {} MB must stay free",
                mb(free.unwrap_or(0)),
                mb(self.min_free)
            ))
        }
    }

    /// While a job writes: why it must stop (the folder over the budget, the disk too full),
    /// or None.
    pub(crate) fn exceeded(&self, used: u64, free: Option<u64>) -> Option<String> {
        if used > self.limit {
            return Some(format!(
                "the disk budget of {} MB (disk_mb) was exceeded while writing",
                mb(self.limit)
            ));
        }
        match free {
            Some(f) if f < self.min_free => Some(format!(
                "the disk of the agent's folder fell below {} MB free while writing",
                mb(self.min_free)
            )),
            _ => None,
        }
    }
}

/// Bytes as whole MB, rounded up (so a non-empty size is never "0 MB").
fn mb(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// A finished artifact: its file name (ours), size and SHA-256 (lowercase hex).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Artifact {
    /// The file's name, made by the agent.
    pub(crate) name: String,
    /// Its size, bytes.
    pub(crate) bytes: u64,
    /// Its SHA-256, lowercase hex.
    pub(crate) sha256: String,
}

/// The size and SHA-256 of the file at `path`, read in blocks.
pub(crate) fn measure(path: &Path) -> std::io::Result<(u64, String)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    let hex = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((n, hex))
}

/// A job: a program with its arguments, run in its own folder, writing `output` there.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    /// The program (the clrspy binary, for the agent's operations).
    pub(crate) program: PathBuf,
    /// Its arguments.
    pub(crate) args: Vec<OsString>,
    /// The job's own folder (emptied and removed unless the job succeeds).
    pub(crate) dir: PathBuf,
    /// The file name the job writes in `dir` (the artifact).
    pub(crate) output: String,
    /// The longest it may run before it is killed.
    pub(crate) timeout: Duration,
}

/// How a job ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum JobEnd {
    /// It wrote its artifact.
    Done(Artifact),
    /// It failed: why (the program's last words, or what stopped it).
    Failed(String),
    /// It exceeded the disk budget and was killed: why.
    OverBudget(String),
    /// It was asked to stop and was killed.
    Cancelled,
}

/// Runs `job`, looking every 100 ms at `stop` and at `over_budget` (which says why the job
/// must stop, or None). The program's standard error goes to a file in the job's folder and
/// its last line is the failure's message. Unless the job succeeds its folder is removed.
pub(crate) fn run(
    job: &Job,
    stop: &StopSignal,
    over_budget: &dyn Fn() -> Option<String>,
) -> JobEnd {
    let end = run_inner(job, stop, over_budget);
    match &end {
        JobEnd::Done(_) => {
            let _ = std::fs::remove_file(job.dir.join(LOG));
        }
        _ => {
            let _ = std::fs::remove_dir_all(&job.dir);
        }
    }
    end
}

/// The file in a job's folder holding the program's standard error.
const LOG: &str = ".stderr";

fn run_inner(job: &Job, stop: &StopSignal, over_budget: &dyn Fn() -> Option<String>) -> JobEnd {
    let log = match clrspy_collect::private::create_private(&job.dir.join(LOG)) {
        Ok(f) => f,
        Err(e) => return JobEnd::Failed(format!("cannot write in the job's folder: {e}")),
    };
    let mut command = Command::new(&job.program);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent; it runs in the
    // child between fork and exec. The child is killed when the thread that started it ends:
    // this one, which waits for it, so only when the agent itself is gone.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let spawned = command
        .args(&job.args)
        .current_dir(&job.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return JobEnd::Failed(format!("cannot start {}: {e}", job.program.display()));
        }
    };
    let started = Instant::now();
    let kill = |child: &mut std::process::Child| {
        let _ = child.kill();
        let _ = child.wait();
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => {
                kill(&mut child);
                return JobEnd::Failed(format!("waiting for the job: {e}"));
            }
        }
        if stop.count() > 0 {
            kill(&mut child);
            return JobEnd::Cancelled;
        }
        if let Some(why) = over_budget() {
            kill(&mut child);
            return JobEnd::OverBudget(why);
        }
        if started.elapsed() > job.timeout {
            kill(&mut child);
            return JobEnd::Failed(format!("did not finish within {} s", job.timeout.as_secs()));
        }
        std::thread::sleep(POLL);
    };
    // A job that ended by itself may still have gone over the budget with its last bytes.
    if let Some(why) = over_budget() {
        return JobEnd::OverBudget(why);
    }
    if !status.success() {
        return JobEnd::Failed(
            last_words(&job.dir.join(LOG))
                .unwrap_or_else(|| format!("the job ended with {status}")),
        );
    }
    let out = job.dir.join(&job.output);
    match measure(&out) {
        Ok((bytes, sha256)) => JobEnd::Done(Artifact {
            name: job.output.clone(),
            bytes,
            sha256,
        }),
        Err(e) => JobEnd::Failed(format!("the job wrote no {}: {e}", job.output)),
    }
}

/// The last non-empty line of the log (its final 4 KB read), without a leading `error: `.
fn last_words(log: &Path) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let tail = &text[text.len().saturating_sub(4096)..];
    let text = String::from_utf8_lossy(tail);
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.strip_prefix("error: ").unwrap_or(line).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "clrspy-agent-artifact-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn sh(dir: &Path, script: &str, output: &str) -> Job {
        Job {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            dir: dir.to_path_buf(),
            output: output.into(),
            timeout: Duration::from_secs(20),
        }
    }

    #[test]
    fn budget_arithmetic() {
        let b = Budget {
            limit: 100 << 20,
            min_free: 10 << 20,
        };
        assert!(b.admits(50 << 20, 0, 50 << 20, None).is_ok());
        assert!(b.admits(50 << 20, 0, (50 << 20) + 1, None).is_err());
        // What jobs under way may still write counts.
        let e = b.admits(40 << 20, 30 << 20, 31 << 20, None).unwrap_err();
        assert!(e.contains("100 MB") && e.contains("disk_mb"), "{e}");
        // The disk's own free space: the estimate plus what must stay free.
        assert!(b.admits(0, 0, 5 << 20, Some(15 << 20)).is_ok());
        let e = b.admits(0, 0, 5 << 20, Some((15 << 20) - 1)).unwrap_err();
        assert!(e.contains("must stay free"), "{e}");
        // No overflow at the edges.
        assert!(b.admits(u64::MAX, u64::MAX, u64::MAX, Some(0)).is_err());
        assert_eq!(Budget::from_mb(u64::MAX).limit, u64::MAX);
        assert_eq!(Budget::from_mb(1).limit, 1 << 20);
        assert!(b.exceeded(100 << 20, None).is_none());
        assert!(b.exceeded((100 << 20) + 1, None).is_some());
        assert!(b.exceeded(0, Some((10 << 20) - 1)).is_some());
        // A stream's room: the budget left, and the disk's free space beyond what must stay.
        assert_eq!(b.room(40 << 20, None), Ok(60 << 20));
        assert_eq!(b.room(40 << 20, Some(30 << 20)), Ok(20 << 20));
        let e = b.room(100 << 20, None).unwrap_err();
        assert!(e.contains("100 MB") && e.contains("disk_mb"), "{e}");
        let e = b.room(0, Some(10 << 20)).unwrap_err();
        assert!(e.contains("must stay free"), "{e}");
        assert_eq!(mb(1), 1);
        assert_eq!(mb(0), 0);
    }

    #[test]
    fn sizes_and_hashes_of_a_file() {
        let d = temp("sizes");
        std::fs::write(d.join("abc"), b"abc").unwrap();
        let (n, h) = measure(&d.join("abc")).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_job_that_writes_its_file_is_done() {
        let d = temp("done");
        let end = run(
            &sh(&d, "printf abc > out.bin", "out.bin"),
            &StopSignal::new(),
            &|| None,
        );
        let JobEnd::Done(a) = end else {
            panic!("{end:?}")
        };
        assert_eq!((a.name.as_str(), a.bytes), ("out.bin", 3));
        assert!(a.sha256.starts_with("ba7816bf"));
        // Only the artifact is left.
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(left.len(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failures_say_why_and_leave_nothing() {
        let d = temp("failed");
        let end = run(
            &sh(
                &d,
                "echo partial > out.bin; echo 'error: no such process' >&2; exit 3",
                "out.bin",
            ),
            &StopSignal::new(),
            &|| None,
        );
        assert_eq!(end, JobEnd::Failed("no such process".into()));
        assert!(!d.exists(), "the partial file is left");
        let d = temp("nofile");
        let end = run(&sh(&d, "true", "out.bin"), &StopSignal::new(), &|| None);
        assert!(
            matches!(end, JobEnd::Failed(ref m) if m.contains("out.bin")),
            "{end:?}"
        );
        assert!(!d.exists());
    }

    #[test]
    fn a_stopped_or_slow_job_is_killed_and_removed() {
        let d = temp("cancel");
        let stop = std::sync::Arc::new(StopSignal::new());
        let s2 = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            s2.request();
        });
        let t0 = Instant::now();
        let end = run(
            &sh(&d, "echo x > part; exec sleep 30", "out"),
            &stop,
            &|| None,
        );
        t.join().unwrap();
        assert_eq!(end, JobEnd::Cancelled);
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(!d.exists());
        let d = temp("slow");
        let mut job = sh(&d, "exec sleep 30", "out");
        job.timeout = Duration::from_millis(200);
        let end = run(&job, &StopSignal::new(), &|| None);
        assert!(
            matches!(end, JobEnd::Failed(ref m) if m.contains("within")),
            "{end:?}"
        );
        assert!(!d.exists());
    }

    #[test]
    fn a_job_over_the_budget_is_killed_and_its_partial_file_removed() {
        let d = temp("budget");
        let budget = Budget {
            limit: 1 << 20,
            min_free: 0,
        };
        let dir = d.clone();
        let over = move || budget.exceeded(clrspy_rules::folder_bytes(&dir), None);
        // Writes 64 KB blocks for ever (until killed).
        let end = run(
            &sh(
                &d,
                "while :; do head -c 65536 /dev/zero; done > out.bin",
                "out.bin",
            ),
            &StopSignal::new(),
            &over,
        );
        assert!(
            matches!(end, JobEnd::OverBudget(ref m) if m.contains("1 MB")),
            "{end:?}"
        );
        assert!(!d.exists());
    }
}
