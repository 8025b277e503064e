//! Paths a watched process chose, opened without letting it steer us: its crash-dump folder
//! (`DbgMiniDumpName`), its temporary folder (`TMPDIR`), the files its runtime writes there.
//!
//! A path is walked one component at a time from a folder held open — the process's root
//! (`/proc/PID/root`) or its working folder — with `O_NOFOLLOW` at every step: a symbolic link
//! anywhere on the way is refused, not followed (from here it would resolve against *our*
//! root, not the process's, and reach the host's files). A `..` steps back to the folder the
//! walk came from, never above where it started (the process's root is not ours, so the
//! kernel would not stop a `..` there). What the walk reaches is then used only
//! through its descriptor (`openat`, `mkfifoat`, `unlinkat`), so a name swapped afterwards
//! changes nothing. A file is accepted only when it is the kind asked for (a regular file, a
//! FIFO), owned by the user asked for, and no larger than the limit asked for; each refusal
//! is a [`Refused`] that says which rule the path broke, in words a log can carry.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why a path a process chose was not opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// A `..` in the path that climbs above where the walk started.
    #[error("{path}: '..' climbs above where it starts, out of the process's own file system")]
    Parent {
        /// The path, as the process names it.
        path: PathBuf,
    },
    /// A symbolic link on the way or at the end (from here it would be followed from our root).
    #[error("{path}: {at} is a symbolic link, which is never followed in a watched process's file system")]
    Link {
        /// The path, as the process names it.
        path: PathBuf,
        /// The part of it that is a link.
        at: PathBuf,
    },
    /// A part of the path that should be a folder is something else.
    #[error("{path}: {at} is not a folder")]
    NotFolder {
        /// The path, as the process names it.
        path: PathBuf,
        /// The part of it that is not a folder.
        at: PathBuf,
    },
    /// The file is not of the kind asked for (a FIFO, a device, a socket, a folder...).
    #[error("{path} is {found}, not {wanted}")]
    Kind {
        /// The path, as the process names it.
        path: PathBuf,
        /// What it is, in words ("a FIFO", "a character device").
        found: &'static str,
        /// What was asked for.
        wanted: &'static str,
    },
    /// The file belongs to another user than the process's.
    #[error("{path} belongs to uid {uid}, not to the process's user (uid {wanted})")]
    Owner {
        /// The path, as the process names it.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// The owner asked for.
        wanted: u32,
    },
    /// The file is larger than the limit asked for.
    #[error("{path} holds {size} bytes, more than the {limit} bytes allowed ({why})")]
    TooLarge {
        /// The path, as the process names it.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
        /// What the limit is.
        why: &'static str,
    },
    /// The name is not one plain file name (empty, `.`, or holds `/` or a NUL).
    #[error("{name:?} is not a plain file name")]
    Name {
        /// The name given.
        name: PathBuf,
    },
    /// The system refused (missing, permission denied...).
    #[error("{path}: {source}")]
    Io {
        /// The path, as the process names it.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

impl Refused {
    /// True when the path (or a part of it) does not exist.
    pub fn not_found(&self) -> bool {
        matches!(self, Refused::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// What a file opened in a watched process's folder must be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileRules {
    /// Its owner must be this uid (the process's user), when given.
    pub owner: Option<u32>,
    /// It may hold at most this many bytes, when given.
    pub max_bytes: Option<u64>,
    /// What `max_bytes` is, in words ("the process's memory").
    pub max_is: &'static str,
}

/// A folder of a watched process's file system, held open: files are opened, made and removed
/// in it by descriptor, never by a path that could be swapped.
#[derive(Debug)]
pub struct RootedDir {
    fd: OwnedFd,
    /// The folder as the process names it.
    shown: PathBuf,
}

/// `open(2)` flags for one step of a walk: the folder itself, never through a link.
const STEP: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

fn c_name(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// `openat(dir, name, flags, mode)`.
fn openat(dir: &OwnedFd, name: &OsStr, flags: libc::c_int, mode: u32) -> std::io::Result<OwnedFd> {
    let c = c_name(name)?;
    // SAFETY: openat(2) with a descriptor we own and a NUL-terminated name; the result is a
    // new descriptor we take ownership of, or -1.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`, or `fstat(dir)` for an empty name.
fn stat_at(dir: &OwnedFd, name: &OsStr) -> std::io::Result<libc::stat> {
    let c = c_name(name)?;
    let flags = if name.is_empty() {
        libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW
    } else {
        libc::AT_SYMLINK_NOFOLLOW
    };
    // SAFETY: stat is plain data; all zeroes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat(2) with a descriptor we own, a NUL-terminated name and a stat to fill.
    if unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, flags) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// What a file mode is, in words.
fn kind_of(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a folder",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "of an unknown kind",
    }
}

impl RootedDir {
    /// The root of process `pid`'s file system (a container's own), held open.
    pub fn root_of(pid: u32) -> std::io::Result<RootedDir> {
        Self::open_here(&format!("/proc/{pid}/root"), PathBuf::from("/"))
    }

    /// The working folder of process `pid`, held open (where its relative paths start).
    pub fn cwd_of(pid: u32) -> std::io::Result<RootedDir> {
        Self::open_here(&format!("/proc/{pid}/cwd"), PathBuf::from("."))
    }

    /// A folder of ours, as a starting point (tests, and folders clrspy made itself).
    pub fn open_ours(path: &Path) -> std::io::Result<RootedDir> {
        let text = path.to_string_lossy().into_owned();
        Self::open_here(&text, path.to_path_buf())
    }

    fn open_here(path: &str, shown: PathBuf) -> std::io::Result<RootedDir> {
        let c = CString::new(path)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        // SAFETY: open(2) with a NUL-terminated path; the result is a new descriptor or -1.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(RootedDir { fd, shown })
    }

    /// The folder as the process names it.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// A path naming exactly this folder from here (`/proc/self/fd/N`), for calls that take a
    /// path: the kernel resolves it to the folder held, whatever was renamed since. Valid while
    /// `self` lives.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The folder's device and inode (two folders are the same when both are equal).
    pub fn identity(&self) -> std::io::Result<(u64, u64)> {
        let st = stat_at(&self.fd, OsStr::new(""))?;
        Ok((st.st_dev, st.st_ino))
    }

    /// The folder `rel` below this one (a leading `/` means this folder too: the process's
    /// root for an absolute path), walked one component at a time, refusing links. A `..`
    /// steps back to the folder the walk came from (no link was followed on the way, so that
    /// is where the process's own lookup goes too); one that would climb above this folder is
    /// refused.
    pub fn open_dir(&self, rel: &Path) -> Result<RootedDir, Refused> {
        let shown = self.shown.join(rel.strip_prefix("/").unwrap_or(rel));
        let mut at = self.shown.clone();
        // The folders walked into, this one's first child first.
        let mut walked: Vec<OwnedFd> = Vec::new();
        for part in rel.components() {
            let name = match part {
                Component::RootDir | Component::CurDir => continue,
                Component::ParentDir => {
                    if walked.pop().is_none() {
                        return Err(Refused::Parent { path: shown });
                    }
                    at.pop();
                    continue;
                }
                Component::Prefix(_) => return Err(Refused::Name { name: rel.into() }),
                Component::Normal(n) => n,
            };
            at.push(name);
            let dir = walked.last().unwrap_or(&self.fd);
            match openat(dir, name, STEP, 0) {
                Ok(fd) => walked.push(fd),
                Err(e) => {
                    // Say why: a link, something that is not a folder, or the system's error.
                    let found = stat_at(dir, name).map(|st| st.st_mode & libc::S_IFMT);
                    return Err(match found {
                        Ok(libc::S_IFLNK) => Refused::Link { path: shown, at },
                        Ok(m) if m != libc::S_IFDIR => Refused::NotFolder { path: shown, at },
                        _ => Refused::Io {
                            path: shown,
                            source: e,
                        },
                    });
                }
            }
        }
        let fd = match walked.pop() {
            Some(fd) => fd,
            None => self.fd.try_clone().map_err(|source| Refused::Io {
                path: shown.clone(),
                source,
            })?,
        };
        Ok(RootedDir { fd, shown })
    }

    /// Checks `name` is one plain file name.
    fn plain<'a>(&self, name: &'a OsStr) -> Result<&'a OsStr, Refused> {
        let b = name.as_bytes();
        if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
            return Err(Refused::Name { name: name.into() });
        }
        Ok(name)
    }

    /// Opens the regular file `name` of this folder for reading, when it follows `rules`: not
    /// a link (nor a FIFO, device or socket: those are refused before they are opened, so
    /// opening cannot block or act on a device), owned by the user asked for, no larger than
    /// the limit. The size is checked again on the open file (it is the same file: device and
    /// inode are compared); a reader should still stop at the limit, as the file may grow.
    pub fn open_file(&self, name: &OsStr, rules: &FileRules) -> Result<File, Refused> {
        let name = self.plain(name)?;
        let path = self.shown.join(name);
        let io = |source| Refused::Io {
            path: path.clone(),
            source,
        };
        let before = stat_at(&self.fd, name).map_err(io)?;
        self.check(&path, &before, libc::S_IFREG, rules)?;
        let flags =
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        let fd = openat(&self.fd, name, flags, 0).map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                Refused::Link {
                    path: path.clone(),
                    at: path.clone(),
                }
            } else {
                io(e)
            }
        })?;
        let after = stat_at(&fd, OsStr::new("")).map_err(io)?;
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) {
            return Err(io(std::io::Error::other(
                "the file was replaced while it was opened",
            )));
        }
        self.check(&path, &after, libc::S_IFREG, rules)?;
        Ok(File::from(fd))
    }

    /// Opens the FIFO `name` of this folder for reading (waiting for a writer, as a FIFO's
    /// open does), refusing anything that is not a FIFO (a link, a file, a device put in its
    /// place) before it is opened in a way that could block.
    pub fn open_fifo(&self, name: &OsStr) -> Result<File, Refused> {
        let name = self.plain(name)?;
        let path = self.shown.join(name);
        let io = |source| Refused::Io {
            path: path.clone(),
            source,
        };
        let flags =
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        let probe = openat(&self.fd, name, flags | libc::O_PATH, 0).map_err(io)?;
        let st = stat_at(&probe, OsStr::new("")).map_err(io)?;
        self.check(&path, &st, libc::S_IFIFO, &FileRules::default())?;
        // Reopened through the descriptor: the very FIFO checked, now with a blocking open.
        let again = format!("/proc/self/fd/{}", probe.as_raw_fd());
        std::fs::OpenOptions::new()
            .read(true)
            .open(again)
            .map_err(io)
    }

    fn check(
        &self,
        path: &Path,
        st: &libc::stat,
        kind: libc::mode_t,
        rules: &FileRules,
    ) -> Result<(), Refused> {
        let mode = st.st_mode & libc::S_IFMT;
        if mode != kind {
            return Err(match mode {
                libc::S_IFLNK => Refused::Link {
                    path: path.into(),
                    at: path.into(),
                },
                _ => Refused::Kind {
                    path: path.into(),
                    found: kind_of(mode),
                    wanted: kind_of(kind),
                },
            });
        }
        if let Some(wanted) = rules.owner.filter(|&u| u != st.st_uid) {
            return Err(Refused::Owner {
                path: path.into(),
                uid: st.st_uid,
                wanted,
            });
        }
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if let Some(limit) = rules.max_bytes.filter(|&m| size > m) {
            return Err(Refused::TooLarge {
                path: path.into(),
                size,
                limit,
                why: rules.max_is,
            });
        }
        Ok(())
    }

    /// The socket `name` here, held by a descriptor, and a path naming exactly it
    /// (`/proc/self/fd/N`, valid while the descriptor lives) to connect to: a link or any
    /// other kind of file in its place is refused.
    pub fn socket(&self, name: &OsStr) -> Result<(OwnedFd, PathBuf), Refused> {
        let name = self.plain(name)?;
        let path = self.shown.join(name);
        let io = |source| Refused::Io {
            path: path.clone(),
            source,
        };
        let fd = openat(
            &self.fd,
            name,
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0,
        )
        .map_err(io)?;
        let st = stat_at(&fd, OsStr::new("")).map_err(io)?;
        self.check(&path, &st, libc::S_IFSOCK, &FileRules::default())?;
        let at = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        Ok((fd, at))
    }

    /// Makes the FIFO `name` here, readable and writable by its owner only.
    pub fn make_fifo(&self, name: &OsStr) -> Result<(), Refused> {
        let name = self.plain(name)?;
        let c = c_name(name).map_err(|source| Refused::Io {
            path: self.shown.join(name),
            source,
        })?;
        // SAFETY: mkfifoat(3) with a descriptor we own and a NUL-terminated name.
        if unsafe { libc::mkfifoat(self.fd.as_raw_fd(), c.as_ptr(), 0o600) } != 0 {
            return Err(Refused::Io {
                path: self.shown.join(name),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// Opens the FIFO `name` here for writing and closes it at once, without waiting and never
    /// through a link: a reader waiting in its open then sees the end of the stream.
    pub fn poke_fifo(&self, name: &OsStr) {
        let Ok(name) = self.plain(name) else {
            return;
        };
        let fifo =
            stat_at(&self.fd, name).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO);
        if !fifo {
            return;
        }
        let flags =
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC;
        let _ = openat(&self.fd, name, flags, 0);
    }

    /// Gives `name` here (never what a link points to) to `uid`:`gid`.
    pub fn give(&self, name: &OsStr, uid: u32, gid: u32) -> std::io::Result<()> {
        let name = self.plain(name).map_err(std::io::Error::other)?;
        let c = c_name(name)?;
        // SAFETY: fchownat(2) with a descriptor we own, a NUL-terminated name, and
        // AT_SYMLINK_NOFOLLOW so a link is changed itself, never its target.
        let r = unsafe {
            libc::fchownat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                uid,
                gid,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes the file `name` here (a link itself, never its target); missing is fine.
    pub fn remove(&self, name: &OsStr) {
        let Ok(name) = self.plain(name) else {
            return;
        };
        if let Ok(c) = c_name(name) {
            // SAFETY: unlinkat(2) with a descriptor we own and a NUL-terminated name.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) };
        }
    }

    /// The names in this folder (`.` and `..` left out), each with its own modification time
    /// (a link's own, not its target's: nothing is followed).
    pub fn entries(
        &self,
    ) -> std::io::Result<Vec<(std::ffi::OsString, Option<std::time::SystemTime>)>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(self.path())? {
            let name = e?.file_name();
            let when = stat_at(&self.fd, &name).ok().and_then(|st| {
                let secs = u64::try_from(st.st_mtime).ok()?;
                let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
                std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
            });
            out.push((name, when));
        }
        Ok(out)
    }
}

/// Opens the regular file `path` (absolute, as process `pid` names it: a module it mapped,
/// the assembly it runs) under its root, never through a link, at most `max_bytes` long. When
/// the process's root cannot be opened (it has ended), the path is read from our own root,
/// under the same rules.
pub fn open_in_root(pid: u32, path: &Path, max_bytes: u64) -> Result<File, Refused> {
    let root = match RootedDir::root_of(pid) {
        Ok(r) => r,
        Err(_) => RootedDir::open_ours(Path::new("/")).map_err(|source| Refused::Io {
            path: path.into(),
            source,
        })?,
    };
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Refused::Name { name: path.into() });
    };
    let rules = FileRules {
        owner: None,
        max_bytes: Some(max_bytes),
        max_is: "the most read of such a file",
    };
    root.open_dir(parent)?.open_file(name, &rules)
}

/// The bytes of [`open_in_root`]'s file, read to its end (at most `max_bytes`).
pub fn read_in_root(pid: u32, path: &Path, max_bytes: u64) -> Result<Vec<u8>, Refused> {
    use std::io::Read;
    let mut f = open_in_root(pid, path, max_bytes)?;
    let mut v = Vec::new();
    (&mut f)
        .take(max_bytes)
        .read_to_end(&mut v)
        .map_err(|source| Refused::Io {
            path: path.into(),
            source,
        })?;
    Ok(v)
}

/// True when process `pid`, naming `folder` (one of ours, absolute) in its own file system,
/// reaches the very folder we reach: the same device and inode, walked under its root with no
/// link and no `..`. False when it reaches another folder, none, or one only through a link
/// (then files for it go through its own temporary folder instead).
pub fn sees_folder(pid: u32, folder: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(ours) = std::fs::metadata(folder) else {
        return false;
    };
    if !folder.is_absolute() {
        return false;
    }
    RootedDir::root_of(pid)
        .ok()
        .and_then(|root| root.open_dir(folder).ok())
        .and_then(|dir| dir.identity().ok())
        == Some((ours.dev(), ours.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    fn here(dir: &Path) -> RootedDir {
        RootedDir::open_ours(dir).unwrap()
    }

    #[test]
    fn a_walk_refuses_links_and_parents_and_reaches_real_folders() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::fs::write(outside.path().join("secret"), b"host file").unwrap();
        symlink(outside.path(), d.path().join("a/out")).unwrap();
        std::fs::write(d.path().join("a/plain"), b"x").unwrap();
        let root = here(d.path());
        let b = root.open_dir(Path::new("/a/b")).unwrap();
        assert_eq!(b.shown(), d.path().join("a/b"));
        let e = root.open_dir(Path::new("/a/out")).unwrap_err();
        assert!(matches!(e, Refused::Link { .. }), "{e}");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = root.open_dir(Path::new("a/b/../../..")).unwrap_err();
        assert!(matches!(e, Refused::Parent { .. }), "{e}");
        // A `..` that stays below the start steps back, as the process's own lookup does.
        let back = root.open_dir(Path::new("/a/b/../b")).unwrap();
        assert_eq!(back.identity().unwrap(), b.identity().unwrap());
        assert_eq!(
            root.open_dir(Path::new("/a/.."))
                .unwrap()
                .identity()
                .unwrap(),
            root.identity().unwrap()
        );
        let e = root.open_dir(Path::new("a/plain")).unwrap_err();
        assert!(matches!(e, Refused::NotFolder { .. }), "{e}");
        let e = root.open_dir(Path::new("a/none")).unwrap_err();
        assert!(e.not_found(), "{e}");
        // The root itself.
        assert_eq!(
            root.open_dir(Path::new("/")).unwrap().identity().unwrap(),
            root.identity().unwrap()
        );
    }

    #[test]
    fn a_file_must_be_regular_owned_and_small_enough() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let dir = here(d.path());
        std::fs::write(d.path().join("core"), b"\x7fELF core").unwrap();
        let me = std::fs::metadata(d.path().join("core")).unwrap().uid();
        let rules = FileRules {
            owner: Some(me),
            max_bytes: Some(100),
            max_is: "a test's limit",
        };
        let mut s = String::new();
        let mut f = dir.open_file(OsStr::new("core"), &rules).unwrap();
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, "\x7fELF core");
        // A link to a file elsewhere, the way /dev/zero would be planted.
        symlink("/dev/zero", d.path().join("zero")).unwrap();
        let e = dir.open_file(OsStr::new("zero"), &rules).unwrap_err();
        assert!(matches!(e, Refused::Link { .. }), "{e}");
        // A FIFO in a dump's place: refused before it is opened (which would block).
        dir.make_fifo(OsStr::new("fifo")).unwrap();
        let e = dir.open_file(OsStr::new("fifo"), &rules).unwrap_err();
        assert!(
            e.to_string().contains("is a FIFO, not a regular file"),
            "{e}"
        );
        // Another owner.
        let e = dir
            .open_file(
                OsStr::new("core"),
                &FileRules {
                    owner: Some(me + 1),
                    ..rules
                },
            )
            .unwrap_err();
        assert!(matches!(e, Refused::Owner { .. }), "{e}");
        // Too large.
        std::fs::write(d.path().join("big"), vec![0u8; 101]).unwrap();
        let e = dir.open_file(OsStr::new("big"), &rules).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than the 100 bytes allowed (a test's limit)"),
            "{e}"
        );
        // Names that are not one plain name.
        for bad in ["", ".", "..", "a/b"] {
            assert!(
                matches!(
                    dir.open_file(OsStr::new(bad), &rules),
                    Err(Refused::Name { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_fifo_is_opened_only_when_it_is_one_and_is_removed_by_name() {
        let d = tempfile::tempdir().unwrap();
        let dir = here(d.path());
        std::fs::write(d.path().join("file"), b"x").unwrap();
        let e = dir.open_fifo(OsStr::new("file")).unwrap_err();
        assert!(e.to_string().contains("a regular file, not a FIFO"), "{e}");
        symlink(d.path().join("file"), d.path().join("link")).unwrap();
        assert!(dir.open_fifo(OsStr::new("link")).is_err());
        dir.make_fifo(OsStr::new("f")).unwrap();
        let p = d.path().join("f");
        let writer = std::thread::spawn(move || std::fs::write(p, b"through").unwrap());
        let mut s = String::new();
        dir.open_fifo(OsStr::new("f"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        writer.join().unwrap();
        assert_eq!(s, "through");
        dir.remove(OsStr::new("f"));
        dir.remove(OsStr::new("link"));
        assert!(!d.path().join("f").exists());
        assert!(
            d.path().join("file").exists(),
            "a link's target is never removed"
        );
        let names: Vec<_> = dir.entries().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("file")]);
    }

    #[test]
    fn a_socket_is_reached_through_its_descriptor_and_a_file_in_a_root() {
        let d = tempfile::tempdir().unwrap();
        let sock = d.path().join("s");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let dir = here(d.path());
        let (_held, at) = dir.socket(OsStr::new("s")).unwrap();
        let _client = std::os::unix::net::UnixStream::connect(&at).unwrap();
        let (_server, _) = listener.accept().unwrap();
        std::fs::write(d.path().join("f"), b"x").unwrap();
        let e = dir.socket(OsStr::new("f")).unwrap_err();
        assert!(
            e.to_string().contains("a regular file, not a socket"),
            "{e}"
        );
        symlink(&sock, d.path().join("l")).unwrap();
        assert!(matches!(
            dir.socket(OsStr::new("l")),
            Err(Refused::Link { .. })
        ));
        // Our own files, read as our own process names them.
        let me = std::process::id();
        assert_eq!(read_in_root(me, &d.path().join("f"), 10).unwrap(), b"x");
        assert!(read_in_root(me, &d.path().join("f"), 0).is_err());
        assert!(matches!(
            read_in_root(me, &d.path().join("l"), 10),
            Err(Refused::Link { .. })
        ));
    }

    #[test]
    fn our_own_folder_is_seen_by_our_own_process() {
        let d = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(d.path()).unwrap();
        assert!(sees_folder(std::process::id(), &real));
        // Reached only through a link: not seen (files go through the temporary folder).
        let l = tempfile::tempdir().unwrap();
        let link = l.path().join("l");
        symlink(&real, &link).unwrap();
        assert!(!sees_folder(std::process::id(), &link));
        assert!(!sees_folder(std::process::id(), Path::new("relative")));
        assert!(!sees_folder(u32::MAX - 3, &real));
    }
}
