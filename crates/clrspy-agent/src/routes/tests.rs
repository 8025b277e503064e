//! The app's tests: every route of the table behind authentication (and one added later),
//! the audit lines, bad credentials and bad parameters, errors as JSON.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request};
use tower::ServiceExt;

use super::*;
use crate::auth::tests as auth_tests;
use crate::auth::{Authenticator, PUBLIC};

const KEY: &str = "test-key";

/// A path of the table with its parameters (`{pid}`, `{id}`, `{name}`) filled.
fn fill(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') { "x" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every route of the app, taken from the table the app is built from: each method of
/// each path, parameters filled.
fn every_route() -> Vec<(Method, String)> {
    let mut out = Vec::new();
    for r in table() {
        assert!(!r.methods.is_empty(), "{} answers no method", r.path);
        for m in &r.methods {
            out.push((m.clone(), fill(r.path)));
        }
    }
    out
}

/// Paths and parameters no route takes, traversal-like ones among them.
const ODD: &[&str] = &[
    "/nowhere",
    "/processes/..",
    "/health/",
    "/health/x",
    "/rules/..",
    "/operations/..",
    "/debug/pprof/profile?seconds=../x",
    "/trace?pid=../x",
    "/logs?filter=/etc/passwd",
    "/rules/a/log?limit=..",
    "/reports?pid=..",
    "/dump?pid=..",
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

fn test_state() -> AppState {
    let verifier =
        crate::jwk::JwtVerifier::new(&jwt().public, None, None, auth_tests::SUBJECT).unwrap();
    AppState::for_tests(
        Authenticator::new(vec![crate::keys::digest(KEY)], Some(verifier)),
        "routes",
    )
}

fn test_app() -> Router {
    app(test_state(), 1024)
}

async fn call_app(
    app: &Router,
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
    let resp = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{uri}: {e}: {}", String::from_utf8_lossy(&bytes)));
    (parts.status, parts.headers, v)
}

async fn call(
    method: &str,
    uri: &str,
    key: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, axum::http::HeaderMap, serde_json::Value) {
    call_app(&test_app(), method, uri, key, body).await
}

async fn refused(app: &Router, method: &str, uri: &str) {
    for key in [None, Some("wrong")] {
        let (s, h, v) = call_app(app, method, uri, key, vec![]).await;
        assert_eq!(s, 401, "{method} {uri} with {key:?}: {v}");
        assert_eq!(h[header::WWW_AUTHENTICATE], "Bearer");
        assert_eq!(v["error"], "invalid credentials");
    }
}

#[tokio::test]
async fn health_is_open_the_rest_is_not() {
    // The one public list: literal paths of the table.
    assert_eq!(PUBLIC, ["/health"]);
    let paths: Vec<&str> = table().iter().map(|r| r.path).collect();
    for p in PUBLIC {
        assert!(paths.contains(p) && !p.contains('{'), "{p}");
    }
    let app = test_app();
    let (s, _, v) = call_app(&app, "GET", "/health", None, vec![]).await;
    assert_eq!((s.as_u16(), &v["status"]), (200, &serde_json::json!("ok")));
    let routes = every_route();
    assert!(routes.len() >= 20, "{routes:?}");
    for (method, path) in &routes {
        if PUBLIC.contains(&path.as_str()) {
            continue;
        }
        refused(&app, method.as_str(), path).await;
        // Another method of a protected path is refused too, not a 405 that tells
        // which methods it has.
        refused(&app, "PUT", path).await;
    }
    for uri in ODD {
        refused(&app, "GET", uri).await;
    }
}

/// A route added later — here, in the test — is behind authentication unless it is put
/// in the public list.
#[tokio::test]
async fn a_route_added_later_is_protected() {
    let mut routes = table();
    routes.push(Route::new("/added-in-a-test").get(|| async { "the secret" }));
    let app = build(test_state(), 1024, routes);
    refused(&app, "GET", "/added-in-a-test").await;
    let req = Request::get("/added-in-a-test")
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
        .body(Body::empty())
        .unwrap();
    let resp = app.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
}

/// A client that goes away while an audited request works (a dump being taken) still
/// leaves its line: cut, with no status.
#[tokio::test]
async fn a_request_dropped_before_its_answer_is_audited_as_cut() {
    let state = test_state();
    let audit = state.audit.clone();
    let mut routes = table();
    routes.push(
        Route::new("/works-for-ever")
            .get(std::future::pending::<&'static str>)
            .audited(),
    );
    let app = build(state, 1024, routes);
    let req = Request::get("/works-for-ever")
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
        .body(Body::empty())
        .unwrap();
    let gone = tokio::time::timeout(Duration::from_millis(100), app.oneshot(req)).await;
    assert!(gone.is_err());
    let lines = audit.lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["route"], "/works-for-ever");
    assert_eq!(lines[0]["outcome"], "cut");
    assert!(lines[0]["status"].is_null(), "{}", lines[0]);
}

/// A body of a stated length, all sent, is complete though its end is never asked for (a
/// server stops reading a body once its Content-Length went: a file download).
#[tokio::test]
async fn a_body_of_a_stated_length_sent_whole_is_complete() {
    use axum::body::{Bytes, HttpBody};
    use std::pin::Pin;
    use std::task::{Context, Poll};
    /// "abcd", then nothing for ever.
    struct Stalls(bool);
    impl HttpBody for Stalls {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
            if std::mem::replace(&mut self.0, true) {
                return Poll::Pending;
            }
            Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from_static(
                b"abcd",
            )))))
        }
    }
    let state = test_state();
    let audit = state.audit.clone();
    let mut routes = table();
    routes.push(
        Route::new("/sized")
            .get(|| async { ([(header::CONTENT_LENGTH, "4")], Body::new(Stalls(false))) })
            .audited(),
    );
    let app = build(state, 1024, routes);
    let req = Request::get("/sized")
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
        .body(Body::empty())
        .unwrap();
    let mut body = app.oneshot(req).await.unwrap().into_body();
    let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
    assert_eq!(frame.unwrap().unwrap().into_data().unwrap(), "abcd");
    let lines = audit.lines();
    assert_eq!(lines.len(), 1, "written at once: {lines:?}");
    assert_eq!(
        (&lines[0]["outcome"], &lines[0]["bytes"]),
        (&"complete".into(), &4.into())
    );
    drop(body);
    assert_eq!(audit.lines().len(), 1);
}

/// Each audited route writes a line naming the caller by its key's hash prefix (never
/// the key), the route and the outcome; other routes write none.
#[tokio::test]
async fn audited_routes_write_a_line_each() {
    let state = test_state();
    let audit = state.audit.clone();
    let app = app(state, 1024);
    let audited: Vec<(Method, String)> = table()
        .into_iter()
        .filter(|r| r.audited)
        .flat_map(|r| {
            let path = fill(r.path);
            r.methods.into_iter().map(move |m| (m, path.clone()))
        })
        .collect();
    let names: Vec<String> = audited.iter().map(|(m, p)| format!("{m} {p}")).collect();
    for must in [
        "GET /dump",
        "GET /gcdump",
        "GET /trace",
        "POST /trace",
        "GET /counters",
        "GET /logs",
        "GET /stacks",
        "GET /debug/pprof/profile",
        "GET /debug/pprof/allocs",
        "GET /reports",
        "GET /operations/x/result",
        "DELETE /operations/x",
        "POST /rules/reload",
    ] {
        assert!(names.contains(&must.to_string()), "{must} is not audited");
    }
    assert_eq!(audited.len(), 13, "{names:?}");
    // Parameters that are refused before any work: a line each all the same.
    for (m, p) in &audited {
        call_app(&app, m.as_str(), &format!("{p}?bad=1"), Some(KEY), vec![]).await;
    }
    call_app(&app, "GET", "/operations", Some(KEY), vec![]).await;
    call_app(&app, "GET", "/dump?pid=1", None, vec![]).await;
    let lines = audit.lines();
    assert_eq!(lines.len(), audited.len(), "{lines:#?}");
    let prefix = &crate::keys::hash_hex(KEY)[..12];
    for (l, (m, p)) in lines.iter().zip(&audited) {
        assert_eq!(l["credential"], format!("key:{prefix}"), "{l}");
        assert_eq!(l["method"], m.as_str());
        assert_eq!(l["route"].as_str().map(fill), Some(p.clone()), "{l}");
        assert_eq!(
            (&l["status"], &l["outcome"]),
            (&400.into(), &"refused".into())
        );
        assert!(
            l["process"].is_null() && l["bytes"].as_u64().unwrap() > 0,
            "{l}"
        );
        assert!(l["time"].as_str().unwrap().ends_with('Z'), "{l}");
        assert!(!l.to_string().contains(KEY));
    }
    // A JWT is named by its subject, never the token; a resolved process by its pid.
    let token = auth_tests::token(
        &jwt().key,
        jsonwebtoken::Algorithm::ES256,
        auth_tests::now() + 600,
        crate::jwk::DEFAULT_AUDIENCE,
        auth_tests::SUBJECT,
    );
    call_app(&app, "GET", "/dump?pid=4294967295", Some(&token), vec![]).await;
    let last = audit.lines().pop().unwrap();
    assert_eq!(last["credential"], format!("jwt:{}", auth_tests::SUBJECT));
    assert_eq!(last["status"], 404);
    assert!(!last.to_string().contains(&token));
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
    let app = test_app();
    for (method, uri) in every_route() {
        if PUBLIC.contains(&uri.as_str()) {
            continue;
        }
        for (i, token) in bad.iter().enumerate() {
            let (s, _, v) = call_app(&app, method.as_str(), &uri, Some(token), vec![]).await;
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
