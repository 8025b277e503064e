//! `record`'s heap snapshots (clrspy-live's `heap::worker`, which carries out the consumers'
//! `Action::Snapshot` requests and `--snapshot-heap`): their lines on stderr.

use std::path::PathBuf;

use clrspy_live::heap::worker::{SnapshotNote, Snapshots};
use diagnostics_client::Endpoint;

use super::heap_snap::{progress_printer, snap_error};

/// The snapshot worker of one recording of `endpoint` (`label`) into `trace`.
pub(crate) fn start(
    endpoint: Endpoint,
    label: String,
    trace: PathBuf,
    on_trigger: bool,
) -> Snapshots {
    let mut progress = progress_printer();
    Snapshots::start(endpoint, trace, on_trigger, move |note| match note {
        SnapshotNote::Writing { reason, out } => {
            progress = progress_printer();
            eprintln!("Heap snapshot ({reason}): writing {} ...", out.display());
        }
        SnapshotNote::Progress(e) => progress(e),
        SnapshotNote::Wrote { out, taken } => eprintln!(
            "Heap snapshot: wrote {} ({} objects, {:.1} MB) in {:.2} s.",
            out.display(),
            taken.dump.graph.object_count(),
            taken.file_bytes as f64 / 1048576.0,
            taken.recorded.as_secs_f64()
        ),
        SnapshotNote::Failed(e) => eprintln!("Heap snapshot: failed: {}", snap_error(&label, e)),
        SnapshotNote::Busy => eprintln!("Heap snapshot: not taken (the snapshot worker is busy)"),
    })
}
