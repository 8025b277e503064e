//! Rows a model streams while the pass goes on ([`RowSink`]): one JSON object a line, written
//! as each row is complete (a request when it ends), never held — `report http` and `report
//! requests` write every request with `--requests-jsonl FILE` at any request count. The sink is
//! given to one model of the registry, by name ([`crate::Options::rows`]); the first write
//! error is kept and every later row is dropped, so the command can say what went wrong once.

use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Where one model's rows go: a buffered writer shared by clones (a live view's copies of the
/// analysis keep writing to the same file).
#[derive(Clone)]
pub struct RowSink {
    /// The model of the registry that writes its rows here.
    pub model: &'static str,
    inner: Arc<Mutex<SinkState>>,
}

struct SinkState {
    out: BufWriter<Box<dyn Write + Send>>,
    rows: u64,
    error: Option<io::Error>,
}

impl std::fmt::Debug for RowSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowSink")
            .field("model", &self.model)
            .field("rows", &self.rows())
            .finish()
    }
}

impl RowSink {
    /// A sink for the rows of `model`, written to `out`.
    pub fn new(model: &'static str, out: Box<dyn Write + Send>) -> RowSink {
        RowSink {
            model,
            inner: Arc::new(Mutex::new(SinkState {
                out: BufWriter::with_capacity(64 * 1024, out),
                rows: 0,
                error: None,
            })),
        }
    }

    /// Writes one row as a JSON line (dropped after a write error).
    pub fn write(&self, row: &impl Serialize) {
        let Ok(mut s) = self.inner.lock() else {
            return;
        };
        if s.error.is_some() {
            return;
        }
        let r = serde_json::to_writer(&mut s.out, row)
            .map_err(io::Error::from)
            .and_then(|()| s.out.write_all(b"\n"));
        match r {
            Ok(()) => s.rows += 1,
            Err(e) => s.error = Some(e),
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.inner.lock().map(|s| s.rows).unwrap_or(0)
    }

    /// Flushes what is buffered; the first error of any write or of the flush.
    pub fn finish(&self) -> io::Result<u64> {
        let Ok(mut s) = self.inner.lock() else {
            return Err(io::Error::other("the row writer panicked"));
        };
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        s.out.flush()?;
        Ok(s.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails after `room` bytes, like a full disk.
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() > self.room {
                return Err(io::Error::other("No space left on device"));
            }
            self.room -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn rows_are_lines_and_the_first_error_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let sink = RowSink::new("m", Box::new(std::fs::File::create(&path).unwrap()));
        let copy = sink.clone();
        sink.write(&serde_json::json!({"a": 1}));
        copy.write(&serde_json::json!({"a": 2}));
        assert_eq!(sink.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"a\":2}\n");

        let full = RowSink::new("m", Box::new(Full { room: 10 }));
        for i in 0..100_000 {
            full.write(&serde_json::json!({ "i": i }));
        }
        let e = full.finish().unwrap_err();
        assert!(e.to_string().contains("No space"), "{e}");
    }
}
