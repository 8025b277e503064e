//! Messages: the header, sending a command and reading the reply, with timeouts.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The header magic, NUL included.
pub const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
/// Header size in bytes.
pub const HEADER_SIZE: usize = 20;
/// Largest reply payload accepted (ProcessEnvironment replies can be large; dumps are not sent).
pub const MAX_PAYLOAD: usize = 16 << 20;

/// Command set of server replies.
pub const SERVER_COMMAND_SET: u8 = 0xFF;
/// Reply command id: OK.
pub const SERVER_OK: u8 = 0x00;
/// Reply command id: error (payload: a 32-bit HRESULT).
pub const SERVER_ERROR: u8 = 0xFF;

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
    #[error("the runtime refused the command: {}", describe_hresult(*.hresult))]
    Runtime {
        /// The HRESULT.
        hresult: u32,
    },
    /// The platform has no implementation yet (Windows named pipes).
    #[error("diagnostics IPC is not implemented on this platform yet")]
    Unsupported,
}

impl Error {
    /// True when the runtime does not know the command (an older runtime): try an older one.
    pub fn is_unknown_command(&self) -> bool {
        matches!(self, Error::Runtime { hresult } if *hresult == 0x8013_1384)
    }
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// A readable name for the runtime's diagnostics HRESULTs.
pub fn describe_hresult(hr: u32) -> String {
    let what = match hr {
        0x8013_1384 => "unknown command (the runtime is older than this command)",
        0x8013_1385 => "unknown magic (not a diagnostics endpoint)",
        0x8013_1386 => "bad encoding of the command",
        0x8007_0057 => "invalid argument",
        0x8013_1387 => "the runtime is not ready for this command yet",
        0x8013_1388 => "the feature is not supported by this runtime",
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

/// The connection type.
#[cfg(unix)]
pub(crate) type Stream = std::os::unix::net::UnixStream;

/// The connection type (not implemented yet off Unix).
#[cfg(not(unix))]
pub(crate) type Stream = std::net::TcpStream;

/// Connects to an endpoint with read and write timeouts.
#[cfg(unix)]
pub(crate) fn connect(path: &Path, timeout: Duration) -> Result<Stream> {
    let s = Stream::connect(path).map_err(|source| Error::Connect {
        path: path.to_path_buf(),
        source,
    })?;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    Ok(s)
}

/// Windows named pipes are not implemented yet; the API is the same.
#[cfg(not(unix))]
pub(crate) fn connect(_path: &Path, _timeout: Duration) -> Result<Stream> {
    Err(Error::Unsupported)
}

/// Sends one command.
pub(crate) fn send(
    s: &mut Stream,
    path: &Path,
    command_set: u8,
    command_id: u8,
    payload: &[u8],
) -> Result<()> {
    let size = u16::try_from(HEADER_SIZE + payload.len()).map_err(|_| Error::Protocol {
        path: path.to_path_buf(),
        what: format!("command payload of {} bytes is too large", payload.len()),
    })?;
    let mut msg = Header {
        size,
        command_set,
        command_id,
    }
    .encode()
    .to_vec();
    msg.extend_from_slice(payload);
    s.write_all(&msg).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads one reply: its payload on OK, the HRESULT as an error otherwise.
pub(crate) fn read_reply(s: &mut Stream, path: &Path) -> Result<Vec<u8>> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let proto = |what: String| Error::Protocol {
        path: path.to_path_buf(),
        what,
    };
    let mut hb = [0u8; HEADER_SIZE];
    s.read_exact(&mut hb).map_err(io)?;
    let h = Header::decode(&hb)
        .ok_or_else(|| proto("the reply does not start with the IPC magic".into()))?;
    if h.command_set != SERVER_COMMAND_SET {
        return Err(proto(format!(
            "reply command set 0x{:02x}, expected 0xff",
            h.command_set
        )));
    }
    let len = usize::from(h.size)
        .checked_sub(HEADER_SIZE)
        .ok_or_else(|| proto(format!("reply size {} is smaller than its header", h.size)))?;
    if len > MAX_PAYLOAD {
        return Err(proto(format!("reply payload of {len} bytes is too large")));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).map_err(io)?;
    match h.command_id {
        SERVER_OK => Ok(body),
        SERVER_ERROR => {
            let hr = body
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or_else(|| proto("an error reply without its HRESULT".into()))?;
            Err(Error::Runtime { hresult: hr })
        }
        other => Err(proto(format!("unknown reply id 0x{other:02x}"))),
    }
}

/// Sends one command and reads its reply payload. `timeout` bounds every read and write.
pub(crate) fn request(
    path: &Path,
    command_set: u8,
    command_id: u8,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>> {
    let mut s = connect(path, timeout)?;
    send(&mut s, path, command_set, command_id, payload)?;
    read_reply(&mut s, path)
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
        assert!(describe_hresult(0x8013_1384).contains("unknown command"));
        assert!(Error::Runtime {
            hresult: 0x8013_1384
        }
        .is_unknown_command());
    }
}
