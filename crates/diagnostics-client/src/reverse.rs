//! Reverse ("connect") diagnostic ports: clrspy listens, and a runtime started with
//! `DOTNET_DiagnosticPorts=<path>,connect,suspend` connects to it. Each connection starts with
//! the runtime's 34-byte advertisement (`ADVR_V1\0`, instance cookie, pid, 2 reserved bytes),
//! then carries one command like a normal connection. The runtime connects again after each
//! connection is used, so every command takes a fresh accept.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ipc::{Connection, Connector, Error, Result};

/// The advertisement magic.
const ADVERTISE_MAGIC: &[u8; 8] = b"ADVR_V1\0";
/// The advertisement size.
pub const ADVERTISE_SIZE: usize = 34;

/// The variable that points a runtime at diagnostic ports (`<path>,connect,suspend`); empty, it
/// names none.
pub const DIAGNOSTIC_PORTS_VARIABLE: &str = "DOTNET_DiagnosticPorts";

/// What a runtime says when it connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advertisement {
    /// The runtime instance cookie, 32 hex digits.
    pub cookie: String,
    /// The process id, in the runtime's own PID namespace.
    pub pid: u32,
    /// The connecting process's id here, from the socket's peer credentials (Linux): differs
    /// from `pid` for a runtime in a container. None when unknown.
    pub peer_pid: Option<u32>,
}

/// The advertisement a runtime of instance cookie `cookie` and pid `pid` (in its own
/// namespace) sends when it connects: what a stand-in for a runtime (a test) sends.
pub fn encode_advertisement(cookie: [u8; 16], pid: u64) -> [u8; ADVERTISE_SIZE] {
    let mut b = [0u8; ADVERTISE_SIZE];
    b[..8].copy_from_slice(ADVERTISE_MAGIC);
    b[8..24].copy_from_slice(&cookie);
    b[24..32].copy_from_slice(&pid.to_le_bytes());
    b
}

/// Parses a 34-byte advertisement.
pub fn parse_advertisement(b: &[u8]) -> Option<Advertisement> {
    if b.len() < ADVERTISE_SIZE || &b[..8] != ADVERTISE_MAGIC {
        return None;
    }
    let cookie = b[8..24].iter().map(|x| format!("{x:02x}")).collect();
    let mut pid = [0u8; 8];
    pid.copy_from_slice(&b[24..32]);
    Some(Advertisement {
        cookie,
        pid: u32::try_from(u64::from_le_bytes(pid)).ok()?,
        peer_pid: None,
    })
}

/// The pid here of the process at the other end of `stream` (SO_PEERCRED: the process that
/// connected, in our PID namespace's numbers; None when it is not visible from ours).
#[cfg(target_os = "linux")]
fn peer_pid(stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, which we own, and sets `len`.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    let whole = usize::try_from(len).is_ok_and(|l| l == std::mem::size_of::<libc::ucred>());
    (r == 0 && whole && cred.pid > 0).then(|| cred.pid.unsigned_abs())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn peer_pid(_stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    None
}

/// A socket runtimes connect to. The socket file is removed when the server is dropped.
///
/// Starting a program suspended, tracing it from its first instruction:
///
/// ```no_run
/// use std::io::Read;
/// use std::time::Duration;
/// use diagnostics_client::{resume_runtime, start_session, ReverseServer, SessionConfig};
///
/// let server = ReverseServer::bind(std::path::Path::new("/tmp/my-tool.sock"))?;
/// let mut child = std::process::Command::new("dotnet")
///     .arg("app.dll")
///     .env("DOTNET_DiagnosticPorts", server.diagnostic_ports_value())
///     .spawn()
///     .expect("dotnet");
/// let t = Duration::from_secs(5);
/// // Each command takes the runtime's next connection: first the session, then the resume.
/// let mut session = start_session(&server, &SessionConfig::default(), t)?;
/// resume_runtime(&server, t)?;
/// let mut first_bytes = [0u8; 1024];
/// let n = session.read(&mut first_bytes).unwrap_or(0);
/// println!("{n} bytes of trace");
/// let _ = child.kill();
/// # Ok::<(), diagnostics_client::Error>(())
/// ```
#[derive(Debug)]
pub struct ReverseServer {
    path: PathBuf,
    #[cfg(unix)]
    listener: std::os::unix::net::UnixListener,
    /// How long [`Connector::open`] waits for the runtime to connect.
    accept_timeout: Duration,
}

impl ReverseServer {
    /// Listens on `path` (a Unix socket path: under 108 bytes on Linux). A stale file at the
    /// path is replaced.
    #[cfg(unix)]
    pub fn bind(path: &Path) -> Result<ReverseServer> {
        let connect_err = |source| Error::Connect {
            path: path.to_path_buf(),
            source,
        };
        if path.as_os_str().len() >= 104 {
            return Err(connect_err(std::io::Error::other(
                "the socket path is too long for a Unix socket (keep it under 104 bytes)",
            )));
        }
        let _ = std::fs::remove_file(path);
        let listener = std::os::unix::net::UnixListener::bind(path).map_err(connect_err)?;
        listener.set_nonblocking(true).map_err(connect_err)?;
        Ok(ReverseServer {
            path: path.to_path_buf(),
            listener,
            accept_timeout: Duration::from_secs(30),
        })
    }

    /// Named pipes are not implemented yet off Unix.
    #[cfg(not(unix))]
    pub fn bind(_path: &Path) -> Result<ReverseServer> {
        Err(Error::Unsupported)
    }

    /// The socket path, for `DOTNET_DiagnosticPorts`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `DOTNET_DiagnosticPorts` value that makes a runtime connect here and wait, suspended,
    /// for a ResumeRuntime command.
    pub fn diagnostic_ports_value(&self) -> String {
        format!("{},connect,suspend", self.path.display())
    }

    /// Sets how long [`Connector::open`] waits for the runtime.
    pub fn set_accept_timeout(&mut self, timeout: Duration) {
        self.accept_timeout = timeout;
    }

    /// Waits up to `wait` for a runtime to connect and advertise itself; `keep_waiting` is
    /// asked every few milliseconds and ends the wait early when it says false (e.g. the child
    /// exited). `timeout` then applies to the connection's reads and writes.
    #[cfg(unix)]
    pub fn accept(
        &self,
        wait: Duration,
        timeout: Duration,
        keep_waiting: &mut dyn FnMut() -> bool,
    ) -> Result<(Connection, Advertisement)> {
        use std::io::ErrorKind;
        let started = Instant::now();
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).map_err(io)?;
                    let peer = peer_pid(&stream);
                    let mut conn = Connection::new(stream, &self.path, timeout)?;
                    let mut ad = [0u8; ADVERTISE_SIZE];
                    conn.read_exact(&mut ad)?;
                    let mut ad = parse_advertisement(&ad).ok_or_else(|| {
                        conn.proto("the connecting runtime did not advertise itself (ADVR_V1)")
                    })?;
                    ad.peer_pid = peer;
                    return Ok((conn, ad));
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    if started.elapsed() >= wait || !keep_waiting() {
                        return Err(io(std::io::Error::new(
                            ErrorKind::TimedOut,
                            "no runtime connected to the diagnostic port",
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(io(e)),
            }
        }
    }

    /// Named pipes are not implemented yet off Unix.
    #[cfg(not(unix))]
    pub fn accept(
        &self,
        _wait: Duration,
        _timeout: Duration,
        _keep_waiting: &mut dyn FnMut() -> bool,
    ) -> Result<(Connection, Advertisement)> {
        Err(Error::Unsupported)
    }
}

impl Connector for ReverseServer {
    fn open(&self, timeout: Duration) -> Result<Connection> {
        self.accept(self.accept_timeout, timeout, &mut || true)
            .map(|(c, _)| c)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ReverseServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertisement() {
        let mut b = b"ADVR_V1\0".to_vec();
        b.extend_from_slice(&[0x11; 16]);
        b.extend_from_slice(&4242u64.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        assert_eq!(encode_advertisement([0x11; 16], 4242).to_vec(), b);
        let a = parse_advertisement(&b).unwrap();
        assert_eq!(a.pid, 4242);
        assert_eq!(a.peer_pid, None);
        assert_eq!(a.cookie, "11".repeat(16));
        assert!(parse_advertisement(&b[..33]).is_none());
        b[0] = b'X';
        assert!(parse_advertisement(&b).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn accepts_an_advertising_client_and_times_out_without_one() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("clrspy-rev-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("s.sock");
        let server = ReverseServer::bind(&path).unwrap();
        let t = Duration::from_secs(2);
        let err = server
            .accept(Duration::from_millis(50), t, &mut || true)
            .unwrap_err();
        assert!(err.to_string().contains("no runtime connected"), "{err}");
        let p2 = path.clone();
        let client = std::thread::spawn(move || {
            let mut s = std::os::unix::net::UnixStream::connect(&p2).unwrap();
            let mut b = b"ADVR_V1\0".to_vec();
            b.extend_from_slice(&[7; 16]);
            b.extend_from_slice(&99u64.to_le_bytes());
            b.extend_from_slice(&[0, 0]);
            s.write_all(&b).unwrap();
            s
        });
        let (_c, ad) = server.accept(t, t, &mut || true).unwrap();
        assert_eq!(ad.pid, 99);
        if cfg!(target_os = "linux") {
            // The client is a thread of this process.
            assert_eq!(ad.peer_pid, Some(std::process::id()));
        }
        drop(client.join().unwrap());
        drop(server);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
