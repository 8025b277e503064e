//! `GET /health`: the one route open without credentials — says the agent is up, and its
//! version.

use axum::Json;
use serde_json::{json, Value};

/// `{"status":"ok","version":...}`.
pub async fn health() -> Json<Value> {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}
