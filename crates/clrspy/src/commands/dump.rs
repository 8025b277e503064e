//! `clrspy dump`: a core dump of a running .NET process, written by its own runtime (which runs
//! the runtime's `createdump` next to it), so no debugger or SDK is needed on the machine.

use std::time::{Duration, Instant};

use diagnostics_client::DumpFlags;

use super::record::collect_error;
use crate::cli::DumpArgs;
use crate::output::{CliError, CliResult};

/// Runs `clrspy dump`.
pub fn run(args: &DumpArgs) -> CliResult<std::process::ExitCode> {
    let kind = clrspy_collect::parse_dump_type(&args.dump_type).ok_or_else(|| {
        CliError::new(format!("unknown dump type '{}'", args.dump_type))
            .hint("use mini, heap, triage or full")
            .code(2)
    })?;
    let pid = args.process_id;
    let ep = clrspy_collect::endpoint_for_pid(pid).map_err(collect_error)?;
    let out = clrspy_collect::dump_path(pid, args.output.as_deref()).map_err(collect_error)?;
    eprintln!(
        "Writing a {} dump of process {pid} to {} ...",
        args.dump_type.to_ascii_lowercase(),
        out.display()
    );
    let started = Instant::now();
    let flags = DumpFlags {
        crash_report: args.crash_report,
        ..DumpFlags::default()
    };
    let size =
        clrspy_collect::write_dump(&ep, &out, kind, flags, Duration::from_secs(args.timeout))
            .map_err(collect_error)?;
    eprintln!(
        "Wrote {} ({:.1} MB) in {:.1} s.",
        out.display(),
        size as f64 / (1u64 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    if args.crash_report {
        // createdump writes the report beside the dump, named after it.
        let mut name = out.as_os_str().to_owned();
        name.push(".crashreport.json");
        let report = std::path::PathBuf::from(name);
        if report.exists() {
            eprintln!("Crash report: {}", report.display());
        } else {
            eprintln!(
                "warning: the runtime wrote no crash report (expected at {})",
                report.display()
            );
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
