//! Typed views of the events an outgoing HTTP request writes: `System.Net.Http`'s request,
//! queue and connection events, and the name resolution (`System.Net.NameResolution`),
//! socket connect (`System.Net.Sockets`) and TLS handshake (`System.Net.Security`) events
//! HttpClient runs for it. These are EventSource events: each version's field layout is a
//! table here (the one the runtime's source writes), checked by the tests against the
//! metadata of a real .NET 10 trace. A field a version lacks is `None`; an event's stop or
//! failure with an empty payload (the runtimes before .NET 8) reads as its `None` fields.

use crate::layout::{FieldDef, FieldKind, Scalar};
use crate::view::{Cursor, Utf16Str};
use crate::ViewError;

/// `System.Net.Http`.
pub const HTTP: &str = "System.Net.Http";
/// `System.Net.NameResolution`.
pub const NAME_RESOLUTION: &str = "System.Net.NameResolution";
/// `System.Net.Sockets`.
pub const SOCKETS: &str = "System.Net.Sockets";
/// `System.Net.Security`.
pub const SECURITY: &str = "System.Net.Security";

const fn f(name: &'static str, s: Scalar) -> FieldDef {
    FieldDef {
        name,
        kind: FieldKind::Scalar(s),
    }
}

const STR: Scalar = Scalar::UnicodeString;

const REQUEST_START: &[FieldDef] = &[
    f("scheme", STR),
    f("host", STR),
    f("port", Scalar::I32),
    f("pathAndQuery", STR),
    f("versionMajor", Scalar::U8),
    f("versionMinor", Scalar::U8),
    f("versionPolicy", Scalar::U8),
];
const STATUS: &[FieldDef] = &[f("statusCode", Scalar::I32)];
const MESSAGE: &[FieldDef] = &[f("exceptionMessage", STR)];
const LEFT_QUEUE: &[FieldDef] = &[
    f("timeOnQueueMilliseconds", Scalar::F64),
    f("versionMajor", Scalar::U8),
    f("versionMinor", Scalar::U8),
];
const CONNECTION_ESTABLISHED: &[FieldDef] = &[
    f("versionMajor", Scalar::U8),
    f("versionMinor", Scalar::U8),
    f("connectionId", Scalar::I64),
    f("scheme", STR),
    f("host", STR),
    f("port", Scalar::I32),
    f("remoteAddress", STR),
];
const CONNECTION_CLOSED: &[FieldDef] = &[
    f("versionMajor", Scalar::U8),
    f("versionMinor", Scalar::U8),
    f("connectionId", Scalar::I64),
];
const CONNECTION_ID: &[FieldDef] = &[f("connectionId", Scalar::I64)];
const RESOLUTION_START: &[FieldDef] = &[f("hostNameOrAddress", STR)];
const ADDRESS: &[FieldDef] = &[f("address", STR)];
const CONNECT_FAILED: &[FieldDef] = &[f("error", Scalar::I32), f("exceptionMessage", STR)];
const HANDSHAKE_START: &[FieldDef] = &[f("isServer", Scalar::Bool32), f("targetHost", STR)];
const HANDSHAKE_FAILED: &[FieldDef] = &[
    f("isServer", Scalar::Bool32),
    f("elapsedMilliseconds", Scalar::F64),
    f("exceptionMessage", STR),
];

/// Every layout of this file: (provider, event, version from which it holds, fields). A
/// version before the first listed has no payload.
pub const LAYOUTS: &[(&str, &str, u8, &[FieldDef])] = &[
    (HTTP, "RequestStart", 0, REQUEST_START),
    (HTTP, "RequestStop", 1, STATUS),
    (HTTP, "RequestFailed", 1, MESSAGE),
    (HTTP, "RequestLeftQueue", 0, LEFT_QUEUE),
    (HTTP, "ConnectionEstablished", 1, CONNECTION_ESTABLISHED),
    (HTTP, "ConnectionClosed", 1, CONNECTION_CLOSED),
    (HTTP, "RequestHeadersStart", 1, CONNECTION_ID),
    (HTTP, "ResponseHeadersStop", 1, STATUS),
    (NAME_RESOLUTION, "ResolutionStart", 0, RESOLUTION_START),
    (SOCKETS, "ConnectStart", 0, ADDRESS),
    (SOCKETS, "ConnectFailed", 0, CONNECT_FAILED),
    (SECURITY, "HandshakeStart", 0, HANDSHAKE_START),
    (SECURITY, "HandshakeFailed", 0, HANDSHAKE_FAILED),
];

/// The `version 0` layouts of the events that gained fields in .NET 8 (version 1).
const CONNECTION_V0: &[FieldDef] = &[f("versionMajor", Scalar::U8), f("versionMinor", Scalar::U8)];

fn cursor<'a>(
    event: &'static str,
    version: u8,
    fields: &'static [FieldDef],
    payload: &'a [u8],
) -> Result<Cursor<'a>, ViewError> {
    Cursor::new(event, version, fields, payload, 8)
}

/// A field's `i32` value (the cursor hands integers out sign-extended to 64 bits).
fn i32_of(v: u64) -> i32 {
    v as i64 as i32
}

/// `RequestStart`: a request begins (every version).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestStart<'a> {
    /// `http` or `https`.
    pub scheme: Utf16Str<'a>,
    /// The host as the URI names it.
    pub host: Utf16Str<'a>,
    /// The port.
    pub port: i32,
    /// Path and query (.NET 9+ writes the query as `*` unless told otherwise).
    pub path_and_query: Utf16Str<'a>,
    /// The HTTP version asked for.
    pub version_major: u8,
    /// Its minor number.
    pub version_minor: u8,
}

impl<'a> RequestStart<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let mut c = cursor(
            "System.Net.Http/RequestStart",
            version,
            REQUEST_START,
            payload,
        )?;
        Ok(RequestStart {
            scheme: c.str("scheme")?,
            host: c.str("host")?,
            port: i32_of(c.u64("port")?),
            path_and_query: c.str("pathAndQuery")?,
            version_major: c.u64("versionMajor")? as u8,
            version_minor: c.u64("versionMinor")? as u8,
        })
    }
}

/// `RequestStop` (and `ResponseHeadersStop`): the status code, .NET 8+ (version 1); -1 when
/// no response came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestStop {
    /// The status; `None` before version 1.
    pub status_code: Option<i32>,
}

impl RequestStop {
    /// Reads the payload.
    pub fn parse(payload: &[u8], version: u8) -> Result<Self, ViewError> {
        if version == 0 {
            return Ok(RequestStop { status_code: None });
        }
        let mut c = cursor("System.Net.Http/RequestStop", version, STATUS, payload)?;
        Ok(RequestStop {
            status_code: Some(i32_of(c.u64("statusCode")?)),
        })
    }
}

/// `RequestFailed`: the exception's message, .NET 8+ (version 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestFailed<'a> {
    /// The message; `None` before version 1.
    pub exception_message: Option<Utf16Str<'a>>,
}

impl<'a> RequestFailed<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        if version == 0 {
            return Ok(RequestFailed {
                exception_message: None,
            });
        }
        let mut c = cursor("System.Net.Http/RequestFailed", version, MESSAGE, payload)?;
        Ok(RequestFailed {
            exception_message: Some(c.str("exceptionMessage")?),
        })
    }
}

/// `RequestLeftQueue`: a request that waited for a connection got one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestLeftQueue {
    /// How long it waited, ms.
    pub time_on_queue_ms: f64,
    /// The HTTP version of the pool it waited in.
    pub version_major: u8,
    /// Its minor number.
    pub version_minor: u8,
}

impl RequestLeftQueue {
    /// Reads the payload.
    pub fn parse(payload: &[u8], version: u8) -> Result<Self, ViewError> {
        let mut c = cursor(
            "System.Net.Http/RequestLeftQueue",
            version,
            LEFT_QUEUE,
            payload,
        )?;
        Ok(RequestLeftQueue {
            time_on_queue_ms: c.f64("timeOnQueueMilliseconds")?,
            version_major: c.u64("versionMajor")? as u8,
            version_minor: c.u64("versionMinor")? as u8,
        })
    }
}

/// `ConnectionEstablished` and `ConnectionClosed`: a connection of the pool opened or
/// closed. Version 1 (.NET 8+) names it; the established one also says where to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Connection<'a> {
    /// The HTTP version spoken on it.
    pub version_major: u8,
    /// Its minor number.
    pub version_minor: u8,
    /// Its id within the process (version 1).
    pub connection_id: Option<i64>,
    /// The remote address (`ConnectionEstablished` version 1).
    pub(crate) remote_address: Option<Utf16Str<'a>>,
}

impl<'a> Connection<'a> {
    /// Reads a `ConnectionEstablished` payload.
    pub fn parse_established(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let fields = if version == 0 {
            CONNECTION_V0
        } else {
            CONNECTION_ESTABLISHED
        };
        let mut c = cursor(
            "System.Net.Http/ConnectionEstablished",
            version,
            fields,
            payload,
        )?;
        Ok(Connection {
            version_major: c.u64("versionMajor")? as u8,
            version_minor: c.u64("versionMinor")? as u8,
            connection_id: c.opt_u64("connectionId")?.map(|v| v as i64),
            remote_address: c.opt_str("remoteAddress")?,
        })
    }

    /// Reads a `ConnectionClosed` payload.
    pub fn parse_closed(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let fields = if version == 0 {
            CONNECTION_V0
        } else {
            CONNECTION_CLOSED
        };
        let mut c = cursor("System.Net.Http/ConnectionClosed", version, fields, payload)?;
        Ok(Connection {
            version_major: c.u64("versionMajor")? as u8,
            version_minor: c.u64("versionMinor")? as u8,
            connection_id: c.opt_u64("connectionId")?.map(|v| v as i64),
            remote_address: None,
        })
    }
}

/// `RequestHeadersStart`: the request's headers go out on a connection (named from .NET 8,
/// version 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeadersStart {
    /// The connection; `None` before version 1.
    pub connection_id: Option<i64>,
}

impl RequestHeadersStart {
    /// Reads the payload.
    pub fn parse(payload: &[u8], version: u8) -> Result<Self, ViewError> {
        if version == 0 {
            return Ok(RequestHeadersStart {
                connection_id: None,
            });
        }
        let mut c = cursor(
            "System.Net.Http/RequestHeadersStart",
            version,
            CONNECTION_ID,
            payload,
        )?;
        Ok(RequestHeadersStart {
            connection_id: Some(c.u64("connectionId")? as i64),
        })
    }
}

/// `System.Net.Sockets/ConnectFailed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConnectFailed<'a> {
    /// The `SocketError` (10061: connection refused; 10060: timed out).
    pub error: i32,
    /// The message (often empty).
    pub exception_message: Utf16Str<'a>,
}

/// `SocketError.ConnectionRefused`.
pub const CONNECTION_REFUSED: i32 = 10061;

impl<'a> ConnectFailed<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let mut c = cursor(
            "System.Net.Sockets/ConnectFailed",
            version,
            CONNECT_FAILED,
            payload,
        )?;
        Ok(ConnectFailed {
            error: i32_of(c.u64("error")?),
            exception_message: c.str("exceptionMessage")?,
        })
    }
}

/// `System.Net.Security/HandshakeStart`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandshakeStart<'a> {
    /// True on the server side.
    pub is_server: bool,
    /// The host the client asked for.
    pub(crate) target_host: Utf16Str<'a>,
}

impl<'a> HandshakeStart<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let mut c = cursor(
            "System.Net.Security/HandshakeStart",
            version,
            HANDSHAKE_START,
            payload,
        )?;
        Ok(HandshakeStart {
            is_server: c.u64("isServer")? != 0,
            target_host: c.str("targetHost")?,
        })
    }
}

/// `System.Net.Security/HandshakeFailed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandshakeFailed<'a> {
    /// True on the server side.
    pub is_server: bool,
    /// How long the handshake ran before it failed, ms.
    pub(crate) elapsed_ms: f64,
    /// Why.
    pub exception_message: Utf16Str<'a>,
}

impl<'a> HandshakeFailed<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let mut c = cursor(
            "System.Net.Security/HandshakeFailed",
            version,
            HANDSHAKE_FAILED,
            payload,
        )?;
        Ok(HandshakeFailed {
            is_server: c.u64("isServer")? != 0,
            elapsed_ms: c.f64("elapsedMilliseconds")?,
            exception_message: c.str("exceptionMessage")?,
        })
    }
}

#[cfg(test)]
mod tests;
