//! Heap snapshots of a live process, once for every caller (`clrspy gcdump`, `heap watch`,
//! `record --snapshot-heap`, the rules' heap action and later the agent): whether a heap may be
//! snapshotted without asking ([`consent`]), the snapshot itself ([`take`]: the heap dump
//! recorded to a hidden trace beside the `.gcdump` through clrspy-collect's heapsnap, the graph
//! built by clrspy-analysis' `heap::from_trace`, the file written, the trace removed), a
//! trace's heap dump read as a graph ([`read_trace`]), and a snapshot opened from a `.gcdump`
//! or a trace ([`open_snapshot`]). Errors are values, progress goes to a callback; nothing
//! here prints.

pub mod watch;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_analysis::heap::from_trace::{graph_from_trace, FromTraceError, TraceHeap};
use clrspy_analysis::trace_file::{OpenError, OpenTrace};
use clrspy_collect::heapsnap::{record_heap_dump, HeapDumpProgress};
use clrspy_collect::StopSignal;
use diagnostics_client::Endpoint;

/// Heaps above this many bytes need a confirmation (or `--yes`).
pub(crate) const CONFIRM_ABOVE_BYTES: u64 = 4 << 30;

/// What to do before snapshotting a heap of a given size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consent {
    /// Go ahead.
    Proceed,
    /// Ask on the terminal first.
    Ask,
    /// Refuse: a big heap, no terminal to ask on and no `--yes`.
    Refuse,
}

/// Whether a snapshot of a heap of `heap_bytes` (None: unknown) may start: over
/// `CONFIRM_ABOVE_BYTES` it needs `yes`, or a confirmation when stdin is a `terminal`.
pub fn consent(heap_bytes: Option<u64>, yes: bool, terminal: bool) -> Consent {
    let big = heap_bytes.is_some_and(|b| b > CONFIRM_ABOVE_BYTES);
    match (big, yes, terminal) {
        (false, _, _) | (true, true, _) => Consent::Proceed,
        (true, false, true) => Consent::Ask,
        (true, false, false) => Consent::Refuse,
    }
}

/// Why a heap snapshot was not taken (or a trace's heap dump not read).
#[derive(Debug, thiserror::Error)]
pub enum HeapSnapError {
    /// The hidden trace could not be created beside the `.gcdump`.
    #[error("cannot create a temporary trace in {}: {source}", dir.display())]
    TempTrace {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Recording the heap dump failed.
    #[error(transparent)]
    Record(#[from] clrspy_collect::Error),
    /// The trace could not be opened or read.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The trace holds no whole heap dump.
    #[error("{trace}: {source}")]
    Graph {
        /// The trace, as displayed.
        trace: String,
        /// Why.
        source: FromTraceError,
    },
    /// A `.gcdump` could not be opened or read.
    #[error("{}: {source}", path.display())]
    Gcdump {
        /// The file.
        path: PathBuf,
        /// Why.
        source: gcdump::Error,
    },
    /// The file could not be checked for being a `.gcdump`.
    #[error("cannot open {}: {source}", path.display())]
    Check {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The `.gcdump` could not be created.
    #[error("cannot write {}: {source}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The `.gcdump` could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: gcdump::Error,
    },
}

/// The line said before a snapshot of `label`: what it does to the process, the size of its
/// heap (`resident` memory, when known) and the timeout.
pub fn notice(label: &str, resident: Option<u64>, timeout: Duration) -> String {
    let size = resident
        .map(|b| format!("; its resident memory is {:.0} MB", b as f64 / 1048576.0))
        .unwrap_or_default();
    format!(
        "Taking a heap snapshot of {label}: the runtime runs a full, blocking GC (the process pauses while the heap is walked{size}); timeout {:.0} s.",
        timeout.as_secs_f64()
    )
}

impl SnapEvent {
    /// The warning or note the event is worth saying, if any (progress is not).
    pub fn line(&self) -> Option<String> {
        match *self {
            SnapEvent::Incomplete { timeout, objects } => Some(format!(
                "warning: the heap dump did not complete on the live stream within {:.0} s ({objects} objects seen); checking the trace",
                timeout.as_secs_f64()
            )),
            SnapEvent::Unresolved { edges, roots } => unresolved_line(edges, roots),
            SnapEvent::Recording { .. } | SnapEvent::Recorded => None,
        }
    }
}

/// The most roots naming no object of the dump that go without a note when no reference
/// does: the runtime reports a few handles whose object it has just freed in most snapshots.
const ROUTINE_UNRESOLVED_ROOTS: u64 = 16;

/// The note on references and roots that named no object of the dump, when it matters
/// (None for the few roots most snapshots have).
pub fn unresolved_line(edges: u64, roots: u64) -> Option<String> {
    if edges == 0 && roots <= ROUTINE_UNRESOLVED_ROOTS {
        return None;
    }
    Some(format!(
        "note: {edges} references and {roots} roots pointed at addresses that are no object of the snapshot and were left out (dotnet-gcdump leaves them out too); many of them mean the runtime missed objects while it walked the heap: take the snapshot again"
    ))
}

/// What a snapshot under way reports, in order.
#[derive(Clone, Copy, Debug)]
pub enum SnapEvent {
    /// The recording goes on: objects seen so far.
    Recording {
        /// Objects seen.
        objects: u64,
    },
    /// The recording ended.
    Recorded,
    /// The dump did not complete on the live stream within `timeout`; the trace decides.
    Incomplete {
        /// The timeout.
        timeout: Duration,
        /// Objects seen.
        objects: u64,
    },
    /// References and roots that named no object of the dump (left out).
    Unresolved {
        /// References dropped.
        edges: u64,
        /// Roots dropped.
        roots: u64,
    },
}

/// One snapshot written.
pub struct Taken {
    /// The snapshot.
    pub dump: gcdump::HeapDump,
    /// The file's size.
    pub file_bytes: u64,
    /// Events recorded for it.
    pub recorded_bytes: u64,
    /// Time spent recording.
    pub recorded: Duration,
}

/// Takes a heap snapshot of `endpoint` into the `.gcdump` `out`, through a hidden temporary
/// trace beside it (removed after); `stop` or `timeout` end the recording (the trace then
/// decides whether a whole dump is there). `on_event` hears of its progress.
pub fn take(
    endpoint: &Endpoint,
    out: &Path,
    timeout: Duration,
    stop: &StopSignal,
    on_event: &mut dyn FnMut(SnapEvent),
) -> Result<Taken, HeapSnapError> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let temp = tempfile::Builder::new()
        .prefix(".clrspy-heap-")
        .suffix(".nettrace")
        .tempfile_in(&dir)
        .map_err(|source| HeapSnapError::TempTrace { dir, source })?;
    let shared = Arc::new(HeapDumpProgress::default());
    let t0 = Instant::now();
    let seen = shared.clone();
    let summary = record_heap_dump(
        endpoint,
        temp.path(),
        timeout,
        stop,
        shared.clone(),
        &mut |_p| {
            on_event(SnapEvent::Recording {
                objects: seen.objects(),
            })
        },
    )?;
    on_event(SnapEvent::Recorded);
    let recorded = t0.elapsed();
    if !shared.complete() {
        on_event(SnapEvent::Incomplete {
            timeout,
            objects: shared.objects(),
        });
    }
    let h = read_trace(temp.path())?;
    if h.unresolved_roots > 0 || h.unresolved_edges > 0 {
        on_event(SnapEvent::Unresolved {
            edges: h.unresolved_edges,
            roots: h.unresolved_roots,
        });
    }
    write_gcdump(&h.dump, out)?;
    let file_bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(Taken {
        dump: h.dump,
        file_bytes,
        recorded_bytes: summary.bytes,
        recorded,
    })
}

/// Writes `dump` as the `.gcdump` `out`.
pub fn write_gcdump(dump: &gcdump::HeapDump, out: &Path) -> Result<(), HeapSnapError> {
    let f =
        clrspy_collect::private::create_private(out).map_err(|source| HeapSnapError::Create {
            path: out.to_path_buf(),
            source,
        })?;
    gcdump::write(std::io::BufWriter::new(f), dump).map_err(|source| HeapSnapError::Write {
        path: out.to_path_buf(),
        source,
    })
}

/// The largest module read to name a snapshot's statics (a managed image is far smaller).
const MAX_MODULE_BYTES: u64 = 512 << 20;

/// A trace's heap dump (a trace file, or a zip holding one) as a `.gcdump` graph.
pub fn read_trace(path: &Path) -> Result<TraceHeap, HeapSnapError> {
    let trace = OpenTrace::open(path)?;
    let mut reader = trace.reader()?;
    // The modules' paths are the traced process's: read under its root, through no link,
    // bounded (from our own root, by the same rules, once it has ended).
    let pid = reader
        .header()
        .process_id
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(0);
    let mut read_module = |p: &str| {
        diagnostics_client::rooted::read_in_root(pid, Path::new(p), MAX_MODULE_BYTES).ok()
    };
    graph_from_trace(&mut reader, &mut |_| (), &mut read_module).map_err(|source| {
        HeapSnapError::Graph {
            trace: trace.display(),
            source,
        }
    })
}

/// A heap snapshot from a file: a `.gcdump`, or a trace with a heap dump (then its dropped
/// references and roots are told to `on_event`).
pub fn open_snapshot(
    path: &Path,
    on_event: &mut dyn FnMut(SnapEvent),
) -> Result<gcdump::HeapDump, HeapSnapError> {
    let is_gcdump = gcdump::is_gcdump(path).map_err(|source| HeapSnapError::Check {
        path: path.to_path_buf(),
        source,
    })?;
    if is_gcdump {
        return gcdump::open(path).map_err(|source| HeapSnapError::Gcdump {
            path: path.to_path_buf(),
            source,
        });
    }
    let h = read_trace(path)?;
    if h.unresolved_roots > 0 || h.unresolved_edges > 0 {
        on_event(SnapEvent::Unresolved {
            edges: h.unresolved_edges,
            roots: h.unresolved_roots,
        });
    }
    Ok(h.dump)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_or_unknown_heaps_need_no_confirmation() {
        for terminal in [true, false] {
            for yes in [true, false] {
                assert_eq!(consent(None, yes, terminal), Consent::Proceed);
                assert_eq!(consent(Some(1 << 30), yes, terminal), Consent::Proceed);
                assert_eq!(
                    consent(Some(CONFIRM_ABOVE_BYTES), yes, terminal),
                    Consent::Proceed
                );
            }
        }
    }

    #[test]
    fn big_heaps_ask_on_a_terminal_and_are_refused_elsewhere_without_yes() {
        let big = Some(CONFIRM_ABOVE_BYTES + 1);
        assert_eq!(consent(big, false, true), Consent::Ask);
        assert_eq!(consent(big, false, false), Consent::Refuse);
        assert_eq!(consent(big, true, true), Consent::Proceed);
        assert_eq!(consent(big, true, false), Consent::Proceed);
    }
}
