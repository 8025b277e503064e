//! An analysis fed by a running session: the consumer that feeds it on the tap's thread, and
//! the handle views read it through.

use std::sync::{Arc, Mutex, MutexGuard};

use clrspy_analysis::{Analysis, Options};
use clrspy_collect::{Action, End, EventConsumer, Lost};

/// What the consumer and the views share.
#[derive(Default)]
struct State {
    options: Options,
    /// Created when the header arrives.
    analysis: Option<Analysis>,
    lost: Lost,
    end: Option<End>,
}

/// An [`Analysis`] of a session while it runs. Clone the handle freely; give
/// [`LiveAnalysis::consumer`] to the session (at its start or through its broadcast point).
#[derive(Clone, Default)]
pub struct LiveAnalysis {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for LiveAnalysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("LiveAnalysis")
            .field("started", &s.analysis.is_some())
            .field("events", &s.analysis.as_ref().map(|a| a.events))
            .field("ended", &s.end.is_some())
            .finish()
    }
}

impl LiveAnalysis {
    /// An analysis with `options`, waiting for its session's header.
    pub fn new(options: Options) -> LiveAnalysis {
        LiveAnalysis {
            state: Arc::new(Mutex::new(State {
                options,
                ..State::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A consumer that panicked mid-event leaves the analysis as it was: still readable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The consumer that feeds this analysis (one per session).
    pub fn consumer(&self) -> Box<dyn EventConsumer> {
        Box::new(AnalysisFeed {
            state: self.state.clone(),
        })
    }

    /// True once the session's header arrived.
    pub fn started(&self) -> bool {
        self.lock().analysis.is_some()
    }

    /// A finished copy of the analysis so far (None before the header arrived). After the
    /// session ended it is the final analysis.
    pub fn snapshot(&self) -> Option<Analysis> {
        self.lock().analysis.as_ref().map(Analysis::snapshot)
    }

    /// Runs `f` on the analysis as it stands (not finished: samples waiting for their next
    /// reading still wait), under the lock the tap takes for every event — keep it short.
    pub fn with<R>(&self, f: impl FnOnce(&mut Analysis) -> R) -> Option<R> {
        self.lock().analysis.as_mut().map(f)
    }

    /// What the live view skipped so far.
    pub fn lost(&self) -> Lost {
        self.lock().lost.clone()
    }

    /// How the session ended, once it did.
    pub fn end(&self) -> Option<End> {
        self.lock().end.clone()
    }
}

/// Feeds the shared analysis on the tap's thread.
struct AnalysisFeed {
    state: Arc<Mutex<State>>,
}

impl AnalysisFeed {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl EventConsumer for AnalysisFeed {
    fn start(&mut self, header: &nettrace::TraceHeader) {
        let mut s = self.lock();
        let options = s.options.clone();
        s.analysis = Some(Analysis::new(header, options));
    }

    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if let Some(a) = self.lock().analysis.as_mut() {
            a.event(ev);
        }
        Action::Continue
    }

    fn lost(&mut self, lost: &Lost) {
        self.lock().lost.add(lost);
    }

    fn end(&mut self, end: &End) {
        let mut s = self.lock();
        if let Some(a) = s.analysis.as_mut() {
            a.dropped_events = end.dropped_events;
            if a.read_error.is_none() {
                a.read_error = end.error.clone();
            }
            a.finish();
        }
        s.end = Some(end.clone());
    }
}
