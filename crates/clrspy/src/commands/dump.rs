//! `clrspy dump`: a core dump of a running .NET process, written by its own runtime (which runs
//! the runtime's `createdump` next to it), so no debugger or SDK is needed on the machine.

use crate::cli::{DumpAction, DumpArgs};
use crate::output::collect_error;
use crate::output::{CliError, CliResult};

/// Runs `clrspy dump`.
pub fn run(args: &DumpArgs) -> CliResult<std::process::ExitCode> {
    if let Some(DumpAction::Analyze(a)) = &args.action {
        return super::dump_analyze::run(a);
    }
    let (kind, compress) = (args.dump_type.value, args.compress);
    let Some(process) = &args.process else {
        return Err(CliError::new("clrspy dump needs a process: -p PID")
            .hint("clrspy dump analyze FILE reads a dump"));
    };
    let pid = process.process_id;
    let ep = clrspy_collect::endpoint_for_pid(pid).map_err(collect_error)?;
    let (output, renamed) =
        clrspy_collect::compressed_dump_name(pid, args.output.as_deref(), compress);
    if let (Some(named), true) = (&output, renamed) {
        // A compressed file says so by its name: `mini.dmp` becomes `mini.dmp.zst`.
        eprintln!(
            "The dump is {} compressed: writing {} (--compress none writes a raw core).",
            compress.name(),
            named.display()
        );
    }
    let out = clrspy_collect::dump_path(pid, output.as_deref()).map_err(collect_error)?;
    eprintln!(
        "Writing a {} dump of process {pid} to {} ...",
        args.dump_type.text.to_ascii_lowercase(),
        out.display()
    );
    let spec = clrspy_collect::DumpSpec {
        kind,
        compress,
        crash_report: args.crash_report,
        timeout: args.timeout,
        max_file_bytes: None,
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
            "Wrote {} ({} raw, {} {} ({}), {}) in {:.2} s.",
            out.display(),
            clrspy_live::recording::notices::mb(r.raw_bytes),
            clrspy_live::recording::notices::mb(r.file_bytes),
            compress.name(),
            share(r.file_bytes, r.raw_bytes),
            if r.streamed {
                "compressed as it was written"
            } else {
                "written raw, then compressed"
            },
            r.elapsed.as_secs_f64()
        );
        let unpack = compress.unpack_command().unwrap_or_default();
        eprintln!(
            "Debuggers (dotnet-dump analyze, lldb) open the raw core: `{unpack} {}` first.",
            out.display()
        );
    }
    match &r.dac {
        Some(dac) => eprintln!(
            "Analyse it anywhere: clrspy dump analyze {} (the runtime's data access library is stored beside it: {})",
            out.display(),
            dac.display()
        ),
        None => eprintln!(
            "Analyse it: clrspy dump analyze {} (on a machine with the dump's .NET runtime build installed)",
            out.display()
        ),
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

/// `part` of `whole` as a percentage with the digits that tell it: a compressed dump of
/// 11 MB from 2.6 GB is "0.42%", never "0%".
fn share(part: u64, whole: u64) -> String {
    let p = 100.0 * part as f64 / whole.max(1) as f64;
    match p {
        p if p >= 10.0 => format!("{p:.0}%"),
        p if p >= 1.0 => format!("{p:.1}%"),
        p => format!("{p:.2}%"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_small_share_keeps_its_digits() {
        assert_eq!(super::share(11 << 20, 2608 << 20), "0.42%");
        assert_eq!(super::share(30, 100), "30%");
        assert_eq!(super::share(25, 1000), "2.5%");
        assert_eq!(super::share(0, 0), "0.00%");
    }
}
