//! The EventPipe command set: starting a tracing session whose trace streams back on the same
//! connection (CollectTracing 5, 4, 3 or 2: the newest the runtime knows), and stopping it
//! (StopTracing).

use std::io::Read;
use std::time::Duration;

use crate::ipc::{put_string, request, Connection, Connector, Error, PayloadReader, Result};

const EVENTPIPE_COMMAND_SET: u8 = 0x02;
const STOP_TRACING: u8 = 0x01;
const COLLECT_TRACING2: u8 = 0x03;
const COLLECT_TRACING3: u8 = 0x04;
const COLLECT_TRACING4: u8 = 0x05;
const COLLECT_TRACING5: u8 = 0x06;

/// The rundown keyword that older commands' `requestRundown = true` stands for.
pub const DEFAULT_RUNDOWN_KEYWORD: u64 = 0x8002_0139;

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
    /// Rundown keywords to fire when the session stops (method and module names); 0 = no
    /// rundown. [`DEFAULT_RUNDOWN_KEYWORD`] is what other tools ask for.
    pub rundown_keyword: u64,
    /// Record a stack with each event (CollectTracing3+; older runtimes always do).
    pub stackwalk: bool,
    /// Providers.
    pub providers: Vec<Provider>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            circular_buffer_mb: 256,
            rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
            stackwalk: true,
            providers: Vec::new(),
        }
    }
}

impl SessionConfig {
    /// The CollectTracing payload for command version 2 to 5.
    pub fn encode(&self, version: u8) -> Vec<u8> {
        self.encode_allowing(version, None)
    }

    /// The payload; with `only` (version 5), each provider writes only those event ids.
    fn encode_allowing(&self, version: u8, only: Option<&[u32]>) -> Vec<u8> {
        let mut p = Vec::new();
        if version >= 5 {
            p.extend_from_slice(&0u32.to_le_bytes()); // session type: streaming
        }
        p.extend_from_slice(&self.circular_buffer_mb.to_le_bytes());
        p.extend_from_slice(&1u32.to_le_bytes()); // format: NetTrace
        if version >= 4 {
            p.extend_from_slice(&self.rundown_keyword.to_le_bytes());
        } else {
            p.push(u8::from(self.rundown_keyword != 0));
        }
        if version >= 3 {
            p.push(u8::from(self.stackwalk));
        }
        p.extend_from_slice(&(self.providers.len() as u32).to_le_bytes());
        for pr in &self.providers {
            p.extend_from_slice(&pr.keywords.to_le_bytes());
            p.extend_from_slice(&pr.level.to_le_bytes());
            put_string(&mut p, Some(&pr.name));
            put_string(&mut p, pr.arguments.as_deref());
            if version >= 5 {
                // The event id filter: an allow-list, or an empty deny-list (every event).
                let ids = only.unwrap_or_default();
                p.push(u8::from(only.is_some()));
                p.extend_from_slice(&(ids.len() as u32).to_le_bytes());
                for id in ids {
                    p.extend_from_slice(&id.to_le_bytes());
                }
            }
        }
        p
    }

    /// What an older command cannot express of this configuration (empty when nothing).
    fn lost_in(&self, version: u8) -> Vec<String> {
        let mut lost = Vec::new();
        if version < 4
            && self.rundown_keyword != 0
            && self.rundown_keyword != DEFAULT_RUNDOWN_KEYWORD
        {
            lost.push(format!(
                "rundown keyword 0x{:x} (this runtime takes only the default rundown)",
                self.rundown_keyword
            ));
        }
        if version < 3 && !self.stackwalk {
            lost.push("no-stacks (this runtime records stacks with every event)".into());
        }
        lost
    }
}

/// A running session: read it to get the trace bytes (NetTrace format) as the runtime writes
/// them. Reads return `WouldBlock`/`TimedOut` errors when nothing arrived within the read
/// timeout, and end (0 bytes) when the runtime closes the session.
#[derive(Debug)]
pub struct Session {
    /// The session id (for [`stop_session`]).
    pub id: u64,
    /// The CollectTracing version the runtime accepted (2 to 5).
    pub command_version: u8,
    /// Options the runtime's command could not express, in words (empty when none).
    pub degraded: Vec<String>,
    conn: Connection,
}

impl Session {
    /// Sets how long a read waits for bytes.
    pub fn set_read_timeout(&self, timeout: Duration) -> Result<()> {
        self.conn.set_read_timeout(timeout)
    }
}

impl Read for Session {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.conn.read_some(buf)
    }
}

/// Starts a session on a new connection from `to`, with the newest CollectTracing command the
/// runtime knows (5, then 4, 3, 2 after "unknown command" replies).
///
/// The session is a byte stream (a NetTrace file as it is written); stop it with
/// [`stop_session`] and keep reading until it ends, so the rundown arrives:
///
/// ```no_run
/// use std::io::Read;
/// use std::time::Duration;
/// use diagnostics_client::{start_session, stop_session, Provider, SessionConfig};
///
/// let ep = diagnostics_client::find_endpoints().into_iter().next().expect("a .NET process");
/// let config = SessionConfig {
///     providers: vec![Provider {
///         name: "Microsoft-DotNETCore-SampleProfiler".into(),
///         keywords: 0,
///         level: 5,
///         arguments: None,
///     }],
///     ..SessionConfig::default()
/// };
/// let t = Duration::from_secs(5);
/// let mut session = start_session(&ep, &config, t)?;
/// let mut trace = Vec::new();
/// let mut buf = [0u8; 64 * 1024];
/// let started = std::time::Instant::now();
/// while started.elapsed() < Duration::from_secs(2) {
///     match session.read(&mut buf) {
///         Ok(0) => break,
///         Ok(n) => trace.extend_from_slice(&buf[..n]),
///         Err(_) => {}
///     }
/// }
/// let id = session.id;
/// let stopper = std::thread::spawn(move || stop_session(&ep, id, t));
/// while let Ok(n) = session.read(&mut buf) {
///     if n == 0 {
///         break;
///     }
///     trace.extend_from_slice(&buf[..n]);
/// }
/// stopper.join().expect("stop thread")?;
/// std::fs::write("trace.nettrace", &trace).expect("write");
/// # Ok::<(), diagnostics_client::Error>(())
/// ```
pub fn start_session(
    to: &dyn Connector,
    config: &SessionConfig,
    timeout: Duration,
) -> Result<Session> {
    let mut last = None;
    for (id, version) in [
        (COLLECT_TRACING5, 5u8),
        (COLLECT_TRACING4, 4),
        (COLLECT_TRACING3, 3),
        (COLLECT_TRACING2, 2),
    ] {
        let mut conn = to.open(timeout)?;
        conn.send(EVENTPIPE_COMMAND_SET, id, &config.encode(version))?;
        match conn.read_reply_patiently(timeout) {
            Ok(body) => {
                let session_id = PayloadReader::new(&body)
                    .u64()
                    .ok_or_else(|| conn.proto("CollectTracing reply without a session id"))?;
                return Ok(Session {
                    id: session_id,
                    command_version: version,
                    degraded: config.lost_in(version),
                    conn,
                });
            }
            Err(e) if e.is_unknown_command() => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(Error::Unsupported))
}

/// Starts a session in which every provider of `config` writes only the events `only` (by id):
/// the runtime's event filter of CollectTracing5 (.NET 10 and later). An older runtime does
/// not know the command and the error says so ([`Error::is_unknown_command`]); nothing falls
/// back, as an older command would enable every event of the keywords.
pub fn start_session_allowing(
    to: &dyn Connector,
    config: &SessionConfig,
    only: &[u32],
    timeout: Duration,
) -> Result<Session> {
    let mut conn = to.open(timeout)?;
    conn.send(
        EVENTPIPE_COMMAND_SET,
        COLLECT_TRACING5,
        &config.encode_allowing(5, Some(only)),
    )?;
    let body = conn.read_reply_patiently(timeout)?;
    let id = PayloadReader::new(&body)
        .u64()
        .ok_or_else(|| conn.proto("CollectTracing reply without a session id"))?;
    Ok(Session {
        id,
        command_version: 5,
        degraded: Vec::new(),
        conn,
    })
}

/// Stops a session: the runtime writes the rundown, ends the trace and closes its stream. It
/// answers only after that, so keep reading the session meanwhile (from another thread).
pub fn stop_session(to: &dyn Connector, id: u64, timeout: Duration) -> Result<()> {
    request(
        to,
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

    fn config() -> SessionConfig {
        SessionConfig {
            circular_buffer_mb: 256,
            rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
            stackwalk: false,
            providers: vec![Provider {
                name: "A".into(),
                keywords: 0x10,
                level: 5,
                arguments: None,
            }],
        }
    }

    #[test]
    fn collect_tracing2_payload_layout() {
        let p = config().encode(2);
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

    #[test]
    fn newer_payloads_add_their_fields() {
        let c = config();
        let v2 = c.encode(2);
        let v3 = c.encode(3);
        assert_eq!(v3.len(), v2.len() + 1);
        assert_eq!(v3[9], 0); // requestStackwalk after requestRundown
        let v4 = c.encode(4);
        assert_eq!(&v4[8..16], &DEFAULT_RUNDOWN_KEYWORD.to_le_bytes());
        assert_eq!(v4[16], 0);
        assert_eq!(v4.len(), v3.len() + 7);
        let v5 = c.encode(5);
        assert_eq!(&v5[..4], &0u32.to_le_bytes());
        assert_eq!(
            &v5[4..],
            &{
                let mut x = v4.clone();
                x.extend_from_slice(&[0, 0, 0, 0, 0]); // empty event filter
                x
            }[..]
        );
        assert_eq!(c.lost_in(2).len(), 1);
        assert!(c.lost_in(3).is_empty());
        // An allow-list: enable = 1, the count, the ids.
        let only = c.encode_allowing(5, Some(&[185, 7]));
        let mut want = v4.clone();
        want.extend_from_slice(&[1, 2, 0, 0, 0, 185, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(&only[4..], &want[..]);
    }

    /// A fake runtime that knows CollectTracing up to version `newest`: it answers "unknown
    /// command" to newer ones and a session id to the rest, then streams `b"trace"`.
    #[cfg(unix)]
    #[test]
    fn falls_back_to_the_newest_command_the_runtime_knows() {
        use std::io::Write;
        use std::os::unix::net::UnixListener;
        let path = std::env::temp_dir().join(format!("clrspy-ep-test-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let newest = 3u8;
        let server = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for conn in listener.incoming() {
                let mut c = conn.unwrap();
                let mut h = [0u8; 20];
                c.read_exact(&mut h).unwrap();
                let size = u16::from_le_bytes([h[14], h[15]]) as usize;
                let mut body = vec![0u8; size - 20];
                c.read_exact(&mut body).unwrap();
                let version = h[17] - 1; // command id 0x04 = CollectTracing3
                seen.push(version);
                let mut reply = crate::ipc::Header {
                    size: 0,
                    command_set: 0xff,
                    command_id: 0,
                }
                .encode()
                .to_vec();
                if version > newest {
                    reply[17] = 0xff;
                    reply.extend_from_slice(&crate::ipc::E_UNKNOWN_COMMAND.to_le_bytes());
                } else {
                    reply.extend_from_slice(&77u64.to_le_bytes());
                }
                let n = reply.len() as u16;
                reply[14..16].copy_from_slice(&n.to_le_bytes());
                c.write_all(&reply).unwrap();
                if version <= newest {
                    c.write_all(b"trace").unwrap();
                    return seen;
                }
            }
            seen
        });
        let ep = crate::Endpoint {
            pid: 1,
            path: path.clone(),
        };
        let mut s = start_session(&ep, &config(), Duration::from_secs(2)).unwrap();
        assert_eq!((s.id, s.command_version), (77, 3));
        assert!(s.degraded.is_empty());
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"trace");
        assert_eq!(server.join().unwrap(), [5, 4, 3]);
        let _ = std::fs::remove_file(&path);
    }
}
