//! Live JSON lines: `GET /counters?pid=N&counters=SPEC&interval=1s &duration=..` (one object per
//! reading, as `clrspy counters collect --format jsonl` writes them) and `GET
//! /logs?pid=N&level=Information&filter=SPECS&duration=..` (NDJSON as `clrspy logs --json` writes
//! it, secrets in messages, arguments, scopes and exceptions masked as the bundle masks them). Each
//! session (clrspy-live's; counters with a 1 MB buffer in the target, logs with clrspy-live's 16
//! MB) runs on a blocking thread and writes its lines to a spool the response follows: a slow
//! client never holds the session's pump, and no line is lost. They run until `duration` (at most
//! an hour), the process's end, or the client going away. One of a kind per process,
//! `limits.concurrent.streams` at once.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use clrspy_analysis::counters::{CounterSpec, CounterUpdate};
use clrspy_analysis::log_stream::{LogLevel, LogRecord};
use clrspy_collect::StopSignal;
use clrspy_export::counters::{CounterFormat, CounterWriter};
use clrspy_export::log_text::write_log_json;
use clrspy_live::counters::{CountersOptions, CountersSession};
use clrspy_live::logs::{check_filter, LogUpdate, LogsOptions, LogsSession};
use clrspy_values::redact::{redact_pair, redact_text};
use diagnostics_client::Endpoint;
use tokio::sync::oneshot;

use super::target::target;
use super::trace::{duration, new_spool, respond, Started, MAX_DURATION};
use crate::audit::Subject;
use crate::error::ApiError;
use crate::limits::{spawn_thread, Kind};
use crate::params::Query;
use crate::select::Selector;
use crate::state::AppState;

/// The runtime's buffer for one of these sessions, MB (as the metrics collector's).
const BUFFER_MB: u32 = 1;
/// The longest the response may take to start (attaching).
const START_BOUND: Duration = Duration::from_secs(30);
/// How long the session thread waits for an update before looking at the stop signal.
const TICK: Duration = Duration::from_millis(200);

/// `/counters`' query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CountersQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    counters: Option<String>,
    interval: Option<String>,
    duration: Option<String>,
    #[serde(rename = "durationSeconds")]
    duration_seconds: Option<String>,
}

/// `/logs`' query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LogsQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    level: Option<String>,
    filter: Option<String>,
    duration: Option<String>,
    #[serde(rename = "durationSeconds")]
    duration_seconds: Option<String>,
}

/// The routes: audited, bounded by their own timeout to the response's start (the body runs
/// for its duration).
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![
        super::table::Route::new("/counters")
            .get(counters)
            .bound(START_BOUND)
            .audited(),
        super::table::Route::new("/logs")
            .get(logs)
            .bound(START_BOUND)
            .audited(),
    ]
}

/// A session's lines, written to the spool as they come.
type Session = Box<dyn FnMut(&mut dyn Write, &StopSignal) -> std::io::Result<()> + Send>;

/// What attaches a session (blocking): the loop that writes its lines, or why not.
type Attach = Box<dyn FnOnce(Endpoint, u32) -> Result<Session, ApiError> + Send>;

async fn counters(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<CountersQuery>,
) -> Result<Response, ApiError> {
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let duration = duration(
        q.duration.as_deref(),
        q.duration_seconds.as_deref(),
        None,
        MAX_DURATION,
    )?;
    let spec: CounterSpec = match q.counters.as_deref() {
        None => CounterSpec::default(),
        Some(s) if s.len() <= 4096 && !s.contains("..") && !s.contains('/') => s
            .parse()
            .map_err(|e| ApiError::bad_request(format!("counters: {e}")))?,
        Some(_) => return Err(ApiError::bad_request("counters: not a counter list")),
    };
    let interval = match q.interval.as_deref() {
        None => Duration::from_secs(1),
        Some(s) => match clrspy_values::parse_positive_duration(s) {
            Ok(d) if s.len() <= 16 && d >= Duration::from_secs(1) && d <= MAX_DURATION => d,
            _ => {
                return Err(ApiError::bad_request(
                    "interval is a time like 1s or 5s, 1 s to 1 h",
                ))
            }
        },
    };
    let opts = CountersOptions {
        spec,
        refresh: interval,
        duration: Some(duration.unwrap_or(MAX_DURATION)),
        buffer_mb: BUFFER_MB,
        ..CountersOptions::default()
    };
    let metrics = state.metrics.clone();
    let attach: Attach = Box::new(move |ep, pid| {
        // The runtime's meters go to one session at a time: take them from `/metrics`'
        // session of this process for the stream's life, and feed `/metrics` meanwhile.
        let lease = metrics.lend(pid);
        let session = CountersSession::attach(ep, &opts).map_err(|e| gateway(pid, &e))?;
        let mut said = false;
        Ok(Box::new(move |out, stop| {
            if !std::mem::replace(&mut said, true) {
                for n in session.notes() {
                    note(out, n)?;
                }
            }
            loop {
                if stop.count() > 0 {
                    session.stop();
                }
                match session.next(TICK) {
                    // JSON Lines keep no state between intervals: a writer per update.
                    Ok(CounterUpdate::Rows(rows)) => {
                        if let Some(l) = &lease {
                            l.feed(&rows);
                        }
                        CounterWriter::new(&mut *out, CounterFormat::JsonLines).write_rows(&rows)?
                    }
                    Ok(CounterUpdate::Note(n)) => note(out, &n)?,
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return Ok(()),
                }
            }
        }))
    });
    serve(state, subject, selector, Kind::Counters, attach).await
}

async fn logs(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<LogsQuery>,
) -> Result<Response, ApiError> {
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let duration = duration(
        q.duration.as_deref(),
        q.duration_seconds.as_deref(),
        None,
        MAX_DURATION,
    )?;
    let level = match q.level.as_deref() {
        None => LogLevel::Information,
        Some(s) => LogLevel::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                "level is one of Trace, Debug, Information, Warning, Error, Critical, None",
            )
        })?,
    };
    let filter = match q.filter {
        None => None,
        Some(f) if f.len() <= 4096 && !f.contains("..") && !f.contains('/') => {
            check_filter(&f).map_err(|e| ApiError::bad_request(format!("filter: {e}")))?;
            Some(f)
        }
        Some(_) => return Err(ApiError::bad_request("filter: not a category list")),
    };
    let opts = LogsOptions {
        level,
        filter,
        duration: Some(duration.unwrap_or(MAX_DURATION)),
    };
    let attach: Attach = Box::new(move |ep, pid| {
        let session = LogsSession::attach(ep, &opts).map_err(|e| gateway(pid, &e))?;
        Ok(Box::new(move |out, stop| {
            let mut line = Vec::new();
            loop {
                if stop.count() > 0 {
                    session.stop();
                }
                match session.next(TICK) {
                    Ok(LogUpdate::Record(mut r)) => {
                        redact(&mut r);
                        line.clear();
                        write_log_json(&mut line, &r)?;
                        out.write_all(&line)?;
                    }
                    Ok(LogUpdate::Note(n)) => note(out, &n)?,
                    Ok(LogUpdate::Started) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return Ok(()),
                }
            }
        }))
    });
    serve(state, subject, selector, Kind::Logs, attach).await
}

/// Masks the secrets of a record as the bundle masks logs (clrspy-values' redaction): the
/// message, each argument (by its name and value), the scopes and the exception's text.
fn redact(r: &mut LogRecord) {
    r.message = redact_text(&r.message).0;
    for (k, v) in &mut r.args {
        *v = redact_pair(k, v).0;
    }
    for s in &mut r.scopes {
        *s = redact_text(s).0;
    }
    if let Some(e) = &mut r.exception {
        e.message = redact_text(&e.message).0;
        e.details = redact_text(&e.details).0;
    }
}

/// What the session says once (another tool holds the process's meter session, the session
/// fell behind and skipped events) as a line of its own: `{"note": "..."}`.
fn note(out: &mut dyn Write, text: &str) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(&serde_json::json!({ "note": text }))?;
    line.push(b'\n');
    out.write_all(&line)
}

fn gateway(pid: u32, e: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, format!("pid {pid}: {e}"))
}

/// Admits, attaches on a blocking thread and answers with the body following the spool once
/// the session is on (or with why it is not).
async fn serve(
    state: AppState,
    subject: Subject,
    selector: Selector,
    kind: Kind,
    attach: Attach,
) -> Result<Response, ApiError> {
    let (_, pid) = target(&state, &selector).await?;
    subject.pid(pid);
    let admission = state.limits.admit(kind, Some(pid))?;
    let stop = Arc::new(StopSignal::new());
    // The agent stopping ends the stream: its lines so far are sent, then the body ends.
    state.drain.stream(&stop);
    let (tx, rx) = oneshot::channel();
    let (stop2, folder, ops) = (stop.clone(), state.folder.clone(), state.operations.clone());
    let name = if kind == Kind::Logs {
        "agent-logs"
    } else {
        "agent-counters"
    };
    // Up to an hour of a session: on a thread of its own.
    spawn_thread(name, move || {
        let _admission = admission;
        run(&folder, &ops, pid, kind, attach, &stop2, tx);
    })?;
    respond(rx, stop, "application/x-ndjson", None).await
}

/// The session's thread: attaches, hands the spool over, writes its lines until it ends.
fn run(
    folder: &Path,
    operations: &crate::operations::Operations,
    pid: u32,
    kind: Kind,
    attach: Attach,
    stop: &StopSignal,
    started: Started,
) {
    // Resolved (a uid or name) to its pid before: looked up by pid here.
    let ep = match Selector::Pid(pid).resolve() {
        Ok(ep) => ep,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let what = if kind == Kind::Logs {
        "logs"
    } else {
        "counters"
    };
    let spool = match new_spool(folder, operations, what, pid, "jsonl", 0) {
        Ok(s) => s,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let writer = spool.writer();
    let file = std::fs::OpenOptions::new().append(true).open(writer.path());
    let mut file = match file {
        Ok(f) => f,
        Err(e) => {
            let _ = started.send(Err(ApiError::internal(format!("the spool: {e}"))));
            return;
        }
    };
    let mut session = match attach(ep, pid) {
        Ok(s) => s,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    if started.send(Ok(spool)).is_err() {
        // The request is gone already.
        stop.request();
    }
    match session(&mut file, stop) {
        Ok(()) => writer.done(),
        Err(e) => {
            // The spool failed (the disk is full): end the session, cut the body.
            stop.request();
            let _ = session(&mut std::io::sink(), stop);
            writer.failed(format!("writing the stream: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_analysis::log_stream::LogException;

    #[test]
    fn secrets_in_a_record_are_masked() {
        let mut r = LogRecord {
            unix_ns: 0,
            level: LogLevel::Information,
            category: "Shop".into(),
            event_id: 1,
            event_name: String::new(),
            message: "connecting with Password=hunter2;Server=db".into(),
            args: vec![
                ("ApiKey".into(), "abc123".into()),
                ("Order".into(), "42".into()),
            ],
            exception: Some(LogException {
                type_name: "E".into(),
                message: "Password=hunter2;".into(),
                hresult: "0".into(),
                details: "at x Password=hunter2;".into(),
            }),
            scopes: vec!["Password=hunter2;".into()],
            thread_id: 1,
        };
        redact(&mut r);
        let mut line = Vec::new();
        write_log_json(&mut line, &r).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("abc123"), "{text}");
        assert!(text.contains("42") && text.contains("Server=db"), "{text}");
    }
}
