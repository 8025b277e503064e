//! Requests an ASP.NET Core app served (`Microsoft.AspNetCore.Hosting`): started, finished,
//! failed, and how long each route took — a start and its stop are tied by their activity id.

use std::collections::BTreeMap;

use clr_events::ViewError;
use serde::Serialize;

use super::shared::{text, Durations, Pair, Pairs};
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

const HOSTING: &str = "Microsoft.AspNetCore.Hosting";

/// Served requests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RequestModel {
    /// Requests that started in the window.
    pub started: u64,
    /// Unhandled exceptions the host saw.
    pub unhandled_exceptions: u64,
    /// By `METHOD path`, the finished requests' durations.
    pub routes: BTreeMap<String, Durations>,
    /// Requests started and not finished by the end.
    pub in_flight: u64,
    /// Requests that finished in the window without their start (it came before).
    pub finished_unstarted: u64,
    /// Starts and stops without an activity id, not timed: the recording did not enable
    /// `System.Threading.Tasks.TplEventSource` with keyword 0x80, which flows the ids.
    pub without_activity_id: u64,
    #[serde(skip)]
    pairs: Pairs<[u8; 16], String, ()>,
}

impl RequestModel {
    fn done(&mut self, pair: Option<Pair<String, ()>>) {
        if let Some((start, route, end, ())) = pair {
            self.routes.entry(route).or_default().add(end - start);
        }
    }
}

impl Model for RequestModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(HOSTING, "RequestStart"),
        Wanted::named(HOSTING, "RequestStop"),
        Wanted::named(HOSTING, "UnhandledException"),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let id = ev.context.activity_id.0;
        let unpaired = ev.context.activity_id.is_zero();
        if unpaired && ev.context.event_name != "UnhandledException" {
            self.without_activity_id += 1;
        }
        match ev.context.event_name {
            "RequestStart" if unpaired => self.started += 1,
            "RequestStop" if unpaired => {}
            "RequestStart" => {
                let d = ev.decode();
                self.started += 1;
                let route = format!("{} {}", text(&d, "method"), text(&d, "path"));
                let pair = self.pairs.start(id, ev.ts_ns, route);
                self.done(pair);
            }
            "RequestStop" => {
                let pair = self.pairs.end(id, ev.ts_ns, ());
                self.done(pair);
            }
            _ => self.unhandled_exceptions += 1,
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.in_flight = self.pairs.open();
        self.finished_unstarted = self.pairs.orphan_ends();
        self.routes.values_mut().for_each(Durations::finish);
    }
}

/// The registry's entry.
pub const ENTRY: ModelEntry = ModelEntry::of::<RequestModel>(
    "requests",
    "requests an ASP.NET Core app served, by route",
    boxed::<RequestModel>,
);
