//! Reading a dump clrspy just wrote: the runtime's own data access library runs in a child
//! process (this program's binary, run as the analysis worker: a fault in the library ends the
//! child, not the recording, the watcher or the agent), and the analysis is kept beside the
//! dump as `DUMP.analysis.json`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use coredump::model::Analysis;

use crate::{endpoint_for_pid, write_dump_file, Compression, DumpReport, DumpSpec, Result};

/// Reads `dump` in a child process (`heap`: walk the heap too); the analysis, or one line
/// saying why not.
pub fn analyze_dump(dump: &Path, heap: bool) -> std::result::Result<Analysis, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find clrspy's own binary to run the analysis: {e}"))?;
    let options = coredump::worker::Options {
        dac: None,
        heap,
        gcroot: None,
    };
    coredump::worker::analyze_in_child(&exe, dump, &options).map_err(|e| e.to_string())
}

/// Where the copy of the target's data access library stored beside `dump` goes (moved with
/// the dump when it is renamed).
pub fn dac_sidecar(dump: &Path) -> PathBuf {
    coredump::dac::sidecar_path(dump)
}

/// One line saying what an analysis found.
pub fn analysis_line(a: &Analysis) -> String {
    let waiting: u32 = a.locks.iter().map(|l| l.waiters).sum();
    format!(
        "{} deadlock(s), {} monitor(s) held with {waiting} thread(s) waiting, {} managed thread(s), {} exception(s) held",
        a.deadlocks.len(),
        a.locks.len(),
        a.threads.len(),
        a.exceptions.len()
    )
}

/// The path [`write_analysis`] writes for `dump`.
pub fn analysis_path(dump: &Path) -> PathBuf {
    let mut name = dump.as_os_str().to_owned();
    name.push(".analysis.json");
    PathBuf::from(name)
}

/// Writes `analysis` as JSON beside `dump` (owner-only); its path.
pub fn write_analysis(dump: &Path, analysis: &Analysis) -> std::io::Result<PathBuf> {
    let path = analysis_path(dump);
    let text = serde_json::to_vec_pretty(analysis).map_err(std::io::Error::other)?;
    let mut f = crate::private::create_private(&path)?;
    std::io::Write::write_all(&mut f, &text)?;
    Ok(path)
}

/// A dump of `pid` now, of the smallest kind that holds the runtime's sync-block table (a
/// heap dump: mini and triage dumps leave it out), zstd-compressed at `path`, and its
/// analysis: who holds which monitor, who waits for it, the deadlock cycles. The analysis's
/// error, if any, is the second value's.
pub fn hang_dump(
    pid: u32,
    path: &Path,
    timeout: Duration,
) -> Result<(DumpReport, std::result::Result<Analysis, String>)> {
    let ep = endpoint_for_pid(pid)?;
    let spec = DumpSpec {
        kind: diagnostics_client::DumpType::WithHeap,
        compress: Compression::Zstd,
        crash_report: false,
        timeout,
        max_file_bytes: None,
    };
    let report = write_dump_file(&ep, pid, path, &spec)?;
    let analysis = analyze_dump(&report.path, false);
    Ok((report, analysis))
}
