//! Kestrel's connections and the requests on them (`Microsoft-AspNetCore-Server-Kestrel`):
//! how many, how long they stayed open, and what is still open at the end.

use clr_events::ViewError;
use serde::Serialize;

use super::shared::{text, Durations, Pair, Pairs};
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

const KESTREL: &str = "Microsoft-AspNetCore-Server-Kestrel";

/// Connections.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct ConnectionModel {
    /// Connections opened.
    pub(crate) opened: u64,
    /// How long the closed ones stayed open.
    pub(crate) closed: Durations,
    /// Requests Kestrel started and finished.
    pub(crate) requests: Durations,
    /// Still open at the end.
    pub(crate) open_at_end: u64,
    #[serde(skip)]
    open: Pairs<String, (), ()>,
    #[serde(skip)]
    open_requests: Pairs<String, (), ()>,
}

/// Adds a finished pair's duration.
fn add(to: &mut Durations, pair: Option<Pair<(), ()>>) {
    if let Some((start, (), end, ())) = pair {
        to.add(end - start);
    }
}

impl Model for ConnectionModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(KESTREL, "ConnectionStart"),
        Wanted::named(KESTREL, "ConnectionStop"),
        Wanted::named(KESTREL, "RequestStart"),
        Wanted::named(KESTREL, "RequestStop"),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let d = ev.decode();
        match ev.context.event_name {
            "ConnectionStart" => {
                self.opened += 1;
                let pair = self.open.start(text(&d, "connectionId"), ev.ts_ns, ());
                add(&mut self.closed, pair);
            }
            "ConnectionStop" => {
                let pair = self.open.end(text(&d, "connectionId"), ev.ts_ns, ());
                add(&mut self.closed, pair);
            }
            "RequestStart" => {
                let pair = self
                    .open_requests
                    .start(text(&d, "requestId"), ev.ts_ns, ());
                add(&mut self.requests, pair);
            }
            _ => {
                let pair = self.open_requests.end(text(&d, "requestId"), ev.ts_ns, ());
                add(&mut self.requests, pair);
            }
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.open_at_end = self.open.open();
        self.closed.finish();
        self.requests.finish();
    }
}

/// The registry's entry: Kestrel's connections and the requests on them.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<ConnectionModel>(
    "connections",
    boxed::<ConnectionModel>,
);
