//! `clrspy dump`: a core dump of a running .NET process, written by its own runtime (which runs
//! the runtime's `createdump` next to it), so no debugger or SDK is needed on the machine.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use diagnostics_client::{generate_core_dump, DumpFlags, DumpType};

use crate::cli::DumpArgs;
use crate::output::{CliError, CliResult};

/// Parses a dump type name.
fn dump_type(s: &str) -> Option<DumpType> {
    match s.to_ascii_lowercase().as_str() {
        "mini" | "normal" => Some(DumpType::Normal),
        "heap" | "withheap" => Some(DumpType::WithHeap),
        "triage" => Some(DumpType::Triage),
        "full" => Some(DumpType::Full),
        _ => None,
    }
}

/// Runs `clrspy dump`.
pub fn run(args: &DumpArgs) -> CliResult<std::process::ExitCode> {
    let kind = dump_type(&args.dump_type).ok_or_else(|| {
        CliError::new(format!("unknown dump type '{}'", args.dump_type))
            .hint("use mini, heap, triage or full")
            .code(2)
    })?;
    let pid = args.process_id;
    let ep = super::endpoint_for_pid(pid)?;
    let out = match &args.output {
        Some(p) => p.clone(),
        None => PathBuf::from(format!("core_{pid}_{}", super::record::utc_stamp())),
    };
    // The runtime writes the file from the target's working directory: give it an absolute path.
    let out = if out.is_absolute() {
        out
    } else {
        std::env::current_dir()?.join(out)
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(CliError::new(format!(
                "cannot write the dump to {}: {} is not a directory",
                out.display(),
                dir.display()
            )));
        }
    }
    let path = out.to_str().ok_or_else(|| {
        CliError::new(format!(
            "the dump path {} is not valid UTF-8",
            out.display()
        ))
    })?;
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
    generate_core_dump(&ep, path, kind, flags, Duration::from_secs(args.timeout)).map_err(|e| {
        CliError::new(format!("process {pid}: the dump failed: {e}")).hint(
            "the runtime runs createdump as the target's user: the directory must be writable by it, and ptrace must be allowed (containers may need SYS_PTRACE)",
        )
    })?;
    // The runtime wrote it: check it is there and is an ELF core (on Linux).
    let mut magic = [0u8; 4];
    let size = std::fs::metadata(&out).map(|m| m.len()).map_err(|e| {
        CliError::new(format!(
            "the runtime reported success but {} is not readable here: {e}",
            out.display()
        ))
        .hint("a process in a container writes the dump inside its own file system")
    })?;
    if cfg!(target_os = "linux") {
        std::fs::File::open(&out).and_then(|mut f| f.read_exact(&mut magic))?;
        if &magic != b"\x7fELF" {
            return Err(CliError::new(format!(
                "{} is not an ELF core file",
                out.display()
            )));
        }
    }
    eprintln!(
        "Wrote {} ({:.1} MB) in {:.1} s.",
        out.display(),
        size as f64 / (1u64 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dump_type_names() {
        use super::*;
        assert_eq!(dump_type("MINI"), Some(DumpType::Normal));
        assert_eq!(dump_type("heap"), Some(DumpType::WithHeap));
        assert_eq!(dump_type("full"), Some(DumpType::Full));
        assert_eq!(dump_type("x"), None);
    }
}
