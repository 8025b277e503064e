//! The fatal exception's message. The runtime's crash report names the exception's type,
//! thread and stack but not its message; the message is in the exception's `Exception/Start`
//! event: in a recording's trace (read again after the crash), or, for a watched process
//! without a recording, in a small session's events kept per thread ([`FatalMessages`]) while
//! the process runs. Also the words a crash is told in, and what a launched program's crash
//! capture left after it ended ([`CrashCapture::findings`]).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use diagnostics_client::SessionConfig;

use super::{CrashCapture, CrashReport};
use crate::dumpfile::{compress_dump_file, DumpReport};

/// The message of an `Exception/Start` event, if `ev` is one: (type, message).
fn thrown(ev: &nettrace::Event<'_>) -> Option<(String, String)> {
    let kind = crate::thrown_type(ev)?;
    let message =
        clr_events::runtime::ExceptionThrown::parse(ev.payload, ev.version(), ev.pointer_size())
            .ok()
            .and_then(|t| t.message.map(|m| m.to_string_lossy()))
            .unwrap_or_default();
    Some((kind, message))
}

/// The last `Exception/Start` of `exception_type` on thread `tid` (any thread when None) in the
/// trace file at `trace`: its message.
pub(crate) fn message_in_trace(
    trace: &Path,
    exception_type: &str,
    tid: Option<u64>,
) -> Option<String> {
    let file = std::io::BufReader::new(std::fs::File::open(trace).ok()?);
    let mut r = nettrace::StreamReader::from_read(file).ok()?;
    let mut found = None;
    // A cut trace ends in an error: what was read stands.
    while let Ok(Some(ev)) = r.next_event() {
        if crate::thrown_type(&ev).as_deref() != Some(exception_type) {
            continue;
        }
        if tid.is_some_and(|t| t != ev.thread_id) {
            continue;
        }
        let t = clr_events::runtime::ExceptionThrown::parse(
            ev.payload,
            ev.version(),
            ev.pointer_size(),
        )
        .ok()?;
        found = t.message.map(|m| m.to_string_lossy());
    }
    found
}

/// The newest exception of each thread of one process, kept from a session's events while it
/// runs, so that after its crash the report's thread and type give the message.
#[derive(Debug, Default)]
pub struct FatalMessages {
    /// thread id → (type, message).
    thrown: Mutex<HashMap<u64, (String, String)>>,
    /// The process is watched for its crash, with a crash report to come: messages are wanted.
    wanted: AtomicBool,
    /// A session was started.
    listening: AtomicBool,
    /// The session ended (its last events are in).
    done: AtomicBool,
    /// Why the session could not start.
    failed: Mutex<Option<String>>,
}

impl FatalMessages {
    /// Records an exception.
    pub fn thrown(&self, thread: u64, kind: String, message: String) {
        if let Ok(mut t) = self.thrown.lock() {
            // Bounded: one entry per thread; a process with very many threads keeps the newest.
            if t.len() >= 4096 && !t.contains_key(&thread) {
                t.clear();
            }
            t.insert(thread, (kind, message));
        }
    }

    /// The message of the newest `kind` thrown on `thread` (on any thread when the report
    /// gives none, or that thread threw no such exception).
    pub fn message(&self, kind: &str, thread: Option<u64>) -> Option<String> {
        let t = self.thrown.lock().ok()?;
        if let Some((k, m)) = thread.and_then(|id| t.get(&id)) {
            if k == kind {
                return Some(m.clone());
            }
        }
        let mut same = t.values().filter(|(k, _)| k == kind);
        let first = same.next()?;
        // Several threads threw one: the thread decides, and the report named none of them.
        same.next().is_none().then(|| first.1.clone())
    }

    /// Says the messages are wanted (a crash report will name the fatal exception).
    pub fn mark_wanted(&self) {
        self.wanted.store(true, Ordering::SeqCst);
    }

    /// True when the messages are wanted.
    pub fn wanted(&self) -> bool {
        self.wanted.load(Ordering::SeqCst)
    }

    /// True when a session was started.
    pub fn listened(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// Marks the session started; false when the messages are not wanted or it already was
    /// (the caller then starts none).
    pub fn start_listening(&self) -> bool {
        self.wanted() && !self.listening.swap(true, Ordering::SeqCst)
    }

    /// Why the session could not start, if it could not.
    pub fn failure(&self) -> Option<String> {
        self.failed.lock().ok().and_then(|f| f.clone())
    }

    /// Says the session could not start, and why.
    pub fn fail(&self, why: String) {
        if let Ok(mut f) = self.failed.lock() {
            *f = Some(why);
        }
    }

    /// Reads a session's events (see [`fatal_session`]) to their end, keeping each thread's
    /// newest exception; then marks the session done.
    pub fn keep(&self, source: impl Read) {
        if let Ok(mut r) = nettrace::StreamReader::from_read(source) {
            // A session cut by the process's death ends in an error: what was read stands.
            while let Ok(Some(ev)) = r.next_event() {
                if let Some((kind, message)) = thrown(&ev) {
                    self.thrown(ev.thread_id, kind, message);
                }
            }
        }
        self.finished();
    }

    /// Marks the session done (its last events are in, or it never started).
    pub fn finished(&self) {
        self.done.store(true, Ordering::SeqCst);
    }

    /// Waits (15 s at most) for the session's end, once the process is gone.
    pub fn settle(&self) {
        let until = Instant::now() + Duration::from_secs(15);
        while self.listened() && !self.done.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The session [`FatalMessages::keep`] reads: the runtime's exception events only, no stacks.
pub fn fatal_session() -> SessionConfig {
    crate::with_exception_events(&SessionConfig {
        circular_buffer_mb: 16,
        rundown_keyword: 0,
        stackwalk: false,
        providers: Vec::new(),
    })
}

/// What a crash left, in words (the lines `record` prints and writes beside the trace).
pub(crate) fn crash_text(r: &CrashReport, message: Option<&str>, pid: u32) -> String {
    let mut s = String::new();
    match &r.exception_type {
        Some(t) => {
            s.push_str(&format!(
                "Process {pid} ({}) crashed: unhandled {t}",
                r.process_name
            ));
            match message {
                Some(m) => s.push_str(&format!(": {m}\n")),
                None => s.push_str(" (its message reached neither the trace nor a dump)\n"),
            }
        }
        None => s.push_str(&format!(
            "Process {pid} ({}) crashed (no managed exception: a native crash)\n",
            r.process_name
        )),
    }
    let managed = r.managed_stack();
    let frames: Vec<&str> = if managed.is_empty() {
        r.stack.iter().map(String::as_str).collect()
    } else {
        managed
    };
    for f in frames.iter().take(40) {
        s.push_str(&format!("   at {f}\n"));
    }
    if frames.len() > 40 {
        s.push_str(&format!("   ... {} more frames\n", frames.len() - 40));
    }
    s
}

/// One crash a capture found after the program ended.
#[derive(Debug)]
pub struct CrashFound {
    /// The crashed process.
    pub pid: u32,
    /// Its crash report's file.
    pub report: PathBuf,
    /// The crash in words (`crash_text`), or why the report is unreadable.
    pub text: std::result::Result<String, String>,
    /// The crash dump compressed as the capture asks (None: no dump was written; the raw
    /// path with the error when compression failed).
    pub dump: Option<std::result::Result<DumpReport, (PathBuf, crate::Error)>>,
}

/// What [`CrashCapture::findings`] found: each crash, and the text file written.
#[derive(Debug, Default)]
pub struct CrashFindings {
    /// The crashes, in the order of their reports.
    pub crashes: Vec<CrashFound>,
    /// `<trace>.crash.txt`: the crashes in words (None when there was none); the error when it
    /// could not be written.
    pub text_file: Option<(PathBuf, std::result::Result<(), String>)>,
}

impl CrashCapture {
    /// After a launched program ended: every crash report the capture left (the program's, or
    /// a child's) is read and told in words with the fatal exception's message (from the dump,
    /// else the trace);
    /// crash dumps are compressed. The words go beside the trace too (`<trace>.crash.txt`).
    /// Without `trace` (`--children`), each process's message is looked for in its own trace,
    /// `<name>_<pid>.nettrace` in the capture's directory, and the words go to `tree.crash.txt`.
    pub fn findings(&self, trace: Option<&Path>) -> CrashFindings {
        let mut out = CrashFindings::default();
        let mut all = String::new();
        for (pid, path) in self.reports() {
            let r = match CrashReport::read(&path) {
                Ok(r) => r,
                Err(e) => {
                    out.crashes.push(CrashFound {
                        pid,
                        report: path,
                        text: Err(e),
                        dump: None,
                    });
                    continue;
                }
            };
            let own = match trace {
                Some(t) => Some(t.to_path_buf()),
                None => process_trace(&self.dir, pid),
            };
            // The message: the crashed thread's exception object in the dump, else the last
            // such exception the trace saw on that thread (the runtime may die before its
            // streaming thread sends the event).
            let raw = self.dump_path(pid);
            let message = std::fs::read(&path)
                .ok()
                .and_then(|report| super::core::message_in_dump(&report, &raw))
                .or_else(|| {
                    r.exception_type
                        .as_deref()
                        .zip(own.as_deref())
                        .and_then(|(t, own)| message_in_trace(own, t, r.thread_id))
                });
            let text = crash_text(&r, message.as_deref(), pid);
            all.push_str(&text);
            let dump = raw
                .exists()
                .then(|| compress_dump_file(&raw, self.compress).map_err(|e| (raw, e)));
            out.crashes.push(CrashFound {
                pid,
                report: path,
                text: Ok(text),
                dump,
            });
        }
        if !all.is_empty() {
            let base = match trace {
                Some(t) => t.to_path_buf(),
                None => self.dir.join("tree"),
            };
            let mut name = base.into_os_string();
            name.push(".crash.txt");
            let file = PathBuf::from(name);
            let written = std::fs::write(&file, all).map_err(|e| e.to_string());
            out.text_file = Some((file, written));
        }
        out
    }
}

/// The trace of process `pid` in a `--children` directory.
fn process_trace(dir: &Path, pid: u32) -> Option<PathBuf> {
    let suffix = format!("_{pid}.nettrace");
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_s_thread_and_type_pick_the_message() {
        let m = FatalMessages::default();
        assert_eq!(m.message("A", Some(1)), None);
        m.thrown(1, "A".into(), "first".into());
        m.thrown(1, "A".into(), "newest".into());
        m.thrown(2, "B".into(), "other".into());
        assert_eq!(m.message("A", Some(1)).as_deref(), Some("newest"));
        // The report's thread threw something else: the only A stands.
        assert_eq!(m.message("A", Some(2)).as_deref(), Some("newest"));
        assert_eq!(m.message("A", None).as_deref(), Some("newest"));
        m.thrown(3, "A".into(), "third".into());
        assert_eq!(
            m.message("A", None),
            None,
            "two threads threw one: no guess"
        );
        assert_eq!(m.message("C", Some(1)), None);
        assert!(!m.start_listening(), "not wanted: no session");
        m.mark_wanted();
        assert!(m.start_listening() && !m.start_listening());
    }

    /// A trace of `Exception/Start` events: (thread, type, message).
    fn trace(thrown: &[(u64, &str, &str)]) -> Vec<u8> {
        use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let exc = w
            .define(&EventMetadata {
                provider: clr_events::RUNTIME_PROVIDER.into(),
                event_id: clr_events::runtime::ids::EXCEPTION_START,
                version: 1,
                ..EventMetadata::default()
            })
            .unwrap();
        for (n, (thread, kind, message)) in thrown.iter().enumerate() {
            let mut p = Vec::new();
            for s in [kind, message] {
                for u in s.encode_utf16() {
                    p.extend_from_slice(&u.to_le_bytes());
                }
                p.extend_from_slice(&[0, 0]);
            }
            p.extend_from_slice(&[0; 8 + 4 + 2 + 2]); // EIP, HRESULT, flags, ClrInstanceID
            w.write(&EventRecord {
                metadata_id: exc,
                thread_id: *thread,
                timestamp: 1_000 + n as i64,
                payload: &p,
                ..EventRecord::default()
            })
            .unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_crash_is_told_with_its_message_from_the_trace_and_written_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("app.nettrace");
        std::fs::write(
            &t,
            trace(&[
                (0x3ea9, "App.Boom", "first"),
                (7, "App.Boom", "another thread's"),
                (0x3ea9, "App.Other", "not this type"),
                (0x3ea9, "App.Boom", "the fatal one"),
            ]),
        )
        .unwrap();
        assert_eq!(
            message_in_trace(&t, "App.Boom", Some(0x3ea9)).as_deref(),
            Some("the fatal one")
        );
        assert_eq!(
            message_in_trace(&t, "App.Boom", Some(7)).as_deref(),
            Some("another thread's")
        );
        assert_eq!(message_in_trace(&t, "App.None", None), None);
        let capture = CrashCapture {
            dir: dir.path().to_path_buf(),
            stem: "app".into(),
            dump: None,
            compress: crate::Compression::None,
        };
        assert!(capture.findings(Some(&t)).text_file.is_none(), "no crash");
        std::fs::write(
            capture.report_path(42),
            br#"{"payload":{"process_name":"App.dll","threads":[{"is_managed":"true",
              "crashed":"true","managed_exception_type":"App.Boom","native_thread_id":"0x3ea9",
              "stack_frames":[{"is_managed":"true","method_name":"App.Main()"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(capture.report_path(43), b"{").unwrap();
        let found = capture.findings(Some(&t));
        assert_eq!(found.crashes.len(), 2);
        let text = found.crashes[0].text.as_ref().unwrap();
        assert_eq!(
            text,
            "Process 42 (App.dll) crashed: unhandled App.Boom: the fatal one\n   at App.Main()\n"
        );
        assert!(found.crashes[0].dump.is_none());
        assert!(found.crashes[1].text.is_err());
        let (file, written) = found.text_file.unwrap();
        assert!(written.is_ok());
        assert_eq!(file, dir.path().join("app.nettrace.crash.txt"));
        assert_eq!(std::fs::read_to_string(file).unwrap(), *text);
    }
}
