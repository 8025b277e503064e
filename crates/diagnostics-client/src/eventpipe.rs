//! The EventPipe command set: starting a tracing session whose trace streams back on the same
//! connection (CollectTracing2), and stopping it (StopTracing).

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use crate::discovery::Endpoint;
use crate::ipc::{connect, read_reply, send, Error, Result};

const EVENTPIPE_COMMAND_SET: u8 = 0x02;
const STOP_TRACING: u8 = 0x01;
const COLLECT_TRACING2: u8 = 0x03;

/// One provider to enable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    /// Provider name, e.g. `Microsoft-Windows-DotNETRuntime`.
    pub name: String,
    /// Keyword mask.
    pub keywords: u64,
    /// Level: 0 log always .. 5 verbose.
    pub level: u32,
    /// Filter arguments (`Key=Value;Key2=Value2`), passed to the provider.
    pub arguments: Option<String>,
}

/// What a session records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// The runtime's buffer for this session, in MB.
    pub circular_buffer_mb: u32,
    /// Ask for rundown (method and module names) when the session stops.
    pub request_rundown: bool,
    /// Providers.
    pub providers: Vec<Provider>,
}

fn put_string(out: &mut Vec<u8>, s: Option<&str>) {
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

impl SessionConfig {
    /// The CollectTracing2 payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&self.circular_buffer_mb.to_le_bytes());
        p.extend_from_slice(&1u32.to_le_bytes()); // format: NetTrace
        p.push(u8::from(self.request_rundown));
        p.extend_from_slice(&(self.providers.len() as u32).to_le_bytes());
        for pr in &self.providers {
            p.extend_from_slice(&pr.keywords.to_le_bytes());
            p.extend_from_slice(&pr.level.to_le_bytes());
            put_string(&mut p, Some(&pr.name));
            put_string(&mut p, pr.arguments.as_deref());
        }
        p
    }
}

/// A running session: read it to get the trace bytes (NetTrace format) as the runtime writes
/// them. Reads return `WouldBlock`/`TimedOut` errors when nothing arrived within the read
/// timeout, and end (0 bytes) when the runtime closes the session.
pub struct Session {
    /// The session id (for [`stop_session`]).
    pub id: u64,
    stream: crate::ipc::Stream,
    path: PathBuf,
}

impl Session {
    /// Sets how long a read waits for bytes.
    pub fn set_read_timeout(&self, timeout: Duration) -> Result<()> {
        self.stream
            .set_read_timeout(Some(timeout))
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }
}

impl Read for Session {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.read(buf)
    }
}

/// Starts a session on `endpoint`.
pub fn start_session(
    endpoint: &Endpoint,
    config: &SessionConfig,
    timeout: Duration,
) -> Result<Session> {
    let mut stream = connect(&endpoint.path, timeout)?;
    send(
        &mut stream,
        &endpoint.path,
        EVENTPIPE_COMMAND_SET,
        COLLECT_TRACING2,
        &config.encode(),
    )?;
    let body = read_reply(&mut stream, &endpoint.path)?;
    let id = body
        .get(..8)
        .map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
        .ok_or_else(|| Error::Protocol {
            path: endpoint.path.clone(),
            what: "CollectTracing reply without a session id".into(),
        })?;
    Ok(Session {
        id,
        stream,
        path: endpoint.path.clone(),
    })
}

/// Stops a session: the runtime writes the rundown, ends the trace and closes its stream.
pub fn stop_session(endpoint: &Endpoint, id: u64, timeout: Duration) -> Result<()> {
    crate::ipc::request(
        &endpoint.path,
        EVENTPIPE_COMMAND_SET,
        STOP_TRACING,
        &id.to_le_bytes(),
        timeout,
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_tracing2_payload_layout() {
        let c = SessionConfig {
            circular_buffer_mb: 256,
            request_rundown: true,
            providers: vec![Provider {
                name: "A".into(),
                keywords: 0x10,
                level: 5,
                arguments: None,
            }],
        };
        let p = c.encode();
        assert_eq!(&p[..4], &256u32.to_le_bytes());
        assert_eq!(&p[4..8], &1u32.to_le_bytes());
        assert_eq!(p[8], 1);
        assert_eq!(&p[9..13], &1u32.to_le_bytes());
        assert_eq!(&p[13..21], &0x10u64.to_le_bytes());
        assert_eq!(&p[21..25], &5u32.to_le_bytes());
        assert_eq!(&p[25..29], &2u32.to_le_bytes()); // "A" + NUL
        assert_eq!(&p[29..33], &[b'A', 0, 0, 0]);
        assert_eq!(&p[33..37], &0u32.to_le_bytes());
        assert_eq!(p.len(), 37);
    }
}
