//! The output disk's free space (statvfs): the one reading every writer of big files (watch's
//! actions, the agent's jobs and streams, `doctor`) checks before and while it writes.

use std::path::Path;

/// The bytes an unprivileged writer may still put on the file system holding `dir` — or, when
/// `dir` is not made yet, its nearest existing parent (an empty path is the current folder).
/// None when the system does not say.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let existing = dir.ancestors().find(|p| p.exists())?;
        let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs is plain data; the call reads the NUL-terminated path, fills the
        // zeroed struct it is given and returns 0 on success.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return None;
        }
        // The field types differ between targets (u32 on some).
        #[allow(clippy::unnecessary_cast)]
        Some((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_and_one_not_made_yet_have_free_space() {
        let d = tempfile::tempdir().unwrap();
        assert!(free_bytes(d.path()).is_some_and(|f| f > 0));
        // A folder not made yet: its nearest parent's file system.
        assert_eq!(
            free_bytes(&d.path().join("not/yet/made")).map(|f| f > 0),
            Some(true)
        );
        assert!(free_bytes(Path::new("")).is_some());
    }
}
