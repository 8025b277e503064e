//! Names for the code jitted before a live view attached, while it runs: a second, short
//! session on the same process whose rundown (written when it stops, at once) lists every
//! method and module loaded so far; its events go to the live analysis's symbols only.
//!
//! Why a rundown session and not the runtime's perf map: the perf map (asked for through the
//! diagnostics port on .NET 8+) is a file in the target's /tmp — in a container, the target's
//! mount namespace — that names code by address only, without modules or method tokens, and
//! stays switched on after clrspy leaves; the rundown is the same stream clrspy already reads,
//! works on every runtime that has EventPipe, and ends with the session.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_collect::{Action, EventConsumer, LiveFeeds, Recording, StopSignal};
use diagnostics_client::{Endpoint, Provider, SessionConfig, DEFAULT_RUNDOWN_KEYWORD};

use crate::session::SessionError;
use crate::LiveAnalysis;

/// What naming the jitted code took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NamesReport {
    /// Rundown events read (method and module names).
    pub events: u64,
    /// How long it took, from asking for the session to its end.
    pub elapsed: Duration,
}

/// Hands a rundown session's events to the live analysis's symbols; counts them.
struct NamesFeed {
    live: LiveAnalysis,
    events: Arc<AtomicU64>,
}

impl EventConsumer for NamesFeed {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if ev.provider() == clr_events::RUNDOWN_PROVIDER {
            self.events.fetch_add(1, Ordering::Relaxed);
            self.live.with(|a| a.name_event(ev));
        }
        Action::Continue
    }
}

/// Names, in `live`, every method jitted and module loaded in the process behind `endpoint`
/// so far, from a short rundown session (the runtime's loader events only, stopped at once).
/// `live` must have started (its session's header arrived); waits up to 5 s for it.
pub fn name_jitted_code(
    endpoint: &Endpoint,
    live: &LiveAnalysis,
) -> Result<NamesReport, SessionError> {
    let started = Instant::now();
    while !live.started() && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The loader keyword is quiet (assemblies load rarely): the session is for its rundown.
    let config = SessionConfig {
        providers: vec![Provider {
            name: clr_events::RUNTIME_PROVIDER.into(),
            keywords: 0x8,
            level: 4,
            arguments: None,
        }],
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: false,
        ..SessionConfig::default()
    };
    let stop = StopSignal::new();
    let rec = Recording {
        config: &config,
        out: None,
        duration: Some(Duration::ZERO),
        stop: &stop,
        thread_cpu: None,
        ring: None,
    };
    let events = Arc::new(AtomicU64::new(0));
    let feed = NamesFeed {
        live: live.clone(),
        events: events.clone(),
    };
    clrspy_collect::record_live(
        endpoint,
        &rec,
        LiveFeeds {
            consumers: vec![Box::new(feed)],
            // Every name counts: the session is small and nothing waits on it.
            lossless: true,
            ..LiveFeeds::default()
        },
        &mut |_| {},
    )?;
    Ok(NamesReport {
        events: events.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
    })
}
