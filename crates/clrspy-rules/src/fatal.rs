//! The fatal exception's message for a crash watch: the runtime's crash report names the
//! exception's type, thread and stack but not its message, so while a crash-watched process
//! runs, a small session (the runtime's exception events only, no stacks, no file) keeps the
//! newest exception thrown on each thread; after a crash the one of the report's thread and
//! type gives the message. The session ends with the process (the runtime streams the
//! fatal exception's events while createdump works) or with watch.

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diagnostics_client::{Endpoint, SessionConfig};

use crate::watch::Shared;

/// The newest exception of each thread of one process.
#[derive(Debug, Default)]
pub(crate) struct Messages {
    /// thread id → (type, message).
    thrown: Mutex<HashMap<u64, (String, String)>>,
    /// The process is watched for its crash, with a crash report to come: messages are wanted.
    armed: AtomicBool,
    /// A session was started.
    listening: AtomicBool,
    /// The session ended (its last events are in).
    done: AtomicBool,
    /// Why the session could not start.
    failed: Mutex<Option<String>>,
}

impl Messages {
    /// Records an exception.
    fn thrown(&self, thread: u64, kind: String, message: String) {
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
    pub(crate) fn message(&self, kind: &str, thread: Option<u64>) -> Option<String> {
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
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// True when the messages are wanted.
    pub(crate) fn armed(&self) -> bool {
        self.armed.load(Ordering::SeqCst)
    }

    /// True when a session was started.
    pub(crate) fn listened(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// Why the session could not start, if it could not.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failed.lock().ok().and_then(|f| f.clone())
    }

    /// Waits (15 s at most) for the session's end, once the process is gone.
    pub(crate) fn settle(&self) {
        let until = Instant::now() + Duration::from_secs(15);
        while self.listened() && !self.done.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Reads a session, waiting through read timeouts until watch stops.
struct Patient<'a> {
    session: diagnostics_client::Session,
    shared: &'a Shared,
}

impl Read for Patient<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.session.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.shared.stopping.load(Ordering::SeqCst) {
                        return Ok(0);
                    }
                }
                other => return other,
            }
        }
    }
}

/// Starts keeping the exceptions of the process at `ep` into `messages` (once), on a thread
/// of its own.
pub(crate) fn listen(shared: &Arc<Shared>, ep: &Endpoint, messages: &Arc<Messages>) {
    if !messages.armed() || messages.listening.swap(true, Ordering::SeqCst) {
        return;
    }
    let config = clrspy_collect::with_exception_events(&SessionConfig {
        circular_buffer_mb: 16,
        rundown_keyword: 0,
        stackwalk: false,
        providers: Vec::new(),
    });
    let (ep, m) = (ep.clone(), messages.clone());
    shared.spawn(format!("clrspy-fatal-{}", ep.pid), move |s| {
        match diagnostics_client::start_session(&ep, &config, Duration::from_secs(10)) {
            Ok(session) => {
                let _ = session.set_read_timeout(Duration::from_millis(250));
                read(Patient { session, shared: s }, &m);
            }
            Err(e) => {
                if let Ok(mut f) = m.failed.lock() {
                    *f = Some(e.to_string());
                }
            }
        }
        m.done.store(true, Ordering::SeqCst);
    });
}

/// Reads the session's events to its end.
fn read(source: Patient<'_>, messages: &Messages) {
    let Ok(mut r) = nettrace::StreamReader::from_read(source) else {
        return;
    };
    // A session cut by the process's death ends in an error: what was read stands.
    while let Ok(Some(ev)) = r.next_event() {
        let Some(kind) = clrspy_collect::thrown_type(&ev) else {
            continue;
        };
        let message = clr_events::runtime::ExceptionThrown::parse(
            ev.payload,
            ev.version(),
            ev.pointer_size(),
        )
        .ok()
        .and_then(|t| t.message.map(|m| m.to_string_lossy()))
        .unwrap_or_default();
        messages.thrown(ev.thread_id, kind, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_s_thread_and_type_pick_the_message() {
        let m = Messages::default();
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
    }
}
