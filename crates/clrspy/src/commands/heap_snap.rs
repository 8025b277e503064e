//! Taking one heap snapshot of a live process for `clrspy gcdump` and `clrspy heap watch`: the
//! notice before it (it forces a blocking GC; the heap's size), the confirmation big heaps need
//! (`--yes`), the recording through clrspy-collect's heapsnap, and the `.gcdump` written from
//! it. The decision to ask is [`consent`], a pure function.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_collect::heapsnap::{record_heap_dump, HeapDumpProgress};
use clrspy_collect::StopSignal;
use diagnostics_client::Endpoint;

use clrspy_analysis::heap::from_trace;

use crate::output::{collect_error, CliError, CliResult};

/// Heaps above this many bytes need a confirmation (or `--yes`).
pub const CONFIRM_ABOVE_BYTES: u64 = 4 << 30;

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
/// [`CONFIRM_ABOVE_BYTES`] it needs `yes`, or a confirmation when stdin is a `terminal`.
pub fn consent(heap_bytes: Option<u64>, yes: bool, terminal: bool) -> Consent {
    let big = heap_bytes.is_some_and(|b| b > CONFIRM_ABOVE_BYTES);
    match (big, yes, terminal) {
        (false, _, _) | (true, true, _) => Consent::Proceed,
        (true, false, true) => Consent::Ask,
        (true, false, false) => Consent::Refuse,
    }
}

/// The process-wide stop signal of the heap commands, Ctrl+C (SIGINT) wired to it once.
pub fn stop_signal() -> &'static StopSignal {
    static STOP: StopSignal = StopSignal::new();
    static WIRED: std::sync::Once = std::sync::Once::new();
    WIRED.call_once(|| {
        let _ = ctrlc::set_handler(|| STOP.request());
    });
    &STOP
}

/// Says what a snapshot of `pid` does (a full, blocking GC; the heap's size: its resident
/// memory) and asks or refuses as [`consent`] decides.
pub fn announce(label: &str, pid: u32, timeout: Duration, yes: bool) -> CliResult<()> {
    let resident = diagnostics_client::procfs::resident_bytes(pid);
    let size = resident
        .map(|b| format!("; its resident memory is {:.0} MB", b as f64 / 1048576.0))
        .unwrap_or_default();
    eprintln!(
        "Taking a heap snapshot of {label}: the runtime runs a full, blocking GC (the process pauses while the heap is walked{size}); timeout {:.0} s.",
        timeout.as_secs_f64()
    );
    let gb = resident.unwrap_or(0) as f64 / (1u64 << 30) as f64;
    match consent(resident, yes, std::io::stdin().is_terminal()) {
        Consent::Proceed => Ok(()),
        Consent::Refuse => Err(CliError::new(format!(
            "{label} uses {gb:.1} GB: a heap snapshot pauses it for long; not taken without --yes"
        ))
        .hint("add --yes to take it anyway")
        .code(2)),
        Consent::Ask => {
            eprint!("{label} uses {gb:.1} GB: pause it for the snapshot? [y/N] ");
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            if matches!(line.trim(), "y" | "Y" | "yes" | "Yes" | "YES") {
                Ok(())
            } else {
                Err(CliError::new("no heap snapshot taken").code(2))
            }
        }
    }
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

/// Takes a heap snapshot of `endpoint` (`label` in messages) into the `.gcdump` `out`, through
/// a temporary trace beside it; Ctrl+C or `timeout` end the recording (the trace then decides
/// whether a whole dump is there). Progress on stderr when it is a terminal.
pub fn take(
    endpoint: &Endpoint,
    label: &str,
    out: &Path,
    timeout: Duration,
    stop: &StopSignal,
) -> CliResult<Taken> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let temp = tempfile::Builder::new()
        .prefix(".clrspy-heap-")
        .suffix(".nettrace")
        .tempfile_in(&dir)
        .map_err(|e| {
            CliError::new(format!(
                "cannot create a temporary trace in {}: {e}",
                dir.display()
            ))
        })?;
    let shared = Arc::new(HeapDumpProgress::default());
    let t0 = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let seen = shared.clone();
    let mut last = Instant::now();
    let summary = record_heap_dump(
        endpoint,
        temp.path(),
        timeout,
        stop,
        shared.clone(),
        &mut |_p| {
            if tty && last.elapsed() > Duration::from_millis(250) {
                last = Instant::now();
                eprint!("\r  {} objects so far ...", seen.objects());
            }
        },
    )
    .map_err(collect_error)?;
    if tty {
        eprint!("\r\x1b[K");
    }
    let recorded = t0.elapsed();
    if !shared.complete() {
        eprintln!(
            "warning: the heap dump did not complete on the live stream within {:.0} s ({} objects seen); checking the trace",
            timeout.as_secs_f64(),
            shared.objects()
        );
    }
    let dump = load_trace(temp.path()).map_err(|e| {
        CliError::new(format!("no snapshot of {label}: {e}"))
            .hint("a bigger heap needs a longer --timeout; lost events mean the runtime's buffer overflowed")
    })?;
    write_dump(&dump, out)?;
    let file_bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(Taken {
        dump,
        file_bytes,
        recorded_bytes: summary.bytes,
        recorded,
    })
}

pub(super) fn write_dump(dump: &gcdump::HeapDump, out: &Path) -> CliResult<()> {
    let f = std::fs::File::create(out)
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", out.display())))?;
    gcdump::write(std::io::BufWriter::new(f), dump)
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", out.display())))
}

/// A trace's heap dump as a `.gcdump` graph.
pub(super) fn load_trace(path: &Path) -> CliResult<gcdump::HeapDump> {
    let trace = crate::input::open(path)?;
    let mut reader = trace.reader()?;
    let h = from_trace::graph_from_trace(&mut reader, &mut |_| ())
        .map_err(|e| CliError::new(format!("{}: {e}", trace.display())))?;
    if h.unresolved_roots > 0 || h.unresolved_edges > 0 {
        eprintln!(
            "note: {} references and {} roots named addresses that are no object of the dump (left out, as other readers do)",
            h.unresolved_edges, h.unresolved_roots
        );
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
