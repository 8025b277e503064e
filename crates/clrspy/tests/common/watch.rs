//! A running `clrspy watch` for the live tests: started with a rules file and an output
//! folder, its decisions log read as JSON lines, waited on with bounds, stopped by SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `clrspy watch`, killed when dropped.
pub struct Watch {
    /// The watch process.
    pub child: Child,
    /// Its output folder (its stdout and stderr are beside it: `<out>.stdout`, `<out>.stderr`).
    pub out: PathBuf,
}

impl Watch {
    /// Starts `clrspy watch --rules RULES --out OUT EXTRA...` and waits for its `started` line.
    pub fn start(rules: &Path, out: &Path, extra: &[&str]) -> Watch {
        let child = super::clrspy_command()
            .arg("watch")
            .arg("--rules")
            .arg(rules)
            .arg("--out")
            .arg(out)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(out.with_extension("stdout")).unwrap())
            .stderr(std::fs::File::create(out.with_extension("stderr")).unwrap())
            .spawn()
            .expect("start clrspy watch");
        let w = Watch {
            child,
            out: out.to_path_buf(),
        };
        w.wait_for(|l| l["event"] == "started", "the started line");
        w
    }

    /// Sends signal `sig` (`TERM`, `HUP`, ...).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig}");
    }

    /// The decisions log's lines so far.
    pub fn log(&self) -> Vec<serde_json::Value> {
        Watch::read_log(&self.out)
    }

    /// Waits (2 minutes at most) for a log line `pred` accepts.
    pub fn wait_for(
        &self,
        pred: impl Fn(&serde_json::Value) -> bool,
        what: &str,
    ) -> serde_json::Value {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(l) = self.log().into_iter().find(|l| pred(l)) {
                return l;
            }
            assert!(
                Instant::now() < until,
                "no {what} in the log: {:#?}\nstderr: {}",
                self.log(),
                std::fs::read_to_string(self.out.with_extension("stderr")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The end of rule `rule`'s action on `pid`, which must have succeeded.
    pub fn done(&self, rule: &str, pid: u32) -> serde_json::Value {
        let l = self.wait_for(
            |l| {
                (l["event"] == "action_done" || l["event"] == "action_failed")
                    && l["pid"] == pid
                    && l["rule"] == rule
            },
            &format!("the end of rule {rule}'s action"),
        );
        assert_eq!(l["event"], "action_done", "{l}");
        l
    }

    /// SIGTERM, then waits for the exit (2 minutes at most).
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < until, "watch did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// [`Watch::stop`], then the whole log.
    pub fn stop_with_log(self) -> Vec<serde_json::Value> {
        let out = self.out.clone();
        let _ = self.stop();
        Watch::read_log(&out)
    }

    /// The decisions log in folder `out`.
    pub fn read_log(out: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(out.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
