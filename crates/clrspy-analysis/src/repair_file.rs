//! Repairing a trace file into a new one: where the repaired trace goes by default, the
//! refusal to overwrite the input, nettrace's [`repair`](nettrace::repair) run from the file's
//! raw bytes, and the events a reader finds before and after (what `clrspy repair` reports).

use std::path::{Path, PathBuf};

use crate::trace_file::{trace_stem, OpenError, OpenTrace};

/// Why a trace could not be repaired.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RepairFileError {
    /// The input (or the output, read back) could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The output is the input.
    #[error("{} is the input: repair writes a new file (give -o another path)", path.display())]
    SameFile {
        /// The path given for both.
        path: PathBuf,
    },
    /// The output could not be created.
    #[error("cannot write {}: {source}", path.display())]
    Create {
        /// The output.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// nettrace's repair failed (the output is removed).
    #[error("{shown}: {source}")]
    Repair {
        /// The input as it is named in messages.
        shown: String,
        /// The error.
        source: std::io::Error,
    },
    /// The output could not be flushed to disk.
    #[error("writing {}: {source}", path.display())]
    Sync {
        /// The output.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A repaired trace: what nettrace kept and what readers see before and after.
#[derive(Debug)]
pub struct RepairedFile {
    /// The input as it is named in messages.
    pub input: String,
    /// The repaired trace.
    pub output: PathBuf,
    /// What nettrace's repair kept, dropped and converted.
    pub repair: nettrace::Repair,
    /// Events a reader found in the input.
    pub events_before: u64,
    /// Events a reader finds in the output.
    pub events_after: u64,
    /// True when the output reads to a clean end.
    pub output_whole: bool,
}

/// The default output, beside the input: `<stem>.repaired.nettrace`; for a NetPerf input
/// (converted to NetTrace) the user's name with the `.nettrace` extension, `<stem>.nettrace`,
/// unless such a file exists already.
pub(crate) fn default_repair_output(
    input: &Path,
    format: Option<nettrace::FormatVersion>,
) -> PathBuf {
    let stem = trace_stem(input);
    if format == Some(nettrace::FormatVersion::NetPerf3) {
        let p = input.with_file_name(format!("{stem}.nettrace"));
        if !p.exists() {
            return p;
        }
    }
    input.with_file_name(format!("{stem}.repaired.nettrace"))
}

/// Events a reader finds in `trace`, and whether it read to a clean end.
pub(crate) fn readable_events(trace: &OpenTrace) -> (u64, bool) {
    let Ok(mut r) = trace.reader() else {
        return (0, false);
    };
    let ok = r.for_each_event(|_| true).is_ok();
    (r.stats().events, ok && r.stats().ended_cleanly)
}

/// Repairs `trace` into `output` (None: `default_repair_output`), which must not be the
/// input; the output is synced to disk and read back.
pub fn repair_file(
    trace: &OpenTrace,
    output: Option<&Path>,
) -> Result<RepairedFile, RepairFileError> {
    let raw = std::io::BufReader::with_capacity(1 << 20, trace.raw()?);
    // The format decides the default extension: peek at it through a first scan.
    let format = trace.reader().ok().map(|r| r.header().format);
    let out_path = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_repair_output(&trace.path, format));
    let same = std::fs::canonicalize(&out_path)
        .ok()
        .zip(std::fs::canonicalize(&trace.path).ok())
        .is_some_and(|(a, b)| a == b);
    if same {
        return Err(RepairFileError::SameFile { path: out_path });
    }
    let mut out = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&out_path)
        .map_err(|source| RepairFileError::Create {
            path: out_path.clone(),
            source,
        })?;
    let repair = nettrace::repair(raw, &mut out).map_err(|source| {
        let _ = std::fs::remove_file(&out_path);
        RepairFileError::Repair {
            shown: trace.display(),
            source,
        }
    })?;
    out.sync_all().map_err(|source| RepairFileError::Sync {
        path: out_path.clone(),
        source,
    })?;
    drop(out);
    let (events_before, _) = readable_events(trace);
    let (events_after, output_whole) = readable_events(&OpenTrace::open(&out_path)?);
    Ok(RepairedFile {
        input: trace.display(),
        output: out_path,
        repair,
        events_before,
        events_after,
        output_whole,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};

    /// A whole trace of `n` events.
    fn trace(n: u64) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let id = w
            .define(&EventMetadata {
                provider: "P".into(),
                event_id: 1,
                event_name: "E".into(),
                ..EventMetadata::default()
            })
            .unwrap();
        for i in 0..n {
            w.write(&EventRecord {
                metadata_id: id,
                timestamp: 1000 + i as i64,
                payload: &[7; 64],
                ..EventRecord::default()
            })
            .unwrap();
            if i % 10 == 9 {
                w.flush_events().unwrap();
            }
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_cut_trace_is_repaired_beside_it_and_reads_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let whole = trace(50);
        let cut = dir.path().join("app.nettrace");
        std::fs::write(&cut, &whole[..whole.len() - 200]).unwrap();
        let t = OpenTrace::open(&cut).unwrap();
        let r = repair_file(&t, None).unwrap();
        assert_eq!(r.output, dir.path().join("app.repaired.nettrace"));
        assert!(r.output_whole);
        assert!(!r.repair.was_whole);
        assert!(r.events_after > 0 && r.events_after <= 50, "{r:?}");
        assert_eq!(r.events_before, readable_events(&t).0);
        assert!(matches!(
            repair_file(&t, Some(&cut)),
            Err(RepairFileError::SameFile { .. })
        ));
    }

    #[test]
    fn a_whole_trace_is_copied_with_every_event() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("w.nettrace");
        std::fs::write(&input, trace(25)).unwrap();
        let out = dir.path().join("out.nettrace");
        let r = repair_file(&OpenTrace::open(&input).unwrap(), Some(&out)).unwrap();
        assert!(r.repair.was_whole && r.output_whole);
        assert_eq!((r.events_before, r.events_after), (25, 25));
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
    }
}
