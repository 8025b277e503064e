//! `clrspy record --children -o DIR -- COMMAND`: the program and every .NET process of its
//! tree, one whole trace each in DIR; what happens is said on the terminal as it happens.

use std::path::Path;
use std::time::Duration;

use clrspy_collect::{ChildOutput, StopReason, TreeNotice, TreeOptions};
use diagnostics_client::SessionConfig;

use crate::output::{CliError, CliResult};

/// What `record --children` needs.
pub(crate) struct TreeRun<'a> {
    /// The program and its arguments.
    pub command: &'a [std::ffi::OsString],
    /// The session of every process.
    pub config: &'a SessionConfig,
    /// The directory of the traces.
    pub dir: &'a Path,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Thread CPU readings.
    pub thread_cpu: Option<Duration>,
    /// More environment for the program (the crash report's).
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Each process's event consumers (the exception dumps' triggers).
    pub consumers: Option<clrspy_collect::ConsumerFactory>,
}

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
                    super::record::trace_path(s).display(),
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
pub(crate) fn run(r: TreeRun<'_>, stop: &clrspy_collect::StopSignal) -> CliResult<u8> {
    let Some((program, args)) = r.command.split_first() else {
        return Err(CliError::new("--children needs a command after --").code(2));
    };
    std::fs::create_dir_all(r.dir).map_err(|e| {
        CliError::new(format!("cannot create {}: {e}", r.dir.display()))
            .hint("--children writes one trace per process into the directory -o names")
    })?;
    let opts = TreeOptions {
        config: r.config,
        dir: std::path::absolute(r.dir).unwrap_or_else(|_| r.dir.to_path_buf()),
        duration: r.duration,
        thread_cpu: r.thread_cpu,
        stop,
        stdout: ChildOutput::Inherit,
        env: r.env,
        max_processes: 256,
        drain: Duration::from_secs(30),
        consumers: r.consumers,
    };
    let outcome = clrspy_collect::record_tree(program, args, &opts, &mut say)
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
    let code = match outcome.status {
        Some(s) if outcome.terminated_by_clrspy => {
            eprintln!("clrspy ended the program ({s}) when the recording stopped.");
            0
        }
        Some(s) => crate::output::child_exit_code(&s),
        None => 0,
    };
    Ok(code)
}
