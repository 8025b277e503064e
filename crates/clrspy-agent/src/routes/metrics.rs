//! `GET /metrics`: every visible .NET process's counters and the agent's own figures in
//! Prometheus' text format (0.0.4), from the collector's latest values (no session is opened
//! by a scrape; rendering is quick and runs on a blocking thread all the same).

use std::collections::HashMap;

use std::sync::Arc;

use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;
use crate::metrics::Collector;
use crate::params;
use crate::state::AppState;

/// The text format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The area's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

/// Counts each answered request of a known route (`clrspy_agent_requests_total`), refusals
/// included.
pub async fn count(State(c): State<Arc<Collector>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let resp = next.run(req).await;
    if let Some(r) = route {
        c.count_request(&r, resp.status().as_u16());
    }
    resp
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use crate::auth::Authenticator;
    use crate::config::ConcurrencyConfig;
    use crate::limits::Limits;
    use crate::metrics::{Collector, MetricsConfig};
    use crate::state::AppState;

    async fn call(uri: &str, key: Option<&str>) -> (StatusCode, Option<String>, String) {
        let state = AppState {
            auth: Arc::new(Authenticator::new(vec![crate::keys::digest("k")], None)),
            limits: Arc::new(Limits::new(&ConcurrencyConfig::default())),
            request_timeout: Duration::from_secs(5),
            folder: std::env::temp_dir(),
            metrics: Arc::new(Collector::idle(
                MetricsConfig::default().settings().unwrap(),
            )),
            operations: Arc::new(crate::operations::Operations::new(
                &std::env::temp_dir(),
                crate::artifact::Budget::from_mb(1),
                1,
            )),
        };
        let mut req = Request::builder().uri(uri);
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        let resp = crate::routes::app(state, 1024)
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, ctype, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn the_text_format_behind_credentials() {
        assert_eq!(call("/metrics", None).await.0, 401);
        assert_eq!(call("/metrics", Some("wrong")).await.0, 401);
        let (s, ctype, body) = call("/metrics", Some("k")).await;
        assert_eq!(s, 200);
        assert_eq!(ctype.as_deref(), Some(super::CONTENT_TYPE));
        assert!(
            body.contains(
                "# TYPE clrspy_agent_sessions_open gauge\nclrspy_agent_sessions_open 0\n"
            ),
            "{body}"
        );
        assert!(
            body.contains(
                "# TYPE clrspy_agent_scrapes_total counter\nclrspy_agent_scrapes_total 1\n"
            ),
            "{body}"
        );
        assert_eq!(call("/metrics?pid=1", Some("k")).await.0, 400);
        // The app counts what it answered before this scrape.
        let state = AppState {
            auth: Arc::new(Authenticator::new(vec![crate::keys::digest("k")], None)),
            limits: Arc::new(Limits::new(&ConcurrencyConfig::default())),
            request_timeout: Duration::from_secs(5),
            folder: std::env::temp_dir(),
            metrics: Arc::new(Collector::idle(
                MetricsConfig::default().settings().unwrap(),
            )),
            operations: Arc::new(crate::operations::Operations::new(
                &std::env::temp_dir(),
                crate::artifact::Budget::from_mb(1),
                1,
            )),
        };
        let app = crate::routes::app(state, 1024);
        for (uri, key) in [
            ("/health", None),
            ("/metrics", None),
            ("/processes/x", Some("k")),
            ("/metrics", Some("k")),
        ] {
            let mut req = Request::builder().uri(uri);
            if let Some(k) = key {
                req = req.header("authorization", format!("Bearer {k}"));
            }
            let resp = app
                .clone()
                .oneshot(req.body(Body::empty()).unwrap())
                .await
                .unwrap();
            if uri == "/metrics" && key.is_some() {
                let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                    .await
                    .unwrap();
                let body = String::from_utf8_lossy(&body);
                for line in [
                    "clrspy_agent_requests_total{route=\"/health\",code=\"200\"} 1\n",
                    "clrspy_agent_requests_total{route=\"/metrics\",code=\"401\"} 1\n",
                    "clrspy_agent_requests_total{route=\"/processes/{pid}\",code=\"400\"} 1\n",
                ] {
                    assert!(body.contains(line), "{line}{body}");
                }
            }
        }
    }
}
