//! The agent's own folder, where it writes what it records for a request (temporary traces of the
//! profile pulls, streams' spools, dumps and heap snapshots, the audit log by default): made
//! private (0700) at start; refused when it is a symbolic link, another user's, or readable or
//! writable by others (clrspy-collect's `private_dir`, the one owner of owner-only files, says
//! which and the `chmod` that fixes it). Names in it are the agent's own, never a request's.

use std::path::{Path, PathBuf};

use crate::error::AgentError;

/// The folder when the config names none: `clrspy-agent-UID` in the temporary directory.
pub(crate) fn default_folder() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("clrspy-agent-{uid}"))
}

/// Makes `path` (and its parents) when missing, private to this user, and checks it.
pub(crate) fn prepare(path: &Path) -> Result<(), AgentError> {
    clrspy_collect::private::private_dir(path)
        .map_err(|e| AgentError::Config(format!("the agent's folder: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn made_private_and_checked() {
        let base =
            std::env::temp_dir().join(format!("clrspy-agent-folder-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("a/b");
        prepare(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Again: it is there and fine.
        prepare(&dir).unwrap();
        // Others may read or write: refused, saying how to fix it.
        for open in [0o777, 0o755] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(open)).unwrap();
            let e = prepare(&dir).unwrap_err().to_string();
            assert!(e.contains(&format!("chmod 700 {}", dir.display())), "{e}");
        }
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
