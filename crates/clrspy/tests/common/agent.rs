//! Running `clrspy agent` for the agent's live tests: started on its own, waited for until it
//! listens, its stderr passed on, killed when dropped; new API keys.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

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

/// Starts `clrspy agent ARGS` and waits for its "listening on URL" line; its stderr goes on
/// to the test's, prefixed.
pub fn start_agent(args: &[&str]) -> Agent {
    let mut child = clrspy_command()
        .arg("agent")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let base = loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("agent ended before listening");
        }
        if let Some(url) = line.trim().strip_prefix("clrspy agent: listening on ") {
            break url.to_string();
        }
    };
    std::thread::spawn(move || {
        for l in err.lines() {
            eprintln!("agent: {}", l.unwrap_or_default());
        }
    });
    Agent { child, base }
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
