//! What every request handler shares: the authenticator, the limits on concurrent work, the
//! operations (which hold the disk budget), the audit log, the metrics collector, what stopping waits for, and the
//! settings handlers need. Cloned per request (reference-counted).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::AuditLog;
use crate::auth::Authenticator;
use crate::drain::Drain;
use crate::limits::Limits;
use crate::metrics::Collector;

/// The shared state.
#[derive(Clone)]
pub(crate) struct AppState {
    /// Who may call.
    pub(crate) auth: Arc<Authenticator>,
    /// Concurrent work, per kind and per process.
    pub(crate) limits: Arc<Limits>,
    /// The longest a request may take (handlers bound their own work below it).
    pub(crate) request_timeout: Duration,
    /// The agent's own folder (made private at start; see [`crate::folder`]).
    pub(crate) folder: PathBuf,
    /// Where audited requests are written.
    pub(crate) audit: Arc<AuditLog>,
    /// The responses in flight and the streams to end when the agent stops.
    pub(crate) drain: Arc<Drain>,
    /// The counters behind `/metrics`.
    pub(crate) metrics: Arc<Collector>,
    /// The watcher inside the agent, when rules are configured (`/rules`).
    pub(crate) rules: Option<crate::rules_host::RulesHandle>,
    /// Long-running actions (`/operations`, `/dump`, `/gcdump`), and the one disk budget of the
    /// folder they, and the streams' spools, write in.
    pub(crate) operations: Arc<crate::operations::Operations>,
}

#[cfg(test)]
impl AppState {
    /// A state for the routes' tests: these credentials, a 1 MB budget in a folder of the
    /// test's own under the temporary directory, an audit log in memory, no collector
    /// sessions, no rules.
    pub(crate) fn for_tests(auth: Authenticator, tag: &str) -> AppState {
        let folder =
            std::env::temp_dir().join(format!("clrspy-agent-{tag}-{}", std::process::id()));
        let budget = crate::artifact::Budget::from_mb(1);
        AppState {
            auth: Arc::new(auth),
            limits: Arc::new(Limits::new(&crate::config::ConcurrencyConfig::default())),
            request_timeout: Duration::from_secs(5),
            folder: folder.clone(),
            audit: Arc::new(AuditLog::in_memory()),
            drain: Drain::new(),
            metrics: Arc::new(Collector::idle(
                crate::metrics::MetricsConfig::default()
                    .settings()
                    .unwrap_or_else(|e| panic!("{e}")),
            )),
            rules: None,
            operations: Arc::new(crate::operations::Operations::new(&folder, budget, 10)),
        }
    }
}
