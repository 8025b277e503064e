//! `clrspy env`: the environment variables of a running .NET process, as its runtime reports
//! them (works across containers, where /proc/<pid>/environ may not be readable).

use std::io::Write;
use std::time::Duration;

use diagnostics_client::process_environment;

use crate::cli::EnvArgs;
use crate::output::{CliError, CliResult};

/// Runs `clrspy env`.
pub fn run(args: &EnvArgs) -> CliResult<std::process::ExitCode> {
    let pid = args.process.process_id;
    let ep = clrspy_collect::endpoint_for_pid(pid).map_err(crate::output::collect_error)?;
    if !args.set.is_empty() {
        for kv in &args.set {
            let (k, v) = kv
                .split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| CliError::new(format!("'{kv}' is not NAME=VALUE")).code(2))?;
            diagnostics_client::set_environment_variable(&ep, k, v, Duration::from_secs(5))
                .map_err(|e| CliError::new(format!("process {pid}: setting {k}: {e}")))?;
            eprintln!("Set {k} in process {pid}.");
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let env = process_environment(&ep, Duration::from_secs(5))
        .map_err(|e| CliError::new(format!("process {pid}: {e}")))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let map: serde_json::Map<String, serde_json::Value> = env
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        serde_json::to_writer_pretty(&mut out, &map).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        for (k, v) in env {
            writeln!(out, "{k}={v}")?;
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
