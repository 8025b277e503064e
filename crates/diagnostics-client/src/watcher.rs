//! Finding runtimes cheaply, many times a second ([`EndpointWatcher`]): the same places as
//! [`find_endpoints`](crate::find_endpoints) (the `dotnet-diagnostic-{pid}-{key}-socket` files in `/tmp` and `$TMPDIR`, and in
//! each container's own temporary folder through `/proc/PID/root`), but a folder is listed
//! again only when its modification time changed (a socket created or removed changes it), and
//! a process's mount namespace is read when its pid first shows up in `/proc`, and again
//! while the pid is young and its runtime was not found (it may enter a container's namespaces
//! or set `TMPDIR` just after it appeared: `docker exec`, `nsenter`, `unshare`, a shell). Our own
//! temporary folders are watched with inotify where the kernel allows it: they are listed
//! again only when a runtime's socket was created or removed there, however busy they are.
//! Idle, a poll is one `read` of the inotify descriptor, a `stat` per container folder and one
//! listing of `/proc`.
//!
//! ```no_run
//! let mut watcher = diagnostics_client::EndpointWatcher::new();
//! loop {
//!     let changes = watcher.changes();
//!     for ep in &changes.appeared {
//!         println!("runtime {} at {}", ep.pid, ep.path.display());
//!     }
//!     for ep in &changes.gone {
//!         println!("runtime {} gone", ep.pid);
//!     }
//!     std::thread::sleep(std::time::Duration::from_millis(250));
//! }
//! ```

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::discovery::parse_name as socket_pid;
use crate::procfs;
use crate::Endpoint;

/// A folder listed when it changes: the newest socket per pid it holds.
#[derive(Debug, Default)]
struct Folder {
    modified: Option<SystemTime>,
    /// True when the listing can be trusted while the time stays: the folder had not changed
    /// for a while when it was listed (file systems with a coarse clock can give two changes
    /// close together the same time).
    settled: bool,
    sockets: HashMap<u32, (SystemTime, PathBuf)>,
    /// Sockets whose process was gone when first listed, or an earlier process's of the same
    /// number (see [`stale_socket`](crate::discovery::stale_socket)): left behind (a crash), never looked
    /// at again (a reused pid's runtime makes a socket of another name).
    dead: HashSet<std::ffi::OsString>,
    /// A container's folder: the one pid (inside) whose socket is wanted, and its pid here.
    owner: Option<(u32, u32)>,
}

impl Folder {
    /// Lists the folder again if it changed since the last look (`watched`: inotify says
    /// whether a socket came or went; None: judge by the folder's time).
    fn refresh(&mut self, dir: &Path, watched: Option<bool>) {
        let modified = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        match watched {
            Some(false) if self.modified.is_some() => return,
            None if self.settled && modified.is_some() && modified == self.modified => return,
            _ => {}
        }
        self.modified = modified;
        self.settled = modified.is_some_and(|m| {
            SystemTime::now()
                .duration_since(m)
                .is_ok_and(|age| age > Duration::from_secs(1))
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
            let here = match self.owner {
                Some((inside, here)) if inside == pid => here,
                Some(_) => continue,
                None => pid,
            };
            if self.dead.contains(&name) || !procfs::alive(here) {
                dead.insert(name);
                continue;
            }
            // An earlier process's of the same number, left behind.
            if name
                .to_str()
                .is_some_and(|n| crate::discovery::stale_socket(n, here))
            {
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

/// What changed since the previous look (see [`EndpointWatcher::changes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointChanges {
    /// Runtimes not there at the previous look, by pid. A pid whose socket has another path
    /// than before is a new process given the same number (or a runtime that made a new
    /// socket): it is here, and not in `gone`.
    pub appeared: Vec<Endpoint>,
    /// Runtimes there at the previous look and gone now (the process ended, or its socket was
    /// removed), by pid.
    pub gone: Vec<Endpoint>,
}

/// The runtimes' sockets, watched: a poll costs little when nothing changed (see the module's
/// note), so it can run several times a second for days. Remembers what it found, so
/// [`changes`](EndpointWatcher::changes) gives only what came and went.
#[derive(Debug, Default)]
pub struct EndpointWatcher {
    temp: Vec<(PathBuf, Folder)>,
    /// Each pid of `/proc`: what is known of it, and when it was first seen.
    procs: HashMap<u32, (Known, Instant)>,
    our_mnt: Option<PathBuf>,
    /// inotify over `temp`, with each folder's watch descriptor (None: not watched).
    notify: Option<Notify>,
    /// What the previous [`changes`](EndpointWatcher::changes) found, by pid.
    known: HashMap<u32, Endpoint>,
}

impl EndpointWatcher {
    /// A watcher over `$TMPDIR` and `/tmp` (and the containers' temporary folders).
    pub fn new() -> EndpointWatcher {
        let mut dirs = vec![std::env::temp_dir()];
        let tmp = PathBuf::from("/tmp");
        if !dirs.contains(&tmp) {
            dirs.push(tmp);
        }
        EndpointWatcher::with_temp_dirs(dirs)
    }

    /// A watcher over these temporary folders (and the containers').
    pub fn with_temp_dirs(dirs: Vec<PathBuf>) -> EndpointWatcher {
        let notify = Notify::new(&dirs);
        EndpointWatcher {
            temp: dirs.into_iter().map(|d| (d, Folder::default())).collect(),
            procs: HashMap::new(),
            our_mnt: procfs::own_namespace("mnt"),
            notify,
            known: HashMap::new(),
        }
    }

    /// The runtimes that appeared and went since the previous call (the first call: every
    /// runtime there is), each list sorted by pid.
    pub fn changes(&mut self) -> EndpointChanges {
        let now = self.endpoints();
        let mut out = EndpointChanges::default();
        let live: HashSet<u32> = now.iter().map(|e| e.pid).collect();
        let mut gone: Vec<Endpoint> = Vec::new();
        self.known.retain(|pid, ep| {
            let keep = live.contains(pid);
            if !keep {
                gone.push(ep.clone());
            }
            keep
        });
        gone.sort_by_key(|e| e.pid);
        out.gone = gone;
        for ep in now {
            if self.known.get(&ep.pid) != Some(&ep) {
                self.known.insert(ep.pid, ep.clone());
                out.appeared.push(ep);
            }
        }
        out
    }

    /// Every live runtime endpoint, one per pid (the newest socket), sorted by pid.
    pub fn endpoints(&mut self) -> Vec<Endpoint> {
        let mut out: HashMap<u32, Endpoint> = HashMap::new();
        let changed = self.notify.as_mut().map(Notify::changed);
        for (i, (dir, folder)) in self.temp.iter_mut().enumerate() {
            let watched = match (&self.notify, &changed) {
                (Some(n), Some(c)) if n.watches[i].is_some() => Some(c[i]),
                _ => None,
            };
            folder.refresh(dir, watched);
            for (&pid, (_, path)) in &folder.sockets {
                out.entry(pid).or_insert_with(|| Endpoint {
                    pid,
                    path: path.clone(),
                });
            }
        }
        self.containers(&mut out);
        let mut v: Vec<Endpoint> = out.into_values().filter(|e| procfs::alive(e.pid)).collect();
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
        let now = Instant::now();
        for pid in live {
            let (known, seen) = self
                .procs
                .entry(pid)
                .or_insert_with(|| (classify(pid, &ours), now));
            if now.duration_since(*seen) < RECHECK_FOR {
                recheck(pid, known, &ours);
            }
            if let Known::Container { folder, dir, nspid } = known {
                folder.refresh(dir, None);
                // Its own folder's socket is its, whatever ours holds under the same number.
                if let Some((_, path)) = folder.sockets.get(nspid) {
                    out.insert(
                        pid,
                        Endpoint {
                            pid,
                            path: path.clone(),
                        },
                    );
                }
            }
        }
    }
}

/// inotify over the temporary folders: which of them saw a runtime's socket come or go.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Notify {
    fd: std::os::fd::OwnedFd,
    /// Each folder's watch descriptor, in the folders' order.
    watches: Vec<Option<i32>>,
}

/// Off Linux there is no inotify: folder times alone.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
#[allow(dead_code)]
struct Notify {
    watches: Vec<Option<i32>>,
}

#[cfg(not(target_os = "linux"))]
#[allow(dead_code)]
impl Notify {
    fn new(_dirs: &[PathBuf]) -> Option<Notify> {
        None
    }

    fn changed(&mut self) -> Vec<bool> {
        vec![true; self.watches.len()]
    }
}

#[cfg(target_os = "linux")]
impl Notify {
    /// Watches `dirs` for files created, removed and moved; None when inotify is unavailable.
    fn new(dirs: &[PathBuf]) -> Option<Notify> {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: inotify_init1 takes flags only; a valid descriptor is owned from here on.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return None;
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        let mask = libc::IN_CREATE | libc::IN_DELETE | libc::IN_MOVED_TO | libc::IN_MOVED_FROM;
        let watches = dirs
            .iter()
            .map(|d| {
                let c = std::ffi::CString::new(d.as_os_str().as_bytes()).ok()?;
                // SAFETY: a NUL-terminated path and our descriptor.
                let wd = unsafe { libc::inotify_add_watch(raw, c.as_ptr(), mask) };
                (wd >= 0).then_some(wd)
            })
            .collect();
        Some(Notify { fd, watches })
    }

    /// Drains the events: for each folder, whether a runtime's socket came or went (all of
    /// them when the kernel's queue overflowed).
    fn changed(&mut self) -> Vec<bool> {
        use std::os::fd::AsRawFd;
        let mut changed = vec![false; self.watches.len()];
        let mut buf = [0u8; 16 * 1024];
        // Bounded: the queue holds at most a few thousand events.
        for _ in 0..64 {
            // SAFETY: reading into a buffer we own, with its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            for (wd, mask, name) in inotify_events(&buf[..n]) {
                if mask & libc::IN_Q_OVERFLOW != 0 {
                    changed.iter_mut().for_each(|c| *c = true);
                } else if name.starts_with(b"dotnet-diagnostic-") {
                    if let Some(i) = self.watches.iter().position(|w| *w == Some(wd)) {
                        changed[i] = true;
                    }
                }
            }
        }
        changed
    }
}

/// The events in a buffer read from inotify: watch descriptor, mask, name (without padding).
#[cfg(target_os = "linux")]
fn inotify_events(mut b: &[u8]) -> Vec<(i32, u32, &[u8])> {
    let mut out = Vec::new();
    while b.len() >= 16 {
        let word = |i: usize| [b[i], b[i + 1], b[i + 2], b[i + 3]];
        let wd = i32::from_ne_bytes(word(0));
        let mask = u32::from_ne_bytes(word(4));
        let len = u32::from_ne_bytes(word(12)) as usize;
        let Some(name) = b.get(16..16 + len) else {
            break;
        };
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        out.push((wd, mask, &name[..end]));
        b = &b[16 + len..];
    }
    out
}

/// How long after a pid first shows up its namespace and `TMPDIR` are read again while its
/// runtime is not found: a process can enter a container's namespaces (`setns`, `unshare`)
/// or `exec` with another environment just after it appeared.
const RECHECK_FOR: Duration = Duration::from_secs(5);

/// Reads again where a young pid's runtime would put its socket: when it left our mount
/// namespace, or (in a container, its socket not found yet) when its namespace or temporary
/// folder changed. A readlink for a pid of ours; also a read of its status and environment
/// for a container's pid whose runtime is not found yet.
fn recheck(pid: u32, known: &mut Known, ours: &Path) {
    match known {
        Known::Ours if procfs::namespace(pid, "mnt").is_some_and(|ns| ns != ours) => {
            *known = classify(pid, ours);
        }
        Known::Container {
            folder, dir, nspid, ..
        } if !folder.sockets.contains_key(nspid) => {
            let again = classify(pid, ours);
            let moved = match &again {
                Known::Container {
                    dir: d, nspid: n, ..
                } => d != dir || n != nspid,
                _ => true,
            };
            if moved {
                *known = again;
            }
        }
        _ => {}
    }
}

/// Where a new pid's runtime would put its socket.
fn classify(pid: u32, ours: &Path) -> Known {
    match procfs::namespace(pid, "mnt") {
        Some(ns) if ns == ours => return Known::Ours,
        Some(_) => {}
        None => return Known::Skip,
    }
    let Some(nspid) = procfs::namespace_pid(pid) else {
        return Known::Skip;
    };
    let dir = procfs::path_inside(pid, &procfs::temp_dir(pid));
    Known::Container {
        folder: Folder {
            owner: Some((nspid, pid)),
            ..Folder::default()
        },
        dir,
        nspid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's start in ticks: the key its runtime would name its socket with.
    fn own_key() -> u64 {
        procfs::start_ticks(std::process::id()).unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_earlier_process_socket_of_the_same_number_is_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let start = own_key();
        let stale = dir
            .path()
            .join(format!("dotnet-diagnostic-{me}-{}-socket", start + 1));
        std::fs::write(&stale, b"").unwrap();
        let mut folder = Folder::default();
        folder.refresh(dir.path(), None);
        assert!(folder.sockets.is_empty());
        assert_eq!(folder.dead.len(), 1);
        let live = dir
            .path()
            .join(format!("dotnet-diagnostic-{me}-{start}-socket"));
        std::fs::write(&live, b"").unwrap();
        folder.refresh(dir.path(), Some(true));
        assert_eq!(folder.sockets.get(&me).map(|s| &s.1), Some(&live));
        // A container's folder: only its process's socket, named by its pid inside (the key
        // is that process's start).
        let fresh = dir
            .path()
            .join(format!("dotnet-diagnostic-7-{start}-socket"));
        std::fs::write(&fresh, b"").unwrap();
        std::fs::write(dir.path().join("dotnet-diagnostic-8-3-socket"), b"").unwrap();
        let mut theirs = Folder {
            owner: Some((7, me)),
            ..Folder::default()
        };
        theirs.refresh(dir.path(), None);
        assert_eq!(theirs.sockets.len(), 1);
        assert_eq!(theirs.sockets.get(&7).map(|s| &s.1), Some(&fresh));
    }

    #[test]
    fn a_folder_is_listed_again_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Folder::default();
        f.refresh(dir.path(), None);
        assert!(f.sockets.is_empty());
        let me = std::process::id();
        let a = dir
            .path()
            .join(format!("dotnet-diagnostic-{me}-{}-socket", own_key()));
        std::fs::write(&a, b"").unwrap();
        std::fs::write(dir.path().join("unrelated"), b"").unwrap();
        // A change a while ago: the listing is trusted while the time stays.
        let before = SystemTime::now() - std::time::Duration::from_secs(10);
        std::fs::File::open(dir.path())
            .unwrap()
            .set_modified(before)
            .unwrap();
        f.refresh(dir.path(), None);
        assert_eq!(f.sockets.get(&me).map(|s| &s.1), Some(&a));
        // Unchanged: the folder is not listed again (the cleared listing stays cleared).
        f.sockets.clear();
        f.refresh(dir.path(), None);
        assert!(f.sockets.is_empty());
        f.refresh(dir.path(), Some(false));
        assert!(f.sockets.is_empty());
        // Changed: listed again.
        std::fs::write(dir.path().join("another"), b"").unwrap();
        f.refresh(dir.path(), None);
        assert_eq!(f.sockets.get(&me).map(|s| &s.1), Some(&a));
    }

    #[test]
    fn sockets_of_live_processes_are_found_and_dead_ones_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = EndpointWatcher::with_temp_dirs(vec![dir.path().to_path_buf()]);
        let me = std::process::id();
        let mine = dir
            .path()
            .join(format!("dotnet-diagnostic-{me}-{}-socket", own_key()));
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
        // Watched by inotify: a new socket is seen at once, other files change nothing.
        if cfg!(not(target_os = "linux")) {
            return;
        }
        assert!(d.notify.is_some(), "inotify is available on Linux");
        std::fs::write(dir.path().join("unrelated"), b"").unwrap();
        assert_eq!(d.notify.as_mut().unwrap().changed(), [false]);
        std::fs::write(&mine, b"").unwrap();
        let found: Vec<u32> = d
            .endpoints()
            .into_iter()
            .filter(|e| e.path.starts_with(dir.path()))
            .map(|e| e.pid)
            .collect();
        assert_eq!(found, [me]);
    }

    #[test]
    fn changes_say_what_came_and_what_went() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = EndpointWatcher::with_temp_dirs(vec![dir.path().to_path_buf()]);
        let ours = |v: &[Endpoint]| -> Vec<PathBuf> {
            v.iter()
                .filter(|e| e.path.starts_with(dir.path()))
                .map(|e| e.path.clone())
                .collect()
        };
        let first = w.changes();
        assert!(ours(&first.appeared).is_empty() && ours(&first.gone).is_empty());
        let me = std::process::id();
        let a = dir
            .path()
            .join(format!("dotnet-diagnostic-{me}-{}-socket", own_key()));
        std::fs::write(&a, b"").unwrap();
        let c = w.changes();
        assert_eq!(ours(&c.appeared), std::slice::from_ref(&a));
        assert!(ours(&c.gone).is_empty());
        // Nothing changed: nothing said.
        let c = w.changes();
        assert!(ours(&c.appeared).is_empty() && ours(&c.gone).is_empty());
        std::fs::remove_file(&a).unwrap();
        let c = w.changes();
        assert!(ours(&c.appeared).is_empty());
        assert_eq!(ours(&c.gone), [a]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn inotify_buffers() {
        let mut b = Vec::new();
        for (wd, mask, name) in [(1i32, 0x100u32, &b"abc"[..]), (2, 0x200, b"")] {
            b.extend_from_slice(&wd.to_ne_bytes());
            b.extend_from_slice(&mask.to_ne_bytes());
            b.extend_from_slice(&0u32.to_ne_bytes());
            let padded = if name.is_empty() { 0 } else { 16 };
            b.extend_from_slice(&(padded as u32).to_ne_bytes());
            let mut n = name.to_vec();
            n.resize(padded, 0);
            b.extend_from_slice(&n);
        }
        let ev = inotify_events(&b);
        assert_eq!(ev, vec![(1, 0x100, &b"abc"[..]), (2, 0x200, &b""[..])]);
        // A cut buffer yields what is whole.
        assert_eq!(inotify_events(&b[..20]).len(), 0);
        assert_eq!(inotify_events(&[0u8; 7]).len(), 0);
    }
}
