//! Spools: a file in the agent's folder that a writer (a recording, a counters or logs session)
//! grows while an HTTP body follows it, so that a slow client never holds up the writer — the
//! writer writes at its own pace, the body reads behind it. The body ends once the writer said it
//! ended and every byte was sent; the file is removed when both sides are gone. A body whose client
//! went away asks the writer to stop.
//!
//! A trace file is whole at every moment: after its last whole block it carries a provisional
//! end-of-stream marker that the next block overwrites, so a follower holds back that many
//! bytes (`hold_back` of [`Spool::create`]) until the writer ended. Bytes already sent are final: their
//! disk space is handed back as the body goes (a hole is punched), so the folder holds only what
//! the client has not read yet, and a backlog beyond the budget stops the writer.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Bytes, HttpBody};
use clrspy_collect::StopSignal;
use hyper::body::Frame;
use tokio::sync::mpsc;

/// How much the follower reads and sends at once.
const CHUNK: usize = 64 * 1024;
/// Chunks in flight between the follower and the connection: with [`CHUNK`], the most a
/// stream holds in memory.
const IN_FLIGHT: usize = 4;
/// How often the follower looks for more when it caught up.
const POLL: Duration = Duration::from_millis(50);
/// Sent bytes whose disk space is given back at once (a multiple of the page size).
const PUNCH_EVERY: u64 = 4 << 20;
/// A client that takes nothing for this long is given up on (the response is cut): a stalled
/// connection holds no thread and no spool for ever.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(120);

/// How a writer ended.
#[derive(Debug, Default)]
enum End {
    /// Still writing.
    #[default]
    Open,
    /// Every byte is in the file.
    Done,
    /// It failed; the body ends with this error.
    Failed(String),
}

/// The file and what its two sides share; removed when the last side is dropped.
#[derive(Debug)]
struct Shared {
    path: PathBuf,
    end: Mutex<End>,
    /// Bytes the follower sent.
    sent: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A spool file in the agent's folder, before its follower starts.
#[derive(Debug)]
pub(crate) struct Spool {
    shared: Arc<Shared>,
    hold_back: u64,
    budget: u64,
    stall_limit: Duration,
}

/// The writer's side: says when the writing ended (dropped without [`Writer::done`]: failed).
#[derive(Debug)]
pub(crate) struct Writer {
    shared: Arc<Shared>,
    said: bool,
}

impl Writer {
    /// The spool's path (a recording writes it itself).
    pub(crate) fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Every byte is in the file.
    pub(crate) fn done(mut self) {
        self.say(End::Done);
    }

    /// The writing failed: the body ends with an error (the client sees a cut response).
    pub(crate) fn failed(mut self, why: impl Into<String>) {
        self.say(End::Failed(why.into()));
    }

    fn say(&mut self, end: End) {
        self.said = true;
        *self.shared.end.lock().unwrap_or_else(|e| e.into_inner()) = end;
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.said {
            self.say(End::Failed("the writer ended without a word".into()));
        }
    }
}

/// A name in the agent's folder no other spool of this agent uses.
pub(crate) fn name(kind: &str, pid: u32, ext: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("spool-{kind}-{pid}-{}-{n}.{ext}", std::process::id())
}

impl Spool {
    /// Creates the (empty) file `folder/name`, owner-only (0600); `hold_back` bytes at its
    /// end are provisional until the writer ended; a backlog (written, not yet sent) over
    /// `budget` bytes stops it.
    pub(crate) fn create(
        folder: &Path,
        name: &str,
        hold_back: u64,
        budget: u64,
    ) -> io::Result<Spool> {
        let path = folder.join(name);
        clrspy_collect::private::create_new_private(&path)?;
        Ok(Spool {
            shared: Arc::new(Shared {
                path,
                end: Mutex::new(End::Open),
                sent: AtomicU64::new(0),
            }),
            hold_back,
            budget,
            stall_limit: STALL_LIMIT,
        })
    }

    /// The writer's side.
    pub(crate) fn writer(&self) -> Writer {
        Writer {
            shared: self.shared.clone(),
            said: false,
        }
    }

    /// Starts following the file on a thread of its own (a stream lasts up to an hour: not
    /// one of the runtime's blocking threads): the response body, which asks `stop` when
    /// dropped (the client went away) or when the backlog outgrows the budget. Without a
    /// thread the body ends at once with that error.
    pub(crate) fn follow(self, stop: Arc<StopSignal>) -> SpoolBody {
        let (tx, rx) = mpsc::channel(IN_FLIGHT);
        let failure = Arc::new(Mutex::new(None));
        let failed = failure.clone();
        // Read and write: punching holes needs a descriptor open for writing.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.shared.path);
        let stop2 = stop.clone();
        let rt = tokio::runtime::Handle::current();
        let spawned = std::thread::Builder::new()
            .name("agent-spool".into())
            .spawn(move || {
                let res = file.and_then(|f| self.pump(&f, &tx, &stop2, &rt));
                if let Err(e) = res {
                    // Kept beside the channel (which may be full): the body ends with it once
                    // the channel, closed when `tx` goes, was drained.
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                }
                drop(tx);
            });
        if let Err(e) = spawned {
            stop.request();
            *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
        }
        SpoolBody { rx, stop, failure }
    }

    /// Sends the file's bytes as they come until the writer ended and all was sent, or the
    /// body was dropped.
    fn pump(
        &self,
        file: &File,
        tx: &mpsc::Sender<Bytes>,
        stop: &StopSignal,
        rt: &tokio::runtime::Handle,
    ) -> io::Result<()> {
        let mut pos = 0u64;
        let mut punched = 0u64;
        let mut buf = vec![0u8; CHUNK];
        loop {
            // The end first: once it is said, the length read after it is final.
            let ended = match &*self.shared.end.lock().unwrap_or_else(|e| e.into_inner()) {
                End::Open => false,
                End::Done => true,
                End::Failed(why) => return Err(io::Error::other(why.clone())),
            };
            let len = file.metadata()?.len();
            let ready = if ended {
                len
            } else {
                len.saturating_sub(self.hold_back)
            };
            if ready > pos {
                if len - pos > self.budget && stop.count() == 0 {
                    // The client reads too slowly for the folder's budget: end the writing.
                    stop.request();
                }
                let want = usize::try_from(ready - pos).unwrap_or(CHUNK).min(CHUNK);
                let n = file.read_at(&mut buf[..want], pos)?;
                if n == 0 {
                    return Err(io::Error::other("the spool shrank"));
                }
                let chunk = Bytes::copy_from_slice(&buf[..n]);
                // The timer is made inside the runtime (this thread is not one of its own).
                let sent = rt.block_on(async {
                    tokio::time::timeout(self.stall_limit, tx.send(chunk)).await
                });
                match sent {
                    Ok(Ok(())) => {}
                    // The body was dropped: the client went away.
                    Ok(Err(_)) => return Ok(()),
                    Err(_) => {
                        stop.request();
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "the client took nothing for {} s",
                                self.stall_limit.as_secs()
                            ),
                        ));
                    }
                }
                pos += n as u64;
                self.shared.sent.store(pos, Ordering::Relaxed);
                if pos - punched >= PUNCH_EVERY {
                    let to = pos & !(PUNCH_EVERY - 1);
                    punch_hole(file, punched, to);
                    punched = to;
                }
                continue;
            }
            if ended || tx.is_closed() {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Gives back the disk space of `[from, to)` (sent, never written again); the file keeps its
/// size. Where the file system cannot, the space stays taken until the spool is removed.
fn punch_hole(file: &File, from: u64, to: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(len)) = (i64::try_from(from), i64::try_from(to - from)) else {
        return;
    };
    // SAFETY: fallocate on our own open descriptor; no memory is passed.
    unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            len,
        );
    }
}

/// The response body following a spool; dropping it (the client went away) asks the writer
/// to stop.
#[derive(Debug)]
pub(crate) struct SpoolBody {
    rx: mpsc::Receiver<Bytes>,
    stop: Arc<StopSignal>,
    failure: Arc<Mutex<Option<io::Error>>>,
}

impl Drop for SpoolBody {
    fn drop(&mut self) {
        self.stop.request();
    }
}

impl HttpBody for SpoolBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Poll::Ready(None) => {
                let failure = self
                    .failure
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                Poll::Ready(failure.map(Err))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("clrspy-spool-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    async fn collect(mut body: SpoolBody) -> (Vec<u8>, Option<io::Error>) {
        let mut out = Vec::new();
        loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return (out, None),
                Some(Ok(f)) => out.extend_from_slice(&f.into_data().unwrap()),
                Some(Err(e)) => return (out, Some(e)),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn follows_a_growing_file_and_ends_when_told() {
        let d = dir("grow");
        let spool = Spool::create(&d, &name("t", 1, "bin"), 4, u64::MAX).unwrap();
        let path = spool.shared.path.clone();
        let w = spool.writer();
        let stop = Arc::new(StopSignal::new());
        let body = spool.follow(stop.clone());
        // The writer: 300 KB in pieces, each followed by a provisional 4-byte marker that the
        // next piece overwrites (as a trace file is written), then the real end.
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(w.path())
                .unwrap();
            let mut at = 0u64;
            for i in 0..300u32 {
                let piece: Vec<u8> = (0..1000u32).map(|j| ((i + j) % 251) as u8).collect();
                f.write_all_at(&piece, at).unwrap();
                at += piece.len() as u64;
                f.write_all_at(b"EOS!", at).unwrap();
                if i % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(60));
                }
            }
            f.write_all_at(b"end.", at).unwrap();
            f.flush().unwrap();
            w.done();
        });
        let (got, err) = collect(body).await;
        writer.join().unwrap();
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got.len(), 300_000 + 4);
        assert!(got.ends_with(b"end."));
        assert!(!got.windows(4).any(|w| w == b"EOS!"), "a marker was sent");
        for (i, chunk) in got[..300_000].chunks(1000).enumerate() {
            assert_eq!(chunk[0], (i % 251) as u8);
        }
        // Dropped body and writer: the file is gone, and the writer was asked nothing.
        assert!(!path.exists());
        // The body's drop asks for a stop (a no-op once the writer ended).
        assert_eq!(stop.count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_writer_cuts_the_body_and_a_gone_client_stops_it() {
        let d = dir("fail");
        let spool = Spool::create(&d, &name("t", 2, "bin"), 0, u64::MAX).unwrap();
        let w = spool.writer();
        std::fs::write(w.path(), b"some").unwrap();
        let body = spool.follow(Arc::new(StopSignal::new()));
        w.failed("the target went away");
        let (_, err) = collect(body).await;
        assert!(err.unwrap().to_string().contains("went away"));

        let spool = Spool::create(&d, &name("t", 2, "bin"), 0, u64::MAX).unwrap();
        let w = spool.writer();
        let path = w.path().to_path_buf();
        let stop = Arc::new(StopSignal::new());
        drop(spool.follow(stop.clone()));
        assert_eq!(stop.count(), 1, "the client went away: stop");
        // Writer dropped without a word: that is a failure, and then the file goes.
        drop(w);
        for _ in 0..100 {
            if !path.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!path.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sent_bytes_give_their_disk_space_back() {
        use std::os::unix::fs::MetadataExt;
        let d = dir("punch");
        let spool = Spool::create(&d, &name("t", 4, "bin"), 0, u64::MAX).unwrap();
        let w = spool.writer();
        let data: Vec<u8> = (0..12u32 << 20).map(|i| (i % 253) as u8).collect();
        std::fs::write(w.path(), &data).unwrap();
        let mut body = spool.follow(Arc::new(StopSignal::new()));
        let mut got = Vec::new();
        while got.len() < data.len() {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                Some(Ok(f)) => got.extend_from_slice(&f.into_data().unwrap()),
                other => panic!("{other:?}"),
            }
        }
        assert!(got == data, "the bytes sent are the bytes written");
        // Everything was sent while the writer still writes: at least 8 MB given back, the
        // size unchanged.
        let m = std::fs::metadata(w.path()).unwrap();
        assert_eq!(m.len(), data.len() as u64);
        assert!(
            m.blocks() * 512 <= 4 << 20,
            "{} bytes on disk",
            m.blocks() * 512
        );
        w.done();
        let (rest, err) = collect(body).await;
        assert!(rest.is_empty() && err.is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_client_is_given_up_on() {
        let d = dir("stall");
        let mut spool = Spool::create(&d, &name("t", 5, "bin"), 0, u64::MAX).unwrap();
        spool.stall_limit = Duration::from_millis(300);
        let w = spool.writer();
        let path = w.path().to_path_buf();
        std::fs::write(&path, vec![1u8; 2 << 20]).unwrap();
        w.done();
        let stop = Arc::new(StopSignal::new());
        let body = spool.follow(stop.clone());
        // Nobody reads for longer than the limit.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(stop.count(), 1, "the writer is asked to stop");
        let (got, err) = collect(body).await;
        assert_eq!(got.len(), IN_FLIGHT * CHUNK, "what was in flight");
        assert_eq!(err.unwrap().kind(), io::ErrorKind::TimedOut);
        assert!(!path.exists(), "the spool goes with its follower");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backlog_over_the_budget_stops_the_writer() {
        let d = dir("budget");
        let spool = Spool::create(&d, &name("t", 3, "bin"), 0, 1000).unwrap();
        let w = spool.writer();
        std::fs::write(w.path(), vec![7u8; 5000]).unwrap();
        let stop = Arc::new(StopSignal::new());
        let body = spool.follow(stop.clone());
        for _ in 0..100 {
            if stop.count() > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(stop.count(), 1);
        w.done();
        let (got, err) = collect(body).await;
        assert!(err.is_none());
        assert_eq!(got.len(), 5000, "what was written is still sent whole");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
