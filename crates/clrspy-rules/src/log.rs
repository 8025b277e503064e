//! The decisions log: one JSON object per line for every decision and action of the watcher
//! (what matched, what it did, where the files are, what failed and why), appended to
//! `decisions.jsonl` in the output folder, and a short line for people.
//!
//! Each line has `time` (UTC, RFC 3339) and `event`, then whichever of these apply: `pid`,
//! `process`, `rule`, `action`, `file`, `bytes`, `raw_bytes`, `age_ms` (how old the process was when the
//! decision was taken), `detail` (what matched, why not, what went wrong). Events: `started`,
//! `stopping`, `stopped`, `reloaded`, `reload_failed`, `seen` (a new process no rule matches),
//! `gone` (it ended before it could be read), `matched`, `skipped` (limits, or a crash dump the process's settings rule out),
//! `watching` / `watching_ended` (a process watched for exceptions or its crash), `crash` (a
//! watched process crashed: the fatal exception from its crash report), `action_started`,
//! `action_done` (a compressed dump also has `raw_bytes`), `action_failed`, `removed` (disk
//! budget), `disk_full`, `disk_ok`, `error`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::facts::ProcessFacts;

/// What a decision is about: the `event` of its log line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DecisionKind {
    /// The watch started.
    Started,
    /// The watch was asked to stop; open traces are finishing.
    Stopping,
    /// The watch ended.
    Stopped,
    /// The rules file was read again.
    Reloaded,
    /// The rules file could not be read again (the old rules stay).
    ReloadFailed,
    /// A new process no rule matches.
    Seen,
    /// A process ended before it could be read.
    Gone,
    /// A rule matched a process.
    Matched,
    /// An action was not taken (limits, or a crash dump the process's settings rule out).
    Skipped,
    /// A process is watched for exceptions or its crash.
    Watching,
    /// That watch ended.
    WatchingEnded,
    /// A watched process crashed (the fatal exception from its crash report).
    Crash,
    /// An action started.
    ActionStarted,
    /// An action finished (a compressed dump also has `raw_bytes`).
    ActionDone,
    /// An action failed.
    ActionFailed,
    /// A file was removed to keep a disk budget.
    Removed,
    /// The output disk is full.
    DiskFull,
    /// The output disk has room again.
    DiskOk,
    /// Something went wrong that is not an action's failure.
    #[default]
    Error,
}

impl DecisionKind {
    /// Every kind, in the order of the module documentation.
    pub const ALL: [DecisionKind; 19] = [
        DecisionKind::Started,
        DecisionKind::Stopping,
        DecisionKind::Stopped,
        DecisionKind::Reloaded,
        DecisionKind::ReloadFailed,
        DecisionKind::Seen,
        DecisionKind::Gone,
        DecisionKind::Matched,
        DecisionKind::Skipped,
        DecisionKind::Watching,
        DecisionKind::WatchingEnded,
        DecisionKind::Crash,
        DecisionKind::ActionStarted,
        DecisionKind::ActionDone,
        DecisionKind::ActionFailed,
        DecisionKind::Removed,
        DecisionKind::DiskFull,
        DecisionKind::DiskOk,
        DecisionKind::Error,
    ];

    /// The name written as `event` in the log line (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Started => "started",
            DecisionKind::Stopping => "stopping",
            DecisionKind::Stopped => "stopped",
            DecisionKind::Reloaded => "reloaded",
            DecisionKind::ReloadFailed => "reload_failed",
            DecisionKind::Seen => "seen",
            DecisionKind::Gone => "gone",
            DecisionKind::Matched => "matched",
            DecisionKind::Skipped => "skipped",
            DecisionKind::Watching => "watching",
            DecisionKind::WatchingEnded => "watching_ended",
            DecisionKind::Crash => "crash",
            DecisionKind::ActionStarted => "action_started",
            DecisionKind::ActionDone => "action_done",
            DecisionKind::ActionFailed => "action_failed",
            DecisionKind::Removed => "removed",
            DecisionKind::DiskFull => "disk_full",
            DecisionKind::DiskOk => "disk_ok",
            DecisionKind::Error => "error",
        }
    }
}

impl std::fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One decision or action.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// UTC time, RFC 3339.
    pub time: String,
    /// What happened (see the module documentation).
    pub event: DecisionKind,
    /// The process.
    pub pid: Option<u32>,
    /// Its name.
    pub process: Option<String>,
    /// The rule.
    pub rule: Option<String>,
    /// The action: "trace", "dump", "analysis" (a dump read at once) or "heap".
    pub action: Option<&'static str>,
    /// The file written or removed.
    pub file: Option<PathBuf>,
    /// Its size.
    pub bytes: Option<u64>,
    /// A compressed dump's size before compression.
    pub raw_bytes: Option<u64>,
    /// How old the process was, in milliseconds.
    pub age_ms: Option<u64>,
    /// Details in words.
    pub detail: Option<String>,
}

impl Decision {
    /// A decision of kind `event`, now.
    pub fn new(event: DecisionKind) -> Decision {
        Decision {
            time: clrspy_values::time::rfc3339(std::time::SystemTime::now()),
            event,
            ..Decision::default()
        }
    }

    /// A decision of kind `event` about the process `facts` describes (its pid and name), now.
    pub fn for_process(event: DecisionKind, facts: &ProcessFacts) -> Decision {
        let mut d = Decision::new(event);
        d.pid = Some(facts.pid);
        d.process = Some(facts.file_name());
        d
    }

    /// The JSON object of the log line.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("time".into(), self.time.clone().into());
        m.insert("event".into(), self.event.as_str().into());
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        put("pid", self.pid.map(Value::from));
        put("process", self.process.clone().map(Value::from));
        put("rule", self.rule.clone().map(Value::from));
        put("action", self.action.map(Value::from));
        put(
            "file",
            self.file
                .as_ref()
                .map(|f| Value::from(f.to_string_lossy().into_owned())),
        );
        put("bytes", self.bytes.map(Value::from));
        put("raw_bytes", self.raw_bytes.map(Value::from));
        put("age_ms", self.age_ms.map(Value::from));
        put("detail", self.detail.clone().map(Value::from));
        Value::Object(m)
    }

    /// A short line for people: `HH:MM:SS event rule process(pid) detail file`.
    pub fn human(&self) -> String {
        let mut s = self.time.get(11..19).unwrap_or(&self.time).to_string();
        s.push(' ');
        s.push_str(self.event.as_str());
        if let Some(r) = &self.rule {
            s.push_str(&format!(" [{r}]"));
        }
        if let Some(a) = self.action {
            s.push_str(&format!(" {a}"));
        }
        match (&self.process, self.pid) {
            (Some(n), Some(p)) => s.push_str(&format!(" {n} (pid {p})")),
            (None, Some(p)) => s.push_str(&format!(" pid {p}")),
            _ => {}
        }
        if let Some(f) = &self.file {
            s.push_str(&format!(" {}", f.display()));
        }
        if let Some(b) = self.bytes {
            s.push_str(&format!(" ({})", clrspy_values::human_bytes(b)));
        }
        if let Some(d) = &self.detail {
            s.push_str(&format!(": {d}"));
        }
        s
    }
}

/// The log file: appended to, one line per decision, flushed at once.
#[derive(Debug)]
pub struct DecisionLog {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// The last write error, reported once until a write succeeds again.
    failing: bool,
}

impl DecisionLog {
    /// Opens (appends to) `decisions.jsonl` in `dir` with `open`, which creates it when missing
    /// and gives a file to append to: the caller's owner-only opener (clrspy-collect's
    /// `private::append_private`; this crate writes no file modes of its own).
    pub fn open(
        dir: &Path,
        open: impl FnOnce(&Path) -> std::io::Result<std::fs::File>,
    ) -> std::io::Result<DecisionLog> {
        let path = dir.join("decisions.jsonl");
        let file = open(&path)?;
        Ok(DecisionLog {
            path,
            file: Some(file),
            failing: false,
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line. An error (a full disk) is returned the first time only: the caller
    /// says so once, and the log goes on trying.
    pub fn write(&mut self, d: &Decision) -> Option<std::io::Error> {
        let f = self.file.as_mut()?;
        let mut line = d.to_json().to_string();
        line.push('\n');
        match f.write_all(line.as_bytes()).and_then(|_| f.flush()) {
            Ok(()) => {
                self.failing = false;
                None
            }
            Err(e) if !self.failing => {
                self.failing = true;
                Some(e)
            }
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_with_only_what_applies() {
        let dir = tempfile::tempdir().unwrap();
        let append = |p: &Path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
        };
        let mut log = DecisionLog::open(dir.path(), append).unwrap();
        let mut d = Decision::new(DecisionKind::ActionDone);
        d.pid = Some(42);
        d.process = Some("web".into());
        d.rule = Some("slow-web".into());
        d.action = Some("trace");
        d.file = Some(PathBuf::from("/o/slow-web/web_42_20260101_000000.nettrace"));
        d.bytes = Some(2048);
        assert!(log.write(&d).is_none());
        assert!(log.write(&Decision::new(DecisionKind::Stopped)).is_none());
        let text = std::fs::read_to_string(log.path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["pid"], 42);
        assert_eq!(lines[0]["event"], "action_done");
        assert!(lines[1].get("pid").is_none());
        assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
        let h = d.human();
        assert!(h.contains("[slow-web] trace web (pid 42)"), "{h}");
        assert!(h.contains("2.0 KB"), "{h}");
    }

    #[test]
    fn every_kind_is_written_under_its_serde_name_and_the_names_are_the_documented_ones() {
        let documented = [
            "started",
            "stopping",
            "stopped",
            "reloaded",
            "reload_failed",
            "seen",
            "gone",
            "matched",
            "skipped",
            "watching",
            "watching_ended",
            "crash",
            "action_started",
            "action_done",
            "action_failed",
            "removed",
            "disk_full",
            "disk_ok",
            "error",
        ];
        let names: Vec<&str> = DecisionKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, documented);
        for k in DecisionKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), Value::from(k.as_str()));
            let line = Decision::new(k).to_json().to_string();
            assert!(line.contains(&format!(",\"event\":\"{k}\"")), "{line}");
        }
    }
}
