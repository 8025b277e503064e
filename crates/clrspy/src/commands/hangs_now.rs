//! `clrspy report hangs -p PID`: who holds which monitor now, who waits for it, and the
//! deadlock cycles, from a heap dump of the running process (kept as the evidence) read by the
//! runtime's own data access library. A trace sees only the lock waits that start while it
//! records; the runtime's sync-block table says who holds what, however long ago it began.

use std::io::Write;
use std::time::Duration;

use crate::output::{collect_error, CliError, CliResult};

/// How long the dump may take.
const DUMP_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `clrspy report hangs -p PID`.
pub fn run(pid: u32, json: bool) -> CliResult<std::process::ExitCode> {
    let path = clrspy_collect::dump_path(pid, None).map_err(collect_error)?;
    let mut named = path.into_os_string();
    named.push(".zst");
    let path = std::path::PathBuf::from(named);
    eprintln!(
        "Taking a heap dump of process {pid} to {} (it holds the runtime's monitors and their owners; the process pauses while its runtime writes it) ...",
        path.display()
    );
    let (report, analysis) =
        clrspy_collect::hang_dump(pid, &path, DUMP_TIMEOUT).map_err(collect_error)?;
    let a = analysis.map_err(|e| {
        CliError::new(format!(
            "the dump was written ({}) but could not be read: {e}",
            report.path.display()
        ))
    })?;
    eprintln!(
        "Wrote {} ({} compressed) in {:.1} s and read it; it is kept: clrspy dump analyze {} threads",
        report.path.display(),
        clrspy_live::recording::notices::mb(report.file_bytes),
        report.elapsed.as_secs_f64(),
        report.path.display()
    );
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "process_id": pid,
            "dump": report.path,
            "deadlocks": a.deadlocks,
            "locks": a.locks,
            "blocked_entering_monitor": a.threads.iter().filter(|t| t.entering_monitor).count(),
            "warnings": a.warnings,
        });
        let text = serde_json::to_string_pretty(&v).map_err(|e| CliError::new(e.to_string()))?;
        writeln!(out, "{text}")?;
    } else {
        coredump::text::write_hangs(&mut out, &a)?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}
