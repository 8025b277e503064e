//! Byte sinks: where the pump puts the runtime's stream as it arrives. A sink takes the bytes in
//! order, may take clrspy's own events to splice in between blocks, and is finished once at the
//! end. [`FileSink`] is the trace file (through the [`Splicer`]); the ring buffer that keeps
//! only the newest part is [`RingSink`](crate::RingSink), behind the same trait.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::inject::{Injected, Splicer, SplicerSlot};
use crate::{Error, Result};

/// What a sink did, once finished.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SinkReport {
    /// Bytes it stored (the runtime's and clrspy's).
    pub bytes: u64,
    /// clrspy's own events it spliced in.
    pub spliced_events: u64,
    /// Where it stored them, when that is a file.
    pub path: Option<PathBuf>,
    /// When the stream arrived without its end (the target died, the connection broke, the
    /// rundown wait was cut short, the disk filled): the bytes of the last, partial block that
    /// were dropped so the file could be closed with a valid end of stream. None when the
    /// runtime ended the stream itself.
    pub closed_by_clrspy: Option<u64>,
    /// For a ring, what it kept and dropped.
    pub ring: Option<crate::RingStats>,
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

    /// Bytes stored so far.
    fn bytes(&self) -> u64;

    /// Ends the sink: flush everything and make it durable. Called once.
    fn finish(&mut self) -> Result<SinkReport>;
}

/// The output for a recording: the trace file, or a ring of `ring` bytes writing it at the end.
pub(crate) fn open_output(path: &Path, ring: Option<u64>) -> Result<Box<dyn ByteSink>> {
    Ok(match ring {
        Some(budget) => Box::new(crate::ring::RingSink::create(path, budget)?),
        None => Box::new(FileSink::create(path)?),
    })
}

/// The trace file: the runtime's stream as it arrives, with clrspy's events spliced in.
pub struct FileSink {
    path: PathBuf,
    splicer: Option<Splicer<File>>,
    bytes: u64,
    spliced: u64,
}

impl FileSink {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> Result<FileSink> {
        let file = File::create(path).map_err(|e| Error::output(path, e))?;
        Ok(FileSink {
            path: path.to_path_buf(),
            splicer: Some(Splicer::new(file)),
            bytes: 0,
            spliced: 0,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: std::io::Error) -> Error {
        Error::output(&self.path, e)
    }
}

impl ByteSink for FileSink {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(s) = self.splicer.as_mut() else {
            return Ok(());
        };
        let r = s.write_runtime(bytes);
        self.bytes = s.written();
        r.map_err(|e| self.err(e))
    }

    fn wants_splices(&self) -> bool {
        self.splicer.wants_splices()
    }

    fn splice(&mut self, monotonic_ns: u64, ev: &Injected) {
        self.splicer.splice(monotonic_ns, ev);
    }

    fn splice_at_end(&mut self, monotonic_ns: u64, ev: &Injected) {
        self.splicer.splice_at_end(monotonic_ns, ev);
    }

    fn flush(&mut self) -> Result<()> {
        let Some(s) = self.splicer.as_mut() else {
            return Ok(());
        };
        let r = s.inject();
        self.bytes = s.written();
        r.map_err(|e| self.err(e))
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn finish(&mut self) -> Result<SinkReport> {
        let Some(mut s) = self.splicer.take() else {
            return Ok(SinkReport {
                bytes: self.bytes,
                spliced_events: self.spliced,
                path: Some(self.path.clone()),
                closed_by_clrspy: None,
                ring: None,
            });
        };
        let ended = s.end();
        self.spliced = s.spliced;
        let whole = s.whole();
        let held = ended.and_then(|_| s.into_inner());
        // A file that stops short of its end is made whole even when the last write failed
        // (a full disk): cutting the partial block frees more than the end marker takes. The
        // runtime's end marker is written last (by `into_inner`): a failed write may have lost
        // it too.
        let ended = whole.ended && held.is_ok();
        let (mut file, written) = match held {
            Ok(f) => {
                let n = f.metadata().map(|m| m.len()).unwrap_or(0);
                (f, n)
            }
            Err(e) => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .map_err(|_| self.err(e))?;
                let n = f.metadata().map(|m| m.len()).unwrap_or(0);
                (f, n)
            }
        };
        let mut closed_by_clrspy = None;
        if let (false, Some(format)) = (ended, whole.format) {
            let eos = nettrace::end_of_stream(format);
            file.set_len(whole.end)
                .and_then(|_| file.seek(SeekFrom::Start(whole.end)))
                .and_then(|_| file.write_all(eos))
                .map_err(|e| self.err(e))?;
            closed_by_clrspy = Some(written.saturating_sub(whole.end));
            self.bytes = whole.end + eos.len() as u64;
        } else {
            self.bytes = written;
        }
        file.flush()
            .and_then(|_| file.sync_all())
            .map_err(|e| self.err(e))?;
        Ok(SinkReport {
            bytes: self.bytes,
            spliced_events: self.spliced,
            path: Some(self.path.clone()),
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
        for piece in data.chunks(1000) {
            sink.write(piece).unwrap();
            sink.flush().unwrap();
        }
        let report = sink.finish().unwrap();
        assert_eq!(report.bytes, data.len() as u64);
        assert_eq!(std::fs::read(&path).unwrap(), data);
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
