//! Facts about the machine and the target process, read once: OS, kernel, distro, hostname,
//! container (diagnostics-client's), the target's runtime version, command line,
//! environment, entry assembly with its version and informational version (often the build
//! SHA), and what clrspy may do here (root, ptrace scope, perf events, free disk).
//!
//! The types are serialized into the bundle's `manifest.json` (`target`, `system`;
//! `docs/bundle.md`) and the container into `doctor --json` (`docs/doctor.md`): their field
//! names are keys readers rely on, so fields are added, never renamed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use diagnostics_client::container::{self, Container};
use diagnostics_client::{procfs, RuntimeListing};
use serde::{Deserialize, Serialize};

/// How long the target's runtime may take to say its version.
const ASK_TIMEOUT: Duration = Duration::from_millis(1500);
/// The largest entry assembly read for its version.
const MAX_ASSEMBLY_BYTES: u64 = 512 << 20;

/// The machine's facts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SystemFacts {
    /// `Linux`, ...
    pub(crate) os: String,
    /// The kernel release (`uname -r`).
    pub(crate) kernel: String,
    /// The distribution's pretty name (`/etc/os-release`).
    pub(crate) distro: Option<String>,
    /// The host name.
    pub(crate) hostname: String,
    /// The architecture (`x86_64`, `aarch64`).
    pub(crate) arch: String,
    /// Logical CPUs.
    pub(crate) cpus: u32,
    /// Physical memory in bytes.
    pub(crate) memory_bytes: Option<u64>,
    /// The container clrspy (or the target) runs in, when one is detected.
    pub(crate) container: Option<Container>,
}

/// The target process's facts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TargetFacts {
    /// Its process id.
    pub(crate) pid: u32,
    /// Its name (entry assembly or executable).
    pub(crate) name: String,
    /// The .NET runtime's version (from the diagnostics port's process info).
    pub(crate) runtime_version: Option<String>,
    /// Its command line (redacted).
    pub(crate) command_line: String,
    /// The entry assembly's file.
    pub(crate) entry_assembly: Option<String>,
    /// The entry assembly's version (`AssemblyVersion`).
    pub(crate) assembly_version: Option<String>,
    /// The entry assembly's informational version (often the build SHA).
    pub(crate) informational_version: Option<String>,
    /// When it started (UTC, RFC 3339).
    pub(crate) started_utc: Option<String>,
}

/// The machine's facts, read now; what cannot be read is `None` or `unknown`.
pub(crate) fn system() -> SystemFacts {
    let u = uname();
    SystemFacts {
        os: u.sysname.unwrap_or_else(|| "unknown".into()),
        kernel: u.release.unwrap_or_else(|| "unknown".into()),
        distro: std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| parse_os_release(&t)),
        hostname: u.nodename.unwrap_or_else(|| "unknown".into()),
        arch: u
            .machine
            .unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        cpus: online_cpus(),
        memory_bytes: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| parse_mem_total(&t)),
        container: container::of_self(),
    }
}

/// The target's facts; what cannot be read (another user's process, no runtime answering,
/// a single-file app) is `None` or empty. The command line is raw: redact before writing.
pub(crate) fn target(pid: u32) -> TargetFacts {
    let info = clrspy_collect::endpoint_for_pid(pid)
        .ok()
        .and_then(|ep| diagnostics_client::process_info(&ep, ASK_TIMEOUT).ok());
    let argv = procfs::cmdline(pid).unwrap_or_default();
    let entry_name = info
        .as_ref()
        .and_then(|i| i.entrypoint_assembly.clone())
        .filter(|n| !n.trim().is_empty());
    let row = RuntimeListing::new(pid, info.clone().ok_or_else(String::new));
    let entry = entry_assembly(pid, &argv, entry_name.as_deref());
    let identity = entry.as_ref().and_then(|p| {
        // A path the process chose: read under its root, never through a link.
        let bytes = diagnostics_client::rooted::read_in_root(pid, p, MAX_ASSEMBLY_BYTES).ok()?;
        readytorun::assembly_identity(&bytes).ok()
    });
    TargetFacts {
        pid,
        name: row.name,
        runtime_version: info.and_then(|i| i.runtime_version),
        command_line: row.command_line,
        entry_assembly: entry.map(|p| p.display().to_string()),
        assembly_version: identity.as_ref().map(|i| i.version.clone()),
        informational_version: identity.and_then(|i| i.informational_version),
        started_utc: procfs::start_ticks(pid)
            .and_then(procfs::time_after_boot)
            .map(clrspy_values::time::rfc3339),
    }
}

/// `uname`'s fields.
#[derive(Default)]
struct Uname {
    sysname: Option<String>,
    nodename: Option<String>,
    release: Option<String>,
    machine: Option<String>,
}

fn uname() -> Uname {
    #[cfg(unix)]
    {
        // SAFETY: utsname is plain bytes; uname fills it and returns 0 on success.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut u) } != 0 {
            return Uname::default();
        }
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            Some(String::from_utf8_lossy(&bytes).into_owned()).filter(|s| !s.is_empty())
        };
        Uname {
            sysname: field(&u.sysname),
            nodename: field(&u.nodename),
            release: field(&u.release),
            machine: field(&u.machine),
        }
    }
    #[cfg(not(unix))]
    {
        Uname::default()
    }
}

fn online_cpus() -> u32 {
    std::thread::available_parallelism()
        .ok()
        .and_then(|n| u32::try_from(n.get()).ok())
        .unwrap_or(0)
}

/// `PRETTY_NAME` of `/etc/os-release` (else `NAME VERSION_ID`), unquoted.
pub(crate) fn parse_os_release(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let v = l.trim().strip_prefix(key)?.strip_prefix('=')?;
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
            Some(v.to_string()).filter(|v| !v.is_empty())
        })
    };
    get("PRETTY_NAME").or_else(|| {
        let name = get("NAME")?;
        Some(match get("VERSION_ID") {
            Some(v) => format!("{name} {v}"),
            None => name,
        })
    })
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
pub(crate) fn parse_mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The entry assembly's file as the process names it: the `.dll` that `dotnet` runs
/// (`dotnet [options] app.dll`, `dotnet exec app.dll`), else the apphost's `NAME.dll` beside
/// its executable (or the runtime's entry assembly name there). None for single-file apps.
fn entry_assembly(pid: u32, argv: &[String], entry_name: Option<&str>) -> Option<PathBuf> {
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let exists = |p: &Path| procfs::path_inside(pid, p).is_file();
    if let Some(dll) = dotnet_argument(argv) {
        let p = Path::new(dll);
        let p = match (&cwd, p.is_absolute()) {
            (Some(c), false) => c.join(p),
            _ => p.to_path_buf(),
        };
        return exists(&p).then_some(p);
    }
    let exe = exe?;
    let dir = exe.parent()?;
    let stem = exe.file_name()?.to_string_lossy().into_owned();
    let found = [Some(stem.as_str()), entry_name]
        .into_iter()
        .flatten()
        .map(|n| dir.join(format!("{n}.dll")))
        .find(|p| exists(p));
    found
}

/// The assembly a `dotnet` host command line runs: the first `.dll` argument after the
/// host's own options; None when argv[0] is not `dotnet`.
pub(crate) fn dotnet_argument(argv: &[String]) -> Option<&str> {
    let host = Path::new(argv.first()?).file_name()?.to_str()?;
    if host != "dotnet" && host != "dotnet.exe" {
        return None;
    }
    argv.iter()
        .skip(1)
        .map(String::as_str)
        .take_while(|a| *a != "--")
        .find(|a| a.ends_with(".dll") || a.ends_with(".exe"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_and_meminfo() {
        let text = "NAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            parse_os_release(text).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            parse_os_release("NAME=Alpine\nVERSION_ID=3.20.1\n").as_deref(),
            Some("Alpine 3.20.1")
        );
        assert_eq!(parse_os_release("garbage"), None);
        let mem = "MemTotal:       16316412 kB\nMemFree:  1 kB\n";
        assert_eq!(parse_mem_total(mem), Some(16_316_412 * 1024));
        assert_eq!(parse_mem_total("MemTotal: lots"), None);
    }

    #[test]
    fn the_dll_dotnet_runs() {
        let argv = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            dotnet_argument(&argv(
                "/usr/share/dotnet/dotnet exec --roll-forward Major app.dll x.dll"
            )),
            Some("app.dll")
        );
        assert_eq!(
            dotnet_argument(&argv("dotnet bin/W.dll leak")),
            Some("bin/W.dll")
        );
        assert_eq!(dotnet_argument(&argv("./MyApp --urls http://x")), None);
        assert_eq!(dotnet_argument(&[]), None);
    }

    /// This machine's facts read, whatever they are; this process is no .NET one, so its
    /// runtime facts are missing, not an error.
    #[test]
    fn this_machine_and_this_process() {
        let s = system();
        assert_eq!(s.os, std::env::consts::OS.replace("linux", "Linux"));
        assert!(!s.kernel.is_empty() && s.kernel != "unknown");
        assert!(s.cpus >= 1);
        assert!(s.memory_bytes.is_some_and(|m| m > 1 << 20));
        let me = target(std::process::id());
        assert_eq!(me.pid, std::process::id());
        assert!(!me.name.is_empty());
        assert!(me.runtime_version.is_none());
        assert!(
            me.command_line.contains("clrspy_handoff"),
            "{}",
            me.command_line
        );
        let started = me.started_utc.unwrap();
        assert!(started.len() == 24 && started.ends_with('Z'), "{started}");
        let gone = target(u32::MAX - 1);
        assert!(gone.name.is_empty() && gone.started_utc.is_none());
    }
}
