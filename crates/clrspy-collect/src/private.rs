//! Files only their owner reads: dumps, heap snapshots, traces and bundles hold exception
//! messages, URLs, command lines and heap contents, so clrspy makes them mode 0600 (folders
//! 0700) whatever the umask says. The one owner of that rule: every crate that writes such a
//! file opens it here.
//!
//! A file opened here is 0600 once the call returns, whether it was new or already there (one
//! that was readable by others is narrowed before anything is written to it). A folder made
//! here is 0700; [`private_dir`] also refuses a folder that was already there and that others
//! may read or write, saying which and the `chmod` that fixes it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// The mode of a private file.
pub(crate) const FILE_MODE: u32 = 0o600;
/// The mode of a private folder.
pub(crate) const DIR_MODE: u32 = 0o700;

/// Why [`private_dir`] refused a folder.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    /// It was missing and could not be made.
    #[error("cannot create the folder {}: {source}", path.display())]
    Create {
        /// The folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Its metadata could not be read.
    #[error("cannot read the folder {}: {source}", path.display())]
    Read {
        /// The folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A file, or a symbolic link (never followed: whoever may change the link chooses
    /// where the files go).
    #[error("{} is not a folder (a file or a symbolic link); name a real folder", path.display())]
    NotAFolder {
        /// The path.
        path: PathBuf,
    },
    /// Another user's folder.
    #[error(
        "the folder {} belongs to uid {owner}, not to this user (uid {user}); \
         chown {user} {} or name a folder of this user's",
        path.display(), path.display()
    )]
    NotOwned {
        /// The folder.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective user.
        user: u32,
    },
    /// Group or others may read or write it.
    #[error(
        "the folder {} may be read or written by other users (mode {mode:04o}); \
         make it private: chmod 700 {}",
        path.display(), path.display()
    )]
    OpenToOthers {
        /// The folder.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// Opens with `o` (which creates), then makes the file exactly 0600.
fn open_private(o: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        o.mode(FILE_MODE);
        let f = o.open(path)?;
        // New: the umask may have taken bits off (0400 under umask 277). There already: it
        // kept its mode, which may let others read what is about to be written.
        if f.metadata()?.permissions().mode() & 0o777 != FILE_MODE {
            f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
        }
        Ok(f)
    }
    #[cfg(not(unix))]
    o.open(path)
}

/// Creates (or truncates) `path` for writing, readable and writable by its owner only (0600,
/// an existing file's mode narrowed).
pub fn create_private(path: &Path) -> std::io::Result<File> {
    open_private(
        OpenOptions::new().write(true).create(true).truncate(true),
        path,
    )
}

/// Creates `path` for reading and writing, 0600; an existing file is an error
/// (`AlreadyExists`), so a name chosen by the caller never opens someone else's file.
pub fn create_new_private(path: &Path) -> std::io::Result<File> {
    open_private(
        OpenOptions::new().read(true).write(true).create_new(true),
        path,
    )
}

/// Opens `path` for appending, creating it when missing; 0600 either way (a log of the
/// owner's, such as an audit log).
pub fn append_private(path: &Path) -> std::io::Result<File> {
    open_private(OpenOptions::new().append(true).create(true), path)
}

/// Creates `path` and its missing parents as folders only their owner may enter (0700). A
/// folder that is already there is left as it is; [`private_dir`] checks it too.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let existed = std::fs::symlink_metadata(path).is_ok();
        b.mode(DIR_MODE);
        b.create(path)?;
        if !existed {
            // Under an umask such as 277 the new folder lost bits it needs.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(DIR_MODE))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    b.create(path)
}

/// A folder clrspy writes private files into: made (0700, with its missing parents) when
/// missing; when already there it must be a real folder (not a symbolic link), this user's,
/// and neither readable nor writable by group or others — else the error names it and the
/// fix.
pub fn private_dir(path: &Path) -> Result<(), PrivateDirError> {
    if std::fs::symlink_metadata(path).is_err() {
        create_private_dir(path).map_err(|source| PrivateDirError::Create {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let m = std::fs::symlink_metadata(path).map_err(|source| PrivateDirError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if !m.file_type().is_dir() {
        return Err(PrivateDirError::NotAFolder {
            path: path.to_path_buf(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let user = unsafe { libc::geteuid() };
        if m.uid() != user {
            return Err(PrivateDirError::NotOwned {
                path: path.to_path_buf(),
                owner: m.uid(),
                user,
            });
        }
        let mode = m.mode() & 0o7777;
        if mode & 0o066 != 0 {
            return Err(PrivateDirError::OpenToOthers {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// Makes one of each kind of file and folder in `dir`.
    fn make_all(dir: &Path) {
        create_private_dir(&dir.join("a/b")).unwrap();
        private_dir(&dir.join("c/d")).unwrap();
        create_private(&dir.join("a/b/new.dmp")).unwrap();
        create_new_private(&dir.join("a/spool")).unwrap();
        append_private(&dir.join("audit.jsonl")).unwrap();
        std::fs::write(dir.join("was-open"), b"x").unwrap();
        std::fs::set_permissions(dir.join("was-open"), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        create_private(&dir.join("was-open")).unwrap();
    }

    fn check_all(dir: &Path) {
        for d in ["a", "a/b", "c", "c/d"] {
            assert_eq!(mode(&dir.join(d)), 0o700, "{d}");
        }
        for f in ["a/b/new.dmp", "a/spool", "audit.jsonl", "was-open"] {
            assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
        }
    }

    #[test]
    fn new_files_and_folders_are_the_owners_only() {
        let d = tempfile::tempdir().unwrap();
        make_all(d.path());
        check_all(d.path());
        // A name already taken is never opened by create_new_private.
        let e = create_new_private(&d.path().join("a/spool")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    }

    /// The umask is the process's: the files are made by this test binary run again with
    /// umask 000 (so no other test sees it), and checked here.
    #[test]
    fn under_umask_000_too() {
        const CHILD: &str = "CLRSPY_PRIVATE_UMASK_CHILD";
        if let Some(dir) = std::env::var_os(CHILD) {
            // SAFETY: umask only sets the process's file mode mask.
            unsafe { libc::umask(0) };
            make_all(Path::new(&dir));
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "private::tests::under_umask_000_too",
                "--test-threads=1",
            ])
            .env(CHILD, d.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        check_all(d.path());
        // What umask 000 gives a file made the ordinary way, for contrast.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("umask 000; touch plain; stat -c %a plain")
            .current_dir(d.path())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "666");
    }

    #[test]
    fn an_existing_folder_open_to_others_is_refused_with_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("agent");
        private_dir(&dir).unwrap();
        // Again: it is there and fine.
        private_dir(&dir).unwrap();
        for open in [0o777, 0o755, 0o740, 0o702, 0o720] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(open)).unwrap();
            let e = private_dir(&dir).unwrap_err();
            assert!(
                matches!(e, PrivateDirError::OpenToOthers { .. }),
                "{open:o}"
            );
            let text = e.to_string();
            assert!(
                text.contains(&format!("chmod 700 {}", dir.display())),
                "{text}"
            );
            assert!(text.contains(&format!("{open:04o}")), "{text}");
        }
        // Others may only pass through: allowed.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)).unwrap();
        private_dir(&dir).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let e = private_dir(&link).unwrap_err();
        assert!(matches!(e, PrivateDirError::NotAFolder { .. }), "{e}");
        let file = d.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(
            private_dir(&file).unwrap_err(),
            PrivateDirError::NotAFolder { .. }
        ));
    }
}
