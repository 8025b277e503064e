//! `GET /stacks?pid=N` (or `uid=COOKIE`, `name=NAME`): every thread's managed stack now, as
//! `clrspy stack --json` writes it (clrspy-live's `take_stacks`, clrspy-export's
//! `thread_stacks`). One snapshot per process at a time; the session runs on a blocking thread
//! and is bounded below the request timeout.

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
use crate::select::{self, Selector};
use crate::state::AppState;

/// The area's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/stacks", get(stacks))
}

async fn stacks(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    params::only(&query, &select::KEYS)?;
    let selector = Selector::from_query(&query)?;
    let (endpoint, pid) = super::target::target(&state, &selector).await?;
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
