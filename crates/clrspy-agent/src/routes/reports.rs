//! `GET /reports?pid=N|uid=U|name=X&kind=K[,K]&seconds=S`: a few seconds of the process recorded
//! with what the reports need, analysed, and answered as `{"pid": .., "seconds": .., "reports":
//! {"cpu": {..}, ..}}` — each report's JSON as `clrspy report TRACE KIND --json` writes it. The
//! kinds are the report registry's (unknown: 400 listing them; absent: `summary`); `seconds`
//! defaults to 10, at most 300. Recording runs on a blocking thread under the `profiles` limit
//! (shared with the pprof pulls), one `/reports` per process at a time; a client that goes away
//! stops it. Like the pprof routes it carries its own time bound instead of the request timeout.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::Json;
use clrspy_collect::StopSignal;
use serde_json::{json, Value};

use crate::audit::Subject;
use crate::error::ApiError;
use crate::limits::{on_thread, Kind};
use crate::params::Query;
use crate::pull::MAX_SECONDS;
use crate::report_pull::{self, ReportPull};
use crate::select::Selector;
use crate::state::AppState;

/// What a request may take beyond its seconds (attaching, the rundown, the analysis).
const MARGIN: Duration = Duration::from_secs(60);

/// The route: audited, bounded by [`BOUND`].
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![super::table::Route::new("/reports")
        .get(reports)
        .bound(BOUND)
        .audited()]
}

/// How long a request of these routes may take (instead of the request timeout).
const BOUND: Duration = Duration::from_secs(MAX_SECONDS).saturating_add(MARGIN);

/// The route's query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportsQuery {
    kind: Option<String>,
    seconds: Option<String>,
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
}

/// Asks the recording to stop when dropped (the client went away, or the work is over).
struct StopOnDrop(Arc<StopSignal>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.request();
    }
}

async fn reports(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<ReportsQuery>,
) -> Result<Json<Value>, ApiError> {
    let kinds = report_pull::kinds(q.kind.as_deref())?;
    let seconds = report_pull::seconds(q.seconds.as_deref())?;
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let (endpoint, pid) = super::target::target(&state, &selector).await?;
    subject.pid(pid);
    let admission = state.limits.admit(Kind::Reports, Some(pid))?;
    let stop = Arc::new(StopSignal::new());
    let _stop_when_gone = StopOnDrop(stop.clone());
    let folder = state.folder.clone();
    // Seconds to minutes of recording, then the analysis: on a thread of its own.
    let reports = on_thread("agent-reports", admission, move || {
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
