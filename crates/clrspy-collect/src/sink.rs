//! Byte sinks: where the pump puts the runtime's stream as it arrives. A sink takes the bytes in
//! order, may take clrspy's own events to splice in between blocks, and is finished once at the
//! end. The trace file ([`FileSink`]) and the ring buffer that keeps only the newest part
//! ([`RingSink`](crate::ring::RingSink)) are one [`SplicedSink`] (the [`Splicer`] and the sink's
//! calls, written once) over two [`SpliceOutput`]s: the [`StagedFile`], a whole trace on disk
//! at every moment, and the ring's block store.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::inject::{Injected, Splicer, SplicerSlot, WholePrefix};
use crate::{Error, Result};

/// What a sink did, once finished.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SinkReport {
    /// Bytes it stored (the runtime's and clrspy's).
    pub(crate) bytes: u64,
    /// clrspy's own events it spliced in.
    pub(crate) spliced_events: u64,
    /// Where it stored them, when that is a file.
    pub(crate) path: Option<PathBuf>,
    /// When the stream arrived without its end (the target died, the connection broke, the
    /// rundown wait was cut short, the disk filled): the bytes of the last, partial block that
    /// were dropped so the file could be closed with a valid end of stream. None when the
    /// runtime ended the stream itself.
    pub(crate) closed_by_clrspy: Option<u64>,
    /// For a ring, what it kept and dropped.
    pub(crate) ring: Option<RingStats>,
}

/// A destination for the runtime's byte stream.
pub trait ByteSink {
    /// The next bytes of the runtime's stream, in order. An error ends the recording.
    fn write(&mut self, bytes: &[u8]) -> Result<()>;

    /// True while the sink can still splice clrspy's events in ([`ByteSink::splice`]).
    fn wants_splices(&self) -> bool {
        false
    }

    /// Queues one of clrspy's events (stamped with CLOCK_MONOTONIC) for the next block
    /// boundary. Sinks that keep no trace ignore it.
    fn splice(&mut self, _monotonic_ns: u64, _ev: &Injected) {}

    /// Queues one of clrspy's events to go in last, before the runtime's end marker when the
    /// stream ended (it is held until [`ByteSink::finish`]); as [`ByteSink::splice`] before.
    /// Sinks that keep no trace ignore it.
    fn splice_at_end(&mut self, _monotonic_ns: u64, _ev: &Injected) {}

    /// Called after every read round, also when the runtime was quiet: write what is queued.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// The runtime was asked to stop: what follows is the events it still had buffered and
    /// the rundown (the names of every method). A ring keeps all of it beyond its budget.
    fn stopping(&mut self) {}

    /// Bytes stored so far.
    fn bytes(&self) -> u64;

    /// Ends the sink: flush everything and make it durable. Called once.
    fn finish(&mut self) -> Result<SinkReport>;
}

/// What a ring kept and dropped, once finished.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Bytes of the stream it received (the runtime's and clrspy's).
    pub received: u64,
    /// Blocks it dropped to stay within the budget.
    pub dropped_blocks: u64,
    /// Sequence points the stream held.
    pub sequence_points: u64,
    /// Bytes of stack, event and sequence-point blocks dropped.
    pub dropped_bytes: u64,
    /// Bytes received after the runtime was asked to stop (its last buffered events and the
    /// rundown), kept whole beyond the budget.
    pub after_stop_bytes: u64,
}

/// Where a [`SplicedSink`] puts the spliced stream (the runtime's bytes with clrspy's events
/// between its blocks): the trace file ([`StagedFile`]) or the ring's block store.
pub(crate) trait SpliceOutput: Write + Sized {
    /// After every write and flush round: `whole` says how far the spliced stream is a whole
    /// trace, `written` how many bytes of it there are. Returns the bytes stored so far (what
    /// [`ByteSink::bytes`] says).
    fn settle(&mut self, whole: WholePrefix, written: u64) -> std::io::Result<u64>;

    /// Told each of clrspy's events as it is queued for splicing (the ring keeps the thread
    /// names, to name the threads again when it dropped the blocks that named them).
    fn spliced(&mut self, _ev: &Injected) {}

    /// Told when the runtime was asked to stop ([`ByteSink::stopping`]).
    fn stopping(&mut self) {}

    /// Ends the output once the stream is over (`splicer` holds it, `path` names it in
    /// errors).
    fn finish(splicer: Splicer<Self>, path: &Path) -> Result<SinkReport>;
}

/// A sink that splices clrspy's events into the stream and hands the result to its output:
/// the one implementation of [`ByteSink`]'s calls for the trace file and the ring.
pub(crate) struct SplicedSink<O: SpliceOutput> {
    path: PathBuf,
    splicer: Option<Splicer<O>>,
    bytes: u64,
    /// The report once finished.
    finished: Option<SinkReport>,
}

impl<O: SpliceOutput> SplicedSink<O> {
    /// A sink for the stream stored at `path` through `out`.
    pub(crate) fn with_output(path: &Path, out: O) -> SplicedSink<O> {
        SplicedSink {
            path: path.to_path_buf(),
            splicer: Some(Splicer::new(out)),
            bytes: 0,
            finished: None,
        }
    }

    /// The output, to read, until the sink is finished.
    #[cfg(test)]
    pub(crate) fn output_ref(&self) -> Option<&O> {
        self.splicer.as_ref().map(|s| s.get_ref())
    }

    /// The output, to set up, until the sink is finished.
    pub(crate) fn output_mut(&mut self) -> Option<&mut O> {
        self.splicer.as_mut().map(|s| s.get_mut())
    }

    /// The report, once finished.
    #[cfg(test)]
    pub(crate) fn report(&self) -> Option<&SinkReport> {
        self.finished.as_ref()
    }

    /// Runs `step` on the splicer, then lets the output settle.
    fn step(&mut self, step: impl FnOnce(&mut Splicer<O>) -> std::io::Result<()>) -> Result<()> {
        let Some(s) = self.splicer.as_mut() else {
            return Ok(());
        };
        let r = step(s);
        let (whole, written) = (s.whole(), s.written());
        let settled = s.get_mut().settle(whole, written);
        let r = r.and_then(|_| settled.map(|n| self.bytes = n));
        r.map_err(|e| Error::output(&self.path, e))
    }
}

impl<O: SpliceOutput> ByteSink for SplicedSink<O> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.step(|s| s.write_runtime(bytes))
    }

    fn wants_splices(&self) -> bool {
        self.splicer.wants_splices()
    }

    fn splice(&mut self, monotonic_ns: u64, ev: &Injected) {
        if let Some(s) = self.splicer.as_mut() {
            s.get_mut().spliced(ev);
        }
        self.splicer.splice(monotonic_ns, ev);
    }

    fn splice_at_end(&mut self, monotonic_ns: u64, ev: &Injected) {
        self.splicer.splice_at_end(monotonic_ns, ev);
    }

    fn flush(&mut self) -> Result<()> {
        self.step(Splicer::inject)
    }

    fn stopping(&mut self) {
        if let Some(s) = self.splicer.as_mut() {
            s.get_mut().stopping();
        }
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn finish(&mut self) -> Result<SinkReport> {
        if let Some(r) = &self.finished {
            return Ok(r.clone());
        }
        let Some(s) = self.splicer.take() else {
            return Ok(SinkReport::default());
        };
        let r = O::finish(s, &self.path)?;
        self.bytes = r.bytes;
        self.finished = Some(r.clone());
        Ok(r)
    }
}

/// The trace file: the runtime's stream as it arrives, with clrspy's events spliced in. The
/// file on disk is a whole trace at every moment (see [`StagedFile`]).
pub(crate) type FileSink = SplicedSink<StagedFile>;

impl SplicedSink<StagedFile> {
    /// Creates (or truncates) the file at `path`, owner-only (0600, an existing file's mode
    /// narrowed: a trace holds the process's names, URLs and messages).
    pub(crate) fn create(path: &Path) -> Result<FileSink> {
        let file = crate::private::create_private(path).map_err(|e| Error::output(path, e))?;
        Ok(SplicedSink::with_output(path, StagedFile::new(file)))
    }
}

/// Most bytes held back past the last whole block before they are written anyway (a stream
/// whose framing is lost has no block boundaries left to wait for).
const MAX_STAGED: usize = 16 << 20;

/// The trace file, kept a whole trace at every moment: bytes are held in memory until the
/// block they belong to is complete; then the whole blocks are written, followed by the
/// format's end of stream, which the next blocks overwrite (the file position stays at the
/// end of the last whole block). A recorder killed at any moment (SIGKILL, the OOM killer)
/// leaves a file every reader opens to its end.
pub(crate) struct StagedFile {
    file: File,
    /// Bytes past `committed`, not yet on disk.
    staged: Vec<u8>,
    /// Stream offset of `staged[0]`: bytes before it are on disk.
    committed: u64,
}

impl StagedFile {
    fn new(file: File) -> StagedFile {
        StagedFile {
            file,
            staged: Vec::new(),
            committed: 0,
        }
    }

    /// Writes the staged bytes up to stream offset `to`.
    fn commit(&mut self, to: u64) -> std::io::Result<()> {
        let n = usize::try_from(to.saturating_sub(self.committed))
            .unwrap_or(usize::MAX)
            .min(self.staged.len());
        if n == 0 {
            return Ok(());
        }
        self.file.seek(SeekFrom::Start(self.committed))?;
        self.file.write_all(&self.staged[..n])?;
        self.staged.drain(..n);
        self.committed += n as u64;
        Ok(())
    }
}

impl Write for StagedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.staged.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SpliceOutput for StagedFile {
    fn settle(&mut self, whole: WholePrefix, written: u64) -> std::io::Result<u64> {
        if self.staged.len() > MAX_STAGED {
            // No block boundary for this long: not a stream clrspy can follow any more.
            self.commit(written)?;
        } else if whole.end > self.committed {
            self.commit(whole.end)?;
            // When the stream ended, the runtime's own marker (the same bytes) is held by
            // the splicer until the end: this one stands in for it meanwhile.
            if let Some(format) = whole.format {
                self.file.write_all(nettrace::end_of_stream(format))?;
            }
        }
        Ok(written)
    }

    fn finish(mut s: Splicer<StagedFile>, path: &Path) -> Result<SinkReport> {
        let err = |e| Error::output(path, e);
        let ended = s.end();
        let spliced = s.spliced;
        let whole = s.whole();
        let written = s.written();
        let out = s.get_mut();
        // A stream that reached its end (or one clrspy does not follow) is written as it is.
        let complete = ended.is_ok() && (whole.ended || whole.format.is_none());
        let to = if complete { written } else { whole.end };
        // A failed write (a full disk) leaves the file whole up to `committed`: cutting the
        // partial block frees more than the end marker takes.
        let committed = out.commit(to);
        let end = if complete {
            out.committed
        } else {
            out.committed.min(whole.end)
        };
        let mut closed_by_clrspy = None;
        let file = &mut out.file;
        file.set_len(end).map_err(err)?;
        let mut bytes = end;
        if let (false, Some(format)) = (complete && committed.is_ok(), whole.format) {
            let eos = nettrace::end_of_stream(format);
            file.seek(SeekFrom::Start(end))
                .and_then(|_| file.write_all(eos))
                .map_err(err)?;
            closed_by_clrspy = Some(written.saturating_sub(end));
            bytes = end + eos.len() as u64;
        }
        file.flush().and_then(|_| file.sync_all()).map_err(err)?;
        Ok(SinkReport {
            bytes,
            spliced_events: spliced,
            path: Some(path.to_path_buf()),
            closed_by_clrspy,
            ring: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_sink_passes_a_trace_through_unchanged() {
        let data = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../nettrace/tests/data/perf.nettrace"
        ))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("clrspy-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.nettrace");
        let mut sink = FileSink::create(&path).unwrap();
        // Owner-only, whatever the umask.
        let mode = std::os::unix::fs::PermissionsExt::mode(&path.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, crate::private::FILE_MODE);
        for piece in data.chunks(1000) {
            sink.write(piece).unwrap();
            sink.flush().unwrap();
        }
        let report = sink.finish().unwrap();
        assert_eq!(report.bytes, data.len() as u64);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Reads a trace file to its end: (events, ended cleanly).
    fn read_whole(path: &Path) -> (u64, bool) {
        let bytes = std::fs::read(path).unwrap();
        let Ok(mut r) = nettrace::TraceReader::new(&bytes) else {
            return (0, false);
        };
        loop {
            match r.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return (r.stats().events, false),
            }
        }
        (r.stats().events, r.stats().ended_cleanly)
    }

    #[test]
    fn the_file_on_disk_is_a_whole_trace_after_every_write() {
        // What a recorder killed at any moment (SIGKILL, the OOM killer) leaves behind.
        let data = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../nettrace/tests/data/perf.nettrace"
        ))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("clrspy-sink-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.nettrace");
        let mut sink = FileSink::create(&path).unwrap();
        let mut last = 0;
        let mut rounds = 0;
        // Pieces that end inside blocks, as socket reads do.
        for piece in data.chunks(997) {
            sink.write(piece).unwrap();
            sink.flush().unwrap();
            if std::fs::metadata(&path).unwrap().len() == 0 {
                continue; // the header is not complete yet
            }
            let (events, whole) = read_whole(&path);
            assert!(whole, "cut after {} bytes", sink.bytes());
            assert!(events >= last);
            last = events;
            rounds += 1;
        }
        assert!(rounds > 10 && last > 0, "{rounds} rounds, {last} events");
        let report = sink.finish().unwrap();
        assert_eq!(report.bytes, data.len() as u64);
        assert_eq!(report.closed_by_clrspy, None);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stream_cut_inside_a_block_is_closed_at_the_last_whole_one() {
        let data = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../nettrace/tests/data/perf.nettrace"
        ))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("clrspy-sink-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.nettrace");
        let mut sink = FileSink::create(&path).unwrap();
        let cut = data.len() * 2 / 3;
        sink.write(&data[..cut]).unwrap();
        sink.flush().unwrap();
        let report = sink.finish().unwrap();
        let dropped = report.closed_by_clrspy.unwrap();
        assert!(dropped > 0 && dropped < cut as u64);
        assert_eq!(report.bytes, std::fs::metadata(&path).unwrap().len());
        let (events, whole) = read_whole(&path);
        assert!(whole && events > 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_path_names_itself() {
        let Err(e) = FileSink::create(Path::new("/no/such/dir/t.nettrace")) else {
            panic!("created a file in a missing directory");
        };
        assert!(e.to_string().contains("/no/such/dir/t.nettrace"), "{e}");
    }
}
