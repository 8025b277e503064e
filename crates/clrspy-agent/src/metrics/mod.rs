//! `GET /metrics`'s data: a [`collector::Collector`] keeps one small counters session per
//! visible .NET process (on threads of its own, never on the async runtime) and the latest
//! value of each of its series; clrspy-export's `prometheus` writes them, with the agent's own
//! figures, in Prometheus' text format. The `[metrics]` config section is [`config`].

pub(crate) mod collector;
pub(crate) mod config;

pub(crate) use collector::Collector;
pub(crate) use config::{MetricsConfig, MetricsSettings};
