//! The routes, one router per area, and the app that joins them: `/health` is open, every
//! other route (and every unknown path) sits behind the authentication middleware; the body
//! limit and the request timeout wrap the whole.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
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
mod target;
mod trace;

/// The whole app.
pub fn app(state: AppState, max_body_bytes: usize) -> Router {
    let timeout = state.request_timeout;
    let pulls = bounded(pprof::routes(), pprof::BOUND, &state);
    let report_pulls = bounded(reports::routes(), reports::BOUND, &state);
    let dumps = bounded(dumps::routes(), dumps::BOUND, &state);
    let traces = bounded(trace::routes(), trace::BOUND, &state);
    let streams = bounded(live::routes(), live::BOUND, &state);
    let protected = Router::new()
        .merge(processes::router())
        .merge(stacks::router())
        .merge(metrics::router())
        .merge(rules::router())
        .merge(operations::router())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            crate::auth::require,
        ));
    Router::new()
        .route("/health", get(health::health))
        .merge(protected)
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::count,
        ))
        .with_state(state)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        // Profile pulls record for up to minutes: their own auth and time bound.
        .merge(pulls)
        .merge(report_pulls)
        // So do dumps and heap snapshots waited for.
        .merge(dumps)
        // Streams run for up to an hour: their own auth and a bound on starting.
        .merge(traces)
        .merge(streams)
        .layer(RequestBodyLimitLayer::new(max_body_bytes))
        .layer(axum::middleware::map_response(json_errors))
}

/// Routes that record, dump or stream for longer than the request timeout: behind the same
/// authentication as the others, counted in `clrspy_agent_requests_total`, bounded by `bound`.
fn bounded(routes: Router<AppState>, bound: std::time::Duration, state: &AppState) -> Router {
    routes
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            crate::auth::require,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            bound,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::count,
        ))
        .with_state(state.clone())
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
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;
    use crate::auth::tests as auth_tests;
    use crate::auth::Authenticator;
    use crate::config::ConcurrencyConfig;
    use crate::limits::Limits;

    const KEY: &str = "test-key";

    /// Every route (`METHOD path` where not GET), with good and traversal-like parameters.
    const ROUTES: &[&str] = &[
        "/processes",
        "/processes/1",
        "/stacks?pid=1",
        "/debug/pprof/profile?seconds=1&pid=1",
        "/debug/pprof/allocs",
        "/debug/pprof/profile?seconds=../x",
        "/metrics",
        "/trace?pid=1&duration=3s&profile=cpu",
        "/trace?pid=../x",
        "/counters?pid=1",
        "/logs?pid=1&level=Warning",
        "/logs?filter=/etc/passwd",
        "/nowhere",
        "/processes/..",
        "/rules",
        "/rules/a",
        "/rules/a/log?limit=1",
        "/rules/..",
        "/rules/a/log?limit=..",
        "/reports?pid=1&kind=cpu&seconds=1",
        "/reports?pid=..",
        "/dump?pid=1&type=mini",
        "/dump?pid=..",
        "/gcdump?pid=1",
        "/gcdump?pid=1&mode=operation",
        "/operations",
        "/operations/0123456789abcdef0123456789abcdef",
        "/operations/0123456789abcdef0123456789abcdef/result",
        "/operations/..",
        "DELETE /operations/0123456789abcdef0123456789abcdef",
    ];

    /// The JWT signing keys of the tests: the configured one (its public JWK) and another.
    struct Jwt {
        key: jsonwebtoken::EncodingKey,
        other: jsonwebtoken::EncodingKey,
        public: String,
    }

    fn jwt() -> &'static Jwt {
        static J: std::sync::OnceLock<Jwt> = std::sync::OnceLock::new();
        J.get_or_init(|| {
            let (key, public) = auth_tests::ec_key(&rcgen::PKCS_ECDSA_P256_SHA256, "P-256");
            let (other, _) = auth_tests::ec_key(&rcgen::PKCS_ECDSA_P256_SHA256, "P-256");
            Jwt { key, other, public }
        })
    }

    fn test_app() -> Router {
        let verifier =
            crate::jwk::JwtVerifier::new(&jwt().public, None, None, auth_tests::SUBJECT).unwrap();
        let state = AppState {
            auth: Arc::new(Authenticator::new(
                vec![crate::keys::digest(KEY)],
                Some(verifier),
            )),
            limits: Arc::new(Limits::new(&ConcurrencyConfig::default())),
            request_timeout: Duration::from_secs(5),
            folder: std::env::temp_dir(),
            budget: crate::artifact::Budget::from_mb(1),
            metrics: Arc::new(crate::metrics::Collector::idle(
                crate::metrics::MetricsConfig::default().settings().unwrap(),
            )),
            rules: None,
            operations: Arc::new(crate::operations::Operations::new(
                &std::env::temp_dir().join(format!("clrspy-agent-routes-{}", std::process::id())),
                crate::artifact::Budget::from_mb(1),
                10,
            )),
        };
        app(state, 1024)
    }

    async fn call(
        method: &str,
        uri: &str,
        key: Option<&str>,
        body: Vec<u8>,
    ) -> (StatusCode, axum::http::HeaderMap, serde_json::Value) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(k) = key {
            req = req.header(header::AUTHORIZATION, format!("Bearer {k}"));
        }
        let req = req
            .header(header::CONTENT_LENGTH, body.len())
            .body(Body::from(body))
            .unwrap();
        let resp = test_app().oneshot(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{uri}: {e}: {}", String::from_utf8_lossy(&bytes)));
        (parts.status, parts.headers, v)
    }

    #[tokio::test]
    async fn health_is_open_the_rest_is_not() {
        let (s, _, v) = call("GET", "/health", None, vec![]).await;
        assert_eq!(s, 200);
        assert_eq!(v["status"], "ok");
        for uri in ROUTES {
            let (method, uri) = uri.split_once(' ').unwrap_or(("GET", uri));
            for key in [None, Some("wrong")] {
                let (s, h, v) = call(method, uri, key, vec![]).await;
                assert_eq!(s, 401, "{uri}");
                assert_eq!(h[header::WWW_AUTHENTICATE], "Bearer");
                assert_eq!(v["error"], "invalid credentials");
            }
        }
        let body = br#"{"Providers":[{"Name":"Microsoft-DotNETCore-SampleProfiler"}]}"#;
        for key in [None, Some("wrong")] {
            let (s, _, _) = call("POST", "/trace?pid=1", key, body.to_vec()).await;
            assert_eq!(s, 401, "POST /trace");
        }
    }

    /// A JWT expired, signed by another key, for another audience or subject, or with its
    /// signature cut: 401 on every route; the same token well made passes.
    #[tokio::test]
    async fn bad_jwts_are_401_on_every_route() {
        use crate::jwk::DEFAULT_AUDIENCE;
        use jsonwebtoken::Algorithm::ES256;
        let (j, now) = (jwt(), auth_tests::now());
        let sub = auth_tests::SUBJECT;
        let good = auth_tests::token(&j.key, ES256, now + 600, DEFAULT_AUDIENCE, sub);
        let cut = good.rsplit_once('.').map(|(h, _)| format!("{h}.")).unwrap();
        let bad = [
            auth_tests::token(&j.key, ES256, now - 3600, DEFAULT_AUDIENCE, sub),
            auth_tests::token(&j.other, ES256, now + 600, DEFAULT_AUDIENCE, sub),
            auth_tests::token(&j.key, ES256, now + 600, "https://elsewhere", sub),
            auth_tests::token(&j.key, ES256, now + 600, DEFAULT_AUDIENCE, "someone-else"),
            cut,
        ];
        for uri in ROUTES
            .iter()
            .chain(&["POST /trace?pid=1", "POST /rules/reload"])
        {
            let (method, uri) = uri.split_once(' ').unwrap_or(("GET", uri));
            for (i, token) in bad.iter().enumerate() {
                let (s, _, v) = call(method, uri, Some(token), vec![]).await;
                assert_eq!(s, 401, "{method} {uri} with bad token {i}: {v}");
            }
        }
        let (s, _, v) = call("GET", "/operations", Some(&good), vec![]).await;
        assert_eq!(s, 200, "{v}");
        let (s, _, v) = call("GET", "/rules", Some(&good), vec![]).await;
        assert_eq!(
            (s.as_u16(), &v["enabled"]),
            (200, &serde_json::json!(false))
        );
    }

    #[tokio::test]
    async fn errors_are_json() {
        let (s, _, v) = call("GET", "/nowhere", Some(KEY), vec![]).await;
        assert_eq!(
            (s.as_u16(), v["error"].as_str()),
            (404, Some("no such route"))
        );
        let (s, _, v) = call("GET", "/processes/..", Some(KEY), vec![]).await;
        assert_eq!(s, 400, "{v}");
        let (s, _, _) = call("GET", "/stacks?pid=%2Fetc%2Fpasswd", Some(KEY), vec![]).await;
        assert_eq!(s, 400);
        let (s, _, _) = call("GET", "/processes?x=1", Some(KEY), vec![]).await;
        assert_eq!(s, 400);
        for bad in [
            "seconds=0",
            "seconds=301",
            "seconds=..",
            "seconds=1&pid=..",
            "x=1",
        ] {
            for route in ["profile", "allocs"] {
                let (s, _, v) = call(
                    "GET",
                    &format!("/debug/pprof/{route}?{bad}"),
                    Some(KEY),
                    vec![],
                )
                .await;
                assert_eq!(s, 400, "{route}?{bad}: {v}");
            }
        }
        for bad in [
            "pid=1&kind=nope",
            "pid=1&kind=cpu,..",
            "pid=1&seconds=301",
            "pid=1&seconds=0",
            "pid=..&kind=cpu",
            "kind=cpu",
            "pid=1&file=/etc/passwd",
        ] {
            let (s, _, v) = call("GET", &format!("/reports?{bad}"), Some(KEY), vec![]).await;
            assert_eq!(s, 400, "{bad}: {v}");
        }
        let (s, _, v) = call("GET", "/reports?pid=1&kind=nope", Some(KEY), vec![]).await;
        assert!(
            v["error"].as_str().unwrap().contains("known: summary, cpu"),
            "{s}: {v}"
        );
        let (s, _, v) = call(
            "GET",
            "/reports?pid=4294967295&kind=cpu&seconds=1",
            Some(KEY),
            vec![],
        )
        .await;
        assert_eq!(s, 404, "{v}");
        for bad in [
            "/trace?pid=1&duration=0s",
            "/trace?pid=1&duration=2h",
            "/trace?pid=1&duration=../1s",
            "/trace?pid=1&profile=nope",
            "/trace?pid=1&profile=..%2Fcpu",
            "/trace?pid=1&providers=..%2F..%2Fx",
            "/trace?pid=1&buffer_mb=0",
            "/trace?pid=%2Fetc%2Fpasswd",
            "/trace?pid=1&output=%2Ftmp%2Fx",
            "/trace?duration=3s",
            "/counters?pid=1&interval=0s",
            "/counters?pid=1&counters=..%2Fx",
            "/counters?pid=..",
            "/logs?pid=1&level=Loud",
            "/logs?pid=1&filter=..%2Fx",
            "/logs?uid=..%2F..%2Fetc",
        ] {
            let (s, _, v) = call("GET", bad, Some(KEY), vec![]).await;
            assert_eq!(s, 400, "{bad}: {v}");
        }
        for (uri, body) in [
            ("/trace?pid=1", &b"{}"[..]),
            ("/trace?pid=1", br#"{"Providers":[]}"#),
            ("/trace?pid=1", br#"{"Providers":[{"Name":"../x"}]}"#),
            (
                "/trace?pid=1&profile=cpu",
                br#"{"Providers":[{"Name":"A"}]}"#,
            ),
            ("/trace?pid=1", b"not json"),
        ] {
            let (s, _, v) = call("POST", uri, Some(KEY), body.to_vec()).await;
            assert_eq!(s, 400, "POST {uri}: {v}");
        }
        for uri in [
            "/trace?pid=4294967295&duration=1s",
            "/counters?pid=4294967295",
            "/logs?pid=4294967295",
        ] {
            let (s, _, v) = call("GET", uri, Some(KEY), vec![]).await;
            assert_eq!(s, 404, "{uri}: {v}");
        }
        // A pid nobody has: 404 (before anything is recorded).
        let (s, _, v) = call(
            "GET",
            "/debug/pprof/profile?seconds=1&pid=4294967295",
            Some(KEY),
            vec![],
        )
        .await;
        assert_eq!(s, 404, "{v}");
        let (s, _, v) = call("POST", "/processes", Some(KEY), vec![b'x'; 2048]).await;
        assert_eq!(s, 413, "{v}");
        assert!(v["error"].is_string());
        for key in [None, Some("wrong")] {
            let (s, _, _) = call("POST", "/rules/reload", key, vec![]).await;
            assert_eq!(s, 401);
        }
        // Dumps, heap snapshots and operations: traversal-like parameters are 400, unknown
        // ids 404, and nothing is started for them.
        for bad in [
            "/dump?pid=..",
            "/dump?pid=%2Fetc%2Fpasswd",
            "/dump?pid=1&type=..%2Fx",
            "/dump?pid=1&mode=..",
            "/dump?pid=1&x=1",
            "/dump?name=..%2F..%2Fetc",
            "/gcdump?uid=..",
            "/gcdump",
            "/operations/..",
            "/operations/%2Fetc%2Fpasswd",
            "/operations/0123456789abcdef0123456789abcdeg",
            "/operations/0123456789abcdef0123456789abcdef/result?x=1",
            "/operations?x=1",
        ] {
            let (s, _, v) = call("GET", bad, Some(KEY), vec![]).await;
            assert_eq!(s, 400, "{bad}: {v}");
        }
        let (s, _, v) = call("DELETE", "/operations/..", Some(KEY), vec![]).await;
        assert_eq!(s, 400, "{v}");
        for (m, uri) in [
            ("GET", "/operations/0123456789abcdef0123456789abcdef"),
            ("GET", "/operations/0123456789ABCDEF0123456789abcdef/result"),
            ("DELETE", "/operations/0123456789abcdef0123456789abcdef"),
            ("GET", "/dump?pid=4294967295&type=mini"),
            ("GET", "/gcdump?pid=4294967295&mode=operation"),
        ] {
            let (s, _, v) = call(m, uri, Some(KEY), vec![]).await;
            assert_eq!(s, 404, "{m} {uri}: {v}");
        }
        let (s, _, v) = call("GET", "/operations", Some(KEY), vec![]).await;
        assert_eq!((s.as_u16(), v), (200, serde_json::json!([])));
        let (s, h, v) = call("POST", "/health", None, vec![]).await;
        assert_eq!(s, 405, "{v}");
        assert!(h.get(header::ALLOW).is_some());
    }
}
