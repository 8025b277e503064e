//! `GET /stacks?pid=N` (or `uid=COOKIE`, `name=NAME`): every thread's managed stack now, as
//! `clrspy stack --json` writes it (clrspy-live's `take_stacks`, clrspy-export's
//! `thread_stacks`). One snapshot per process at a time; the session runs on a blocking thread
//! and is bounded below the request timeout.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use clrspy_export::thread_stacks;
use clrspy_live::stack::{take_stacks, StackOptions};
use serde_json::Value;

use crate::audit::Subject;
use crate::error::ApiError;
use crate::limits::{blocking, Kind};
use crate::params::Query;
use crate::select::Selector;
use crate::state::AppState;

/// The area's routes.
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![super::table::Route::new("/stacks").get(stacks).audited()]
}

/// `/stacks`' query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StacksQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
}

async fn stacks(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<StacksQuery>,
) -> Result<Json<Value>, ApiError> {
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let (endpoint, pid) = super::target::target(&state, &selector).await?;
    subject.pid(pid);
    let admission = state.limits.admit(Kind::Stacks, Some(pid))?;
    let defaults = StackOptions::default();
    // Leave the request a second to answer with what was taken.
    let bound = state
        .request_timeout
        .saturating_sub(Duration::from_secs(1))
        .clamp(Duration::from_secs(1), defaults.timeout);
    let opts = StackOptions {
        timeout: bound,
        ..defaults
    };
    let (snap, report) = blocking(admission, move || {
        let ep = match endpoint {
            Some(ep) => ep,
            None => selector.resolve()?,
        };
        take_stacks(&ep, &opts).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("taking the stacks of pid {pid}: {e}"),
            )
        })
    })
    .await??;
    let mut v = thread_stacks::to_json(&snap);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "session_ms".into(),
            Value::from(report.elapsed.as_millis() as u64),
        );
        o.insert(
            "sampled_after_ms".into(),
            report
                .sampled_after
                .map_or(Value::Null, |d| (d.as_millis() as u64).into()),
        );
    }
    Ok(Json(v))
}
