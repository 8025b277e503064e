//! `GET /metrics`: every visible .NET process's counters and the agent's own figures in
//! Prometheus' text format (0.0.4), from the collector's latest values (no session is opened
//! by a scrape; rendering is quick and runs on a blocking thread all the same).

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use clrspy_watch::{RuleSnapshot, RuleStatus};

use crate::error::ApiError;
use crate::metrics::Collector;
use crate::params::{NoQuery, Query};
use crate::state::AppState;
use clrspy_export::prometheus::{self, Figure, MetricType};

/// The text format's content type.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The area's routes.
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![super::table::Route::new("/metrics").get(metrics)]
}

/// Counts each answered request of a known route (`clrspy_agent_requests_total`), refusals
/// included.
pub(super) async fn count(State(c): State<Arc<Collector>>, req: Request, next: Next) -> Response {
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
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let collector = state.metrics.clone();
    let view = state.rules.as_ref().map(|r| r.view.clone());
    let text = tokio::task::spawn_blocking(move || {
        let mut text = collector.render();
        if let Some(view) = view {
            text.push_str(&prometheus::render_figures(&rule_metrics(&view.rules())));
        }
        text
    })
    .await
    .map_err(|e| ApiError::internal(format!("rendering the metrics failed: {e}")))?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], text))
}

/// The rules' figures: each rule's state (one series per state, 1 for the current one), the
/// processes its match held for, and its actions by outcome. As many series as the rules file
/// has rules (times 9): bounded by the file.
fn rule_metrics(rules: &[RuleSnapshot]) -> Vec<Figure> {
    const STATES: [RuleStatus; 4] = [
        RuleStatus::Running,
        RuleStatus::Acting,
        RuleStatus::Throttled,
        RuleStatus::Finished,
    ];
    let mut state = Vec::new();
    let mut matched = Vec::new();
    let mut actions = Vec::new();
    for r in rules {
        let rule = format!("rule=\"{}\"", prometheus::label_value(&r.name));
        for s in STATES {
            let on = if r.status == s { 1.0 } else { 0.0 };
            state.push((format!("{rule},state=\"{}\"", s.as_str()), on));
        }
        matched.push((rule.clone(), r.matched as f64));
        for (outcome, n) in [
            ("started", r.started),
            ("done", r.done),
            ("failed", r.failed),
            ("refused", r.refused),
        ] {
            actions.push((format!("{rule},outcome=\"{outcome}\""), n as f64));
        }
    }
    vec![
        Figure {
            name: "clrspy_agent_rule_state",
            kind: MetricType::Gauge,
            help:
                "Each rule's state (running, acting, throttled, finished): 1 for the current one.",
            series: state,
        },
        Figure {
            name: "clrspy_agent_rule_matched_total",
            kind: MetricType::Counter,
            help: "Processes each rule's match held for.",
            series: matched,
        },
        Figure {
            name: "clrspy_agent_rule_actions_total",
            kind: MetricType::Counter,
            help:
                "Each rule's actions: started, done, failed, and refused by its limits or the disk.",
            series: actions,
        },
    ]
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use crate::auth::Authenticator;
    use crate::state::AppState;

    async fn call(uri: &str, key: Option<&str>) -> (StatusCode, Option<String>, String) {
        let state = AppState::for_tests(
            Authenticator::new(vec![crate::keys::digest("k")], None),
            "metrics-routes",
        );
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
        let state = AppState::for_tests(
            Authenticator::new(vec![crate::keys::digest("k")], None),
            "metrics-routes",
        );
        let app = crate::routes::app(state, 1024);
        for (uri, key) in [
            ("/health", None),
            ("/metrics", None),
            ("/processes/x", Some("k")),
            ("/debug/pprof/profile?seconds=0", Some("k")),
            ("/trace?pid=..", Some("k")),
            ("/gcdump?pid=1", None),
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
                    "clrspy_agent_requests_total{route=\"/debug/pprof/profile\",code=\"400\"} 1\n",
                    "clrspy_agent_requests_total{route=\"/trace\",code=\"400\"} 1\n",
                    "clrspy_agent_requests_total{route=\"/gcdump\",code=\"401\"} 1\n",
                ] {
                    assert!(body.contains(line), "{line}{body}");
                }
            }
        }
    }

    #[test]
    fn each_rule_has_its_state_matches_and_actions() {
        use clrspy_watch::{RuleSnapshot, RuleStatus};
        let rule = |name: &str, status, done| RuleSnapshot {
            name: name.into(),
            actions: vec!["trace"],
            status,
            reason: String::new(),
            throttled_for: None,
            looked_at: 3,
            matched: 2,
            admitted: 1,
            max_actions: Some(1),
            started: 1,
            done,
            failed: 0,
            refused: 4,
            under_way: 0,
            last: None,
        };
        let own = super::rule_metrics(&[
            rule("slow \"api\"", RuleStatus::Finished, 1),
            rule("idle", RuleStatus::Running, 0),
        ]);
        let text = clrspy_export::prometheus::render_figures(&own);
        for line in [
            "# TYPE clrspy_agent_rule_state gauge\n",
            "clrspy_agent_rule_state{rule=\"slow \\\"api\\\"\",state=\"finished\"} 1\n",
            "clrspy_agent_rule_state{rule=\"slow \\\"api\\\"\",state=\"running\"} 0\n",
            "clrspy_agent_rule_state{rule=\"idle\",state=\"running\"} 1\n",
            "clrspy_agent_rule_matched_total{rule=\"idle\"} 2\n",
            "clrspy_agent_rule_actions_total{rule=\"idle\",outcome=\"done\"} 0\n",
            "clrspy_agent_rule_actions_total{rule=\"slow \\\"api\\\"\",outcome=\"done\"} 1\n",
            "clrspy_agent_rule_actions_total{rule=\"idle\",outcome=\"refused\"} 4\n",
        ] {
            assert!(text.contains(line), "{line}{text}");
        }
        assert_eq!(text.matches("# TYPE").count(), 3);
    }
}
