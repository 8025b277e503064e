//! What the watcher reads of `/proc` and the file system about a process and the output disk:
//! a process's start (clock ticks since boot, and as wall-clock time), its age, and the free
//! bytes of a folder's file system.

use std::path::Path;
use std::time::Duration;

/// The process's start time in clock ticks since boot (`/proc/PID/stat`, field 22).
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Clock ticks per second.
fn clock_hz() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0)
}

/// The wall-clock time of `ticks` after boot (`btime` in `/proc/stat`).
pub(crate) fn start_time(ticks: u64) -> Option<std::time::SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let ms = btime.saturating_mul(1000) + ticks.saturating_mul(1000) / clock_hz()?;
    Some(std::time::UNIX_EPOCH + Duration::from_millis(ms))
}

/// How long ago process `pid` started, in milliseconds.
pub(crate) fn age_ms(pid: u32) -> Option<u64> {
    let ticks = start_ticks(pid)?;
    let hz = clock_hz()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let started_ms = ticks.saturating_mul(1000) / hz;
    Some(((uptime * 1000.0) as u64).saturating_sub(started_ms))
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
