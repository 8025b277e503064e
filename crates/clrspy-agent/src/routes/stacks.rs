//! `GET /stacks?pid=N`: every thread's managed stack now, as `clrspy stack --json` writes it
//! (clrspy-live's `take_stacks`, clrspy-export's `thread_stacks`). One snapshot per process at
//! a time; the session runs on a blocking thread and is bounded below the request timeout.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use clrspy_export::thread_stacks;
use clrspy_live::stack::{take_stacks, StackOptions};
use serde_json::Value;

use crate::error::ApiError;
use crate::limits::{blocking, Kind};
use crate::params;
use crate::routes::processes::endpoint_of;
use crate::state::AppState;

/// The area's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/stacks", get(stacks))
}

async fn stacks(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    params::only(&query, &["pid"])?;
    let pid = params::required_pid(&query)?;
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
    let taken = blocking(admission, move || {
        endpoint_of(pid).map(|ep| take_stacks(&ep, &opts))
    })
    .await?;
    let (snap, report) = taken
        .ok_or_else(|| ApiError::not_found(format!("no .NET process with pid {pid} is visible")))?
        .map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("taking the stacks of pid {pid}: {e}"),
            )
        })?;
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
