//! The audit log: one JSON line for every request that takes something out of a process —
//! a dump, a heap snapshot, a trace, a counters or logs stream, a profile, reports, stacks,
//! an operation's file — or changes what the agent does (cancelling an operation, reloading
//! the rules). Which routes are audited is said where they are registered (`routes`). A line
//! is written once the response ended, so it says how it ended and how many bytes went:
//!
//! ```json
//! {"time":"2026-11-27T17:40:01.120Z","credential":"key:9f86d081884c","method":"GET",
//!  "route":"/dump","process":4242,"status":200,"outcome":"complete","bytes":2201467,"seconds":1.84}
//! ```
//!
//! `credential` names the caller (see [`crate::auth::Caller`]: a key's hash prefix or a JWT's
//! subject, never the key or the token); `process` is the pid the request worked on (null
//! when it failed before one was known); `outcome` is `complete` (a success whose body was
//! sent whole), `cut` (a success whose body ended early — the client went away, the stream
//! failed, the agent stopped — or a request whose client went away before it was answered:
//! then `status` is null), `refused` (4xx) or `failed` (5xx). The file is created 0600
//! (its folder 0700 when the agent makes it) and only appended to.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::Frame;

use crate::auth::Caller;
use crate::error::AgentError;

/// The audit log's file name in the agent's folder when the config names none.
pub(crate) const DEFAULT_NAME: &str = "audit.jsonl";

/// Where audit lines go.
#[derive(Debug)]
pub(crate) struct AuditLog {
    path: PathBuf,
    /// None: lines are kept in memory (tests).
    file: Option<Mutex<File>>,
    kept: Mutex<Vec<serde_json::Value>>,
}

impl AuditLog {
    /// Opens `path` for appending (created 0600; a missing folder is made 0700).
    pub(crate) fn open(path: &Path) -> Result<AuditLog, AgentError> {
        let fail = |e: std::io::Error| {
            AgentError::Config(format!("the audit log {}: {e}", path.display()))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            clrspy_collect::private::create_private_dir(dir).map_err(fail)?;
        }
        let file = clrspy_collect::private::append_private(path).map_err(fail)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            file: Some(Mutex::new(file)),
            kept: Mutex::new(Vec::new()),
        })
    }

    /// A log that keeps its lines in memory ([`AuditLog::lines`]).
    #[cfg(test)]
    pub(crate) fn in_memory() -> AuditLog {
        AuditLog {
            path: PathBuf::new(),
            file: None,
            kept: Mutex::new(Vec::new()),
        }
    }

    /// The lines written to a log in memory.
    #[cfg(test)]
    pub(crate) fn lines(&self) -> Vec<serde_json::Value> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Appends one line: one `write` of the whole line to a file opened for appending, so
    /// lines of concurrent requests never interleave. A failure to write is said on stderr
    /// (the request it describes has already been answered).
    fn write(&self, line: serde_json::Value) {
        let Some(file) = &self.file else {
            self.kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line);
            return;
        };
        let mut text = line.to_string();
        text.push('\n');
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = f.write_all(text.as_bytes()) {
            eprintln!(
                "clrspy agent: writing the audit log {}: {e}",
                self.path.display()
            );
        }
    }
}

/// The process an audited request worked on, as its handler says it ([`Subject::pid`]); an
/// extractor that never fails (outside an audited route it records nothing).
#[derive(Clone, Debug, Default)]
pub(crate) struct Subject(Arc<Mutex<Option<u32>>>);

impl Subject {
    /// The request works on `pid`.
    pub(crate) fn pid(&self, pid: u32) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(pid);
    }

    fn get(&self) -> Option<u32> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Subject {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Subject, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Subject>()
            .cloned()
            .unwrap_or_default())
    }
}

/// What a line says before the response ended.
struct Pending {
    log: Arc<AuditLog>,
    time: SystemTime,
    started: Instant,
    caller: Option<Caller>,
    method: String,
    route: String,
    subject: Subject,
    /// None until answered.
    status: Option<u16>,
}

impl Pending {
    fn write(&self, bytes: u64, whole: bool) {
        let outcome = match self.status {
            Some(200..=299) if whole => "complete",
            Some(200..=299) | None => "cut",
            Some(400..=499) => "refused",
            Some(_) => "failed",
        };
        let seconds = (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        self.log.write(serde_json::json!({
            "time": clrspy_values::time::rfc3339(self.time),
            "credential": self.caller.as_ref().map(|c| c.0.as_str()),
            "method": self.method,
            "route": self.route,
            "process": self.subject.get(),
            "status": self.status,
            "outcome": outcome,
            "bytes": bytes,
            "seconds": seconds,
        }));
    }
}

/// A request not answered yet: written as cut when dropped so (its client went away while
/// the handler worked: a dump that was being taken is audited too).
struct Unanswered(Option<Pending>);

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            p.write(0, false);
        }
    }
}

/// The middleware of an audited route: lets the handler name its process, and writes the
/// line when the response's body ended (or was dropped before it did, or the request was
/// dropped before it was answered).
pub(crate) async fn record(
    State(log): State<Arc<AuditLog>>,
    mut req: Request,
    next: Next,
) -> Response {
    let subject = Subject::default();
    req.extensions_mut().insert(subject.clone());
    let mut unanswered = Unanswered(Some(Pending {
        log,
        time: SystemTime::now(),
        started: Instant::now(),
        caller: req.extensions().get::<Caller>().cloned(),
        method: req.method().to_string(),
        route: req
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string()),
        subject,
        status: None,
    }));
    let resp = next.run(req).await;
    let (parts, body) = resp.into_parts();
    let pending = unanswered.0.take().map(|p| Pending {
        status: Some(parts.status.as_u16()),
        ..p
    });
    // A body of a stated length (a file streamed) is whole once that many bytes went: the
    // server stops asking for more then, so its end is never seen.
    let length = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    Response::from_parts(
        parts,
        Body::new(Counted {
            inner: body,
            pending,
            bytes: 0,
            length,
        }),
    )
}

/// A response body counting what it sends; the audit line is written when it ends.
struct Counted {
    inner: Body,
    pending: Option<Pending>,
    bytes: u64,
    /// The `Content-Length` the response states.
    length: Option<u64>,
}

impl Counted {
    fn end(&mut self, whole: bool) {
        if let Some(p) = self.pending.take() {
            p.write(self.bytes, whole);
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        // Dropped before its end: the connection went away (or the agent stopped). A body
        // whose last frame was taken is whole even when nobody asked for the end after it.
        let whole = self.inner.is_end_stream() || self.length == Some(self.bytes);
        self.end(whole);
    }
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    self.bytes += d.len() as u64;
                }
                if self.inner.is_end_stream() || self.length == Some(self.bytes) {
                    self.end(true);
                }
            }
            Poll::Ready(Some(Err(_))) => self.end(false),
            Poll::Ready(None) => self.end(true),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
