//! What `clrspy doctor` finds out before it advises: the machine (OS, kernel, distro,
//! container), what clrspy may do here (root, ptrace scope, perf events and whether the
//! kernel sampler opens, free disk where files go) and, given a process, whether clrspy can
//! attach to it, its runtime version and its resident memory (a dump's size).

use std::path::Path;

use diagnostics_client::container::{self, Container};
use diagnostics_client::procfs;
use serde::{Deserialize, Serialize};

use crate::facts;

/// The environment a plan is made for.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Environment {
    /// `Linux`, ...
    pub(crate) os: String,
    /// The kernel release.
    pub(crate) kernel: String,
    /// The distribution.
    pub(crate) distro: Option<String>,
    /// The architecture.
    pub(crate) arch: String,
    /// The host name (in Kubernetes: the pod's name).
    pub(crate) hostname: String,
    /// The container clrspy runs in, if any.
    pub(crate) container: Option<Container>,
    /// clrspy runs as root.
    pub(crate) is_root: bool,
    /// `kernel.yama.ptrace_scope` (0 classic, 1 restricted, 2 admin only, 3 none); None
    /// without Yama (classic rules).
    pub(crate) ptrace_scope: Option<u8>,
    /// `kernel.perf_event_paranoid`.
    pub(crate) perf_event_paranoid: Option<i32>,
    /// Whether the kernel's CPU sampler opens (on the process, or on clrspy itself).
    pub(crate) kernel_sampler: KernelSampler,
    /// The folder files are written to.
    pub(crate) output_dir: String,
    /// Free space there, in bytes.
    pub(crate) free_disk_bytes: Option<u64>,
    /// The process, when one was named.
    pub(crate) target: Option<TargetAccess>,
}

/// Whether the kernel sampler (`perf_event_open`) is allowed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct KernelSampler {
    /// It opened.
    pub(crate) allowed: bool,
    /// Why not, or what it lacks (user mode only), in words.
    pub(crate) note: Option<String>,
}

/// The named process and what clrspy may do with it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TargetAccess {
    /// Its process id.
    pub(crate) pid: u32,
    /// Its name.
    pub(crate) name: String,
    /// Its .NET runtime version, when its runtime answered.
    pub(crate) runtime_version: Option<String>,
    /// Its entry assembly's file, when found.
    pub(crate) entry_assembly: Option<String>,
    /// The entry assembly's informational version (else its version): which build runs.
    pub(crate) app_version: Option<String>,
    /// It runs as clrspy's user.
    pub(crate) same_user: bool,
    /// Its diagnostics socket was found.
    pub(crate) diagnostics_socket: bool,
    /// clrspy can attach: the socket is there and clrspy is its user or root.
    pub(crate) can_attach: bool,
    /// Its resident memory (`VmRSS`): about a full or heap dump's size before compression.
    pub(crate) rss_bytes: Option<u64>,
    /// Its threads now (`/proc/PID/task`): what the runtime's sampler suspends at each
    /// sample.
    pub(crate) threads: Option<u64>,
    /// The container it runs in, when it sees other files than clrspy.
    pub(crate) container: Option<Container>,
}

impl Environment {
    /// Finds out the environment now: of this machine, of `pid` when given, and of the
    /// output folder `dir`. Nothing here fails: what cannot be told is left `None`.
    pub(crate) fn detect(pid: Option<u32>, dir: &Path) -> Environment {
        let sys = facts::system();
        let is_root = effective_uid() == Some(0);
        let read_num = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.trim().parse::<i64>().ok())
        };
        Environment {
            os: sys.os,
            kernel: sys.kernel,
            distro: sys.distro,
            arch: sys.arch,
            hostname: sys.hostname,
            container: sys.container,
            is_root,
            ptrace_scope: read_num("/proc/sys/kernel/yama/ptrace_scope")
                .and_then(|n| u8::try_from(n).ok()),
            perf_event_paranoid: read_num("/proc/sys/kernel/perf_event_paranoid")
                .and_then(|n| i32::try_from(n).ok()),
            kernel_sampler: probe_kernel_sampler(pid.unwrap_or_else(std::process::id)),
            output_dir: dir.display().to_string(),
            free_disk_bytes: clrspy_collect::disk::free_bytes(dir),
            target: pid.map(|p| target_access(p, is_root)),
        }
    }
}

/// What clrspy may do with `pid`.
fn target_access(pid: u32, is_root: bool) -> TargetAccess {
    let t = facts::target(pid);
    let same_user = procfs::uid(pid).is_some() && procfs::uid(pid) == effective_uid();
    let diagnostics_socket = clrspy_collect::endpoint_for_pid(pid).is_ok();
    let container = diagnostics_client::container_folder(pid)
        .is_some()
        .then(|| container::of_process(pid))
        .flatten();
    TargetAccess {
        pid,
        name: t.name,
        runtime_version: t.runtime_version,
        entry_assembly: t.entry_assembly,
        app_version: t.informational_version.or(t.assembly_version),
        same_user,
        diagnostics_socket,
        can_attach: diagnostics_socket && (same_user || is_root),
        rss_bytes: procfs::resident_bytes(pid),
        threads: procfs::thread_count(pid),
        container,
    }
}

/// Opens the kernel sampler on `pid` for a moment (nothing is recorded) and says whether it
/// opened, and what it lacks.
fn probe_kernel_sampler(pid: u32) -> KernelSampler {
    match clrspy_sampler::Sampler::open(pid, 99) {
        Ok(s) => KernelSampler {
            allowed: true,
            note: s
                .user_mode_only()
                .then(|| clrspy_collect::kernel::USER_MODE_ONLY.to_string()),
        },
        Err(e) => KernelSampler {
            allowed: false,
            note: Some(e.to_string()),
        },
    }
}

fn effective_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Some(unsafe { libc::geteuid() })
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `detect` on this machine: every fact this machine has is found, for clrspy itself as
    /// the process too (no .NET runtime: no socket, so no attaching).
    #[test]
    fn detect_on_this_machine() {
        let dir = std::env::temp_dir();
        let env = Environment::detect(Some(std::process::id()), &dir);
        assert_eq!(env.os, "Linux");
        assert!(!env.kernel.is_empty() && !env.arch.is_empty());
        assert_eq!(env.is_root, effective_uid() == Some(0));
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
        assert_eq!(env.perf_event_paranoid, paranoid.trim().parse().ok());
        assert_eq!(
            env.ptrace_scope.is_some(),
            Path::new("/proc/sys/kernel/yama/ptrace_scope").exists()
        );
        // Paranoid 3 refuses; otherwise a process may sample itself.
        if env.perf_event_paranoid.is_some_and(|p| p >= 3) {
            assert!(!env.kernel_sampler.allowed);
        }
        if !env.kernel_sampler.allowed {
            assert!(env.kernel_sampler.note.is_some());
        }
        assert!(env.free_disk_bytes.is_some_and(|b| b > 0));
        let t = env.target.unwrap();
        assert!(t.same_user && !t.diagnostics_socket && !t.can_attach);
        assert!(t.rss_bytes.is_some_and(|r| r > 0));
        assert!(t.container.is_none());
    }
}
