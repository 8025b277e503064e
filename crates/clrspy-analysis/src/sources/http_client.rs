//! Outgoing HTTP requests (`System.Net.Http`): by host, how many, how long, with which status,
//! and which failed and why — a start and its stop are tied by their activity id.

use std::collections::BTreeMap;

use clr_events::ViewError;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::shared::{number, text, Durations, Pair, Pairs};
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

const HTTP: &str = "System.Net.Http";

/// One host's requests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostCalls {
    /// Finished requests' durations.
    pub durations: Durations,
    /// Responses by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Failures by message.
    pub failures: BTreeMap<String, u64>,
}

/// Outgoing requests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HttpClientModel {
    /// By `scheme://host:port`.
    pub hosts: BTreeMap<String, HostCalls>,
    /// Started and not finished by the end.
    pub in_flight: u64,
    /// Events without an activity id, not tied to their request: the recording did not enable
    /// `System.Threading.Tasks.TplEventSource` with keyword 0x80, which flows the ids.
    pub without_activity_id: u64,
    #[serde(skip)]
    pairs: Pairs<[u8; 16], String, Option<u16>>,
    /// Failures not yet tied to their request's host.
    #[serde(skip)]
    failed: FxHashMap<[u8; 16], String>,
}

impl HttpClientModel {
    fn done(&mut self, id: [u8; 16], pair: Option<Pair<String, Option<u16>>>) {
        let Some((start, host, end, status)) = pair else {
            return;
        };
        let h = self.hosts.entry(host).or_default();
        h.durations.add(end - start);
        if let Some(code) = status {
            *h.statuses.entry(code).or_default() += 1;
        }
        if let Some(message) = self.failed.remove(&id) {
            *h.failures.entry(message).or_default() += 1;
        }
    }
}

impl Model for HttpClientModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(HTTP, "RequestStart"),
        Wanted::named(HTTP, "RequestStop"),
        Wanted::named(HTTP, "RequestFailed"),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let id = ev.context.activity_id.0;
        if ev.context.activity_id.is_zero() {
            self.without_activity_id += 1;
            return Ok(());
        }
        let d = ev.decode();
        match ev.context.event_name {
            "RequestStart" => {
                let host = format!(
                    "{}://{}:{}",
                    text(&d, "scheme"),
                    text(&d, "host"),
                    text(&d, "port")
                );
                let pair = self.pairs.start(id, ev.ts_ns, host);
                self.done(id, pair);
            }
            "RequestStop" => {
                // Older runtimes' RequestStop has no status code.
                let code = number(&d, "statusCode")
                    .filter(|c| (0.0..1000.0).contains(c))
                    .map(|c| c as u16);
                let pair = self.pairs.end(id, ev.ts_ns, code);
                self.done(id, pair);
            }
            _ => {
                // A failure comes before its request's stop, under the same activity.
                self.failed.insert(id, text(&d, "exceptionMessage"));
            }
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.in_flight = self.pairs.open();
        // Failures of requests that never finished in the trace.
        for (id, message) in std::mem::take(&mut self.failed) {
            let host = self.pairs.open_start(&id).cloned().unwrap_or_default();
            let h = self.hosts.entry(host).or_default();
            *h.failures.entry(message).or_default() += 1;
        }
        self.hosts.values_mut().for_each(|h| h.durations.finish());
    }
}

/// The registry's entry.
pub const ENTRY: ModelEntry = ModelEntry::of::<HttpClientModel>(
    "http_client",
    "outgoing HTTP requests by host: durations, statuses, failures",
    boxed::<HttpClientModel>,
);
