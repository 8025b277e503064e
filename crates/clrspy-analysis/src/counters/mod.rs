//! Live counters: EventCounters and System.Diagnostics.Metrics events in, one [`CounterRow`]
//! per value out, each with its own interval (UTC), so a late interval is never merged with
//! another or doubled. Also what to ask for: the `--counters` spec ([`spec`]) and the catalogue
//! of well-known sources and their instruments ([`catalog`]).
//!
//! Intervals: a meter's rows carry the runtime's own interval (its `CollectionStart`/`Stop`
//! times); an EventCounters row ends at its event's time (the trace clock turned to UTC through
//! the trace header's sync time) and starts `IntervalSec` earlier, never before the previous
//! row of the same counter ended.

pub mod catalog;
pub use clr_events::counter_spec as spec;

use clr_events::counters::{
    EventCounter, EventCounterKind, HistogramValue, MeterKind, MeterValue, MetricEvent,
};
use rustc_hash::FxHashMap;

pub use spec::{CounterSource, CounterSpec, SpecError};

/// What a row's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// A counter: the increment during the interval.
    Rate,
    /// An up-down counter: its value at the interval's end.
    UpDown,
    /// A gauge: its last value.
    Gauge,
    /// A histogram's summary.
    Histogram,
    /// An EventCounters mean.
    Mean,
}

impl CounterKind {
    /// The kind's name in files: `rate`, `updown`, `gauge`, `histogram`, `mean`.
    pub fn as_str(self) -> &'static str {
        match self {
            CounterKind::Rate => "rate",
            CounterKind::UpDown => "updown",
            CounterKind::Gauge => "gauge",
            CounterKind::Histogram => "histogram",
            CounterKind::Mean => "mean",
        }
    }
}

/// A histogram's interval: how many values, their sum and three percentiles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistogramSummary {
    /// Values recorded in the interval.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The median (None when the runtime reported none).
    pub p50: Option<f64>,
    /// The 95th percentile.
    pub p95: Option<f64>,
    /// The 99th percentile.
    pub p99: Option<f64>,
}

/// A row's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CounterValue {
    /// One number.
    Number(f64),
    /// A histogram's summary.
    Histogram(HistogramSummary),
}

/// One value of one counter (one time series) for one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterRow {
    /// The interval's start, ns since the Unix epoch (UTC).
    pub interval_start_ns: i64,
    /// The interval's end, ns since the Unix epoch (UTC).
    pub interval_end_ns: i64,
    /// The EventSource or meter.
    pub provider: String,
    /// The counter or instrument.
    pub name: String,
    /// The time series' tags, in order (none for EventCounters).
    pub tags: Vec<(String, String)>,
    /// What the value is.
    pub kind: CounterKind,
    /// The unit (may be empty).
    pub unit: String,
    /// The value.
    pub value: CounterValue,
}

impl CounterRow {
    /// The value as one number (a histogram's: its p50, else its mean).
    pub fn number(&self) -> Option<f64> {
        match self.value {
            CounterValue::Number(v) => Some(v),
            CounterValue::Histogram(h) => h
                .p50
                .or_else(|| (h.count > 0).then(|| h.sum / h.count as f64)),
        }
    }

    /// The interval's length in seconds.
    pub fn interval_sec(&self) -> f64 {
        (self.interval_end_ns - self.interval_start_ns) as f64 / 1e9
    }
}

/// What the stream says after an event.
#[derive(Clone, Debug, PartialEq)]
pub enum CounterUpdate {
    /// Rows whose interval is complete: a meter interval's rows, or one EventCounters row.
    Rows(Vec<CounterRow>),
    /// Something the user should know (a limit reached, the provider's error), said once.
    Note(String),
}

/// Turns a session's events into rows. Meter events of other sessions (another tool's) are
/// ignored by their session id; EventCounters of sources or names the spec does not ask for too.
#[derive(Debug)]
pub struct CounterStream {
    session_id: String,
    spec: CounterSpec,
    /// The meter interval being reported: (start, end) ns UTC, and its rows so far.
    open: Option<(i64, i64)>,
    batch: Vec<CounterRow>,
    /// The end of the last meter interval handed out.
    last_meter_end: Option<i64>,
    /// The end of each EventCounters counter's last row.
    last_end: FxHashMap<(String, String), i64>,
    /// Meters seen reporting (BeginInstrumentReporting), by name.
    meters: Vec<String>,
    /// Notes already said.
    said: Vec<String>,
    /// Events that did not parse.
    pub(crate) bad_events: u64,
}

impl CounterStream {
    /// A stream for the session whose Metrics provider was given `session_id`, keeping what
    /// `spec` asks for.
    pub fn new(session_id: impl Into<String>, spec: CounterSpec) -> CounterStream {
        CounterStream {
            session_id: session_id.into(),
            spec,
            open: None,
            batch: Vec::new(),
            last_meter_end: None,
            last_end: FxHashMap::default(),
            meters: Vec::new(),
            said: Vec::new(),
            bad_events: 0,
        }
    }

    /// The session id the Metrics provider is given.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// True once the meter `name` was seen reporting an instrument.
    pub fn meter_seen(&self, name: &str) -> bool {
        self.meters.iter().any(|m| m == name)
    }

    /// One event of the session.
    pub fn event(&mut self, ev: &nettrace::Event<'_>) -> Option<CounterUpdate> {
        if ev.provider() == clr_events::counters::METRICS_PROVIDER {
            return match MetricEvent::from_event(ev) {
                Ok(Some(m)) => self.metric(m),
                Ok(None) => None,
                Err(e) => {
                    self.bad_events += 1;
                    self.note(format!("a counter event did not read: {e}"))
                }
            };
        }
        match EventCounter::from_event(ev) {
            Ok(Some(c)) => self
                .event_counter(ev.provider(), c, ev.unix_ns())
                .map(|r| CounterUpdate::Rows(vec![r])),
            Ok(None) => None,
            Err(e) => {
                self.bad_events += 1;
                self.note(format!("a counter event did not read: {e}"))
            }
        }
    }

    fn note(&mut self, text: String) -> Option<CounterUpdate> {
        if self.said.contains(&text) {
            return None;
        }
        self.said.push(text.clone());
        Some(CounterUpdate::Note(text))
    }

    /// An EventCounters value ending at `end_ns` (UTC).
    pub(crate) fn event_counter(
        &mut self,
        provider: &str,
        c: EventCounter,
        end_ns: i64,
    ) -> Option<CounterRow> {
        if !self
            .spec
            .wants_event_counter(provider, &c.name, |m| self.meter_seen(m))
        {
            return None;
        }
        let key = (provider.to_string(), c.name.clone());
        let mut start = end_ns - (c.interval_sec.max(0.0) * 1e9) as i64;
        if let Some(&last) = self.last_end.get(&key) {
            if end_ns <= last {
                // Not after the row before it: a repeat, never a second value for the same time.
                return None;
            }
            start = start.max(last);
        }
        self.last_end.insert(key, end_ns);
        let kind = match c.kind {
            EventCounterKind::Sum => CounterKind::Rate,
            EventCounterKind::Mean => CounterKind::Mean,
        };
        Some(CounterRow {
            interval_start_ns: start,
            interval_end_ns: end_ns,
            provider: provider.to_string(),
            name: c.name,
            tags: Vec::new(),
            kind,
            unit: c.units,
            value: CounterValue::Number(c.value),
        })
    }

    /// A Metrics provider event.
    pub fn metric(&mut self, m: MetricEvent) -> Option<CounterUpdate> {
        let sid = m.session_id();
        let ours = sid == self.session_id;
        match m {
            MetricEvent::CollectionStart(i) if ours => {
                self.batch.clear();
                self.open = Some((i.start_unix_ns, i.end_unix_ns));
                None
            }
            MetricEvent::CollectionStop(i) if ours => {
                let rows = std::mem::take(&mut self.batch);
                self.open = None;
                if self.last_meter_end.is_some_and(|last| i.end_unix_ns <= last) {
                    // An interval already handed out: never twice.
                    return None;
                }
                self.last_meter_end = Some(i.end_unix_ns);
                let rows: Vec<CounterRow> = rows
                    .into_iter()
                    .map(|mut r| {
                        // The rows were stamped with CollectionStart's times; Stop's win.
                        r.interval_start_ns = i.start_unix_ns;
                        r.interval_end_ns = i.end_unix_ns;
                        r
                    })
                    .collect();
                Some(CounterUpdate::Rows(rows))
            }
            MetricEvent::Value(v) if ours => {
                let (start, end) = self.open?;
                let row = meter_row(v, start, end)?;
                self.batch.push(row);
                None
            }
            MetricEvent::Histogram(h) if ours => {
                let (start, end) = self.open?;
                self.batch.push(histogram_row(h, start, end));
                None
            }
            MetricEvent::BeginInstrumentReporting(i) if ours => {
                if !self.meter_seen(&i.instrument.meter) {
                    self.meters.push(i.instrument.meter);
                }
                None
            }
            MetricEvent::TimeSeriesLimitReached { .. } if ours => self.note(
                "the time series limit was reached: new time series are not reported (raise --max-time-series)".into(),
            ),
            MetricEvent::HistogramLimitReached { .. } if ours => self.note(
                "the histogram limit was reached: new histograms are not reported (raise --max-histograms)".into(),
            ),
            MetricEvent::Error { event, message, .. } if ours => {
                self.note(format!("System.Diagnostics.Metrics {event}: {message}"))
            }
            MetricEvent::MultipleSessionsNotSupported { running_session_id } => {
                (running_session_id != self.session_id).then_some(())?;
                self.note("another tool collects this process's meters (its runtime allows one session at a time): no meter values".into())
            }
            MetricEvent::MultipleSessionsConfiguredIncorrectly { fields } => self.note(format!(
                "another tool collects this process's meters with other settings: {}",
                fields
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        }
    }
}

fn meter_row(v: MeterValue, start: i64, end: i64) -> Option<CounterRow> {
    let (kind, value) = match v.kind {
        MeterKind::Rate => (CounterKind::Rate, v.rate?),
        MeterKind::UpDown => (CounterKind::UpDown, v.value.or(v.rate)?),
        MeterKind::Gauge => (CounterKind::Gauge, v.value?),
    };
    Some(CounterRow {
        interval_start_ns: start,
        interval_end_ns: end,
        provider: v.instrument.meter,
        name: v.instrument.name,
        tags: v.tags,
        kind,
        unit: v.instrument.unit,
        value: CounterValue::Number(value),
    })
}

fn histogram_row(h: HistogramValue, start: i64, end: i64) -> CounterRow {
    let summary = HistogramSummary {
        count: h.count.unwrap_or(0),
        sum: h.sum.unwrap_or(0.0),
        p50: h.quantile(0.5),
        p95: h.quantile(0.95),
        p99: h.quantile(0.99),
    };
    CounterRow {
        interval_start_ns: start,
        interval_end_ns: end,
        provider: h.instrument.meter,
        name: h.instrument.name,
        tags: h.tags,
        kind: CounterKind::Histogram,
        unit: h.instrument.unit,
        value: CounterValue::Histogram(summary),
    }
}

#[cfg(test)]
mod tests;
