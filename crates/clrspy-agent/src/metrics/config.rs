//! The `[metrics]` config section and the checked settings the collector runs with.

use std::time::Duration;

use clrspy_analysis::counters::CounterSpec;
use clrspy_live::counters::CountersOptions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

/// The `[metrics]` section: what `/metrics` collects and its bounds.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct MetricsConfig {
    /// Collect at all (false: `/metrics` has only the agent's own figures).
    pub(crate) enabled: bool,
    /// The sources and counters, as `clrspy counters --counters` takes them (default
    /// `System.Runtime`).
    pub(crate) counters: Option<String>,
    /// How often each process reports, seconds (dotnet-monitor's `IntervalSeconds`).
    pub(crate) refresh_seconds: u64,
    /// How often the agent looks for processes that started or ended, seconds.
    pub(crate) rescan_seconds: u64,
    /// The most processes collected from at once (others are counted, not collected).
    pub(crate) max_processes: usize,
    /// The most series kept per process (also the Metrics provider's `MaxTimeSeries`); more
    /// are dropped and counted in `clrspy_agent_series_dropped_total`.
    pub(crate) max_time_series: u32,
    /// The most histograms the Metrics provider tracks per process.
    pub(crate) max_histograms: u32,
    /// The runtime's buffer for each session, inside the target, MB.
    pub(crate) buffer_mb: u32,
}

impl Default for MetricsConfig {
    fn default() -> MetricsConfig {
        MetricsConfig {
            enabled: true,
            counters: None,
            refresh_seconds: 5,
            rescan_seconds: 10,
            max_processes: 32,
            max_time_series: 1000,
            max_histograms: 20,
            buffer_mb: 1,
        }
    }
}

/// The checked settings a [`Collector`](super::Collector) runs with.
#[derive(Clone, Debug)]
pub(crate) struct MetricsSettings {
    /// Collect at all.
    pub(crate) enabled: bool,
    /// What each session asks for.
    pub(crate) options: CountersOptions,
    /// How often to look for processes.
    pub(crate) rescan: Duration,
    /// The most processes at once.
    pub(crate) max_processes: usize,
    /// The most series per process.
    pub(crate) max_series: usize,
}

impl MetricsConfig {
    /// The settings, or why the section is wrong.
    pub(crate) fn settings(&self) -> Result<MetricsSettings, AgentError> {
        let bad = |what: &str| AgentError::Config(format!("metrics.{what}"));
        let spec: CounterSpec = match &self.counters {
            Some(s) => s
                .parse()
                .map_err(|e| bad(&format!("counters {s:?}: {e}")))?,
            None => CounterSpec::default(),
        };
        if !(1..=3600).contains(&self.refresh_seconds) {
            return Err(bad("refresh_seconds must be 1 to 3600"));
        }
        if !(1..=3600).contains(&self.rescan_seconds) {
            return Err(bad("rescan_seconds must be 1 to 3600"));
        }
        if !(1..=1024).contains(&self.buffer_mb) {
            return Err(bad("buffer_mb must be 1 to 1024"));
        }
        if self.max_time_series == 0 {
            return Err(bad("max_time_series must be at least 1"));
        }
        Ok(MetricsSettings {
            enabled: self.enabled && self.max_processes > 0,
            options: CountersOptions {
                spec,
                refresh: Duration::from_secs(self.refresh_seconds),
                max_histograms: self.max_histograms,
                max_time_series: self.max_time_series,
                duration: None,
                buffer_mb: self.buffer_mb,
            },
            rescan: Duration::from_secs(self.rescan_seconds),
            max_processes: self.max_processes,
            max_series: self.max_time_series as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bad_values() {
        let s = MetricsConfig::default().settings().unwrap();
        assert_eq!(s.options.refresh, Duration::from_secs(5));
        assert_eq!(
            (s.rescan, s.max_processes, s.max_series),
            (Duration::from_secs(10), 32, 1000)
        );
        assert_eq!(s.options.buffer_mb, 1);
        let bad = MetricsConfig {
            refresh_seconds: 0,
            ..MetricsConfig::default()
        };
        assert!(bad.settings().is_err());
        let bad = MetricsConfig {
            counters: Some("System.Runtime[".into()),
            ..MetricsConfig::default()
        };
        assert!(bad.settings().is_err());
    }
}
