//! The fatal exception's message for a crash watch: while a crash-watched process runs, a
//! small session (clrspy-collect's [`fatal_session`]) keeps the newest exception thrown on
//! each thread in its [`FatalMessages`]; after a crash the one of the report's thread and type
//! gives the message. The session ends with the process (the runtime streams the fatal
//! exception's events while createdump works) or with watch. This module only runs that
//! session on a thread of the watcher.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clrspy_collect::crash::message::{fatal_session, FatalMessages};
use diagnostics_client::Endpoint;

/// Runs work on a thread of its own, joined when the watch ends; the work is told whether
/// watch is stopping.
pub(crate) trait Background {
    /// Runs `f` on a thread named `name`.
    fn run(&self, name: String, f: impl FnOnce(&AtomicBool) + Send + 'static);
}

/// Reads a session, waiting through read timeouts until watch stops.
struct UntilStopped<'a> {
    session: diagnostics_client::Session,
    stopping: &'a AtomicBool,
}

impl Read for UntilStopped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.session.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.stopping.load(Ordering::SeqCst) {
                        return Ok(0);
                    }
                }
                other => return other,
            }
        }
    }
}

/// Starts keeping the exceptions of the process at `ep` into `messages` (once, when they are
/// wanted), on a thread of its own.
pub(crate) fn listen(shared: &impl Background, ep: &Endpoint, messages: &Arc<FatalMessages>) {
    if !messages.start_listening() {
        return;
    }
    let config = fatal_session();
    let (ep, m) = (ep.clone(), messages.clone());
    shared.run(format!("clrspy-fatal-{}", ep.pid), move |stopping| {
        match diagnostics_client::start_session(&ep, &config, Duration::from_secs(10)) {
            Ok(session) => {
                let _ = session.set_read_timeout(Duration::from_millis(250));
                m.keep(UntilStopped { session, stopping });
            }
            Err(e) => {
                m.fail(e.to_string());
                m.finished();
            }
        }
    });
}
