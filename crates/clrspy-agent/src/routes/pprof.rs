//! The continuous-profiling pull routes Go programs serve and Pyroscope, Parca and Grafana Alloy
//! scrape: `GET /debug/pprof/profile?seconds=N` (CPU) and `GET /debug/pprof/allocs?seconds=N`
//! (allocations), gzip pprof as `application/octet-stream`. The process is `pid` (or `uid`,
//! `name`), or the only .NET process visible. Recording runs on a blocking thread under the
//! `profiles` limit, one pull of a kind per process; a client that goes away stops it. These routes
//! record for up to [`MAX_SECONDS`] s, so they carry their own time bound instead of the request
//! timeout.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use clrspy_collect::StopSignal;
use diagnostics_client::{find_endpoints, Endpoint};

use crate::audit::Subject;
use crate::error::ApiError;
use crate::limits::{blocking, on_thread, Kind};
use crate::params::Query;
use crate::pull::{self, Pull, PullKind, MAX_SECONDS};
use crate::select::Selector;
use crate::state::AppState;

/// What a pull may take beyond its seconds (attaching, the rundown, reading the trace).
const MARGIN: Duration = Duration::from_secs(60);

/// The routes: audited, bounded by [`BOUND`].
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![
        super::table::Route::new("/debug/pprof/profile")
            .get(profile)
            .bound(BOUND)
            .audited(),
        super::table::Route::new("/debug/pprof/allocs")
            .get(allocs)
            .bound(BOUND)
            .audited(),
    ]
}

/// How long a request of these routes may take (instead of the request timeout).
const BOUND: Duration = Duration::from_secs(MAX_SECONDS).saturating_add(MARGIN);

/// The routes' query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PullQuery {
    seconds: Option<String>,
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
}

async fn profile(
    State(state): State<AppState>,
    subject: Subject,
    Query(query): Query<PullQuery>,
) -> Result<Response, ApiError> {
    serve(state, subject, query, PullKind::Cpu).await
}

async fn allocs(
    State(state): State<AppState>,
    subject: Subject,
    Query(query): Query<PullQuery>,
) -> Result<Response, ApiError> {
    serve(state, subject, query, PullKind::Allocs).await
}

/// Asks the recording to stop when dropped: the request's future is dropped when its client
/// goes away (and after the work, when stopping is a no-op).
struct StopOnDrop(Arc<StopSignal>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.request();
    }
}

/// The only .NET process visible (none: 404; several: 400 naming them).
fn only_process() -> Result<Endpoint, ApiError> {
    let mut all = find_endpoints();
    match all.len() {
        0 => Err(ApiError::not_found("no .NET process is visible")),
        1 => Ok(all.remove(0)),
        n => {
            all.sort_by_key(|e| e.pid);
            let pids: Vec<String> = all.iter().map(|e| e.pid.to_string()).collect();
            Err(ApiError::bad_request(format!(
                "{n} .NET processes are visible (pids {}); name one with pid=N",
                pids.join(", ")
            )))
        }
    }
}

async fn serve(
    state: AppState,
    subject: Subject,
    query: PullQuery,
    kind: PullKind,
) -> Result<Response, ApiError> {
    let seconds = pull::seconds(query.seconds.as_deref())?;
    let selector = Selector::maybe(
        query.pid.as_deref(),
        query.uid.as_deref(),
        query.name.as_deref(),
    )?;
    // A pid is looked up with the recording; anything else is resolved first, as a listing.
    let endpoint = match selector.as_ref().and_then(Selector::pid) {
        Some(_) => None,
        None => {
            let admission = state.limits.admit(Kind::Processes, None)?;
            let s = selector.clone();
            Some(
                blocking(admission, move || match s {
                    Some(s) => s.resolve(),
                    None => only_process(),
                })
                .await??,
            )
        }
    };
    let pid = match (&endpoint, selector.as_ref().and_then(Selector::pid)) {
        (Some(ep), _) => ep.pid,
        (None, Some(pid)) => pid,
        (None, None) => return Err(ApiError::internal("no process resolved")),
    };
    subject.pid(pid);
    let limit = match kind {
        PullKind::Cpu => Kind::Profile,
        PullKind::Allocs => Kind::Allocs,
    };
    let admission = state.limits.admit(limit, Some(pid))?;
    let stop = Arc::new(StopSignal::new());
    let _stop_when_gone = StopOnDrop(stop.clone());
    let folder = state.folder.clone();
    // Minutes of recording: on a thread of its own, not one of the runtime's blocking ones.
    let bytes = on_thread("agent-pprof", admission, move || {
        let endpoint = match endpoint {
            Some(ep) => ep,
            None => Selector::Pid(pid).resolve()?,
        };
        pull::pull(&Pull {
            kind,
            endpoint,
            duration: Duration::from_secs(seconds),
            folder: &folder,
            stop: &stop,
        })
    })
    .await??
    .ok_or_else(|| ApiError::internal("the recording was stopped"))?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (
                header::CONTENT_DISPOSITION,
                match kind {
                    PullKind::Cpu => "attachment; filename=\"profile\"",
                    PullKind::Allocs => "attachment; filename=\"allocs\"",
                },
            ),
        ],
        bytes,
    )
        .into_response())
}
