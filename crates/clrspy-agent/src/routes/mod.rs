//! The routes, one table per area, and the app built from them: each area's `routes()` says
//! its paths, their methods, their time bound and whether they are audited (`table::Route`); [`app`] turns every entry
//! into a route and lays the authentication middleware once over all of them and the
//! fallback, letting through only the paths of [`crate::auth::PUBLIC`]. The body limit wraps
//! the whole. The tests enumerate the same table.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

use crate::error::ApiError;
use crate::state::AppState;

mod dumps;
mod health;
mod live;
mod metrics;
mod operations;
mod pprof;
mod processes;
mod reports;
mod rules;
mod stacks;
mod table;
mod target;
mod trace;

use table::Route;

/// Every route of the app, area by area.
fn table() -> Vec<Route> {
    [
        health::routes(),
        processes::routes(),
        stacks::routes(),
        metrics::routes(),
        rules::routes(),
        operations::routes(),
        pprof::routes(),
        reports::routes(),
        dumps::routes(),
        trace::routes(),
        live::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The whole app.
pub(crate) fn app(state: AppState, max_body_bytes: usize) -> Router {
    build(state, max_body_bytes, table())
}

/// The app of these routes: each with its time bound (and audit), then — once, over every
/// route and the fallback — the authentication, the request counting, the tracking of
/// responses in flight, the body limit and the JSON error bodies.
fn build(state: AppState, max_body_bytes: usize, routes: Vec<Route>) -> Router {
    let mut app = Router::new();
    for r in routes {
        let bound = r.bound.unwrap_or(state.request_timeout);
        let mut handler = r.handler.layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            bound,
        ));
        if r.audited {
            // Outside the time bound: a request that ran out of time is audited too.
            handler = handler.layer(axum::middleware::from_fn_with_state(
                state.audit.clone(),
                crate::audit::record,
            ));
        }
        app = app.route(r.path, handler);
    }
    app.fallback(not_found)
        // The one authentication layer: after routing (it sees the matched path), over every
        // route and the fallback.
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            crate::auth::require,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::count,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.drain.clone(),
            crate::drain::track,
        ))
        .with_state(state)
        .layer(RequestBodyLimitLayer::new(max_body_bytes))
        .layer(axum::middleware::map_response(json_errors))
}

/// Errors made outside the handlers (tower-http's 413 and 408, axum's 405 and bad path
/// parameters) get the same JSON body as the handlers' own.
async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json || !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let what = status.canonical_reason().unwrap_or("error").to_lowercase();
    let mut out = ApiError::new(status, what).into_response();
    for h in [header::ALLOW, header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        if let Some(v) = resp.headers().get(&h) {
            out.headers_mut().insert(h, v.clone());
        }
    }
    out
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

#[cfg(test)]
mod tests;
