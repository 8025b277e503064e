//! Running `clrspy agent` for the agent's live tests: started on its own (under umask 000 if
//! asked), waited for until it listens, its stderr passed on and kept, killed when dropped;
//! new API keys; the audit log and the modes of what the agent wrote.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::clrspy_command;

/// A running agent, killed when dropped.
pub struct Agent {
    /// The agent's process.
    pub child: Child,
    /// `http://127.0.0.1:PORT` (or `https://`).
    pub base: String,
    /// What it said on stderr after its "listening on" line.
    pub said: Arc<Mutex<Vec<String>>>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `clrspy agent ARGS` and waits (at most a minute) for its "listening on URL" line;
/// its stderr goes on to the test's, prefixed.
pub fn start_agent(args: &[&str]) -> Agent {
    start_agent_with(args, None, &[])
}

/// As [`start_agent`], the agent run under `umask` when given (umask 000: whatever it
/// writes is as open as its own code makes it) and with `env` added to its environment.
pub fn start_agent_with(args: &[&str], umask: Option<u32>, env: &[(&str, &Path)]) -> Agent {
    let mut cmd = clrspy_command();
    cmd.arg("agent").args(args).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(mask) = umask {
        // SAFETY: umask is async-signal-safe and only sets the child's file mode mask.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask as libc::mode_t);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let said = Arc::new(Mutex::new(Vec::new()));
    let kept = said.clone();
    std::thread::spawn(move || {
        let mut waiting = Some(tx);
        for l in err.lines() {
            let l = l.unwrap_or_default();
            match l.trim().strip_prefix("clrspy agent: listening on ") {
                Some(url) if waiting.is_some() => {
                    if let Some(tx) = waiting.take() {
                        let _ = tx.send(url.to_string());
                    }
                }
                _ => {
                    eprintln!("agent: {l}");
                    kept.lock().unwrap().push(l);
                }
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(base) => Agent { child, base, said },
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the agent did not say it listens ({e}): it ended or took over a minute");
        }
    }
}

/// `clrspy agent new-key --json`: the key and its hash.
pub fn new_key() -> (String, String) {
    let out = clrspy_command()
        .args(["agent", "new-key", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["key"].as_str().unwrap().to_string(),
        v["hash"].as_str().unwrap().to_string(),
    )
}

/// The audit log's lines.
pub fn audit_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// What under `dir` (itself included, any depth) is not owner-only: a folder other than
/// 0700, a file other than 0600; as `PATH MODE`.
pub fn not_private(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return out;
    };
    let mode = m.permissions().mode() & 0o777;
    if m.is_dir() {
        if mode != 0o700 {
            out.push(format!("{} {mode:o}", dir.display()));
        }
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            out.extend(not_private(&e.path()));
        }
    } else if mode != 0o600 {
        out.push(format!("{} {mode:o}", dir.display()));
    }
    out
}
