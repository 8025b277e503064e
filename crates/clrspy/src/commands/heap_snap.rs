//! Taking one heap snapshot of a live process for `clrspy gcdump` and `clrspy heap watch`: the
//! notice before it (it forces a blocking GC; the heap's size), the confirmation big heaps need
//! (`--yes`), the progress and the messages. The snapshot itself and the decision to ask are
//! clrspy-live's `heap` module.

use std::io::{BufRead, IsTerminal};
use std::path::Path;
use std::time::{Duration, Instant};

use clrspy_collect::StopSignal;
use clrspy_live::heap::{self, consent, Consent, HeapSnapError, SnapEvent, Taken};
use diagnostics_client::Endpoint;

use crate::output::{collect_error, CliError, CliResult};

/// Says what a snapshot of `pid` does (a full, blocking GC; the heap's size: its resident
/// memory) and asks or refuses as [`consent`] decides.
pub fn announce(label: &str, pid: u32, timeout: Duration, yes: bool) -> CliResult<()> {
    let resident = diagnostics_client::procfs::resident_bytes(pid);
    eprintln!("{}", heap::notice(label, resident, timeout));
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

/// Takes a heap snapshot of `endpoint` (`label` in messages) into the `.gcdump` `out`
/// (clrspy-live's `heap::take`); progress on stderr when it is a terminal.
pub fn take(
    endpoint: &Endpoint,
    label: &str,
    out: &Path,
    timeout: Duration,
    stop: &StopSignal,
) -> CliResult<Taken> {
    let mut say = progress_printer();
    heap::take(endpoint, out, timeout, stop, &mut say).map_err(|e| snap_error(label, e))
}

/// Prints a snapshot's progress: objects so far on a terminal, the warning and the note.
pub(super) fn progress_printer() -> impl FnMut(SnapEvent) {
    let tty = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    move |e| match e {
        SnapEvent::Recording { objects } if tty && last.elapsed() > Duration::from_millis(250) => {
            last = Instant::now();
            eprint!("\r  {objects} objects so far ...");
        }
        SnapEvent::Recorded if tty => eprint!("\r\x1b[K"),
        e => e.line().into_iter().for_each(|l| eprintln!("{l}")),
    }
}

/// A snapshot's error as the user's.
pub(super) fn snap_error(label: &str, e: HeapSnapError) -> CliError {
    match e {
        HeapSnapError::Record(e) => collect_error(e),
        e @ (HeapSnapError::Open(_) | HeapSnapError::Graph { .. }) => {
            CliError::new(format!("no snapshot of {label}: {}", read_error(e)))
                .hint("a bigger heap needs a longer --timeout; lost events mean the runtime's buffer overflowed")
        }
        e => CliError::new(e.to_string()),
    }
}

pub(super) fn read_error(e: HeapSnapError) -> CliError {
    match e {
        HeapSnapError::Open(e) => crate::input::user_error(e),
        e => CliError::new(e.to_string()),
    }
}

pub(super) fn write_dump(dump: &gcdump::HeapDump, out: &Path) -> CliResult<()> {
    heap::write_gcdump(dump, out).map_err(|e| CliError::new(e.to_string()))
}

/// A trace's heap dump as a `.gcdump` graph.
pub(super) fn load_trace(path: &Path) -> CliResult<gcdump::HeapDump> {
    let h = heap::read_trace(path).map_err(read_error)?;
    if let Some(note) = heap::unresolved_line(h.unresolved_edges, h.unresolved_roots) {
        eprintln!("{note}");
    }
    Ok(h.dump)
}
