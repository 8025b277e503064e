//! Running `clrspy agent` for the agent's live tests: started on its own, waited for until it
//! listens, its stderr passed on, killed when dropped; new API keys.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use super::clrspy_command;

/// A running agent, killed when dropped.
pub struct Agent {
    /// The agent's process.
    pub child: Child,
    /// `http://127.0.0.1:PORT` (or `https://`).
    pub base: String,
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
    let mut child = clrspy_command()
        .arg("agent")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = Some(tx);
        for l in err.lines() {
            let l = l.unwrap_or_default();
            match l.trim().strip_prefix("clrspy agent: listening on ") {
                Some(url) if said.is_some() => {
                    if let Some(tx) = said.take() {
                        let _ = tx.send(url.to_string());
                    }
                }
                _ => eprintln!("agent: {l}"),
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(base) => Agent { child, base },
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
