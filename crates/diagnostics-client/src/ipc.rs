//! Messages: the header, sending a command and reading the reply, with timeouts.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The header magic, NUL included.
pub(crate) const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
/// Header size in bytes.
pub const HEADER_SIZE: usize = 20;
/// Largest reply payload accepted (ProcessEnvironment replies can be large; dumps are not sent).
pub(crate) const MAX_PAYLOAD: usize = 16 << 20;

/// Command set of server replies.
pub(crate) const SERVER_COMMAND_SET: u8 = 0xFF;
/// Reply command id: OK.
pub(crate) const SERVER_OK: u8 = 0x00;
/// Reply command id: error (payload: a 32-bit HRESULT).
pub(crate) const SERVER_ERROR: u8 = 0xFF;

/// What can go wrong talking to a runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The endpoint could not be reached.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// Socket path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Reading or writing failed (a timeout included).
    #[error("talking to the runtime at {path}: {source}")]
    Io {
        /// Socket path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The reply does not follow the protocol.
    #[error("malformed reply from the runtime at {path}: {what}")]
    Protocol {
        /// Socket path.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// The runtime answered with an error code.
    #[error("the runtime refused the command: {}{}", describe_hresult(*.hresult), .message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Runtime {
        /// The HRESULT.
        hresult: u32,
        /// The runtime's own message, when the command sends one (GenerateCoreDump3).
        message: Option<String>,
    },
    /// The platform has no implementation yet (Windows named pipes).
    #[error("diagnostics IPC is not implemented on this platform yet")]
    Unsupported,
}

impl Error {
    /// True when the runtime does not know the command (an older runtime): try an older one.
    pub fn is_unknown_command(&self) -> bool {
        matches!(self, Error::Runtime { hresult, .. } if *hresult == E_UNKNOWN_COMMAND)
    }
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The runtime's "unknown command" HRESULT: the runtime is older than the command.
pub(crate) const E_UNKNOWN_COMMAND: u32 = 0x8013_1385;

/// A readable name for the runtime's diagnostics HRESULTs.
pub(crate) fn describe_hresult(hr: u32) -> String {
    let what = match hr {
        E_UNKNOWN_COMMAND => "unknown command (the runtime is older than this command)",
        0x8013_1384 => {
            "bad encoding (the runtime does not accept one of the options; it may be too old for it)"
        }
        0x8013_1386 => "unknown magic (not a diagnostics endpoint)",
        0x8007_0057 => "invalid argument",
        0x8013_1515 => "not supported by this runtime",
        0x8013_136A => "a profiler is already loaded",
        0x8000_4005 => "unspecified failure",
        0x8007_0005 => "access denied",
        0x8007_000E => "out of memory",
        _ => "error",
    };
    format!("{what} (HRESULT 0x{hr:08X})")
}

/// A message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Total message size, header included.
    pub size: u16,
    /// Command set.
    pub command_set: u8,
    /// Command id.
    pub command_id: u8,
}

impl Header {
    /// Encodes the header.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[..14].copy_from_slice(MAGIC);
        b[14..16].copy_from_slice(&self.size.to_le_bytes());
        b[16] = self.command_set;
        b[17] = self.command_id;
        b
    }

    /// Decodes a header, checking the magic.
    pub fn decode(b: &[u8; HEADER_SIZE]) -> Option<Header> {
        if &b[..14] != MAGIC {
            return None;
        }
        Some(Header {
            size: u16::from_le_bytes([b[14], b[15]]),
            command_set: b[16],
            command_id: b[17],
        })
    }
}

pub(crate) use crate::connect::Stream;

/// Something that hands out connections to one runtime: an [`Endpoint`](crate::Endpoint) the
/// runtime listens on, or a [`ReverseServer`](crate::ReverseServer) the runtime connects to.
pub trait Connector: Send + Sync {
    /// A new connection, ready for one command.
    fn open(&self, timeout: Duration) -> Result<Connection>;
    /// The socket path, for messages.
    fn path(&self) -> &Path;
}

/// One connection to a runtime: one command, its reply, and the command's continuation.
#[derive(Debug)]
pub struct Connection {
    stream: Stream,
    path: PathBuf,
}

impl Connection {
    /// Wraps a connected stream, applying `timeout` to every read and write.
    pub(crate) fn new(stream: Stream, path: &Path, timeout: Duration) -> Result<Connection> {
        let c = Connection {
            stream,
            path: path.to_path_buf(),
        };
        c.set_timeouts(timeout)?;
        Ok(c)
    }

    /// An I/O error on this connection; a read or write that timed out says so in words (the
    /// OS says "Resource temporarily unavailable").
    fn io(&self, source: std::io::Error) -> Error {
        let source = match source.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the runtime did not answer in time (busy, suspended or hung)",
            ),
            _ => source,
        };
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }

    pub(crate) fn proto(&self, what: impl Into<String>) -> Error {
        Error::Protocol {
            path: self.path.clone(),
            what: what.into(),
        }
    }

    /// Sets the read and write timeouts.
    pub(crate) fn set_timeouts(&self, timeout: Duration) -> Result<()> {
        self.stream
            .set_read_timeout(Some(timeout))
            .and_then(|_| self.stream.set_write_timeout(Some(timeout)))
            .map_err(|e| self.io(e))
    }

    /// Sets how long a read waits.
    pub fn set_read_timeout(&self, timeout: Duration) -> Result<()> {
        self.stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| self.io(e))
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends one command.
    pub fn send(&mut self, command_set: u8, command_id: u8, payload: &[u8]) -> Result<()> {
        let size = u16::try_from(HEADER_SIZE + payload.len()).map_err(|_| {
            self.proto(format!(
                "command payload of {} bytes is too large",
                payload.len()
            ))
        })?;
        let mut msg = Header {
            size,
            command_set,
            command_id,
        }
        .encode()
        .to_vec();
        msg.extend_from_slice(payload);
        self.stream.write_all(&msg).map_err(|e| self.io(e))
    }

    /// Reads exactly `buf.len()` bytes of a continuation.
    pub(crate) fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.stream.read_exact(buf).map_err(|e| self.io(e))
    }

    /// Reads one reply: its payload on OK, the HRESULT as an error otherwise. `with_message`:
    /// an error reply may carry a string after its HRESULT (GenerateCoreDump3).
    pub(crate) fn read_reply_with(&mut self, with_message: bool) -> Result<Vec<u8>> {
        let mut hb = [0u8; HEADER_SIZE];
        self.read_exact(&mut hb)?;
        let h = Header::decode(&hb)
            .ok_or_else(|| self.proto("the reply does not start with the IPC magic"))?;
        if h.command_set != SERVER_COMMAND_SET {
            return Err(self.proto(format!(
                "reply command set 0x{:02x}, expected 0xff",
                h.command_set
            )));
        }
        let len = usize::from(h.size)
            .checked_sub(HEADER_SIZE)
            .ok_or_else(|| {
                self.proto(format!("reply size {} is smaller than its header", h.size))
            })?;
        if len > MAX_PAYLOAD {
            return Err(self.proto(format!("reply payload of {len} bytes is too large")));
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body)?;
        match h.command_id {
            SERVER_OK => Ok(body),
            SERVER_ERROR => {
                let mut r = PayloadReader::new(&body);
                let hresult = r
                    .u32()
                    .ok_or_else(|| self.proto("an error reply without its HRESULT"))?;
                let message = if with_message {
                    r.string().filter(|m| !m.trim().is_empty())
                } else {
                    None
                };
                Err(Error::Runtime { hresult, message })
            }
            other => Err(self.proto(format!("unknown reply id 0x{other:02x}"))),
        }
    }

    /// Reads one reply (see [`Connection::read_reply_with`]).
    pub(crate) fn read_reply(&mut self) -> Result<Vec<u8>> {
        self.read_reply_with(false)
    }

    /// Reads the reply to a command just sent, waiting [`REPLY_PATIENCE`] times `timeout`
    /// for it (then `timeout` again for later reads). A runtime that is starting, collecting
    /// or loaded can be slow to answer, and a command that was sent must not be sent twice: a
    /// second session or a second resume is worse than a wait.
    pub(crate) fn read_reply_patiently(&mut self, timeout: Duration) -> Result<Vec<u8>> {
        self.set_read_timeout(timeout.saturating_mul(REPLY_PATIENCE))?;
        let reply = self.read_reply();
        self.set_read_timeout(timeout)?;
        reply
    }

    /// Reads continuation bytes as they come (0 at the end of the stream).
    pub(crate) fn read_some(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.read(buf)
    }
}

/// Connects to a socket path with read and write timeouts; the connecting itself is bounded
/// by `timeout` too (see [`crate::connect::connect_stream`]).
#[cfg(unix)]
pub(crate) fn connect(path: &Path, timeout: Duration) -> Result<Connection> {
    let s = crate::connect::connect_stream(path, timeout).map_err(|source| Error::Connect {
        path: path.to_path_buf(),
        source,
    })?;
    Connection::new(s, path, timeout)
}

/// Windows named pipes are not implemented yet; the API is the same.
#[cfg(not(unix))]
pub(crate) fn connect(_path: &Path, _timeout: Duration) -> Result<Connection> {
    Err(Error::Unsupported)
}

impl Connector for crate::Endpoint {
    fn open(&self, timeout: Duration) -> Result<Connection> {
        connect(&self.path, timeout)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Sends one command on a new connection and reads its reply payload. `timeout` bounds every
/// read and write.
pub(crate) fn request(
    to: &dyn Connector,
    command_set: u8,
    command_id: u8,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>> {
    let mut c = to.open(timeout)?;
    c.send(command_set, command_id, payload)?;
    c.read_reply_patiently(timeout)
}

/// How many times a command's timeout its reply is awaited: the runtime answers commands on
/// one thread, which a start-up, a GC or a loaded machine can hold for seconds.
pub(crate) const REPLY_PATIENCE: u32 = 3;

/// Sends a command whose OK reply is a 32-bit HRESULT (0 = success).
pub(crate) fn request_hresult(
    to: &dyn Connector,
    command_set: u8,
    command_id: u8,
    payload: &[u8],
    timeout: Duration,
) -> Result<()> {
    let body = request(to, command_set, command_id, payload, timeout)?;
    match PayloadReader::new(&body).u32() {
        None | Some(0) => Ok(()),
        Some(hresult) => Err(Error::Runtime {
            hresult,
            message: None,
        }),
    }
}

/// Appends a protocol string: `u32` length in UTF-16 units (terminator included), then the
/// units; `None` is the empty string (length 0).
pub(crate) fn put_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.extend_from_slice(&0u32.to_le_bytes()),
        Some(s) => {
            let units: Vec<u16> = s.encode_utf16().chain([0]).collect();
            out.extend_from_slice(&(units.len() as u32).to_le_bytes());
            for u in units {
                out.extend_from_slice(&u.to_le_bytes());
            }
        }
    }
}

/// A bounds-checked reader of reply payloads.
pub(crate) struct PayloadReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> PayloadReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        PayloadReader { data, pos: 0 }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(b)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }

    /// A string: `u32` length in UTF-16 units (terminator included), then the units.
    pub(crate) fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        let b = self.bytes(n.checked_mul(2)?)?;
        let units: Vec<u16> = b
            .chunks_exact(2)
            .map(|u| u16::from_le_bytes([u[0], u[1]]))
            .collect();
        let end = units.iter().position(|&u| u == 0).unwrap_or(units.len());
        Some(String::from_utf16_lossy(&units[..end]))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_os_error_as_source() {
        use std::error::Error as _;
        let e = Error::Connect {
            path: "/tmp/s".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let src = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            src.map(|s| s.kind()),
            Some(std::io::ErrorKind::PermissionDenied)
        );
        let e = Error::Io {
            path: "/tmp/s".into(),
            source: std::io::Error::from(std::io::ErrorKind::TimedOut),
        };
        assert!(e.source().is_some());
        assert!(Error::Unsupported.source().is_none());
    }

    #[test]
    fn header_round_trip_and_magic_check() {
        let h = Header {
            size: 20,
            command_set: 4,
            command_id: 0,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b), Some(h));
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(Header::decode(&bad), None);
    }

    #[test]
    fn payload_reader_never_reads_past_the_end() {
        let mut r = PayloadReader::new(&[3, 0, 0, 0, b'a', 0]);
        assert_eq!(r.string(), None);
        let mut r = PayloadReader::new(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(r.string(), None);
        let mut r = PayloadReader::new(&[2, 0, 0, 0, b'a', 0, 0, 0]);
        assert_eq!(r.string().as_deref(), Some("a"));
        assert!(r.is_empty());
    }

    #[test]
    fn hresults_read_well() {
        assert!(describe_hresult(0x8013_1385).contains("unknown command"));
        assert!(Error::Runtime {
            hresult: 0x8013_1385,
            message: None
        }
        .is_unknown_command());
        assert!(describe_hresult(0x8013_1384).contains("bad encoding"));
    }

    /// A runtime that answers a command after its timeout (start-up, a GC, a loaded machine)
    /// is waited for, not taken for dead; one that never answers is said to time out.
    #[cfg(unix)]
    #[test]
    fn a_slow_answer_is_awaited_and_a_missing_one_times_out() {
        use std::os::unix::net::UnixListener;
        let path = std::env::temp_dir().join(format!("clrspy-slow-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let timeout = Duration::from_millis(150);
        let server = std::thread::spawn(move || {
            let mut held = Vec::new();
            for (i, conn) in listener.incoming().take(2).enumerate() {
                let mut c = conn.unwrap();
                let mut h = [0u8; HEADER_SIZE];
                c.read_exact(&mut h).unwrap();
                if i == 0 {
                    std::thread::sleep(timeout * 2);
                    let mut reply = Header {
                        size: (HEADER_SIZE + 4) as u16,
                        command_set: SERVER_COMMAND_SET,
                        command_id: SERVER_OK,
                    }
                    .encode()
                    .to_vec();
                    reply.extend_from_slice(&0u32.to_le_bytes());
                    c.write_all(&reply).unwrap();
                } else {
                    held.push(c); // never answered
                }
            }
            std::thread::sleep(timeout * 4);
            drop(held);
        });
        let ep = crate::Endpoint {
            pid: 1,
            path: path.clone(),
        };
        request_hresult(&ep, 4, 1, &[], timeout).expect("a late answer is an answer");
        let e = request_hresult(&ep, 4, 1, &[], timeout).unwrap_err();
        let kind = match &e {
            Error::Io { source, .. } => source.kind(),
            other => panic!("{other}"),
        };
        assert!(
            matches!(
                kind,
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e}"
        );
        server.join().unwrap();
        let _ = std::fs::remove_file(&path);
    }
}
