//! OWNER: rules. `GET /reports?pid=N|uid=U|name=X&kind=K[,K]&seconds=S`: a few seconds of
//! the process recorded with what the reports need, analysed, and answered as
//! `{"pid": .., "seconds": .., "reports": {"cpu": {..}, ..}}` — each report's JSON as `clrspy
//! report TRACE KIND --json` writes it. The kinds are the report registry's (unknown: 400
//! listing them; absent: `summary`); `seconds` defaults to 10, at most 300. Recording runs on
//! a blocking thread under the `profiles` limit (shared with the pprof pulls), one `/reports`
//! per process at a time; a client that goes away stops it. Like the pprof routes it carries
//! its own time bound instead of the request timeout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use clrspy_collect::StopSignal;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::limits::{blocking, Kind};
use crate::params;
use crate::pull::MAX_SECONDS;
use crate::report_pull::{self, ReportPull};
use crate::select::Selector;
use crate::state::AppState;

/// What a request may take beyond its seconds (attaching, the rundown, the analysis).
const MARGIN: Duration = Duration::from_secs(60);

/// The query keys the route takes.
const KEYS: [&str; 5] = ["kind", "seconds", "pid", "uid", "name"];

/// The route (behind the same authentication as the others, bounded by [`BOUND`]).
pub fn routes() -> Router<AppState> {
    Router::new().route("/reports", get(reports))
}

/// How long a request of these routes may take (instead of the request timeout).
pub const BOUND: Duration = Duration::from_secs(MAX_SECONDS).saturating_add(MARGIN);

/// Asks the recording to stop when dropped (the client went away, or the work is over).
struct StopOnDrop(Arc<StopSignal>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.request();
    }
}

async fn reports(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    params::only(&query, &KEYS)?;
    let kinds = report_pull::kinds(query.get("kind").map(String::as_str))?;
    let seconds = report_pull::seconds(query.get("seconds").map(String::as_str))?;
    let selector = Selector::from_query(&query)?;
    let (endpoint, pid) = super::target::target(&state, &selector).await?;
    let admission = state.limits.admit(Kind::Reports, Some(pid))?;
    let stop = Arc::new(StopSignal::new());
    let _stop_when_gone = StopOnDrop(stop.clone());
    let folder = state.folder.clone();
    let reports = blocking(admission, move || {
        let endpoint = match endpoint {
            Some(ep) => ep,
            None => Selector::Pid(pid).resolve()?,
        };
        report_pull::reports(ReportPull {
            kinds,
            endpoint,
            duration: Duration::from_secs(seconds),
            folder: &folder,
            stop: &stop,
        })
    })
    .await??
    .ok_or_else(|| ApiError::internal("the recording was stopped"))?;
    Ok(Json(
        json!({ "pid": pid, "seconds": seconds, "reports": reports }),
    ))
}
