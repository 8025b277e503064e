//! What the watcher reads about a process and the output disk: a process's start and age (from
//! diagnostics-client's `procfs`, which owns `/proc`), and the free bytes of a folder's file
//! system (statvfs).

use std::path::Path;

pub(crate) use diagnostics_client::procfs::start_ticks;

/// How long ago process `pid` started, in milliseconds (a decision's `age_ms`).
pub(crate) fn age_ms(pid: u32) -> Option<u64> {
    diagnostics_client::procfs::age(pid).map(|a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX))
}

/// Free bytes on the file system holding `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs reads a NUL-terminated path and fills the struct we own.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
}
