//! What a live consumer of a recording sees and says: the [`EventConsumer`] trait (told the
//! trace's header at the start, every event, each span the live view lost, and the end), the
//! [`Action`]s it may ask of the pump, and the [`Broadcast`] point through which consumers join
//! and leave a session while it runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What an event consumer asks the pump to do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Nothing: go on.
    Continue,
    /// End the recording (as a stop request would: the rundown is still written).
    Stop {
        /// Why, in words (shown to the user).
        reason: String,
    },
    /// Take a core dump of the target (handed to the caller's request handler).
    Dump {
        /// What the dump holds.
        kind: diagnostics_client::DumpType,
        /// Why, in words.
        reason: String,
    },
    /// Take a heap snapshot of the target (handed to the caller's request handler).
    Snapshot {
        /// Why, in words.
        reason: String,
    },
    /// A stop trigger fired: the pump splices it into the trace and stops `after` later (the
    /// first one only; the rundown is still written).
    Trigger {
        /// What fired, and on which event.
        fired: Fired,
        /// How long to go on recording first.
        after: std::time::Duration,
    },
}

/// A stop trigger that fired (its constructors and text are in `trigger`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    /// The trigger, in its command-line form.
    pub trigger: String,
    /// Why it fired, in words (`System.Net.Http.HttpRequestException thrown`).
    pub reason: String,
    /// The firing event's provider (empty when no event fired it).
    pub provider: String,
    /// The firing event's name.
    pub event: String,
    /// The firing event's timestamp in the trace's clock ticks (0 when none).
    pub timestamp: i64,
    /// The firing event's time since the trace start, ns (0 when none).
    pub time_ns: i64,
}

/// A span of the stream the live view skipped because its consumers fell behind (the trace
/// file has it all). Skipping starts at any block and ends at a sequence point, so what a
/// consumer sees after it decodes whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lost {
    /// Blocks skipped (events, stacks, clrspy's readings).
    pub blocks: u64,
    /// Bytes skipped.
    pub bytes: u64,
    /// The earliest and latest event time in the skipped event blocks, ns since the trace
    /// start, when the blocks say (V4/V5 event block headers do).
    pub from_ns: Option<i64>,
    /// See `from_ns`.
    pub to_ns: Option<i64>,
    /// Events skipped, counted from the runtime's sequence numbers where the view resumed
    /// (events the runtime itself lost in the same span are included); None when the stream
    /// ended before the view resumed.
    pub events: Option<u64>,
}

impl Lost {
    /// Adds `other` to these totals (the time span grows to cover both).
    pub fn add(&mut self, other: &Lost) {
        self.blocks += other.blocks;
        self.bytes += other.bytes;
        self.from_ns = min_opt(self.from_ns, other.from_ns);
        self.to_ns = max_opt(self.to_ns, other.to_ns);
        self.events = match (self.events, other.events) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = self.bytes as f64 / (1024.0 * 1024.0);
        write!(f, "{} blocks ({mb:.1} MB", self.blocks)?;
        if let Some(n) = self.events {
            write!(f, ", {n} events")?;
        }
        if let (Some(a), Some(b)) = (self.from_ns, self.to_ns) {
            write!(f, ", {:.2}–{:.2} s", a as f64 / 1e9, b as f64 / 1e9)?;
        }
        write!(f, ")")
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// How a consumer's view of a session ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct End {
    /// Events this consumer was handed.
    pub events: u64,
    /// Everything the live view skipped while this consumer watched.
    pub lost: Lost,
    /// Events the runtime lost (its buffers were full), from sequence numbers, the live view's
    /// own skips taken out.
    pub dropped_events: u64,
    /// Why the stream could not be read to its end, when it could not.
    pub error: Option<String>,
    /// True when the consumer left ([`Subscription`] dropped) before the session ended.
    pub left: bool,
}

/// Something that looks at every event of a live recording, on the tap's thread.
///
/// Consumers must keep up: the tap holds a few megabytes of the stream; when its consumers
/// fall behind it skips blocks up to the next sequence point, and tells every consumer what it
/// skipped ([`EventConsumer::lost`]). A consumer that must lose nothing records a session of
/// its own with [`LiveFeeds::lossless`](crate::LiveFeeds::lossless).
pub trait EventConsumer: Send {
    /// The trace's header, before the first event (or when the consumer joins).
    fn start(&mut self, _header: &nettrace::TraceHeader) {}

    /// One event; the answer tells the pump what to do.
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action;

    /// A span the live view skipped, told before the first event after it.
    fn lost(&mut self, _lost: &Lost) {}

    /// The end of the stream (or of this consumer's subscription): told once, last.
    fn end(&mut self, _end: &End) {}
}

/// A consumer waiting to join, with its leave flag.
pub(crate) struct Joining {
    pub(crate) consumer: Box<dyn EventConsumer>,
    pub(crate) left: Arc<AtomicBool>,
}

#[derive(Default)]
struct BroadcastState {
    joining: Vec<Joining>,
    /// Set when the session ended: later joiners are told the end at once.
    ended: Option<End>,
}

/// The point where consumers join and leave a running session. Clone it freely (the agent
/// hands one to every request); give one to [`LiveFeeds::broadcast`](crate::LiveFeeds) before
/// the session starts. A consumer that joins is told the header, then every event from the
/// next one on; it leaves when its [`Subscription`] is dropped.
#[derive(Clone, Default)]
pub struct Broadcast {
    state: Arc<Mutex<BroadcastState>>,
    waiting: Arc<AtomicBool>,
}

impl std::fmt::Debug for Broadcast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broadcast")
            .field("waiting", &self.waiting.load(Ordering::Relaxed))
            .finish()
    }
}

impl Broadcast {
    /// A broadcast point no session uses yet.
    pub fn new() -> Broadcast {
        Broadcast::default()
    }

    /// Adds `consumer` to the session; it stays until the returned subscription is dropped.
    /// After the session ended it is told the end at once.
    pub fn join(&self, mut consumer: Box<dyn EventConsumer>) -> Subscription {
        let left = Arc::new(AtomicBool::new(false));
        let Ok(mut st) = self.state.lock() else {
            return Subscription { left };
        };
        match &st.ended {
            Some(end) => consumer.end(end),
            None => {
                st.joining.push(Joining {
                    consumer,
                    left: left.clone(),
                });
                self.waiting.store(true, Ordering::Release);
            }
        }
        Subscription { left }
    }

    /// The consumers that joined since the last call (cheap when none did).
    pub(crate) fn take_joining(&self) -> Vec<Joining> {
        if !self.waiting.swap(false, Ordering::Acquire) {
            return Vec::new();
        }
        self.state
            .lock()
            .map(|mut s| std::mem::take(&mut s.joining))
            .unwrap_or_default()
    }

    /// Marks the session over; consumers still waiting to join are told `end`.
    pub(crate) fn close(&self, end: &End) {
        let waiting = match self.state.lock() {
            Ok(mut s) => {
                s.ended = Some(end.clone());
                std::mem::take(&mut s.joining)
            }
            Err(_) => Vec::new(),
        };
        for mut j in waiting {
            j.consumer.end(end);
        }
    }
}

/// A consumer's place in a session: dropping it makes the consumer leave (it is told
/// [`End::left`] on the tap's thread at the next event).
#[derive(Debug)]
pub struct Subscription {
    left: Arc<AtomicBool>,
}

impl Subscription {
    /// Leaves now (the same as dropping it).
    pub fn leave(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.left.store(true, Ordering::Release);
    }
}
