//! Finding runtimes cheaply, many times a second: the same places as diagnostics-client's
//! discovery (the `dotnet-diagnostic-{pid}-{key}-socket` files in `/tmp` and `$TMPDIR`, and in
//! each container's own temporary folder through `/proc/PID/root`), but a folder is listed
//! again only when its modification time changed (a socket created or removed changes it), and
//! a process's mount namespace is read once, when its pid first shows up in `/proc`. Idle, a
//! poll is a `stat` per folder and one listing of `/proc`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use diagnostics_client::Endpoint;

/// Parses `dotnet-diagnostic-{pid}-{key}-socket`.
fn socket_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("dotnet-diagnostic-")?
        .strip_suffix("-socket")?;
    let (pid, key) = rest.split_once('-')?;
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// A folder listed when it changes: the newest socket per pid it holds.
#[derive(Debug, Default)]
struct Folder {
    modified: Option<SystemTime>,
    /// True when the listing can be trusted while the time stays: the folder had not changed
    /// for a while when it was listed (file systems with a coarse clock can give two changes
    /// close together the same time).
    settled: bool,
    sockets: HashMap<u32, (SystemTime, PathBuf)>,
    /// Sockets whose process was gone when first listed: left behind (a crash), never looked
    /// at again (a reused pid's runtime makes a socket of another name).
    dead: HashSet<std::ffi::OsString>,
}

impl Folder {
    /// Lists the folder again if it changed since the last look.
    fn refresh(&mut self, dir: &Path) {
        let modified = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        if self.settled && modified.is_some() && modified == self.modified {
            return;
        }
        self.modified = modified;
        self.settled = modified.is_some_and(|m| {
            SystemTime::now()
                .duration_since(m)
                .is_ok_and(|age| age > std::time::Duration::from_secs(1))
        });
        self.sockets.clear();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut dead = HashSet::new();
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(socket_pid) else {
                continue;
            };
            if self.dead.contains(&name) || !Path::new(&format!("/proc/{pid}")).exists() {
                dead.insert(name);
                continue;
            }
            let t = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            match self.sockets.get(&pid) {
                Some((old, _)) if *old >= t => {}
                _ => {
                    self.sockets.insert(pid, (t, e.path()));
                }
            }
        }
        self.dead = dead;
    }
}

/// What is known of a pid in `/proc`.
#[derive(Debug)]
enum Known {
    /// In our mount namespace: its socket is in our temporary folders.
    Ours,
    /// In a container: its temporary folder (through `/proc/PID/root`) and its own pid there.
    Container {
        folder: Folder,
        dir: PathBuf,
        nspid: u32,
    },
    /// Unreadable: not ours to watch.
    Skip,
}

/// The runtimes' sockets, polled.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    temp: Vec<(PathBuf, Folder)>,
    procs: HashMap<u32, Known>,
    our_mnt: Option<PathBuf>,
}

impl Discovery {
    /// A discovery over `$TMPDIR` and `/tmp`.
    pub(crate) fn new() -> Discovery {
        let mut dirs = vec![std::env::temp_dir()];
        let tmp = PathBuf::from("/tmp");
        if !dirs.contains(&tmp) {
            dirs.push(tmp);
        }
        Discovery::with_temp_dirs(dirs)
    }

    /// A discovery over these temporary folders (and the containers').
    pub(crate) fn with_temp_dirs(dirs: Vec<PathBuf>) -> Discovery {
        Discovery {
            temp: dirs.into_iter().map(|d| (d, Folder::default())).collect(),
            procs: HashMap::new(),
            our_mnt: std::fs::read_link("/proc/self/ns/mnt").ok(),
        }
    }

    /// Every live runtime endpoint, one per pid (the newest socket).
    pub(crate) fn endpoints(&mut self) -> Vec<Endpoint> {
        let mut out: HashMap<u32, Endpoint> = HashMap::new();
        for (dir, folder) in &mut self.temp {
            folder.refresh(dir);
            for (&pid, (_, path)) in &folder.sockets {
                out.entry(pid).or_insert_with(|| Endpoint {
                    pid,
                    path: path.clone(),
                });
            }
        }
        self.containers(&mut out);
        let mut v: Vec<Endpoint> = out
            .into_values()
            .filter(|e| Path::new(&format!("/proc/{}", e.pid)).exists())
            .collect();
        v.sort_by_key(|e| e.pid);
        v
    }

    /// Adds the endpoints of processes in other mount namespaces.
    fn containers(&mut self, out: &mut HashMap<u32, Endpoint>) {
        let Some(ours) = self.our_mnt.clone() else {
            return;
        };
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let live: HashSet<u32> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        self.procs.retain(|pid, _| live.contains(pid));
        for pid in live {
            let known = self
                .procs
                .entry(pid)
                .or_insert_with(|| classify(pid, &ours));
            if let Known::Container { folder, dir, nspid } = known {
                folder.refresh(dir);
                if let Some((_, path)) = folder.sockets.get(nspid) {
                    out.entry(pid).or_insert_with(|| Endpoint {
                        pid,
                        path: path.clone(),
                    });
                }
            }
        }
    }
}

/// Where a new pid's runtime would put its socket.
fn classify(pid: u32, ours: &Path) -> Known {
    match std::fs::read_link(format!("/proc/{pid}/ns/mnt")) {
        Ok(ns) if ns == ours => return Known::Ours,
        Ok(_) => {}
        Err(_) => return Known::Skip,
    }
    let Some(nspid) = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("NSpid:"))?
                .split_whitespace()
                .last()?
                .parse()
                .ok()
        })
    else {
        return Known::Skip;
    };
    let tmp = std::fs::read(format!("/proc/{pid}/environ"))
        .ok()
        .and_then(|env| {
            env.split(|&b| b == 0)
                .find_map(|kv| kv.strip_prefix(b"TMPDIR="))
                .and_then(|v| std::str::from_utf8(v).ok().map(PathBuf::from))
        })
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = Path::new(&format!("/proc/{pid}/root")).join(tmp.strip_prefix("/").unwrap_or(&tmp));
    Known::Container {
        folder: Folder::default(),
        dir,
        nspid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_names() {
        assert_eq!(
            socket_pid("dotnet-diagnostic-20299-694353-socket"),
            Some(20299)
        );
        assert_eq!(socket_pid("dotnet-diagnostic-20299-socket"), None);
        assert_eq!(socket_pid("dotnet-diagnostic-x-1-socket"), None);
        assert_eq!(socket_pid("other"), None);
    }

    #[test]
    fn a_folder_is_listed_again_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Folder::default();
        f.refresh(dir.path());
        assert!(f.sockets.is_empty());
        let me = std::process::id();
        let a = dir.path().join(format!("dotnet-diagnostic-{me}-1-socket"));
        std::fs::write(&a, b"").unwrap();
        std::fs::write(dir.path().join("unrelated"), b"").unwrap();
        // A change a while ago: the listing is trusted while the time stays.
        let before = SystemTime::now() - std::time::Duration::from_secs(10);
        std::fs::File::open(dir.path())
            .unwrap()
            .set_modified(before)
            .unwrap();
        f.refresh(dir.path());
        assert_eq!(f.sockets.get(&me).map(|s| &s.1), Some(&a));
        // Unchanged: the folder is not listed again (the cleared listing stays cleared).
        f.sockets.clear();
        f.refresh(dir.path());
        assert!(f.sockets.is_empty());
        // Changed: listed again.
        std::fs::write(dir.path().join("another"), b"").unwrap();
        f.refresh(dir.path());
        assert_eq!(f.sockets.get(&me).map(|s| &s.1), Some(&a));
    }

    #[test]
    fn sockets_of_live_processes_are_found_and_dead_ones_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Discovery::with_temp_dirs(vec![dir.path().to_path_buf()]);
        let me = std::process::id();
        let mine = dir.path().join(format!("dotnet-diagnostic-{me}-7-socket"));
        std::fs::write(&mine, b"").unwrap();
        // pid_max is at most 2^22 on Linux: this pid never exists.
        let dead = dir.path().join("dotnet-diagnostic-4294967-7-socket");
        std::fs::write(&dead, b"").unwrap();
        let found: Vec<(u32, PathBuf)> = d
            .endpoints()
            .into_iter()
            .filter(|e| e.path.starts_with(dir.path()))
            .map(|e| (e.pid, e.path))
            .collect();
        assert_eq!(found, vec![(me, mine.clone())]);
        std::fs::remove_file(&mine).unwrap();
        let found = d
            .endpoints()
            .into_iter()
            .filter(|e| e.path.starts_with(dir.path()))
            .count();
        assert_eq!(found, 0, "a folder that just changed is listed again");
    }
}
