//! The watcher inside the agent, read through its view: `GET /rules` (every rule: its actions,
//! state — `running`, `acting`, `throttled`, `finished` — with why, and its counts), `GET
//! /rules/{name}`, `GET /rules/{name}/log?limit=N` (its recent decisions, oldest first, as the
//! decisions log writes them, plus the processes its match did not hold for) and `POST
//! /rules/reload` (read the rules file again; a bad file keeps the rules in force and says so in
//! `/rules`). Rule names are checked as names (else 400); an unknown one is a 404. No rules
//! configured: `/rules` answers `{"rules": [], "enabled": false}`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use clrspy_watch::RULE_LOG_LEN;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::params::{self, NoQuery, Query};
use crate::rules_host::RulesHandle;
use crate::state::AppState;

/// The area's routes.
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![
        super::table::Route::new("/rules").get(all),
        super::table::Route::new("/rules/reload")
            .post(reload)
            .audited(),
        super::table::Route::new("/rules/{name}").get(one),
        super::table::Route::new("/rules/{name}/log").get(log),
    ]
}

/// `/rules/{name}/log`'s query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LogQuery {
    limit: Option<String>,
}

fn handle(state: &AppState) -> Result<&RulesHandle, ApiError> {
    state
        .rules
        .as_ref()
        .ok_or_else(|| ApiError::not_found("no rules are configured (the config's [rules] file)"))
}

async fn all(
    State(state): State<AppState>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let Some(h) = &state.rules else {
        return Ok(Json(json!({ "rules": [], "enabled": false })));
    };
    let s = h.view.summary();
    let rules: Vec<Value> = h.view.rules().iter().map(|r| r.to_json()).collect();
    Ok(Json(json!({
        "enabled": true,
        "watching": s.watching,
        "stopping": s.stopping,
        "disk_full": s.disk_full,
        "unmatched_processes": s.unmatched,
        "reload_failed": s.reload_failed,
        "rules": rules,
    })))
}

/// The rule's name from the path, checked, and the running watcher.
fn named<'a>(state: &'a AppState, name: &str) -> Result<&'a RulesHandle, ApiError> {
    params::name(name)?;
    handle(state)
}

async fn one(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let h = named(&state, &name)?;
    h.view
        .rule(&name)
        .map(|r| Json(r.to_json()))
        .ok_or_else(|| ApiError::not_found(format!("no rule named {name}")))
}

/// Parses `limit`: absent is the whole ring, else 1 to [`RULE_LOG_LEN`].
fn limit(s: Option<&str>) -> Result<usize, ApiError> {
    let Some(s) = s else {
        return Ok(RULE_LOG_LEN);
    };
    let ok = !s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit());
    match s.parse::<usize>() {
        Ok(n) if ok && (1..=RULE_LOG_LEN).contains(&n) => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "limit must be a whole number from 1 to {RULE_LOG_LEN}"
        ))),
    }
}

async fn log(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(q): Query<LogQuery>,
) -> Result<Json<Value>, ApiError> {
    let n = limit(q.limit.as_deref())?;
    let h = named(&state, &name)?;
    let decisions = h
        .view
        .log(&name, n)
        .ok_or_else(|| ApiError::not_found(format!("no rule named {name}")))?;
    let decisions: Vec<Value> = decisions.iter().map(|d| d.to_json()).collect();
    Ok(Json(json!({ "rule": name, "decisions": decisions })))
}

async fn reload(
    State(state): State<AppState>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    handle(&state)?.control.request_reload();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "reload": "requested", "see": "/rules" })),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::{header, Request};
    use tower::ServiceExt;

    use crate::auth::Authenticator;
    use crate::rules_host::{RulesHost, RulesSettings};

    fn app(rules: Option<RulesHandle>) -> axum::Router {
        let state = AppState {
            rules,
            ..AppState::for_tests(
                Authenticator::new(vec![crate::keys::digest("k")], None),
                "rules-routes",
            )
        };
        crate::routes::app(state, 1024)
    }

    async fn call(app: &axum::Router, method: &str, uri: &str) -> (StatusCode, Value) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, "Bearer k")
            .body(Body::empty())
            .unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn no_rules_is_not_an_error() {
        let app = app(None);
        let (s, v) = call(&app, "GET", "/rules").await;
        assert_eq!(s, 200);
        assert_eq!(v, json!({ "rules": [], "enabled": false }));
        assert_eq!(call(&app, "GET", "/rules/a").await.0, 404);
        assert_eq!(call(&app, "GET", "/rules/a/log").await.0, 404);
        assert_eq!(call(&app, "POST", "/rules/reload").await.0, 404);
        assert_eq!(call(&app, "GET", "/rules/..").await.0, 400);
    }

    #[tokio::test]
    async fn a_watcher_s_rules_their_logs_and_bad_names() {
        let base =
            std::env::temp_dir().join(format!("clrspy-agent-rules-routes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let file = base.join("rules.json");
        std::fs::write(
            &file,
            r#"{"rules":[{"name":"never","match":{"name":"no-such-process-4711"},"dump":{},"limits":{"max_actions":2}}]}"#,
        )
        .unwrap();
        let host = RulesHost::start(&RulesSettings {
            file,
            output: base.join("out"),
            listen: None,
        })
        .unwrap();
        let view = host.view();
        for _ in 0..200 {
            if view.summary().watching {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let app = app(Some(host.handle()));
        let (s, v) = call(&app, "GET", "/rules").await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["enabled"], true);
        assert_eq!(v["watching"], true);
        let r = &v["rules"][0];
        assert_eq!(r["name"], "never");
        assert_eq!(r["state"], "running");
        assert_eq!(r["actions"], json!(["dump"]));
        assert_eq!(r["max_actions"], 2);
        assert_eq!(r["counts"]["matched"], 0);
        assert!(r["reason"].as_str().unwrap().starts_with("armed"), "{r}");
        let (s, one) = call(&app, "GET", "/rules/never").await;
        assert_eq!((s.as_u16(), &one), (200, r));
        let (s, log) = call(&app, "GET", "/rules/never/log?limit=5").await;
        assert_eq!(s, 200);
        assert_eq!(log["rule"], "never");
        assert!(log["decisions"].as_array().unwrap().len() <= 5);
        for (uri, want) in [
            ("/rules/other", 404),
            ("/rules/other/log", 404),
            ("/rules/..", 400),
            ("/rules/.hidden/log", 400),
            ("/rules/a%2F..%2Fb", 400),
            ("/rules/never/log?limit=0", 400),
            ("/rules/never/log?limit=..", 400),
            ("/rules/never/log?path=/etc", 400),
            ("/rules?x=1", 400),
        ] {
            assert_eq!(call(&app, "GET", uri).await.0, want, "{uri}");
        }
        let (s, v) = call(&app, "POST", "/rules/reload").await;
        assert_eq!(s, 202, "{v}");
        drop(app);
        tokio::task::spawn_blocking(move || host.stop())
            .await
            .unwrap()
            .unwrap();
        // A reload was asked before the stop: the log says whether it went.
        let text = std::fs::read_to_string(base.join("out/decisions.jsonl")).unwrap();
        assert!(text.contains("\"event\":\"stopped\""), "{text}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn limits_are_checked() {
        assert_eq!(limit(None).unwrap(), RULE_LOG_LEN);
        assert_eq!(limit(Some("5")).unwrap(), 5);
        for bad in ["", "0", "201", "-1", "..", "/x", "1e2", "99999"] {
            assert_eq!(limit(Some(bad)).unwrap_err().status, 400, "{bad:?}");
        }
    }
}
