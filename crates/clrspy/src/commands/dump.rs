//! `clrspy dump`: a core dump of a running .NET process, written by its own runtime (which runs
//! the runtime's `createdump` next to it), so no debugger or SDK is needed on the machine.

use crate::cli::DumpArgs;
use crate::output::collect_error;
use crate::output::{CliError, CliResult};

/// Runs `clrspy dump`.
pub fn run(args: &DumpArgs) -> CliResult<std::process::ExitCode> {
    let kind = clrspy_collect::parse_dump_type(&args.dump_type).ok_or_else(|| {
        CliError::new(format!("unknown dump type '{}'", args.dump_type))
            .hint("use mini, heap, triage or full")
            .code(2)
    })?;
    let compress = clrspy_collect::Compression::parse(&args.compress).ok_or_else(|| {
        CliError::new(format!("unknown compression '{}'", args.compress))
            .hint("use gzip, zstd or none")
            .code(2)
    })?;
    let pid = args.process_id;
    let ep = clrspy_collect::endpoint_for_pid(pid).map_err(collect_error)?;
    let suffix = match compress {
        clrspy_collect::Compression::Gzip => ".gz",
        clrspy_collect::Compression::Zstd => ".zst",
        _ => "",
    };
    let output = match &args.output {
        None if !suffix.is_empty() => {
            Some(format!("core_{pid}_{}{suffix}", clrspy_collect::utc_stamp()).into())
        }
        // A compressed file says so by its name: `mini.dmp` becomes `mini.dmp.zst`.
        Some(o) if !suffix.is_empty() && !o.to_string_lossy().ends_with(suffix) => {
            let mut named = o.clone().into_os_string();
            named.push(suffix);
            eprintln!(
                "The dump is {} compressed: writing {} (--compress none writes a raw core).",
                compress.name(),
                std::path::Path::new(&named).display()
            );
            Some(named.into())
        }
        o => o.clone(),
    };
    let out = clrspy_collect::dump_path(pid, output.as_deref()).map_err(collect_error)?;
    eprintln!(
        "Writing a {} dump of process {pid} to {} ...",
        args.dump_type.to_ascii_lowercase(),
        out.display()
    );
    let spec = clrspy_collect::DumpSpec {
        kind,
        compress,
        crash_report: args.crash_report,
        timeout: args.timeout,
    };
    let r = clrspy_collect::write_dump_file(&ep, pid, &out, &spec).map_err(collect_error)?;
    if compress == clrspy_collect::Compression::None {
        eprintln!(
            "Wrote {} ({:.1} MB) in {:.1} s.",
            out.display(),
            r.raw_bytes as f64 / (1u64 << 20) as f64,
            r.elapsed.as_secs_f64()
        );
    } else {
        eprintln!(
            "Wrote {} ({} raw, {} {} ({:.0}%), {}) in {:.2} s.",
            out.display(),
            super::record_dumps::mb(r.raw_bytes),
            super::record_dumps::mb(r.file_bytes),
            compress.name(),
            100.0 * r.file_bytes as f64 / r.raw_bytes.max(1) as f64,
            if r.streamed {
                "compressed as it was written"
            } else {
                "written raw, then compressed"
            },
            r.elapsed.as_secs_f64()
        );
        let unpack = match compress {
            clrspy_collect::Compression::Gzip => "gunzip",
            _ => "zstd -d",
        };
        eprintln!(
            "Debuggers (dotnet-dump analyze, lldb) open the raw core: `{unpack} {}` first.",
            out.display()
        );
    }
    if args.crash_report {
        match &r.crash_report {
            Some(report) => eprintln!("Crash report: {}", report.display()),
            None => {
                eprintln!("warning: the runtime wrote no crash report (expected beside the dump)")
            }
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
