//! Finding the runtimes' diagnostics endpoints: the `dotnet-diagnostic-{pid}-{key}-socket`
//! files in the temporary directory, keeping only processes that are still alive.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A runtime's diagnostics endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The process id as seen from here.
    pub pid: u32,
    /// The socket path.
    pub path: PathBuf,
}

/// Parses `dotnet-diagnostic-{pid}-{key}-socket`.
fn parse_name(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("dotnet-diagnostic-")?
        .strip_suffix("-socket")?;
    let (pid, key) = rest.split_once('-')?;
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

fn alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
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
            if !alive(pid) {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            let path = entry.path();
            match best.get(&pid) {
                Some((t, _)) if *t >= modified => {}
                _ => {
                    best.insert(pid, (modified, path));
                }
            }
        }
    }
    let mut out: Vec<Endpoint> = best
        .into_iter()
        .map(|(pid, (_, path))| Endpoint { pid, path })
        .collect();
    out.sort_by_key(|e| e.pid);
    out
}

#[cfg(test)]
mod tests {
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
