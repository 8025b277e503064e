//! Facts about the machine and the target process, read once: OS, kernel, distro, hostname,
//! container id and image where detectable, the target's runtime version, command line,
//! environment, entry assembly with its version and informational version (often the build
//! SHA), and what clrspy may do here (root, ptrace scope, perf events, free disk).
//!
//! OWNER: helper DOCTOR. The types are shared (add fields, do not rename).

use serde::{Deserialize, Serialize};

/// The machine's facts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SystemFacts {
    /// `Linux`, ...
    pub os: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// The distribution's pretty name (`/etc/os-release`).
    pub distro: Option<String>,
    /// The host name.
    pub hostname: String,
    /// The architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// Physical memory in bytes.
    pub memory_bytes: Option<u64>,
    /// The container clrspy (or the target) runs in, when one is detected.
    pub container: Option<ContainerFacts>,
}

/// A container.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ContainerFacts {
    /// The runtime (`docker`, `containerd`, `podman`, `kubernetes`, `unknown`).
    pub runtime: String,
    /// The container id, when the cgroup path or mountinfo shows it.
    pub id: Option<String>,
    /// The image, when the environment says it.
    pub image: Option<String>,
}

/// The target process's facts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TargetFacts {
    /// Its process id.
    pub pid: u32,
    /// Its name (entry assembly or executable).
    pub name: String,
    /// The .NET runtime's version (from the diagnostics port's process info).
    pub runtime_version: Option<String>,
    /// Its command line (redacted).
    pub command_line: String,
    /// The entry assembly's file.
    pub entry_assembly: Option<String>,
    /// The entry assembly's version (`AssemblyVersion`).
    pub assembly_version: Option<String>,
    /// The entry assembly's informational version (often the build SHA).
    pub informational_version: Option<String>,
    /// When it started (UTC, RFC 3339).
    pub started_utc: Option<String>,
}

// TEMPORARY (the lead's, replaced by helper DOCTOR's).
/// The machine's facts.
pub fn system() -> SystemFacts {
    SystemFacts::default()
}
/// The target's facts.
pub fn target(pid: u32) -> TargetFacts {
    TargetFacts {
        pid,
        ..TargetFacts::default()
    }
}
