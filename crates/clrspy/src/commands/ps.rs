//! `clrspy ps`: the .NET processes on this machine, with their runtime versions. Every runtime
//! is asked in parallel with a timeout, so one stuck process never holds up the list.

use std::io::Write;
use std::time::Duration;

use diagnostics_client::list_runtimes;
use serde_json::json;

use crate::cli::PsArgs;
use crate::output::CliResult;

/// How long one runtime may take to answer.
const TIMEOUT: Duration = Duration::from_millis(1500);

/// Runs `clrspy ps`.
pub fn run(args: &PsArgs) -> CliResult<std::process::ExitCode> {
    let rows = list_runtimes(TIMEOUT);
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|r| match &r.info {
                Ok(p) => json!({
                    "pid": r.pid,
                    "name": r.name,
                    "command_line": r.command_line,
                    "runtime_version": p.runtime_version,
                    "os": p.os,
                    "arch": p.arch,
                    "entrypoint_assembly": p.entrypoint_assembly,
                    "runtime_identifier": p.portable_rid,
                    "namespace_pid": p.pid,
                }),
                Err(e) => json!({
                    "pid": r.pid,
                    "name": r.name,
                    "command_line": r.command_line,
                    "runtime_version": null,
                    "error": e,
                }),
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &list).map_err(std::io::Error::from)?;
        writeln!(out)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(
            out,
            "No .NET processes found (looked for diagnostics sockets in $TMPDIR and /tmp)."
        )?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:>8}  {:<24} {:<12} {:<12} Command line",
        "PID", "Name", "Runtime", "OS/arch"
    )?;
    for r in &rows {
        match &r.info {
            Ok(p) => writeln!(
                out,
                "{:>8}  {:<24} {:<12} {:<12} {}",
                r.pid,
                r.name,
                p.runtime_version.as_deref().unwrap_or("?"),
                format!("{}/{}", p.os, p.arch),
                r.command_line
            )?,
            Err(e) => writeln!(
                out,
                "{:>8}  {:<24} {:<12} {:<12} {}  [{}]",
                r.pid, r.name, "?", "?", r.command_line, e
            )?,
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
