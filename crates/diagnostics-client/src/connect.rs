//! Reaching a runtime's diagnostic socket, bounded in time. A blocking `connect` to a Unix
//! socket whose listener takes no connections (a stopped or frozen process: SIGSTOP, a paused
//! container, a debugger's breakpoint) waits for a free place in its backlog for ever once
//! the backlog is full — and every earlier ask that timed out left its connection there. So
//! the socket is made by hand with a send timeout, which the kernel applies to `connect` too.
//! Also: paths too long for a socket address are reached through a short `/proc/self/fd` path.

use std::path::Path;
use std::time::Duration;

/// The connection type.
#[cfg(unix)]
pub(crate) type Stream = std::os::unix::net::UnixStream;

/// The connection type (not implemented yet off Unix).
#[cfg(not(unix))]
pub(crate) type Stream = std::net::TcpStream;

/// The longest socket path connected to as it is (`sun_path` holds 108 bytes with its NUL).
#[cfg(unix)]
const MAX_SOCKET_PATH: usize = 100;

/// Connects to `path`, giving up after `timeout` when the listener does not take the
/// connection. A path too long for a socket address (a container's socket reached through
/// `/proc/<pid>/root/...`) is reached through an open handle on its directory:
/// `/proc/self/fd/<fd>/<name>` is short, and the kernel resolves it to the same socket.
///
/// A socket in another process's file system (`/proc/<pid>/root/...`: a container's, where its
/// runtime's `TMPDIR` put it) is reached under that process's root with no link followed
/// ([`crate::rooted`]): the process cannot point us at another socket of ours.
#[cfg(unix)]
pub(crate) fn connect_stream(path: &Path, timeout: Duration) -> std::io::Result<Stream> {
    use std::os::fd::AsRawFd;
    #[cfg(target_os = "linux")]
    if let Some((pid, inside)) = in_process_root(path) {
        let (Some(dir), Some(name)) = (inside.parent(), inside.file_name()) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a socket's path",
            ));
        };
        let (_held, at) = crate::rooted::RootedDir::root_of(pid)?
            .open_dir(dir)
            .and_then(|d| d.socket(name))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))?;
        return connect_bounded(&at, timeout);
    }
    if path.as_os_str().len() < MAX_SOCKET_PATH || !cfg!(target_os = "linux") {
        return connect_bounded(path, timeout);
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return connect_bounded(path, timeout);
    };
    let handle = std::fs::File::open(dir)?;
    let short = Path::new("/proc/self/fd")
        .join(handle.as_raw_fd().to_string())
        .join(name);
    let s = connect_bounded(&short, timeout);
    drop(handle);
    s
}

/// `/proc/<pid>/root/<rest>`: the pid and `/<rest>` as that process names it.
#[cfg(target_os = "linux")]
fn in_process_root(path: &Path) -> Option<(u32, std::path::PathBuf)> {
    let rest = path.strip_prefix("/proc").ok()?;
    let mut parts = rest.components();
    let pid = parts.next()?.as_os_str().to_str()?.parse().ok()?;
    if parts.next()?.as_os_str() != "root" {
        return None;
    }
    Some((pid, Path::new("/").join(parts.as_path())))
}

/// `connect` with the socket's send timeout set first (Linux applies it to a Unix socket's
/// connect: the wait for room in the listener's backlog).
#[cfg(target_os = "linux")]
fn connect_bounded(path: &Path, timeout: Duration) -> std::io::Result<Stream> {
    use std::io::{Error, ErrorKind};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "path must be shorter than SUN_LEN bytes",
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: socket has no memory preconditions; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: fd is a socket just made and owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // At least a millisecond: a zero timeout would mean "wait for ever".
    let t = timeout.max(Duration::from_millis(1));
    let tv = libc::timeval {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_usec: libc::suseconds_t::from(t.subsec_micros()),
    };
    // SAFETY: tv is a timeval that lives across the call; its size is given.
    let set = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            std::ptr::from_ref(&tv).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if set != 0 {
        return Err(Error::last_os_error());
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    loop {
        // SAFETY: addr is a filled sockaddr_un and len is within its size.
        let r =
            unsafe { libc::connect(fd, std::ptr::from_ref(&addr).cast(), len as libc::socklen_t) };
        if r == 0 {
            return Ok(Stream::from(owned));
        }
        let e = Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            // The backlog stayed full for the whole timeout.
            Some(libc::EAGAIN) | Some(libc::EINPROGRESS) => {
                return Err(Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "the runtime took no connection within {} ms (its process is stopped or \
                         frozen, or its diagnostic server is stuck)",
                        t.as_millis()
                    ),
                ))
            }
            _ => return Err(e),
        }
    }
}

/// Elsewhere, a plain connect (not bounded yet).
#[cfg(all(unix, not(target_os = "linux")))]
fn connect_bounded(path: &Path, _timeout: Duration) -> std::io::Result<Stream> {
    Stream::connect(path)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::time::Instant;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_socket_in_a_process_root_is_reached_without_links() {
        let d = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(d.path()).unwrap();
        let sock = real.join("dotnet-diagnostic-1-2-socket");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let me = std::process::id();
        let rooted =
            |p: &Path| Path::new(&format!("/proc/{me}/root")).join(p.strip_prefix("/").unwrap());
        assert_eq!(in_process_root(&rooted(&sock)).unwrap(), (me, sock.clone()));
        assert_eq!(in_process_root(Path::new("/proc/x/root/a")), None);
        assert_eq!(in_process_root(Path::new("/tmp/a")), None);
        let s = connect_stream(&rooted(&sock), Duration::from_secs(5)).unwrap();
        let _ = listener.accept().unwrap();
        drop(s);
        // A link in the socket's place, planted by the process: refused, not followed.
        let link = real.join("dotnet-diagnostic-1-3-socket");
        std::os::unix::fs::symlink(&sock, &link).unwrap();
        let e = connect_stream(&rooted(&link), Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }

    #[test]
    fn a_socket_path_too_long_for_an_address_still_connects() {
        let base = std::env::temp_dir().join(format!("clrspy-long-{}", std::process::id()));
        let deep = base.join("a".repeat(60)).join("b".repeat(60));
        std::fs::create_dir_all(&deep).unwrap();
        let path = deep.join("dotnet-diagnostic-1-2-socket");
        assert!(path.as_os_str().len() > 108);
        // Bind through the same short form (a listener has the same address limit).
        let dir = std::fs::File::open(&deep).unwrap();
        let short = format!(
            "/proc/self/fd/{}/dotnet-diagnostic-1-2-socket",
            dir.as_raw_fd()
        );
        let listener = std::os::unix::net::UnixListener::bind(&short).unwrap();
        assert!(std::os::unix::net::UnixStream::connect(&path).is_err());
        let s = connect_stream(&path, Duration::from_secs(1));
        assert!(s.is_ok(), "{s:?}");
        assert!(listener.accept().is_ok());
        let _ = std::fs::remove_dir_all(&base);
    }

    /// A listener that accepts nothing (a stopped process's): once its backlog is full, a
    /// connect gives up after the timeout with a message that says why, instead of waiting
    /// for ever; a missing socket is still "not found"/"refused" at once.
    #[test]
    fn a_listener_that_takes_nothing_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stuck.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let t = Duration::from_millis(200);
        let mut held = Vec::new();
        let outcome = loop {
            match connect_stream(&path, t) {
                Ok(s) => held.push(s),
                Err(e) => break e,
            }
            assert!(held.len() < 100_000, "the backlog never filled");
        };
        assert_eq!(outcome.kind(), std::io::ErrorKind::TimedOut, "{outcome}");
        assert!(outcome.to_string().contains("stopped"), "{outcome}");
        let started = Instant::now();
        let again = connect_stream(&path, t).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::TimedOut);
        // Waited about the timeout, not for ever (a generous upper bound for a busy machine).
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert!(started.elapsed() < Duration::from_secs(30));
        let missing = connect_stream(&dir.path().join("none.sock"), t).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
