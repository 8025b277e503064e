//! `GET /health`: the one route open without credentials (it is in
//! [`crate::auth::PUBLIC`]) — says the agent is up, and its version.

use axum::Json;
use serde_json::{json, Value};

use super::table::Route;

/// The area's routes.
pub(super) fn routes() -> Vec<Route> {
    vec![Route::new("/health").get(health)]
}

/// `{"status":"ok","version":...}`.
async fn health() -> Json<Value> {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}
