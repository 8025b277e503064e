//! Counters and metrics over time: EventCounters of any provider (`System.Runtime`'s
//! `cpu-usage`, `gc-heap-size`, ...) and `System.Diagnostics.Metrics` instruments (counters,
//! up-down counters, gauges, histograms), one series per counter.

use std::collections::BTreeMap;

use clr_events::ViewError;
use nettrace::Value;
use serde::Serialize;

use super::shared::{field, number, text};
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

const METRICS: &str = "System.Diagnostics.Metrics";

/// One counter's values.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Series {
    /// Its unit, when the source says.
    pub(crate) unit: String,
    /// (ns since the trace start, value): a mean or a last value, a rate for counters, the
    /// mean of a histogram's interval.
    pub(crate) points: Vec<(i64, f64)>,
}

/// Counters and metrics.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct CounterModel {
    /// By `provider/counter` (EventCounters) or `meter/instrument[tags]` (metrics).
    pub(crate) series: BTreeMap<String, Series>,
}

impl CounterModel {
    fn point(&mut self, key: String, unit: String, ts: i64, v: f64) {
        let s = self.series.entry(key).or_default();
        if s.unit.is_empty() {
            s.unit = unit;
        }
        s.points.push((ts, v));
    }

    /// An EventCounters event: its payload is one object holding `Payload`.
    fn event_counter(&mut self, ev: &ModelEvent<'_>, provider: &str) {
        let d = ev.decode();
        let Some(Value::Object(outer)) = field(&d, "") else {
            return;
        };
        let Some(Value::Object(p)) = outer.iter().find(|f| f.name == "Payload").map(|f| &f.value)
        else {
            return;
        };
        let get = |n: &str| p.iter().find(|f| f.name == n).map(|f| &f.value);
        let name = match get("Name") {
            Some(Value::String(s)) => s.clone(),
            _ => return,
        };
        let value = match get("CounterType") {
            Some(Value::String(t)) if t == "Sum" => get("Increment"),
            _ => get("Mean"),
        };
        let unit = match get("DisplayUnits") {
            Some(Value::String(u)) => u.clone(),
            _ => String::new(),
        };
        if let Some(v) = value.and_then(Value::as_f64) {
            self.point(format!("{provider}/{name}"), unit, ev.ts_ns, v);
        }
    }
}

impl Model for CounterModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named("*", "EventCounters"),
        Wanted::named(METRICS, "CounterRateValuePublished"),
        Wanted::named(METRICS, "UpDownCounterRateValuePublished"),
        Wanted::named(METRICS, "GaugeValuePublished"),
        Wanted::named(METRICS, "HistogramValuePublished"),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let name = ev.context.event_name;
        if name == "EventCounters" {
            let provider = match ev.provider {
                crate::Provider::Named(p) if p != "*" => p.to_string(),
                _ => ev.context.provider.to_string(),
            };
            self.event_counter(ev, &provider);
            return Ok(());
        }
        let d = ev.decode();
        let tags = text(&d, "tags");
        let key = if tags.is_empty() {
            format!("{}/{}", text(&d, "meterName"), text(&d, "instrumentName"))
        } else {
            format!(
                "{}/{}[{tags}]",
                text(&d, "meterName"),
                text(&d, "instrumentName")
            )
        };
        let value = match name {
            "GaugeValuePublished" => number(&d, "lastValue"),
            "HistogramValuePublished" => match (number(&d, "sum"), number(&d, "count")) {
                (Some(s), Some(c)) if c > 0.0 => Some(s / c),
                _ => None,
            },
            _ => number(&d, "rate"),
        };
        if let Some(v) = value {
            self.point(key, text(&d, "unit"), ev.ts_ns, v);
        }
        Ok(())
    }
}

/// The registry's entry: EventCounters and System.Diagnostics.Metrics instruments over time.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<CounterModel>(
    "counters",
    boxed::<CounterModel>,
);
