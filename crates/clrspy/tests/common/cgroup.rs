//! A CPU cgroup with a limit of half a CPU for the tests that check throttling (v1's `cpu`
//! controller, else v2's `cpu.max`), removed when dropped; needs root.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Tells the groups of one test process apart.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A cgroup v1 `cpu` group (or a v2 group with the cpu controller) made for the test and
/// removed when dropped, the test failing or not. Processes moved into it go back to the
/// root group first (a group with members cannot be removed).
pub struct TestGroup {
    /// The group's folder.
    pub dir: PathBuf,
    /// Where members go back to.
    root: PathBuf,
}

impl TestGroup {
    /// Makes the group with a limit of 50% of one CPU: quota 5 ms per 10 ms period (a short
    /// period, so even a loaded machine's share of CPU for the burners overruns it often).
    /// `Err` says why it cannot here.
    pub fn create() -> Result<TestGroup, String> {
        let uid = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(1).map(String::from))
            });
        if uid.as_deref() != Some("0") {
            return Err(format!("not root (uid {uid:?}): cannot make a cgroup"));
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let name = format!(
            "clrspy-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        // v1: a `cgroup` mount with the cpu controller.
        let v1 = mounts.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = left.split_whitespace().nth(4)?;
            let mut r = right.split_whitespace();
            let (ty, opts) = (r.next()?, r.nth(1)?);
            (ty == "cgroup" && opts.split(',').any(|o| o == "cpu")).then(|| PathBuf::from(point))
        });
        if let Some(root) = v1 {
            let dir = root.join(&name);
            std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            let g = TestGroup { dir, root };
            g.write("cpu.cfs_period_us", "10000")?;
            g.write("cpu.cfs_quota_us", "5000")?;
            return Ok(g);
        }
        let v2 = mounts.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = left.split_whitespace().nth(4)?;
            (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(point))
        });
        let Some(root) = v2 else {
            return Err("no cgroup v1 cpu controller and no cgroup v2 mount".into());
        };
        let controllers =
            std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
        if !controllers.split_whitespace().any(|c| c == "cpu") {
            return Err(format!(
                "cgroup v2 at {} does not enable the cpu controller for its children",
                root.display()
            ));
        }
        let dir = root.join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let g = TestGroup { dir, root };
        g.write("cpu.max", "5000 10000")?;
        Ok(g)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| format!("write {value} to {}/{file}: {e}", self.dir.display()))
    }

    /// Moves process `pid` (every thread) into the group.
    pub fn add(&self, pid: u32) -> Result<(), String> {
        self.write("cgroup.procs", &pid.to_string())
    }
}

impl Drop for TestGroup {
    fn drop(&mut self) {
        // Members back to the root group, then the group goes (bounded retries: a process
        // being killed leaves the group a moment later).
        let members = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for p in members.split_whitespace() {
            let _ = std::fs::write(self.root.join("cgroup.procs"), p);
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove the test cgroup {}", self.dir.display());
    }
}
