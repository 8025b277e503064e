//! `GET /metrics`: every visible .NET process's counters and the agent's own figures in
//! Prometheus' text format (0.0.4), from the collector's latest values (no session is opened
//! by a scrape; rendering is quick and runs on a blocking thread all the same).

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;
use crate::params;
use crate::state::AppState;

/// The text format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The area's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

async fn metrics(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<impl IntoResponse, ApiError> {
    params::only(&query, &[])?;
    let collector = state.metrics.clone();
    let text = tokio::task::spawn_blocking(move || collector.render())
        .await
        .map_err(|e| ApiError::internal(format!("rendering the metrics failed: {e}")))?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], text))
}
