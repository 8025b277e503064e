//! Running the analysis in a child process. The data access library runs native code over
//! whatever the dump holds; a damaged or foreign dump can make it fault. In a child, that is an
//! error message here instead of the end of clrspy (or of the agent serving many users).
//!
//! The child is clrspy itself with a hidden command ([`WORKER_COMMAND`]): it writes the
//! [`Analysis`] as JSON on its standard output, or one line of error on its standard error and
//! exit code 2.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use crate::analyze::RootTarget;
use crate::analyze::{analyze, Parts};
use crate::dac::{find_dac, Dac};
use crate::elf::{Core, Machine};
use crate::model::{Analysis, DumpFacts};
use crate::Error;

/// The hidden command the binary routes to [`worker_main`].
pub const WORKER_COMMAND: &str = "__dump-analyze-worker";

/// What to read and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The data access library to use instead of searching for one.
    pub dac: Option<PathBuf>,
    /// Walk the heap too.
    pub heap: bool,
    /// Find what holds these objects alive.
    pub gcroot: Option<RootTarget>,
}

/// Reads `dump` in this process (the worker's side; callers use [`analyze_in_child`]).
pub(crate) fn analyze_here(dump: &Path, options: &Options) -> Result<Analysis, Error> {
    let core = Core::open(dump)?;
    let choice = find_dac(&core, dump, options.dac.as_deref())?;
    let cut = core.cut_short().map(|(has, should)| {
        format!(
            "the core is cut short: it holds {has} of the {should} bytes its headers describe (a copy or a write that did not finish); what lay past the cut is missing"
        )
    });
    let dac = match Dac::open(&choice.path, &core, choice.runtime_base) {
        Ok(d) => d,
        Err(e) => {
            return Err(match cut {
                Some(cut) => Error::Runtime(format!(
                    "{cut}, and the runtime's structures could not be read from what is left"
                )),
                None => e,
            })
        }
    };
    let facts = DumpFacts {
        path: dump.display().to_string(),
        packing: core.packing().describe().to_string(),
        pid: core.pid,
        command: core.command.clone(),
        machine: match core.machine {
            Machine::X64 => "x64".into(),
            Machine::Arm64 => "arm64".into(),
        },
        os_threads: core.threads.len(),
        memory_bytes: core.memory_bytes(),
        runtime: choice.runtime_path.clone(),
        dac: format!("{} ({})", choice.path.display(), choice.how),
    };
    let parts = Parts {
        heap: options.heap,
        gcroot: options.gcroot.clone(),
    };
    let mut a = analyze(&core, &dac, facts, parts);
    if let Some(cut) = cut {
        a.warnings.insert(0, cut);
    }
    Ok(a)
}

/// The worker's entry: `ARGS` are `DUMP [--dac PATH] [--heap] [--gcroot-address HEX |
/// --gcroot-type PATTERN]`. Returns the exit code.
pub fn worker_main(args: &[OsString]) -> i32 {
    let mut dump = None;
    let mut options = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--heap") => options.heap = true,
            Some("--dac") => options.dac = it.next().map(PathBuf::from),
            Some("--gcroot-address") => {
                let v = it.next().and_then(|v| v.to_str()).unwrap_or("");
                match u64::from_str_radix(v.trim_start_matches("0x"), 16) {
                    Ok(a) => options.gcroot = Some(RootTarget::Address(a)),
                    Err(_) => {
                        eprintln!("not an address: {v}");
                        return 2;
                    }
                }
            }
            Some("--gcroot-type") => {
                let v = it.next().and_then(|v| v.to_str()).unwrap_or("").to_string();
                options.gcroot = Some(RootTarget::Type(v));
            }
            _ => dump = Some(PathBuf::from(a)),
        }
    }
    let Some(dump) = dump else {
        eprintln!("no dump given");
        return 2;
    };
    match analyze_here(&dump, &options) {
        Ok(a) => {
            let mut out = std::io::stdout().lock();
            match serde_json::to_writer(&mut out, &a) {
                Ok(()) => {
                    let _ = out.flush();
                    0
                }
                Err(e) => {
                    eprintln!("cannot write the analysis: {e}");
                    2
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            if matches!(e, Error::NotACore(_)) {
                NOT_A_CORE
            } else {
                2
            }
        }
    }
}

/// The worker's exit code for a file that is not a core (2 for every other error).
const NOT_A_CORE: i32 = 3;

/// Reads `dump` in a child process started from `exe` (clrspy's own binary).
pub fn analyze_in_child(exe: &Path, dump: &Path, options: &Options) -> Result<Analysis, Error> {
    let mut cmd = Command::new(exe);
    cmd.arg(WORKER_COMMAND).arg(dump);
    if let Some(d) = &options.dac {
        cmd.arg("--dac").arg(d);
    }
    if options.heap {
        cmd.arg("--heap");
    }
    match &options.gcroot {
        Some(RootTarget::Address(a)) => {
            cmd.arg("--gcroot-address").arg(format!("{a:#x}"));
        }
        Some(RootTarget::Type(t)) => {
            cmd.arg("--gcroot-type").arg(t);
        }
        None => {}
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::Io(exe.display().to_string(), e))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if !out.status.success() {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = out.status.signal() {
            return Err(Error::Runtime(format!(
                "the runtime's data access library crashed reading {} (signal {sig}): the dump is damaged, truncated or not of the runtime build the library is for{}",
                dump.display(),
                if last.is_empty() { String::new() } else { format!(" ({last})") }
            )));
        }
        return Err(match out.status.code() {
            Some(NOT_A_CORE) => {
                Error::NotACore(last.trim_start_matches("not a core dump: ").to_string())
            }
            Some(2) if !last.is_empty() => Error::Runtime(last.to_string()),
            code => Error::Runtime(format!(
                "the analysis of {} failed (exit code {code:?}){}",
                dump.display(),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            )),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::Runtime(format!(
            "the analysis of {} gave no readable result: {e}",
            dump.display()
        ))
    })
}
