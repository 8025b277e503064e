//! What every request handler shares: the authenticator, the limits on concurrent work, the
//! metrics collector, and the settings handlers need. Cloned per request (reference-counted).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Authenticator;
use crate::limits::Limits;
use crate::metrics::Collector;

/// The shared state.
#[derive(Clone)]
pub struct AppState {
    /// Who may call.
    pub auth: Arc<Authenticator>,
    /// Concurrent work, per kind and per process.
    pub limits: Arc<Limits>,
    /// The longest a request may take (handlers bound their own work below it).
    pub request_timeout: Duration,
    /// The agent's own folder (made private at start; see [`crate::folder`]).
    pub folder: PathBuf,
    /// The one disk budget of that folder: dumps, heap snapshots and streams' spools.
    pub budget: crate::artifact::Budget,
    /// The counters behind `/metrics`.
    pub metrics: Arc<Collector>,
    /// The watcher inside the agent, when rules are configured (`/rules`).
    pub rules: Option<crate::rules_host::RulesHandle>,
    /// Long-running actions (`/operations`, `/dump`, `/gcdump`), within [`AppState::budget`].
    pub operations: Arc<crate::operations::Operations>,
}
