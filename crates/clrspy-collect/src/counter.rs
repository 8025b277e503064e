//! Counting events while they stream: the runtime's bytes are parsed on a side thread by
//! nettrace's incremental reader, so the status line can show events/s and lost events. The
//! side thread gets copies through a bounded channel; if it falls behind, counting stops —
//! recording never waits for it.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

#[derive(Default)]
struct Counts {
    events: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicBool,
}

/// Reads the chunks sent through the channel as one byte stream.
struct ChannelReader {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.chunk.len() {
            match self.rx.recv() {
                Ok(c) => {
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

/// A live event counter.
pub(crate) struct Counter {
    tx: Option<SyncSender<Vec<u8>>>,
    counts: Arc<Counts>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Counter {
    pub(crate) fn new() -> Counter {
        let (tx, rx) = sync_channel::<Vec<u8>>(64);
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let thread = std::thread::Builder::new()
            .name("clrspy-count".into())
            .spawn(move || {
                let src = ChannelReader {
                    rx,
                    chunk: Vec::new(),
                    pos: 0,
                };
                let Ok(mut reader) = nettrace::StreamReader::from_read(src) else {
                    c.failed.store(true, Ordering::Relaxed);
                    return;
                };
                loop {
                    match reader.next_event() {
                        Ok(Some(_)) => {
                            let s = reader.stats();
                            c.events.store(s.events, Ordering::Relaxed);
                            c.dropped.store(s.dropped_events, Ordering::Relaxed);
                        }
                        Ok(None) => break,
                        Err(_) => {
                            // A stream cut by a dying target: the counts so far stand.
                            if reader.stats().events == 0 {
                                c.failed.store(true, Ordering::Relaxed);
                            }
                            break;
                        }
                    }
                }
                let s = reader.stats();
                c.events.store(s.events, Ordering::Relaxed);
                c.dropped.store(s.dropped_events, Ordering::Relaxed);
            })
            .ok();
        Counter {
            tx: thread.as_ref().map(|_| tx),
            counts,
            thread,
        }
    }

    /// Hands a copy of the bytes to the counting thread, or gives up counting when it is behind.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if let Some(tx) = &self.tx {
            match tx.try_send(bytes.to_vec()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.counts.failed.store(true, Ordering::Relaxed);
                    self.tx = None;
                }
            }
        }
    }

    /// Events and lost events so far (None once counting was given up).
    pub(crate) fn counts(&self) -> (Option<u64>, Option<u64>) {
        if self.counts.failed.load(Ordering::Relaxed) {
            return (None, None);
        }
        (
            Some(self.counts.events.load(Ordering::Relaxed)),
            Some(self.counts.dropped.load(Ordering::Relaxed)),
        )
    }

    /// Ends the stream and waits for the final counts.
    pub(crate) fn finish(mut self) -> (Option<u64>, Option<u64>) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.counts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_real_trace_fed_in_pieces() {
        let data = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../nettrace/tests/data/perf.nettrace"
        ))
        .unwrap();
        let expected = {
            let mut r = nettrace::TraceReader::new(&data).unwrap();
            while r.next_event().unwrap().is_some() {}
            r.stats().events
        };
        let mut c = Counter::new();
        for piece in data.chunks(data.len() / 40 + 1) {
            c.feed(piece);
            // Give the side thread time so the bounded channel never fills in this test.
            if c.counts().0.is_none() {
                break;
            }
        }
        assert_eq!(c.finish(), (Some(expected), Some(0)));
    }

    #[test]
    fn garbage_gives_up_quietly() {
        let mut c = Counter::new();
        c.feed(b"not a trace at all, not even close");
        assert_eq!(c.finish(), (None, None));
    }
}
