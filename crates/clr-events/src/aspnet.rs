//! Typed views of the ASP.NET Core request events `clrspy report requests` reads: the hosting
//! provider's `RequestStart`, Kestrel's `ConnectionStart`, the DiagnosticSource bridge's
//! `Activity1Start`/`Activity1Stop` (an event of a `FilterAndPayloadSpecs` with its arguments)
//! and the logging provider's `Message`. These are EventSource events: their metadata
//! describes the fields, and the views read them in the order the sources write them (the same
//! on .NET 8 and 10, which append fields at the end only), borrowing the strings. A payload cut
//! short is a [`ViewError`] naming the event and the field.

use crate::layout::DecodeError;
use crate::view::{Utf16Str, ViewError};

/// A reader of an EventSource payload's fields in order.
struct Fields<'a> {
    event: &'static str,
    b: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(event: &'static str, b: &'a [u8]) -> Fields<'a> {
        Fields { event, b, at: 0 }
    }

    fn fail(&self, error: DecodeError) -> ViewError {
        ViewError {
            event: self.event,
            version: 0,
            error,
        }
    }

    fn bytes(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], ViewError> {
        let available = self.b.len().saturating_sub(self.at);
        if n > available {
            return Err(self.fail(DecodeError::Truncated {
                field,
                offset: self.at,
                needed: n,
                available,
            }));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, ViewError> {
        let b = self.bytes(field, 4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, ViewError> {
        let b = self.bytes(field, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// A NUL-terminated UTF-16LE string.
    fn str(&mut self, field: &'static str) -> Result<Utf16Str<'a>, ViewError> {
        let rest = &self.b[self.at.min(self.b.len())..];
        let end = rest
            .chunks_exact(2)
            .position(|c| c == [0, 0])
            .ok_or_else(|| {
                self.fail(DecodeError::UnterminatedString {
                    field,
                    offset: self.at,
                })
            })?;
        let s = Utf16Str::new(&rest[..end * 2]);
        self.at += end * 2 + 2;
        Ok(s)
    }

    /// An array of `{Key, Value}` string pairs (a 16-bit count, then the pairs).
    fn pairs(&mut self, field: &'static str) -> Result<Pairs<'a>, ViewError> {
        let count = self.u16(field)?;
        let start = self.at;
        for _ in 0..count {
            self.str(field)?;
            self.str(field)?;
        }
        Ok(Pairs {
            count,
            bytes: &self.b[start..self.at],
        })
    }
}

/// A list of `{Key, Value}` strings (DiagnosticSource's and logging's `Arguments`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pairs<'a> {
    count: u16,
    bytes: &'a [u8],
}

impl<'a> Pairs<'a> {
    /// How many pairs.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Utf16Str<'a>, Utf16Str<'a>)> + 'a {
        // `parse` checked every string is terminated.
        let mut f = Fields::new("", self.bytes);
        (0..self.count).map_while(move |_| Some((f.str("Key").ok()?, f.str("Value").ok()?)))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<Utf16Str<'a>> {
        self.iter().find(|(k, _)| k.eq_str(key)).map(|(_, v)| v)
    }
}

/// `Microsoft.AspNetCore.Hosting/RequestStart`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestStart<'a> {
    /// The HTTP method.
    pub method: Utf16Str<'a>,
    /// The path.
    pub path: Utf16Str<'a>,
}

impl<'a> RequestStart<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<RequestStart<'a>, ViewError> {
        let mut f = Fields::new("Microsoft.AspNetCore.Hosting/RequestStart", payload);
        Ok(RequestStart {
            method: f.str("method")?,
            path: f.str("path")?,
        })
    }
}

/// `Microsoft-AspNetCore-Server-Kestrel/ConnectionStart`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionStart<'a> {
    /// Kestrel's connection id.
    pub connection_id: Utf16Str<'a>,
    /// The server's end point.
    pub(crate) local_end_point: Utf16Str<'a>,
    /// The client's end point.
    pub(crate) remote_end_point: Utf16Str<'a>,
}

impl<'a> ConnectionStart<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<ConnectionStart<'a>, ViewError> {
        let mut f = Fields::new(
            "Microsoft-AspNetCore-Server-Kestrel/ConnectionStart",
            payload,
        );
        Ok(ConnectionStart {
            connection_id: f.str("connectionId")?,
            local_end_point: f.str("localEndPoint")?,
            remote_end_point: f.str("remoteEndPoint")?,
        })
    }
}

/// An event of `Microsoft-Diagnostics-DiagnosticSource` written for a `FilterAndPayloadSpecs`
/// entry (`Event`, `Activity1Start`, `Activity1Stop`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiagnosticEvent<'a> {
    /// The DiagnosticListener's name (`Microsoft.AspNetCore`).
    pub(crate) source_name: Utf16Str<'a>,
    /// The event's name (`Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop`).
    pub event_name: Utf16Str<'a>,
    /// The spec's transforms, by name (`StatusCode` for `Response.StatusCode`).
    pub arguments: Pairs<'a>,
}

impl<'a> DiagnosticEvent<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<DiagnosticEvent<'a>, ViewError> {
        let mut f = Fields::new("Microsoft-Diagnostics-DiagnosticSource/Event", payload);
        Ok(DiagnosticEvent {
            source_name: f.str("SourceName")?,
            event_name: f.str("EventName")?,
            arguments: f.pairs("Arguments")?,
        })
    }
}

/// `Microsoft-Extensions-Logging/Message` (keyword 0x2: a log call with its arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogMessage<'a> {
    /// The level (0 trace .. 5 critical).
    pub level: i32,
    /// The logger factory.
    pub(crate) factory_id: i32,
    /// The logger's category.
    pub logger_name: Utf16Str<'a>,
    /// The event id.
    pub event_id: i32,
    /// The event's name (`ExecutingEndpoint`).
    pub event_name: Utf16Str<'a>,
    /// The message's arguments (`EndpointName`, `{OriginalFormat}`).
    pub arguments: Pairs<'a>,
}

impl<'a> LogMessage<'a> {
    /// Reads the payload (the exception's fields are skipped).
    pub fn parse(payload: &'a [u8]) -> Result<LogMessage<'a>, ViewError> {
        let mut f = Fields::new("Microsoft-Extensions-Logging/Message", payload);
        let level = f.i32("Level")?;
        let factory_id = f.i32("FactoryID")?;
        let logger_name = f.str("LoggerName")?;
        let event_id = f.i32("EventId")?;
        let event_name = f.str("EventName")?;
        f.str("Exception.TypeName")?;
        f.str("Exception.Message")?;
        f.i32("Exception.HResult")?;
        f.str("Exception.VerboseMessage")?;
        Ok(LogMessage {
            level,
            factory_id,
            logger_name,
            event_id,
            event_name,
            arguments: f.pairs("Arguments")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16z(s: &str, out: &mut Vec<u8>) {
        for u in s.encode_utf16() {
            out.extend_from_slice(&u.to_le_bytes());
        }
        out.extend_from_slice(&[0, 0]);
    }

    fn pairs(kv: &[(&str, &str)], out: &mut Vec<u8>) {
        out.extend_from_slice(&(kv.len() as u16).to_le_bytes());
        for (k, v) in kv {
            utf16z(k, out);
            utf16z(v, out);
        }
    }

    #[test]
    fn request_start_and_connection_start() {
        let mut p = Vec::new();
        utf16z("GET", &mut p);
        utf16z("/items/42", &mut p);
        let r = RequestStart::parse(&p).unwrap();
        assert!(r.method.eq_str("GET") && r.path.eq_str("/items/42"));
        let e = RequestStart::parse(&p[..p.len() - 2]).unwrap_err();
        assert!(e.to_string().contains("path"), "{e}");

        let mut c = Vec::new();
        for s in ["0HNQCFE3VIBK0", "127.0.0.1:5000", "127.0.0.1:48654"] {
            utf16z(s, &mut c);
        }
        let k = ConnectionStart::parse(&c).unwrap();
        assert!(k.connection_id.eq_str("0HNQCFE3VIBK0"));
        assert!(k.remote_end_point.eq_str("127.0.0.1:48654"));
    }

    #[test]
    fn diagnostic_source_arguments() {
        let mut p = Vec::new();
        utf16z("Microsoft.AspNetCore", &mut p);
        utf16z("Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop", &mut p);
        pairs(&[("StatusCode", "500")], &mut p);
        let d = DiagnosticEvent::parse(&p).unwrap();
        assert!(d
            .event_name
            .eq_str("Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop"));
        assert_eq!(d.arguments.len(), 1);
        assert!(d
            .arguments
            .get("StatusCode")
            .is_some_and(|v| v.eq_str("500")));
        assert!(d.arguments.get("Path").is_none());
        // A count larger than the strings that follow.
        let n = p.len();
        let cut = &p[..n - 4];
        assert!(DiagnosticEvent::parse(cut).is_err());
    }

    /// The logging payload as .NET 8 writes it, and as .NET 10 does (three activity fields
    /// appended after the arguments: ignored).
    #[test]
    fn log_message_of_net8_and_net10() {
        let mut p = Vec::new();
        p.extend_from_slice(&2i32.to_le_bytes());
        p.extend_from_slice(&1i32.to_le_bytes());
        utf16z("Microsoft.AspNetCore.Routing.EndpointMiddleware", &mut p);
        p.extend_from_slice(&0i32.to_le_bytes());
        utf16z("ExecutingEndpoint", &mut p);
        utf16z("", &mut p);
        utf16z("", &mut p);
        p.extend_from_slice(&0i32.to_le_bytes());
        utf16z("", &mut p);
        pairs(
            &[
                ("EndpointName", "HTTP: GET /sleep"),
                ("{OriginalFormat}", "Executing endpoint '{EndpointName}'"),
            ],
            &mut p,
        );
        let net8 = p.clone();
        for s in ["", "", ""] {
            utf16z(s, &mut p);
        }
        for payload in [&net8, &p] {
            let m = LogMessage::parse(payload).unwrap();
            assert_eq!((m.level, m.factory_id, m.event_id), (2, 1, 0));
            assert!(m.event_name.eq_str("ExecutingEndpoint"));
            assert!(m
                .arguments
                .get("EndpointName")
                .is_some_and(|v| v.eq_str("HTTP: GET /sleep")));
        }
        assert!(LogMessage::parse(&net8[..20]).is_err());
    }
}
