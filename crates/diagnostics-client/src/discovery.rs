//! Finding the runtimes' diagnostics endpoints: the `dotnet-diagnostic-{pid}-{key}-socket`
//! files in the temporary directory, keeping only processes that are still alive. On Linux,
//! processes in another mount namespace (containers) are found too: their sockets live in
//! their own `/tmp` (or `$TMPDIR`), reached through `/proc/<pid>/root`, and are named after
//! the pid inside their PID namespace (the last `NSpid` entry of `/proc/<pid>/status`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::procfs;

/// A runtime's diagnostics endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The process id as seen from here.
    pub pid: u32,
    /// The socket path.
    pub path: PathBuf,
}

/// Parses `dotnet-diagnostic-{pid}-{key}-socket`: the pid.
pub(crate) fn parse_name(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("dotnet-diagnostic-")?
        .strip_suffix("-socket")?;
    let (pid, key) = rest.split_once('-')?;
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// True when the socket file `name` (`dotnet-diagnostic-{pid}-{key}-socket`) of process
/// `pid` (its pid here) was left behind by an earlier process of the same number, killed
/// before it could remove it. On Linux the runtime's key is its start time in clock ticks
/// after boot (field 22 of `/proc/<pid>/stat`): a key other than the start of the process now
/// holding the number is not its. False when that cannot be told (another time namespace,
/// an unreadable `/proc`, other systems).
pub(crate) fn stale_socket(name: &str, pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Some(key) = socket_key(name).filter(|&k| k != 0) else {
            return false;
        };
        // A time namespace shifts the start times the process sees.
        if procfs::namespace(pid, "time") != procfs::own_namespace("time") {
            return false;
        }
        procfs::start_ticks(pid).is_some_and(|start| start != key)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (name, pid);
        false
    }
}

/// The key of `dotnet-diagnostic-{pid}-{key}-socket`.
#[cfg(target_os = "linux")]
fn socket_key(name: &str) -> Option<u64> {
    let rest = name
        .strip_prefix("dotnet-diagnostic-")?
        .strip_suffix("-socket")?;
    rest.split_once('-')?.1.parse().ok()
}

/// The temporary directories to look in: `$TMPDIR` and `/tmp`.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![std::env::temp_dir()];
    let tmp = PathBuf::from("/tmp");
    if !dirs.contains(&tmp) && tmp.is_dir() {
        dirs.push(tmp);
    }
    dirs
}

/// Every live runtime endpoint, one per process (the newest socket when a process id was
/// reused), sorted by process id. Sockets of dead processes are skipped.
///
/// ```no_run
/// use std::time::Duration;
///
/// for ep in diagnostics_client::find_endpoints() {
///     match diagnostics_client::process_info(&ep, Duration::from_secs(2)) {
///         Ok(info) => println!("{} {}", ep.pid, info.command_line),
///         Err(e) => println!("{} ({e})", ep.pid),
///     }
/// }
/// ```
pub fn find_endpoints() -> Vec<Endpoint> {
    let mut best: HashMap<u32, (SystemTime, PathBuf)> = HashMap::new();
    for dir in temp_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(parse_name) else {
                continue;
            };
            if !procfs::alive(pid) {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if stale_socket(&name.to_string_lossy(), pid) {
                continue;
            }
            let path = entry.path();
            match best.get(&pid) {
                Some((t, _)) if *t >= modified => {}
                _ => {
                    best.insert(pid, (modified, path));
                }
            }
        }
    }
    // A process in a container puts its socket in its own temporary folder: that one is its,
    // whatever ours holds under the same number.
    #[cfg(target_os = "linux")]
    for (pid, found) in container_endpoints() {
        best.insert(pid, found);
    }
    let mut out: Vec<Endpoint> = best
        .into_iter()
        .map(|(pid, (_, path))| Endpoint { pid, path })
        .collect();
    out.sort_by_key(|e| e.pid);
    out
}

/// A folder a process in a container and clrspy both reach: the process's temporary folder
/// (where its runtime put its socket, so it exists and the runtime may write there), named as
/// the process names it and as clrspy reaches it through `/proc/<pid>/root`. What the container
/// controls is not to be trusted: open files there without following links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerFolder {
    /// The folder as the process (and the `createdump` its runtime starts) names it.
    pub inside: PathBuf,
    /// The same folder from here.
    pub here: PathBuf,
}

/// The temporary folder of `pid` when it sees other files than we do (another mount namespace
/// or another root: a container), so that a path it is given means something else there; None
/// when it sees our files (or on systems without `/proc`).
pub fn container_folder(pid: u32) -> Option<ContainerFolder> {
    #[cfg(target_os = "linux")]
    {
        let link = |p: String| std::fs::read_link(p).ok();
        let other_ns = procfs::namespace(pid, "mnt")? != procfs::own_namespace("mnt")?;
        let other_root = link(format!("/proc/{pid}/root"))? != link("/proc/self/root".into())?;
        if !other_ns && !other_root {
            return None;
        }
        let inside = procfs::temp_dir(pid);
        // Every folder on the way is a real one: a link inside the container would be followed
        // from our root, not from the container's.
        crate::rooted::RootedDir::root_of(pid)
            .ok()?
            .open_dir(&inside)
            .ok()?;
        let here = procfs::path_inside(pid, &inside);
        Some(ContainerFolder { inside, here })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Endpoints of processes in another mount namespace than ours, keyed by host pid.
#[cfg(target_os = "linux")]
fn container_endpoints() -> Vec<(u32, (SystemTime, PathBuf))> {
    let Some(ours) = procfs::own_namespace("mnt") else {
        return Vec::new();
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // Same mount namespace: its sockets are in our /tmp, found already. Unreadable: not
        // ours to trace.
        match procfs::namespace(pid, "mnt") {
            Some(ns) if ns != ours => {}
            _ => continue,
        }
        let Some(nspid) = procfs::namespace_pid(pid) else {
            continue;
        };
        // Its temporary folder as it names it, walked under its root with no link followed (a
        // link there would be followed from our root): the socket's path goes through it.
        let inside = procfs::temp_dir(pid);
        let Some(entries) = crate::rooted::RootedDir::root_of(pid)
            .ok()
            .and_then(|root| root.open_dir(&inside).ok())
            .and_then(|held| held.entries().ok())
        else {
            continue;
        };
        let dir = procfs::path_inside(pid, &inside);
        let newest = entries
            .into_iter()
            .filter(|(name, _)| name.to_str().and_then(parse_name) == Some(nspid))
            .map(|(name, when)| (when.unwrap_or(SystemTime::UNIX_EPOCH), dir.join(name)))
            .filter(|(_, p)| {
                let name = p.file_name().map(|n| n.to_string_lossy());
                !name.is_some_and(|n| stale_socket(&n, pid))
            })
            .max_by_key(|(t, _)| *t);
        if let Some(found) = newest {
            out.push((pid, found));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn start_times_and_stale_sockets() {
        assert_eq!(
            super::socket_key("dotnet-diagnostic-7-98765-socket"),
            Some(98765)
        );
        let me = std::process::id();
        let start = crate::procfs::start_ticks(me).unwrap();
        let ours = format!("dotnet-diagnostic-{me}-{start}-socket");
        assert!(!super::stale_socket(&ours, me));
        let earlier = format!("dotnet-diagnostic-{me}-{}-socket", start + 1);
        assert!(super::stale_socket(&earlier, me));
        // Key 0 (the runtime could not read its start) and gone processes: cannot tell.
        assert!(!super::stale_socket(
            &format!("dotnet-diagnostic-{me}-0-socket"),
            me
        ));
        assert!(!super::stale_socket(
            "dotnet-diagnostic-4294967-1-socket",
            4_294_967
        ));
    }

    #[test]
    fn this_process_is_not_in_a_container() {
        assert_eq!(super::container_folder(std::process::id()), None);
        // pid_max is at most 2^22 on Linux: this pid never exists.
        assert_eq!(super::container_folder(4_294_967), None);
    }

    #[test]
    fn socket_names() {
        assert_eq!(
            super::parse_name("dotnet-diagnostic-20299-694353-socket"),
            Some(20299)
        );
        assert_eq!(super::parse_name("dotnet-diagnostic-20299-socket"), None);
        assert_eq!(super::parse_name("dotnet-diagnostic-x-1-socket"), None);
        assert_eq!(super::parse_name("other"), None);
    }
}
