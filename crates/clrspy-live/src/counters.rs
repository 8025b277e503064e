//! A counters session: a small session of its own (16 MB buffer in the target, no stacks, no
//! rundown, no file) asking for EventCounters and meters, whose consumer turns events into
//! [`CounterRow`]s and hands them out an interval at a time. `clrspy counters` reads it now,
//! the agent later.

use std::ffi::OsString;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clr_events::counters::{METRICS_PROVIDER, METRICS_TIME_SERIES_KEYWORD};
use clrspy_analysis::counters::spec::CounterPlan;
use clrspy_analysis::counters::{CounterRow, CounterSpec, CounterStream, CounterUpdate};
use clrspy_collect::{Action, EventConsumer, LaunchOptions, Lost};
use diagnostics_client::{Endpoint, Provider, SessionConfig};

use crate::{ChildEnd, LiveSession, SessionError, SessionSpec};

/// The runtime's buffer for a counters session, MB (the default of
/// [`CountersOptions::buffer_mb`]).
pub const BUFFER_MB: u32 = 16;
/// Informational.
const INFORMATIONAL: u32 = 4;

/// What a counters session asks for.
#[derive(Clone, Debug)]
pub struct CountersOptions {
    /// The sources and counters.
    pub spec: CounterSpec,
    /// How often the runtime reports.
    pub refresh: Duration,
    /// The most histograms the Metrics provider tracks.
    pub max_histograms: u32,
    /// The most time series the Metrics provider tracks.
    pub max_time_series: u32,
    /// Stop after this long (None: until stopped or the target ends).
    pub duration: Option<Duration>,
    /// The runtime's buffer for the session inside the target, MB (the agent asks for less
    /// than [`BUFFER_MB`]: it holds one session per process).
    pub buffer_mb: u32,
}

impl Default for CountersOptions {
    fn default() -> CountersOptions {
        CountersOptions {
            spec: CounterSpec::default(),
            refresh: Duration::from_secs(1),
            max_histograms: 10,
            max_time_series: 1000,
            duration: None,
            buffer_mb: BUFFER_MB,
        }
    }
}

/// Seconds as the providers' arguments want them (invariant: `1`, `0.5`).
fn seconds(d: Duration) -> String {
    format!("{}", d.as_secs_f64().max(0.1))
}

/// The session's configuration for `plan`: one EventCounters provider per source with
/// `EventCounterIntervalSec`, and the Metrics provider (time series keyword) with the session
/// id, meters, interval and limits.
pub fn session_config(
    plan: &CounterPlan,
    session_id: &str,
    opts: &CountersOptions,
) -> SessionConfig {
    let interval = seconds(opts.refresh);
    let mut providers: Vec<Provider> = plan
        .event_counter_sources
        .iter()
        .map(|name| Provider {
            name: name.clone(),
            keywords: 0,
            level: INFORMATIONAL,
            arguments: Some(format!("EventCounterIntervalSec={interval}")),
        })
        .collect();
    if !plan.meters.is_empty() {
        providers.push(Provider {
            name: METRICS_PROVIDER.into(),
            keywords: METRICS_TIME_SERIES_KEYWORD,
            level: INFORMATIONAL,
            arguments: Some(format!(
                "SessionId={session_id};Metrics={};RefreshInterval={interval};MaxTimeSeries={};MaxHistograms={}",
                plan.meters.join(","),
                opts.max_time_series,
                opts.max_histograms
            )),
        });
    }
    SessionConfig {
        circular_buffer_mb: opts.buffer_mb.max(1),
        rundown_keyword: 0,
        stackwalk: false,
        providers,
    }
}

/// A session id no other tool's session shares.
fn new_session_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("clrspy-{}-{nanos:x}", std::process::id())
}

/// The major version of the runtime behind `endpoint`, when it says.
pub fn runtime_major(endpoint: &Endpoint) -> Option<u32> {
    let info = diagnostics_client::process_info(endpoint, Duration::from_secs(3)).ok()?;
    info.runtime_version?.split('.').next()?.parse().ok()
}

/// Turns the session's events into updates on a channel.
struct CountersFeed {
    stream: CounterStream,
    tx: Sender<CounterUpdate>,
}

impl EventConsumer for CountersFeed {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if let Some(u) = self.stream.event(ev) {
            let _ = self.tx.send(u);
        }
        Action::Continue
    }

    fn lost(&mut self, lost: &Lost) {
        let _ = self.tx.send(CounterUpdate::Note(format!(
            "the live view fell behind and skipped {lost}"
        )));
    }
}

/// A running counters session.
#[derive(Debug)]
pub struct CountersSession {
    session: LiveSession,
    rx: Receiver<CounterUpdate>,
    notes: Vec<String>,
}

impl CountersSession {
    fn parts(
        opts: &CountersOptions,
        runtime_major: Option<u32>,
    ) -> (
        SessionSpec,
        CountersFeed,
        Receiver<CounterUpdate>,
        Vec<String>,
    ) {
        let plan = opts.spec.plan(runtime_major);
        let session_id = new_session_id();
        let spec = SessionSpec {
            config: session_config(&plan, &session_id, opts),
            out: None,
            duration: opts.duration,
            thread_cpu: None,
            lossless: true,
        };
        let (tx, rx) = mpsc::channel();
        let feed = CountersFeed {
            stream: CounterStream::new(session_id, opts.spec.clone()),
            tx,
        };
        (spec, feed, rx, plan.notes)
    }

    /// Starts collecting from the process behind `endpoint` (its runtime version decides
    /// between System.Runtime's meter and its EventCounters).
    pub fn attach(endpoint: Endpoint, opts: &CountersOptions) -> std::io::Result<CountersSession> {
        let major = runtime_major(&endpoint);
        let (spec, feed, rx, notes) = CountersSession::parts(opts, major);
        let session = LiveSession::attach(endpoint, spec, vec![Box::new(feed)])?;
        Ok(CountersSession { session, rx, notes })
    }

    /// Starts `command` and collects from its first instruction; ends with the program. The
    /// runtime version is not known before it starts: System.Runtime is asked both ways and
    /// the meter wins where it reports.
    pub fn launch(
        command: Vec<OsString>,
        opts: &CountersOptions,
        launch: LaunchOptions,
    ) -> std::io::Result<CountersSession> {
        let (spec, feed, rx, notes) = CountersSession::parts(opts, None);
        let session = LiveSession::launch(command, spec, vec![Box::new(feed)], launch)?;
        Ok(CountersSession { session, rx, notes })
    }

    /// What was decided about the sources (to say once).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The next update, waiting up to `timeout`; `Disconnected` once the session ended and
    /// everything was handed out.
    pub fn next(&self, timeout: Duration) -> Result<CounterUpdate, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }

    /// Asks the session to stop; [`CountersSession::join`] waits.
    pub fn stop(&self) {
        self.session.stop();
    }

    /// Waits for the session to end: how a launched program ended (None for an attach).
    pub fn join(self) -> Result<Option<ChildEnd>, SessionError> {
        self.session.join_child().map(|(_, c)| c)
    }
}

/// Rows of an update (none for a note).
pub fn rows(u: &CounterUpdate) -> &[CounterRow] {
    match u {
        CounterUpdate::Rows(r) => r,
        CounterUpdate::Note(_) => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_asks_for_both_kinds_of_source() {
        let opts = CountersOptions {
            spec: "System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]"
                .parse()
                .unwrap(),
            refresh: Duration::from_millis(500),
            ..CountersOptions::default()
        };
        let plan = opts.spec.plan(Some(8));
        let c = session_config(&plan, "sid", &opts);
        assert_eq!(
            (c.circular_buffer_mb, c.rundown_keyword, c.stackwalk),
            (16, 0, false)
        );
        let names: Vec<&str> = c.providers.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "System.Runtime",
                "Microsoft.AspNetCore.Hosting",
                METRICS_PROVIDER
            ]
        );
        assert_eq!(
            c.providers[0].arguments.as_deref(),
            Some("EventCounterIntervalSec=0.5")
        );
        let m = &c.providers[2];
        assert_eq!(m.keywords, 0x2);
        assert_eq!(
            m.arguments.as_deref(),
            Some("SessionId=sid;Metrics=Microsoft.AspNetCore.Hosting\\http.server.request.duration;RefreshInterval=0.5;MaxTimeSeries=1000;MaxHistograms=10")
        );
        // .NET 9+: System.Runtime only as a meter.
        let c = session_config(&opts.spec.plan(Some(10)), "sid", &opts);
        assert!(c.providers.iter().all(|p| p.name != "System.Runtime"));
        assert!(c.providers[1]
            .arguments
            .as_deref()
            .is_some_and(|a| a.contains("Metrics=System.Runtime,")));
    }
}
