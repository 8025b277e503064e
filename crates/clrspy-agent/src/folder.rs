//! OWNER: agent-pprof. The agent's own folder, where it writes what it records for a request
//! (temporary traces of the profile pulls; dumps later): made private (0700) at start, refused
//! when it is a symbolic link, another user's, or writable by others. Names in it are the
//! agent's own, never a request's.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::AgentError;

/// The folder when the config names none: `clrspy-agent-UID` in the temporary directory.
pub fn default_folder() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("clrspy-agent-{uid}"))
}

/// Makes `path` (and its parents) when missing, private to this user, and checks it.
pub fn prepare(path: &Path) -> Result<(), AgentError> {
    let fail =
        |what: String| AgentError::Config(format!("the agent's folder {}: {what}", path.display()));
    if std::fs::symlink_metadata(path).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| fail(format!("cannot create it: {e}")))?;
    }
    let m = std::fs::symlink_metadata(path).map_err(|e| fail(e.to_string()))?;
    if !m.file_type().is_dir() {
        return Err(fail("not a folder (or a symbolic link)".into()));
    }
    // SAFETY: as above.
    let uid = unsafe { libc::geteuid() };
    if m.uid() != uid {
        return Err(fail(format!(
            "owned by uid {}, not this user ({uid})",
            m.uid()
        )));
    }
    if m.permissions().mode() & 0o022 != 0 {
        return Err(fail(
            "writable by other users; make it private (chmod 700)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_private_and_checked() {
        let base =
            std::env::temp_dir().join(format!("clrspy-agent-folder-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("a/b");
        prepare(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        // Again: it is there and fine.
        prepare(&dir).unwrap();
        // Others may write: refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(prepare(&dir).is_err());
        // A symbolic link or a file: refused.
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(prepare(&link).is_err());
        let file = base.join("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(prepare(&file).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
