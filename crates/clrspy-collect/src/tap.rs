//! The event tap: decodes the runtime's events while they stream, on a side thread, counts them
//! for the status line and hands each one to the [`EventConsumer`]s, whose [`Action`]s go back to
//! the pump. The side thread gets copies of the bytes through a channel bounded in chunks and
//! in bytes (4 MB); if it falls behind, the tap gives up (counts and consumers stop) —
//! recording never waits for it.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

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

/// Something that looks at every event of a live recording, on the tap's thread.
///
/// Consumers must keep up: the tap holds at most a few megabytes of the stream, and when it
/// falls behind it gives up rather than slow the recording — consumers then see no more events
/// and the summary has no event count ([`Summary::events`](crate::Summary::events) is None).
pub trait EventConsumer: Send {
    /// One event; the answer tells the pump what to do.
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action;
}

/// Chunks in flight to the tap before it counts as behind (each one read, up to 256 KB).
const CHANNEL_CHUNKS: usize = 64;
/// Bytes in flight to the tap before it counts as behind: the bound on the copies it holds
/// (the chunk count alone allowed 16 MB).
const CHANNEL_BYTES: usize = 4 << 20;
/// The tap's reader buffer (its default, 4 MB, is for files; the stream arrives in reads
/// of at most 256 KB, and a larger block still grows it).
const READER_BUFFER: usize = 512 << 10;
/// Actions held for the pump at most; more are dropped (the pump drains them every read).
const ACTION_QUEUE: usize = 64;

#[derive(Default)]
struct Counts {
    events: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicBool,
    /// Bytes sent and not yet taken by the tap thread.
    in_flight: AtomicUsize,
}

/// Reads the chunks sent through the channel as one byte stream.
struct ChannelReader {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
    counts: Arc<Counts>,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.chunk.len() {
            match self.rx.recv() {
                Ok(c) => {
                    self.counts.in_flight.fetch_sub(c.len(), Ordering::Relaxed);
                    self.chunk = c;
                    self.pos = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// A live decoder of the runtime's stream.
pub(crate) struct Tap {
    tx: Option<SyncSender<Vec<u8>>>,
    actions: Receiver<Action>,
    counts: Arc<Counts>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The tap thread's loop: decode, count, consult the consumers.
fn run(
    src: ChannelReader,
    counts: &Counts,
    consumers: &mut [Box<dyn EventConsumer>],
    actions: &SyncSender<Action>,
) {
    let Ok(mut reader) = nettrace::StreamReader::from_read_with_buffer(src, READER_BUFFER) else {
        counts.failed.store(true, Ordering::Relaxed);
        return;
    };
    let mut stopped = false;
    loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                for c in consumers.iter_mut() {
                    match c.event(&ev) {
                        Action::Continue => {}
                        // One stop is enough; the events after it still reach the others.
                        Action::Stop { .. } if stopped => {}
                        a => {
                            stopped |= matches!(a, Action::Stop { .. });
                            let _ = actions.try_send(a);
                        }
                    }
                }
                let s = reader.stats();
                counts.events.store(s.events, Ordering::Relaxed);
                counts.dropped.store(s.dropped_events, Ordering::Relaxed);
            }
            Ok(None) => break,
            Err(_) => {
                // A stream cut by a dying target: the counts so far stand.
                if reader.stats().events == 0 {
                    counts.failed.store(true, Ordering::Relaxed);
                }
                break;
            }
        }
    }
    let s = reader.stats();
    counts.events.store(s.events, Ordering::Relaxed);
    counts.dropped.store(s.dropped_events, Ordering::Relaxed);
}

impl Tap {
    /// Starts the tap thread with `consumers`.
    pub(crate) fn new(mut consumers: Vec<Box<dyn EventConsumer>>) -> Tap {
        let (tx, rx) = sync_channel::<Vec<u8>>(CHANNEL_CHUNKS);
        let (atx, arx) = sync_channel::<Action>(ACTION_QUEUE);
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let thread = std::thread::Builder::new()
            .name("clrspy-tap".into())
            .spawn(move || {
                let src = ChannelReader {
                    rx,
                    chunk: Vec::new(),
                    pos: 0,
                    counts: c.clone(),
                };
                run(src, &c, &mut consumers, &atx);
            })
            .ok();
        Tap {
            tx: thread.as_ref().map(|_| tx),
            actions: arx,
            counts,
            thread,
        }
    }

    /// Hands a copy of the bytes to the tap thread, or gives up when it is behind.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if let Some(tx) = &self.tx {
            let behind = self.counts.in_flight.load(Ordering::Relaxed) + bytes.len()
                > CHANNEL_BYTES.max(bytes.len());
            let sent = if behind {
                Err(TrySendError::Full(Vec::new()))
            } else {
                self.counts
                    .in_flight
                    .fetch_add(bytes.len(), Ordering::Relaxed);
                tx.try_send(bytes.to_vec())
            };
            match sent {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.counts.failed.store(true, Ordering::Relaxed);
                    self.tx = None;
                }
            }
        }
    }

    /// The next action a consumer asked for, if any.
    pub(crate) fn next_action(&self) -> Option<Action> {
        self.actions.try_recv().ok()
    }

    /// True once the tap gave up (it fell behind, or the stream was not a trace).
    pub(crate) fn gave_up(&self) -> bool {
        self.counts.failed.load(Ordering::Relaxed)
    }

    /// Events and lost events so far (None once the tap gave up).
    pub(crate) fn counts(&self) -> (Option<u64>, Option<u64>) {
        if self.gave_up() {
            return (None, None);
        }
        (
            Some(self.counts.events.load(Ordering::Relaxed)),
            Some(self.counts.dropped.load(Ordering::Relaxed)),
        )
    }

    /// Ends the stream, waits for the tap thread, and returns the final counts and the actions
    /// asked for at the very end.
    pub(crate) fn finish(mut self) -> ((Option<u64>, Option<u64>), Vec<Action>) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let rest = std::iter::from_fn(|| self.next_action()).collect();
        (self.counts(), rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perf() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../nettrace/tests/data/perf.nettrace"
        ))
        .unwrap()
    }

    #[test]
    fn counts_a_real_trace_fed_in_pieces() {
        let data = perf();
        let expected = {
            let mut r = nettrace::TraceReader::new(&data).unwrap();
            while r.next_event().unwrap().is_some() {}
            r.stats().events
        };
        let mut t = Tap::new(Vec::new());
        for piece in data.chunks(data.len() / 40 + 1) {
            t.feed(piece);
            if t.counts().0.is_none() {
                break;
            }
        }
        assert_eq!(t.finish().0, (Some(expected), Some(0)));
    }

    #[test]
    fn garbage_gives_up_quietly() {
        let mut t = Tap::new(Vec::new());
        t.feed(b"not a trace at all, not even close");
        assert_eq!(t.finish().0, (None, None));
    }

    /// Asks to stop at the n-th event.
    struct StopAt(u64, u64);

    impl EventConsumer for StopAt {
        fn event(&mut self, _ev: &nettrace::Event<'_>) -> Action {
            self.1 += 1;
            if self.1 == self.0 {
                Action::Stop {
                    reason: format!("event {}", self.0),
                }
            } else {
                Action::Continue
            }
        }
    }

    #[test]
    fn a_consumer_asking_to_stop_is_heard_once() {
        let data = perf();
        let mut t = Tap::new(vec![Box::new(StopAt(10, 0)), Box::new(StopAt(20, 0))]);
        // Fewer pieces than the channel holds: the tap never counts as behind here.
        for piece in data.chunks(data.len() / (CHANNEL_CHUNKS - 8) + 1) {
            t.feed(piece);
        }
        assert!(!t.gave_up());
        let (_, actions) = t.finish();
        assert_eq!(
            actions,
            vec![Action::Stop {
                reason: "event 10".into()
            }]
        );
    }

    /// Waits at its first event until released.
    struct Stall(Option<std::sync::mpsc::Receiver<()>>);

    impl EventConsumer for Stall {
        fn event(&mut self, _ev: &nettrace::Event<'_>) -> Action {
            if let Some(rx) = self.0.take() {
                let _ = rx.recv();
            }
            Action::Continue
        }
    }

    #[test]
    fn a_stalled_tap_holds_a_bounded_number_of_bytes() {
        let data = perf();
        let (release, wait) = std::sync::mpsc::channel();
        let mut t = Tap::new(vec![Box::new(Stall(Some(wait)))]);
        t.feed(&data);
        // Fewer chunks than the channel holds, more bytes than the tap may keep.
        let piece = vec![0u8; 128 << 10];
        let mut fed = 0;
        while !t.gave_up() && fed < CHANNEL_CHUNKS / 2 {
            t.feed(&piece);
            fed += 1;
        }
        assert!(t.gave_up(), "{fed} chunks of 128 KB held");
        assert!(fed * piece.len() <= CHANNEL_BYTES + READER_BUFFER + data.len() + piece.len());
        drop(release);
        assert_eq!(t.finish().0, (None, None));
    }
}
