//! `clrspy ps`: the .NET processes on this machine, with their runtime versions. Every runtime
//! is asked in parallel with a timeout, so one stuck process never holds up the list.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use diagnostics_client::procfs::{self, comm};
use diagnostics_client::{find_endpoints, process_info, Endpoint, ProcessInfo};
use serde_json::json;

use crate::cli::PsArgs;
use crate::output::CliResult;

/// How long one runtime may take to answer.
const TIMEOUT: Duration = Duration::from_millis(1500);

struct Row {
    pid: u32,
    name: String,
    info: Result<ProcessInfo, String>,
}

fn cmdline(pid: u32) -> Option<String> {
    procfs::cmdline(pid).map(|a| a.join(" "))
}

fn query(ep: Endpoint) -> Row {
    let info = process_info(&ep, TIMEOUT).map_err(|e| e.to_string());
    let name = match &info {
        Ok(p) => p
            .entrypoint_assembly
            .clone()
            .filter(|n| !n.is_empty())
            .or_else(|| comm(ep.pid))
            .unwrap_or_default(),
        Err(_) => comm(ep.pid).unwrap_or_default(),
    };
    Row {
        pid: ep.pid,
        name,
        info,
    }
}

/// Runs `clrspy ps`.
pub fn run(args: &PsArgs) -> CliResult<std::process::ExitCode> {
    let endpoints = find_endpoints();
    let (tx, rx) = mpsc::channel();
    for ep in endpoints {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(query(ep));
        });
    }
    drop(tx);
    // Each query ends by its own timeout; collect what arrives.
    let mut rows: Vec<Row> = rx.iter().collect();
    rows.sort_by_key(|r| r.pid);
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|r| match &r.info {
                Ok(p) => json!({
                    "pid": r.pid,
                    "name": r.name,
                    "command_line": if p.command_line.is_empty() { cmdline(r.pid).unwrap_or_default() } else { p.command_line.clone() },
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
                    "command_line": cmdline(r.pid).unwrap_or_default(),
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
                p.command_line
            )?,
            Err(e) => writeln!(
                out,
                "{:>8}  {:<24} {:<12} {:<12} {}  [{}]",
                r.pid,
                r.name,
                "?",
                "?",
                cmdline(r.pid).unwrap_or_default(),
                e
            )?,
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
