//! The routes, one router per area, and the app that joins them: `/health` is open, every
//! other route (and every unknown path) sits behind the authentication middleware; the body
//! limit and the request timeout wrap the whole.

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

use crate::error::ApiError;
use crate::state::AppState;

mod health;
mod processes;
mod stacks;

/// The whole app.
pub fn app(state: AppState, max_body_bytes: usize) -> Router {
    let timeout = state.request_timeout;
    let protected = Router::new()
        .merge(processes::router())
        .merge(stacks::router())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            crate::auth::require,
        ));
    Router::new()
        .route("/health", get(health::health))
        .merge(protected)
        .with_state(state)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(RequestBodyLimitLayer::new(max_body_bytes))
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}
