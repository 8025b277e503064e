//! `GET /trace?pid=N&duration=30s&profile=cpu|providers=SPEC` and `POST /trace?pid=N&duration=30s`
//! with dotnet-monitor's provider body: a .nettrace streamed as it is recorded. The recording runs
//! as `clrspy record` runs one (clrspy-live's recording, with thread CPU readings) on a blocking
//! thread into a spool in the agent's folder; the response follows the spool (a slow client never
//! holds the recording up) and ends when the recording finished (rundown included) and every byte
//! was sent. A client that goes away stops the recording. One trace per process,
//! `limits.concurrent.traces` at once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use clr_events::provider_spec::{self, ProviderSpec};
use clrspy_collect::{ChildOutput, Resolved, RunObserver, Started as CollectStarted, StopSignal};
use clrspy_live::recording::{Extras, RunSpec};
use diagnostics_client::{Endpoint, Provider, SessionConfig, DEFAULT_RUNDOWN_KEYWORD};
use serde::Deserialize;
use tokio::sync::oneshot;

use crate::audit::Subject;
use crate::error::ApiError;
use crate::limits::{spawn_thread, Kind};
use crate::operations::Operations;
use crate::params::{self, Query};
use crate::select::Selector;
use crate::spool::{self, Spool};
use crate::state::AppState;

/// The longest a stream may be asked to run.
pub(super) const MAX_DURATION: Duration = Duration::from_secs(3600);
/// A trace's length when the request names none (as dotnet-monitor).
const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// The runtime's buffer for a trace when the request names none, MB.
const DEFAULT_BUFFER_MB: u32 = 256;
/// The largest buffer a request may ask for, MB (the runtime allocates it in the target).
const MAX_BUFFER_MB: u32 = 1024;
/// The most providers a request may enable.
const MAX_PROVIDERS: usize = 64;
/// The longest the response may take to start (attaching); the body has its own end.
const START_BOUND: Duration = Duration::from_secs(60);
/// The provisional end-of-stream marker a trace file carries (NetTrace 6: 4 bytes).
const MARKER_BYTES: u64 = 4;

/// `GET /trace`'s query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GetQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    duration: Option<String>,
    #[serde(rename = "durationSeconds")]
    duration_seconds: Option<String>,
    profile: Option<String>,
    providers: Option<String>,
    buffer_mb: Option<String>,
}

/// `POST /trace`'s query (the providers come in the body).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PostQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    duration: Option<String>,
    #[serde(rename = "durationSeconds")]
    duration_seconds: Option<String>,
    buffer_mb: Option<String>,
}

/// The route: audited, bounded by its own timeout to the response's start (the body runs
/// for its duration).
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![super::table::Route::new("/trace")
        .get(get_trace)
        .post(post_trace)
        .bound(START_BOUND)
        .audited()]
}

/// `duration`: the house syntax (`30s`, `2m`, `1h`), more than 0 and at most `max`; or, as
/// dotnet-monitor takes it, `durationSeconds` (whole seconds, -1 for as long as allowed).
pub(super) fn duration(
    duration: Option<&str>,
    seconds: Option<&str>,
    default: Option<Duration>,
    max: Duration,
) -> Result<Option<Duration>, ApiError> {
    let bad = || {
        ApiError::bad_request(format!(
            "duration is a time like 30s, 2m or 1h (or durationSeconds a whole number), at most {} s",
            max.as_secs()
        ))
    };
    match (duration, seconds) {
        (None, None) => Ok(default),
        (Some(_), Some(_)) => Err(bad()),
        (None, Some("-1")) => Ok(Some(max)),
        (None, Some(s)) => match s.parse::<u64>() {
            Ok(n) if s.len() <= 5 && n > 0 && n <= max.as_secs() => {
                Ok(Some(Duration::from_secs(n)))
            }
            _ => Err(bad()),
        },
        (Some(s), None) => {
            if s.len() > 16 {
                return Err(bad());
            }
            match clrspy_values::parse_positive_duration(s) {
                Ok(d) if d <= max => Ok(Some(d)),
                _ => Err(bad()),
            }
        }
    }
}

/// `buffer_mb`: 1 to [`MAX_BUFFER_MB`].
fn buffer_mb(s: Option<&str>) -> Result<Option<u32>, ApiError> {
    let Some(s) = s else { return Ok(None) };
    match s.parse::<u32>() {
        Ok(n) if s.len() <= 4 && (1..=MAX_BUFFER_MB).contains(&n) => Ok(Some(n)),
        _ => Err(ApiError::bad_request(format!(
            "buffer_mb must be a whole number from 1 to {MAX_BUFFER_MB}"
        ))),
    }
}

/// Adds `p`, replacing a provider of the same name.
fn merge(into: &mut Vec<ProviderSpec>, p: ProviderSpec) {
    into.retain(|q| !q.name.eq_ignore_ascii_case(&p.name));
    into.push(p);
}

/// The providers of `profile` (names of `clrspy record --list-profiles`, comma-joined) and
/// `providers` (dotnet-trace's syntax), later ones replacing earlier; neither: `cpu`.
fn query_providers(
    profile: Option<&str>,
    providers: Option<&str>,
) -> Result<Vec<ProviderSpec>, ApiError> {
    let bad = |e: String| ApiError::bad_request(e);
    let mut out = Vec::new();
    if let Some(names) = profile {
        for name in names.split(',').map(str::trim) {
            params::name(name)?;
            for p in provider_spec::resolve(Some(name), None, None, None).map_err(bad)? {
                merge(&mut out, p);
            }
        }
    }
    if let Some(list) = providers {
        for p in provider_spec::resolve(None, Some(list), None, None).map_err(bad)? {
            merge(&mut out, p);
        }
    }
    if out.is_empty() {
        out = provider_spec::resolve(Some("cpu"), None, None, None).map_err(bad)?;
    }
    Ok(out)
}

/// Provider names are names, never paths; and not too many of them.
fn check_providers(providers: &[ProviderSpec]) -> Result<(), ApiError> {
    if providers.len() > MAX_PROVIDERS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_PROVIDERS} providers"
        )));
    }
    for p in providers {
        params::name(&p.name)?;
        if p.arguments.as_ref().is_some_and(|a| a.len() > 4096) {
            return Err(ApiError::bad_request("a provider's arguments are too long"));
        }
    }
    Ok(())
}

/// dotnet-monitor's `POST /trace` body (`EventPipeConfiguration`), names as it takes them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MonitorBody {
    #[serde(rename = "Providers", alias = "providers")]
    providers: Vec<MonitorProvider>,
    #[serde(rename = "RequestRundown", alias = "requestRundown", default = "yes")]
    request_rundown: bool,
    #[serde(rename = "BufferSizeInMB", alias = "bufferSizeInMB", default)]
    buffer_size_in_mb: Option<u32>,
}

fn yes() -> bool {
    true
}

/// One provider of [`MonitorBody`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MonitorProvider {
    #[serde(rename = "Name", alias = "name")]
    name: String,
    /// Hex (`0x...`) as dotnet-monitor writes it, or a number; absent: all.
    #[serde(rename = "Keywords", alias = "keywords", default)]
    keywords: Option<serde_json::Value>,
    /// A level name (`Verbose`, `Informational`, ...) or 0-5; absent: Verbose.
    #[serde(rename = "EventLevel", alias = "eventLevel", default)]
    event_level: Option<serde_json::Value>,
    #[serde(rename = "Arguments", alias = "arguments", default)]
    arguments: Option<HashMap<String, String>>,
}

impl MonitorProvider {
    /// As a dotnet-trace spec's parts, checked by the same parser.
    fn spec(&self) -> Result<ProviderSpec, ApiError> {
        let keywords = match &self.keywords {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => match n.as_u64() {
                Some(v) => format!("0x{v:x}"),
                None => return Err(ApiError::bad_request("Keywords: not a 64-bit mask")),
            },
            Some(_) => return Err(ApiError::bad_request("Keywords: a string or a number")),
        };
        let level = match &self.event_level {
            None | Some(serde_json::Value::Null) => "5".to_string(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(_) => return Err(ApiError::bad_request("EventLevel: a name or 0-5")),
        };
        params::name(&self.name)?;
        if keywords.contains(':') || level.contains(':') {
            return Err(ApiError::bad_request("Keywords and EventLevel hold no ':'"));
        }
        let mut p = provider_spec::parse_provider(&format!("{}:{keywords}:{level}", self.name))
            .map_err(ApiError::bad_request)?;
        if let Some(args) = &self.arguments {
            let mut pairs: Vec<(&String, &String)> = args.iter().collect();
            pairs.sort();
            let mut text = Vec::new();
            for (k, v) in pairs {
                if k.is_empty() || k.contains(['=', ';', '"']) || v.contains('"') {
                    return Err(ApiError::bad_request(format!(
                        "argument {k:?}: a key has no '=', ';' or '\"', a value no '\"'"
                    )));
                }
                // Quoted where EventPipe would otherwise split it.
                if v.contains([';', '=']) {
                    text.push(format!("{k}=\"{v}\""));
                } else {
                    text.push(format!("{k}={v}"));
                }
            }
            p.arguments = (!text.is_empty()).then(|| text.join(";"));
        }
        Ok(p)
    }
}

/// What a trace request asks for, checked.
struct TraceAsk {
    providers: Vec<ProviderSpec>,
    duration: Duration,
    buffer_mb: u32,
    rundown: bool,
}

async fn get_trace(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<GetQuery>,
) -> Result<Response, ApiError> {
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let duration = duration(
        q.duration.as_deref(),
        q.duration_seconds.as_deref(),
        Some(DEFAULT_DURATION),
        MAX_DURATION,
    )?
    .unwrap_or(DEFAULT_DURATION);
    let buffer = buffer_mb(q.buffer_mb.as_deref())?;
    let providers = query_providers(q.profile.as_deref(), q.providers.as_deref())?;
    check_providers(&providers)?;
    let ask = TraceAsk {
        providers,
        duration,
        buffer_mb: buffer.unwrap_or(DEFAULT_BUFFER_MB),
        rundown: true,
    };
    start(state, subject, selector, ask).await
}

async fn post_trace(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<PostQuery>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let duration = duration(
        q.duration.as_deref(),
        q.duration_seconds.as_deref(),
        Some(DEFAULT_DURATION),
        MAX_DURATION,
    )?
    .unwrap_or(DEFAULT_DURATION);
    let buffer = buffer_mb(q.buffer_mb.as_deref())?;
    let b: MonitorBody = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body: {e}")))?;
    if b.providers.is_empty() {
        return Err(ApiError::bad_request("the body names no provider"));
    }
    let mut providers = Vec::new();
    for p in &b.providers {
        merge(&mut providers, p.spec()?);
    }
    check_providers(&providers)?;
    let from_body = match b.buffer_size_in_mb {
        Some(n) => buffer_mb(Some(&n.to_string()))?,
        None => None,
    };
    let ask = TraceAsk {
        providers,
        duration,
        buffer_mb: buffer.or(from_body).unwrap_or(DEFAULT_BUFFER_MB),
        rundown: b.request_rundown,
    };
    start(state, subject, selector, ask).await
}

/// A spool in the agent's folder (blocking: the folder is measured), its budget what the
/// agent's disk budget (held by `operations`) still has room for (none: 507).
pub(super) fn new_spool(
    folder: &Path,
    operations: &Operations,
    kind: &str,
    pid: u32,
    ext: &str,
    hold_back: u64,
) -> Result<Spool, ApiError> {
    let room = operations.spool_room()?;
    Spool::create(folder, &spool::name(kind, pid, ext), hold_back, room)
        .map_err(|e| ApiError::internal(format!("the agent's folder: {e}")))
}

/// What the session's thread hands the handler once it started: the spool to follow, or why
/// there is none.
pub(super) type Started = oneshot::Sender<Result<Spool, ApiError>>;

/// Says once that the recording started (handing over the spool) or why it could not.
struct Starting {
    tx: Option<Started>,
    spool: Option<Spool>,
}

impl Starting {
    fn fail(&mut self, e: ApiError) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err(e));
        }
    }
}

impl RunObserver for Starting {
    fn started(&mut self, _what: CollectStarted<'_>) {
        if let (Some(tx), Some(spool)) = (self.tx.take(), self.spool.take()) {
            let _ = tx.send(Ok(spool));
        }
    }
}

/// Answers with the body following the spool once the session's thread handed it over.
pub(super) async fn respond(
    rx: oneshot::Receiver<Result<Spool, ApiError>>,
    stop: Arc<StopSignal>,
    content_type: &'static str,
    disposition: Option<String>,
) -> Result<Response, ApiError> {
    let spool = match rx.await {
        Ok(r) => r?,
        Err(_) => return Err(ApiError::internal("the session ended before it started")),
    };
    let mut resp = Body::new(spool.follow(stop)).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(v) = disposition.and_then(|d| HeaderValue::from_str(&d).ok()) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

async fn start(
    state: AppState,
    subject: Subject,
    selector: Selector,
    ask: TraceAsk,
) -> Result<Response, ApiError> {
    let (endpoint, pid) = super::target::target(&state, &selector).await?;
    subject.pid(pid);
    let admission = state.limits.admit(Kind::Trace, Some(pid))?;
    let stop = Arc::new(StopSignal::new());
    // The agent stopping ends the recording as Ctrl+C does: with its rundown, whole.
    state.drain.stream(&stop);
    let (tx, rx) = oneshot::channel();
    let (stop2, folder, ops) = (stop.clone(), state.folder.clone(), state.operations.clone());
    // Up to an hour of recording: on a thread of its own.
    spawn_thread("agent-trace", move || {
        let _admission = admission;
        record(&folder, &ops, endpoint, pid, ask, &stop2, tx);
    })?;
    let filename = format!(
        "attachment; filename=\"{pid}-{}.nettrace\"",
        clrspy_values::time::file_stamp(std::time::SystemTime::now()).replace('_', "-")
    );
    respond(rx, stop, "application/octet-stream", Some(filename)).await
}

/// Records into a spool (blocking), handing it over through `started` once recording.
fn record(
    folder: &Path,
    operations: &Operations,
    endpoint: Option<Endpoint>,
    pid: u32,
    ask: TraceAsk,
    stop: &StopSignal,
    started: Started,
) {
    let mut starting = Starting {
        tx: Some(started),
        spool: None,
    };
    let gateway = |e: &dyn std::fmt::Display| {
        ApiError::new(StatusCode::BAD_GATEWAY, format!("pid {pid}: {e}"))
    };
    let endpoint = match endpoint.map_or_else(|| Selector::Pid(pid).resolve(), Ok) {
        Ok(ep) => ep,
        Err(e) => return starting.fail(e),
    };
    let spool = match new_spool(folder, operations, "trace", pid, "nettrace", MARKER_BYTES) {
        Ok(s) => s,
        Err(e) => return starting.fail(e),
    };
    let writer = spool.writer();
    starting.spool = Some(spool);
    let config = SessionConfig {
        circular_buffer_mb: ask.buffer_mb,
        rundown_keyword: if ask.rundown {
            DEFAULT_RUNDOWN_KEYWORD
        } else {
            0
        },
        providers: ask
            .providers
            .into_iter()
            .map(clrspy_collect::session_provider)
            .collect::<Vec<Provider>>(),
        ..SessionConfig::default()
    };
    let target = Resolved::Attach {
        endpoint,
        label: format!("pid {pid}"),
    };
    let mut extras = Extras::default();
    let prepared = match extras.prepare(&target, &config, Box::new(|_| {}), &mut |_| {}) {
        Ok(p) => p,
        Err(e) => return starting.fail(gateway(&e)),
    };
    let spec = RunSpec {
        output: Some(writer.path().to_path_buf()),
        duration: Some(ask.duration),
        thread_cpu: Some(clrspy_collect::procstat::THREAD_CPU_INTERVAL),
        stop,
        child_stdout: ChildOutput::Inherit,
    };
    let outcome = prepared.run(target, spec, &mut starting);
    extras.finish();
    match outcome {
        Ok(_) => writer.done(),
        Err(e) => {
            starting.fail(gateway(&e));
            writer.failed(format!("recording pid {pid}: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_the_house_syntax_and_bounded() {
        let max = MAX_DURATION;
        let d = |s: &str| duration(Some(s), None, None, max);
        assert_eq!(duration(None, None, None, max).unwrap(), None);
        assert_eq!(d("3s").unwrap(), Some(Duration::from_secs(3)));
        assert_eq!(d("1h").unwrap(), Some(max));
        for bad in ["", "0s", "61m", "2h", "soon", "-1s", "../1s", "/etc/passwd"] {
            assert_eq!(d(bad).unwrap_err().status, 400, "{bad:?}");
        }
        // dotnet-monitor's spelling.
        let secs = |s: &str| duration(None, Some(s), None, max);
        assert_eq!(secs("60").unwrap(), Some(Duration::from_secs(60)));
        assert_eq!(secs("-1").unwrap(), Some(max));
        for bad in ["0", "3601", "-2", "1s", "..", "99999999"] {
            assert_eq!(secs(bad).unwrap_err().status, 400, "{bad:?}");
        }
        let both = duration(Some("1s"), Some("1"), None, max);
        assert_eq!(both.unwrap_err().status, 400);
    }

    #[test]
    fn profiles_and_providers_resolve_or_are_400() {
        let cpu = query_providers(Some("cpu"), None).unwrap();
        assert!(!cpu.is_empty());
        assert_eq!(query_providers(None, None).unwrap(), cpu);
        let both = query_providers(Some("cpu,gc-verbose"), None).unwrap();
        assert!(both.len() >= cpu.len());
        let p = query_providers(None, Some("Microsoft-Windows-DotNETRuntime:0x1:4")).unwrap();
        assert_eq!((p[0].keywords, p[0].level), (1, 4));
        for bad in ["nope", "../cpu", "/etc/passwd", "cpu,"] {
            let e = query_providers(Some(bad), None).unwrap_err();
            assert_eq!(e.status, 400, "{bad:?}");
        }
        let traversal = query_providers(None, Some("../../x:0x1:4")).unwrap();
        assert_eq!(check_providers(&traversal).unwrap_err().status, 400);
        assert_eq!(buffer_mb(Some("0")).unwrap_err().status, 400);
        assert_eq!(buffer_mb(Some("2048")).unwrap_err().status, 400);
        assert_eq!(buffer_mb(Some("..")).unwrap_err().status, 400);
        assert_eq!(buffer_mb(Some("16")).unwrap(), Some(16));
    }

    #[test]
    fn dotnet_monitors_body_is_taken() {
        let body = r#"{"Providers":[
            {"Name":"Microsoft-DotNETCore-SampleProfiler","EventLevel":"Informational"},
            {"Name":"Microsoft-Windows-DotNETRuntime","Keywords":"0x8001","EventLevel":4},
            {"Name":"System.Runtime","Arguments":{"EventCounterIntervalSec":"1"}}],
            "RequestRundown":false,"BufferSizeInMB":32}"#;
        let b: MonitorBody = serde_json::from_str(body).unwrap();
        assert!(!b.request_rundown);
        assert_eq!(b.buffer_size_in_mb, Some(32));
        let specs: Vec<ProviderSpec> = b.providers.iter().map(|p| p.spec().unwrap()).collect();
        assert_eq!((specs[0].keywords, specs[0].level), (u64::MAX, 4));
        assert_eq!((specs[1].keywords, specs[1].level), (0x8001, 4));
        assert_eq!(specs[2].level, 5);
        assert_eq!(
            specs[2].arguments.as_deref(),
            Some("EventCounterIntervalSec=1")
        );
        for bad in [
            r#"{"Providers":[{"Name":"../x"}]}"#,
            r#"{"Providers":[{"Name":"A","EventLevel":"Loud"}]}"#,
            r#"{"Providers":[{"Name":"A","Keywords":"0x1:5"}]}"#,
            r#"{"Providers":[{"Name":"A","Arguments":{"a":"\""}}]}"#,
        ] {
            let b: MonitorBody = serde_json::from_str(bad).unwrap();
            assert_eq!(b.providers[0].spec().unwrap_err().status, 400, "{bad}");
        }
        assert!(serde_json::from_str::<MonitorBody>(r#"{"Providers":[],"Other":1}"#).is_err());
    }
}
