//! `clrspy record --children -o DIR -- COMMAND`: the program and every .NET process of its
//! tree, one whole trace each in DIR; what happens is said on the terminal as it happens.

use std::ffi::OsString;
use std::path::Path;

use clrspy_collect::{StopReason, TreeNotice, TreeOptions};

use crate::output::{CliError, CliResult};

fn say(n: &TreeNotice<'_>) {
    match n {
        TreeNotice::Spawned { pid } => {
            eprintln!("Started the program (pid {pid}); every .NET process it starts is traced")
        }
        TreeNotice::Recording { pid, name, path } => {
            eprintln!(
                "Recording {name} (pid {pid}) from its start to {}",
                path.display()
            )
        }
        TreeNotice::Outliving(list) => {
            let names: Vec<String> = list.iter().map(|(p, n)| format!("{n} ({p})")).collect();
            eprintln!(
                "The program ended; still running: {}. Their traces end now (with rundown); they run on untraced.",
                names.join(", ")
            );
        }
        TreeNotice::Ended(t) => match &t.result {
            Ok(s) => {
                let why = match s.reason {
                    StopReason::TargetEnded => "it exited",
                    _ if t.outlived_root => "it outlived the program",
                    StopReason::Duration => "the duration passed",
                    StopReason::Requested => "stopped on request",
                    _ => "stopped",
                };
                let events = s
                    .events
                    .map(|e| format!(", {e} events"))
                    .unwrap_or_default();
                eprintln!(
                    "Wrote {} bytes to {}{events} ({why}{}).",
                    s.bytes,
                    s.file().display(),
                    if s.complete {
                        ""
                    } else {
                        "; cut short, no rundown"
                    }
                );
            }
            Err(e) => eprintln!("{} (pid {}): recording failed: {e}", t.name, t.pid),
        },
    }
}

/// Records the tree; returns clrspy's exit code (the program's own).
/// `dir` is the directory as given (`opts.dir` is it made absolute).
pub(crate) fn run(command: &[OsString], dir: &Path, opts: &TreeOptions) -> CliResult<u8> {
    let Some((program, args)) = command.split_first() else {
        return Err(CliError::new("--children needs a command after --").code(2));
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::new(format!("cannot create {}: {e}", dir.display()))
            .hint("--children writes one trace per process into the directory -o names")
    })?;
    let outcome = clrspy_collect::record_tree(program, args, opts, &mut say)
        .map_err(crate::output::collect_error)?;
    let ok = outcome.traces.iter().filter(|t| t.result.is_ok()).count();
    eprintln!(
        "{ok} .NET process{} traced into {}{}.",
        if ok == 1 { "" } else { "es" },
        opts.dir.display(),
        match outcome.untraced {
            0 => String::new(),
            n => format!(
                "; {n} more ran untraced (they started after the program ended, or past the limit)"
            ),
        }
    );
    Ok(crate::output::program_exit_code(
        outcome.status,
        outcome.terminated_by_clrspy,
    ))
}
