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

/// One decision or action.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// UTC time, RFC 3339.
    pub time: String,
    /// What happened (see the module documentation).
    pub event: &'static str,
    /// The process.
    pub pid: Option<u32>,
    /// Its name.
    pub process: Option<String>,
    /// The rule.
    pub rule: Option<String>,
    /// The action: "trace" or "dump".
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
    pub fn new(event: &'static str) -> Decision {
        Decision {
            time: now_rfc3339(),
            event,
            ..Decision::default()
        }
    }

    /// The JSON object of the log line.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("time".into(), self.time.clone().into());
        m.insert("event".into(), self.event.into());
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
        s.push_str(self.event);
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

/// The current UTC time, RFC 3339 with milliseconds.
pub(crate) fn now_rfc3339() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let full = nettrace::format_unix_ns(ns);
    // yyyy-mm-ddThh:mm:ss.mmm, then Z.
    format!("{}Z", full.get(..23).unwrap_or(&full).trim_end_matches('Z'))
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
    /// Opens (appends to) `decisions.jsonl` in `dir`.
    pub fn open(dir: &Path) -> std::io::Result<DecisionLog> {
        let path = dir.join("decisions.jsonl");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
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
        let mut log = DecisionLog::open(dir.path()).unwrap();
        let mut d = Decision::new("action_done");
        d.pid = Some(42);
        d.process = Some("web".into());
        d.rule = Some("slow-web".into());
        d.action = Some("trace");
        d.file = Some(PathBuf::from("/o/slow-web/web_42_20260101_000000.nettrace"));
        d.bytes = Some(2048);
        assert!(log.write(&d).is_none());
        assert!(log.write(&Decision::new("stopped")).is_none());
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
}
