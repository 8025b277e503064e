//! What the JIT inlined of the app's code, followed by a small side session while a trace is
//! recorded, so that a frame of code that holds an app method inlined is named after it.
//!
//! .NET inlines small methods into their callers; an ASP.NET Core controller action is often
//! inlined into the invoker MVC compiles for it (`dynamicClass.lambda_method3`), so every
//! sample of the action lands in that lambda. The runtime says what the JIT inlined
//! (`Method/InliningSucceeded`), but only at the verbose level of its JIT-tracing keyword,
//! which in the recording's own session would switch on every verbose event of its other
//! keywords. A second session enables just that event (the runtime's event filter, .NET 10
//! and later), without stacks or rundown: it writes only when the JIT compiles. The inlinings
//! of the app's methods (not the framework's, [`is_framework_method`]) into code that is not
//! the app's (generated or the framework's) are spliced into the trace as clrspy's `Inlined`
//! events, once each, with a mark when the following began.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clr_events::method_names::{is_framework_method, join};
use clr_events::runtime::{ids, InliningSucceeded};
use diagnostics_client::{Connector, Provider, SessionConfig};
use rustc_hash::FxHashSet;

use crate::inject::Injected;

/// The most distinct (method, inlinee) pairs kept per recording.
const MAX_PAIRS: usize = 100_000;
/// The runtime's JIT-tracing keyword.
const JIT_TRACING: u64 = 0x1000;
/// How long a command to the runtime (start, stop) waits for it to answer (the pump's own
/// commands wait as long).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the end waits for the side session's stream to close.
const END_WAIT: Duration = Duration::from_secs(3);

/// The pairs found, shared between the reading thread and the pump.
#[derive(Debug, Default)]
struct Found {
    seen: FxHashSet<(String, String)>,
    fresh: Vec<(String, String)>,
    /// The side session started: its mark is due.
    started: bool,
    marked: bool,
}

/// The side session following the JIT's inlining; [`InlineWatch::take`] gives what it found.
pub(crate) struct InlineWatch {
    found: Arc<Mutex<Found>>,
    /// The side session's id once it started.
    session: Arc<Mutex<Option<u64>>>,
    give_up: Arc<AtomicBool>,
    to: Arc<dyn Connector>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A session's stream as a reader that waits through read timeouts until told to give up.
struct Patient {
    session: diagnostics_client::Session,
    give_up: Arc<AtomicBool>,
}

impl Read for Patient {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.session.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.give_up.load(Ordering::Relaxed) {
                        return Ok(0);
                    }
                }
                other => return other,
            }
        }
    }
}

impl InlineWatch {
    /// Starts following the JIT's inlining in the process behind `to` (in a thread: the
    /// recording does not wait for the side session to start). A runtime older than .NET 10
    /// refuses the filtered session; nothing is then recorded, and the trace has no mark.
    pub(crate) fn start(to: Arc<dyn Connector>) -> InlineWatch {
        let found = Arc::new(Mutex::new(Found::default()));
        let session = Arc::new(Mutex::new(None));
        let give_up = Arc::new(AtomicBool::new(false));
        let thread = {
            let (found, session_id, give_up, to) =
                (found.clone(), session.clone(), give_up.clone(), to.clone());
            std::thread::Builder::new()
                .name("clrspy-inlines".into())
                .spawn(move || follow(to.as_ref(), &found, &session_id, give_up))
                .ok()
        };
        InlineWatch {
            found,
            session,
            give_up,
            to,
            thread,
        }
    }

    /// The events found since the last call: the mark first, then new inlinings.
    pub(crate) fn take(&self) -> Vec<Injected> {
        let Ok(mut f) = self.found.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if f.started && !f.marked {
            f.marked = true;
            out.push(Injected::Inlined {
                method: String::new(),
                inlinee: String::new(),
            });
        }
        out.extend(
            std::mem::take(&mut f.fresh)
                .into_iter()
                .map(|(method, inlinee)| Injected::Inlined { method, inlinee }),
        );
        out
    }

    /// Stops the side session and waits (boundedly) for its last events; then
    /// [`InlineWatch::take`] gives the rest.
    pub(crate) fn stop(&mut self) {
        let id = self.session.lock().ok().and_then(|s| *s);
        if let Some(id) = id {
            let _ = diagnostics_client::stop_session(self.to.as_ref(), id, COMMAND_TIMEOUT);
        }
        let t0 = Instant::now();
        while self.thread.as_ref().is_some_and(|t| !t.is_finished()) && t0.elapsed() < END_WAIT {
            std::thread::sleep(Duration::from_millis(10));
        }
        // A stream that does not end (the runtime hung) is left to its thread, which gives up
        // at its next read timeout.
        self.give_up.store(true, Ordering::Relaxed);
        if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for InlineWatch {
    fn drop(&mut self) {
        self.give_up.store(true, Ordering::Relaxed);
    }
}

/// The side session's configuration: the runtime's JIT-tracing keyword at the verbose level,
/// no stacks, no rundown, a small buffer.
fn config() -> SessionConfig {
    SessionConfig {
        circular_buffer_mb: 8,
        rundown_keyword: 0,
        stackwalk: false,
        providers: vec![Provider {
            name: clr_events::RUNTIME_PROVIDER.into(),
            keywords: JIT_TRACING,
            level: 5,
            arguments: None,
        }],
    }
}

/// The reading thread: starts the session, then keeps the app's inlinings until its end.
fn follow(
    to: &dyn Connector,
    found: &Mutex<Found>,
    session_id: &Mutex<Option<u64>>,
    give_up: Arc<AtomicBool>,
) {
    let Ok(session) = diagnostics_client::start_session_allowing(
        to,
        &config(),
        &[ids::INLINING_SUCCEEDED],
        COMMAND_TIMEOUT,
    ) else {
        return;
    };
    if let Ok(mut s) = session_id.lock() {
        *s = Some(session.id);
    }
    if session
        .set_read_timeout(Duration::from_millis(200))
        .is_err()
    {
        return;
    }
    if let Ok(mut f) = found.lock() {
        f.started = true;
    }
    let src = Patient { session, give_up };
    let Ok(mut reader) = nettrace::StreamReader::from_read_with_buffer(src, 64 * 1024) else {
        return;
    };
    while let Ok(Some(ev)) = reader.next_event() {
        if ev.event_id() != ids::INLINING_SUCCEEDED
            || !ev
                .provider()
                .eq_ignore_ascii_case(clr_events::RUNTIME_PROVIDER)
        {
            continue;
        }
        if let Some(pair) = app_inlining(ev.payload, ev.version()) {
            keep(found, pair);
        }
    }
}

/// The (compiled method, inlinee) of an inlining of the app's code into code that is not the
/// app's, named as frames name methods.
fn app_inlining(payload: &[u8], version: u8) -> Option<(String, String)> {
    let i = InliningSucceeded::parse(payload, version).ok()?;
    let inlinee = join(
        &i.inlinee_namespace.to_string_lossy(),
        &i.inlinee_name.to_string_lossy(),
    );
    // Compiler-generated helpers (`<PrivateImplementationDetails>`, anonymous types) are in
    // every assembly: not what a frame is worth naming after.
    if inlinee.is_empty() || inlinee.starts_with('<') || is_framework_method(&inlinee) {
        return None;
    }
    let method = join(
        &i.compiled_namespace.to_string_lossy(),
        &i.compiled_name.to_string_lossy(),
    );
    // Only code that is not the app's own is labelled (MVC's invokers, compiled
    // expressions, a framework generic over the app's types): an app method that inlines
    // another already reads as the app's.
    (is_framework_method(&method) && method != inlinee).then_some((method, inlinee))
}

fn keep(found: &Mutex<Found>, pair: (String, String)) {
    if let Ok(mut f) = found.lock() {
        if f.seen.len() < MAX_PAIRS && f.seen.insert(pair.clone()) {
            f.fresh.push(pair);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `InliningSucceeded` payload: `compiled` (namespace, name) is also the inliner.
    fn inlining(compiled: (&str, &str), inlinee: (&str, &str)) -> Vec<u8> {
        let (c, i) = (compiled, inlinee);
        let mut p = Vec::new();
        for s in [c.0, c.1, "", c.0, c.1, "", i.0, i.1, ""] {
            p.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
            p.extend([0, 0]);
        }
        p.extend(0u16.to_le_bytes());
        p
    }

    #[test]
    fn only_the_apps_inlinees_are_kept_once_each() {
        let action = inlining(
            ("dynamicClass", "lambda_method3"),
            ("App.Controllers.DiagController", "HighCpu"),
        );
        let pair = app_inlining(&action, 0).unwrap();
        assert_eq!(
            pair,
            (
                "dynamicClass.lambda_method3".to_string(),
                "App.Controllers.DiagController.HighCpu".to_string()
            )
        );
        let bcl = inlining(
            ("App.Cache", "Get"),
            (
                "System.Collections.Generic.Dictionary`2[System.__Canon,System.__Canon]",
                "TryGetValue",
            ),
        );
        assert_eq!(app_inlining(&bcl, 0), None);
        let helper = inlining(
            ("App.Cache", "Get"),
            ("<PrivateImplementationDetails>", "InlineArrayAsSpan"),
        );
        assert_eq!(app_inlining(&helper, 0), None);
        let own = inlining(
            ("App.Scoring.Ranker", "Rank"),
            ("App.Scoring.Ranker+<>c", "<Rank>b__2_0"),
        );
        assert_eq!(app_inlining(&own, 0), None);
        assert_eq!(app_inlining(&action[..10], 0), None);

        let found = Mutex::new(Found::default());
        keep(&found, pair.clone());
        keep(&found, pair);
        assert_eq!(found.lock().unwrap().fresh.len(), 1);
    }
}
