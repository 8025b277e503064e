//! The event tap: decodes the recording while it streams, on a side thread, counts the events
//! for the status line and hands each one to the [`EventConsumer`]s (those given at the start
//! and those that join through a [`Broadcast`]), whose [`Action`]s go back to the pump.
//!
//! The tap is a sink of the spliced stream ([`TapFeed`]): it decodes exactly what the trace
//! file holds, clrspy's own events (thread CPU readings, thread names, module maps, ReadyToRun
//! names) included. When its consumers fall behind, the feed skips whole blocks up to a
//! sequence point and every consumer is told the span ([`EventConsumer::lost`]); recording
//! never waits for the tap unless the session asked for a lossless tap.

use std::collections::VecDeque;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

pub use crate::consumer::Fired;
pub(crate) use crate::consumer::{Action, EventConsumer};
use crate::consumer::{Broadcast, End, Lost};
use crate::sink::{ByteSink, SplicedSink};
use crate::tap_feed::{FeedShared, Msg, TapFeed};

/// The tap's reader buffer (its default, 4 MB, is for files; the stream arrives in reads
/// of at most 256 KB, and a larger block still grows it).
const READER_BUFFER: usize = 512 << 10;
/// Actions held for the pump at most; more are dropped (the pump drains them every read).
const ACTION_QUEUE: usize = 64;

/// The tap thread's counters, read by the pump for the status line.
#[derive(Default)]
struct Counts {
    events: AtomicU64,
    /// Events the runtime lost (the live view's own skips taken out).
    dropped: AtomicU64,
    /// Events the live view skipped, from sequence numbers.
    skipped_events: AtomicU64,
    failed: AtomicBool,
}

/// Skips the feed announced, by the stream offset where each sits.
type Gaps = Arc<Mutex<VecDeque<(u64, Lost)>>>;

/// Reads the feed's chunks as one byte stream, noting where each skip sits.
struct ChannelReader {
    rx: Receiver<Msg>,
    chunk: Vec<u8>,
    pos: usize,
    /// Bytes handed to the reader so far.
    offset: u64,
    gaps: Gaps,
    shared: Arc<FeedShared>,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.chunk.len() {
            match self.rx.recv() {
                Ok(Msg::Bytes(c)) => {
                    self.shared.in_flight.fetch_sub(c.len(), Ordering::Relaxed);
                    if let Some(ns) = crate::procstat::thread_cpu_ns() {
                        self.shared.thread_cpu_ns.store(ns, Ordering::Relaxed);
                    }
                    self.chunk = c;
                    self.pos = 0;
                }
                Ok(Msg::Lost(l)) => {
                    if let Ok(mut g) = self.gaps.lock() {
                        g.push_back((self.offset, l));
                    }
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        self.offset += n as u64;
        Ok(n)
    }
}

/// One consumer on the tap thread.
struct Slot {
    consumer: Box<dyn EventConsumer>,
    /// Set when its subscription was dropped (consumers given at the start have none).
    left: Option<Arc<AtomicBool>>,
    events: u64,
    lost: Lost,
}

impl Slot {
    fn new(consumer: Box<dyn EventConsumer>, left: Option<Arc<AtomicBool>>) -> Slot {
        Slot {
            consumer,
            left,
            events: 0,
            lost: Lost::default(),
        }
    }

    fn has_left(&self) -> bool {
        self.left
            .as_ref()
            .is_some_and(|l| l.load(Ordering::Acquire))
    }

    fn end(&mut self, how: &End) {
        let end = End {
            events: self.events,
            lost: self.lost.clone(),
            ..how.clone()
        };
        self.consumer.end(&end);
    }
}

/// What the tap thread works with.
struct TapThread {
    slots: Vec<Slot>,
    broadcast: Option<Broadcast>,
    actions: SyncSender<Action>,
    counts: Arc<Counts>,
    gaps: Gaps,
    stopped: bool,
}

impl TapThread {
    /// Adds the consumers that joined through the broadcast point.
    fn take_joiners(&mut self, header: &nettrace::TraceHeader) {
        let Some(b) = &self.broadcast else { return };
        for mut j in b.take_joining() {
            j.consumer.start(header);
            self.slots.push(Slot::new(j.consumer, Some(j.left)));
        }
    }

    /// Tells every consumer about the skips that sit before stream offset `offset` (all of
    /// them with None).
    fn tell_gaps(&mut self, offset: Option<u64>) {
        let due: Vec<Lost> = match self.gaps.lock() {
            Ok(mut g) => {
                let mut due = Vec::new();
                while g
                    .front()
                    .is_some_and(|(at, _)| offset.is_none_or(|o| *at <= o))
                {
                    if let Some((_, l)) = g.pop_front() {
                        due.push(l);
                    }
                }
                due
            }
            Err(_) => Vec::new(),
        };
        for l in &due {
            for s in &mut self.slots {
                s.lost.add(l);
                s.consumer.lost(l);
            }
        }
    }

    /// Hands one event to every consumer; ends the ones that left.
    fn event(&mut self, ev: &nettrace::Event<'_>) {
        let mut i = 0;
        while i < self.slots.len() {
            if self.slots[i].has_left() {
                let mut s = self.slots.swap_remove(i);
                s.end(&End {
                    left: true,
                    ..End::default()
                });
                continue;
            }
            let s = &mut self.slots[i];
            s.events += 1;
            match s.consumer.event(ev) {
                Action::Continue => {}
                // One stop is enough; the events after it still reach the others.
                Action::Stop { .. } if self.stopped => {}
                a => {
                    self.stopped |= matches!(a, Action::Stop { .. });
                    let _ = self.actions.try_send(a);
                }
            }
            i += 1;
        }
    }

    /// Ends every consumer and the broadcast point.
    fn end(&mut self, error: Option<String>) {
        self.tell_gaps(None);
        let end = End {
            dropped_events: self.counts.dropped.load(Ordering::Relaxed),
            error,
            ..End::default()
        };
        for mut s in self.slots.drain(..) {
            let left = s.has_left();
            s.end(&End {
                left,
                ..end.clone()
            });
        }
        if let Some(b) = &self.broadcast {
            b.close(&end);
        }
    }
}

/// The tap thread's loop: decode, count, consult the consumers.
fn run(src: ChannelReader, t: &mut TapThread) {
    let shared = src.shared.clone();
    let mut reader = match nettrace::StreamReader::from_read_with_buffer(src, READER_BUFFER) {
        Ok(r) => r,
        Err(e) => {
            t.counts.failed.store(true, Ordering::Relaxed);
            shared.closed.store(true, Ordering::Relaxed);
            t.end(Some(e.to_string()));
            return;
        }
    };
    let header = reader.header().clone();
    for s in &mut t.slots {
        s.consumer.start(&header);
    }
    // The runtime's drop count as of the last event, to tell a skip's events from it.
    let mut dropped_before = 0u64;
    let mut skipped = 0u64;
    let mut after_gap = false;
    let error = loop {
        match reader.next_event() {
            Ok(Some(ev)) => {
                t.take_joiners(&header);
                let has_gap = t
                    .gaps
                    .lock()
                    .map(|g| g.front().is_some_and(|(at, _)| *at <= ev.offset))
                    .unwrap_or(false);
                if has_gap {
                    t.tell_gaps(Some(ev.offset));
                    after_gap = true;
                }
                t.event(&ev);
                let s = reader.stats();
                if after_gap {
                    // The sequence points read since the last event counted the skipped
                    // events as dropped: they are the view's, not the runtime's.
                    skipped += s.dropped_events.saturating_sub(dropped_before);
                    after_gap = false;
                    t.counts.skipped_events.store(skipped, Ordering::Relaxed);
                }
                dropped_before = s.dropped_events;
                t.counts.events.store(s.events, Ordering::Relaxed);
                t.counts
                    .dropped
                    .store(s.dropped_events.saturating_sub(skipped), Ordering::Relaxed);
            }
            Ok(None) => break None,
            Err(e) => {
                // A stream cut by a dying target: the counts so far stand.
                if reader.stats().events == 0 {
                    t.counts.failed.store(true, Ordering::Relaxed);
                }
                break Some(e.to_string());
            }
        }
    };
    shared.closed.store(true, Ordering::Relaxed);
    let s = reader.stats();
    t.counts.events.store(s.events, Ordering::Relaxed);
    t.counts
        .dropped
        .store(s.dropped_events.saturating_sub(skipped), Ordering::Relaxed);
    // The feed sends nothing more once `closed` is set.
    t.end(error);
}

/// What the tap lost, for the status line and the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapLoss {
    /// Blocks skipped.
    pub blocks: u64,
    /// Bytes skipped.
    pub bytes: u64,
    /// Events skipped (from sequence numbers, once the view resumed).
    pub events: u64,
}

/// The tap's last word: (events, runtime-lost events), what the view skipped, the actions
/// asked for at the very end.
pub(crate) type FinalCounts = ((Option<u64>, Option<u64>), Option<TapLoss>, Vec<Action>);

/// A live decoder of the recording.
pub(crate) struct Tap {
    sink: SplicedSink<TapFeed>,
    actions: Receiver<Action>,
    counts: Arc<Counts>,
    shared: Arc<FeedShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Tap {
    /// Starts the tap thread with `consumers` (and those that join through `broadcast`);
    /// `lossless` makes the feed wait for the thread instead of skipping.
    pub(crate) fn new(
        consumers: Vec<Box<dyn EventConsumer>>,
        broadcast: Option<Broadcast>,
        lossless: bool,
    ) -> Tap {
        let (tx, rx) = channel::<Msg>();
        let (atx, arx) = sync_channel::<Action>(ACTION_QUEUE);
        let counts = Arc::new(Counts::default());
        let shared = Arc::new(FeedShared::default());
        let gaps: Gaps = Arc::default();
        let src = ChannelReader {
            rx,
            chunk: Vec::new(),
            pos: 0,
            offset: 0,
            gaps: gaps.clone(),
            shared: shared.clone(),
        };
        let mut t = TapThread {
            slots: consumers.into_iter().map(|c| Slot::new(c, None)).collect(),
            broadcast,
            actions: atx,
            counts: counts.clone(),
            gaps,
            stopped: false,
        };
        let thread = std::thread::Builder::new()
            .name("clrspy-tap".into())
            .spawn(move || run(src, &mut t))
            .ok();
        if thread.is_none() {
            shared.closed.store(true, Ordering::Relaxed);
            counts.failed.store(true, Ordering::Relaxed);
        }
        let feed = TapFeed::new(tx, shared.clone(), lossless);
        Tap {
            sink: SplicedSink::with_output(Path::new("(live view)"), feed),
            actions: arx,
            counts,
            shared,
            thread,
        }
    }

    /// The tap as a sink of the stream (it takes clrspy's splices too).
    pub(crate) fn sink(&mut self) -> &mut dyn ByteSink {
        &mut self.sink
    }

    /// Sets how many bytes may be in flight before the tap counts as behind (tests).
    #[cfg(test)]
    pub(crate) fn set_bound(&self, bytes: usize) {
        self.shared.bound.store(bytes, Ordering::Relaxed);
    }

    /// The next action a consumer asked for, if any.
    pub(crate) fn next_action(&self) -> Option<Action> {
        self.actions.try_recv().ok()
    }

    /// The tap thread's CPU time so far, ns (as of the last chunk it took).
    pub(crate) fn thread_cpu_ns(&self) -> u64 {
        self.shared.thread_cpu_ns.load(Ordering::Relaxed)
    }

    /// True once the tap gave up (the stream was not a trace it could follow).
    pub(crate) fn gave_up(&self) -> bool {
        self.counts.failed.load(Ordering::Relaxed)
    }

    /// Events and events the runtime lost so far (None once the tap gave up).
    pub(crate) fn counts(&self) -> (Option<u64>, Option<u64>) {
        if self.gave_up() {
            return (None, None);
        }
        (
            Some(self.counts.events.load(Ordering::Relaxed)),
            Some(self.counts.dropped.load(Ordering::Relaxed)),
        )
    }

    /// What the live view skipped so far (None when nothing).
    pub(crate) fn loss(&self) -> Option<TapLoss> {
        let blocks = self.shared.lost_blocks.load(Ordering::Relaxed);
        (blocks > 0).then(|| TapLoss {
            blocks,
            bytes: self.shared.lost_bytes.load(Ordering::Relaxed),
            events: self.counts.skipped_events.load(Ordering::Relaxed),
        })
    }

    /// Ends the stream, waits for the tap thread, and returns the final counts, what the
    /// view skipped and the actions asked for at the very end.
    pub(crate) fn finish(mut self) -> FinalCounts {
        let _ = self.sink.finish();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let rest = std::iter::from_fn(|| self.next_action()).collect();
        (self.counts(), self.loss(), rest)
    }
}

#[cfg(test)]
#[path = "tap_tests.rs"]
mod tests;
