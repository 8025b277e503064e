//! Typed views of counter events: the `EventCounters` event any EventSource writes each
//! interval ([`EventCounter`]), and the events of the `System.Diagnostics.Metrics` provider
//! that carry meters' instruments ([`MetricEvent`]).
//!
//! Both are self-describing (their metadata names the fields), so the views read the fields the
//! metadata decoded, by name: versions differ by trailing fields only (v1 adds a counter's total
//! `value`, v2 the instrument id and tags), and a field a version lacks is `None`. The Metrics
//! provider writes numbers as invariant-culture strings (`""` when there is no value this
//! interval), tags as `k=v,k=v` and quantiles as `0.5=v;0.95=v;0.99=v`. Parsing never panics:
//! what is malformed is a [`CounterError`] naming the event and field.

use nettrace::{Event, Field, Value};

/// The provider of System.Diagnostics.Metrics meters.
pub const METRICS_PROVIDER: &str = "System.Diagnostics.Metrics";
/// The event name every EventSource's counters are written under.
pub(crate) const EVENT_COUNTERS: &str = "EventCounters";
/// The Metrics provider's keyword for the values of time series.
pub const METRICS_TIME_SERIES_KEYWORD: u64 = 0x2;

/// Why a counter event could not be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CounterError {
    /// A field the event needs is missing.
    #[error("{event}: no field '{field}'")]
    Missing {
        /// The event.
        event: String,
        /// The field.
        field: &'static str,
    },
    /// A field holds what cannot be read as the type it should be.
    #[error("{event}: field '{field}' holds {value:?}")]
    Bad {
        /// The event.
        event: String,
        /// The field.
        field: &'static str,
        /// What it holds, as text.
        value: String,
    },
}

/// How an EventCounters value was aggregated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventCounterKind {
    /// `EventCounter`/`PollingCounter`: the mean of the interval's values.
    Mean,
    /// `IncrementingEventCounter`/`IncrementingPollingCounter`: the increment during the
    /// interval.
    Sum,
}

/// One counter's value for one interval, from an `EventCounters` event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventCounter {
    /// The counter's name (`cpu-usage`).
    pub name: String,
    /// Its display name (`CPU Usage`).
    pub display_name: String,
    /// Its display units (`%`, `MB`; may be empty).
    pub units: String,
    /// Mean or increment.
    pub kind: EventCounterKind,
    /// The mean, or the increment.
    pub value: f64,
    /// The interval's length in seconds as the source measured it.
    pub interval_sec: f64,
    /// The series (`Interval=1000`).
    pub series: String,
    /// How many values the mean is of (Mean counters).
    pub count: Option<f64>,
    /// The smallest value (Mean counters).
    pub min: Option<f64>,
    /// The largest value (Mean counters).
    pub max: Option<f64>,
    /// The counter's metadata string (`k:v,k:v`), when it has one.
    pub metadata: String,
}

fn get<'a>(fields: &'a [Field], name: &str) -> Option<&'a Value> {
    fields
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))
        .map(|f| &f.value)
}

/// The object holding a `Name` field, looking into nested objects (the counter's payload sits
/// in a `Payload` object inside an unnamed one) at most 4 levels down.
fn counter_object(fields: &[Field], depth: u32) -> Option<&[Field]> {
    if get(fields, "Name").is_some() {
        return Some(fields);
    }
    if depth >= 4 {
        return None;
    }
    fields.iter().find_map(|f| match &f.value {
        Value::Object(inner) => counter_object(inner, depth + 1),
        _ => None,
    })
}

/// A field as a number: numbers as they are, strings parsed (invariant culture).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => s.trim().parse::<f64>().ok(),
        v => v.as_f64(),
    }
}

fn text(fields: &[Field], name: &str) -> String {
    match get(fields, name) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => number(v).map(|x| x.to_string()).unwrap_or_default(),
        None => String::new(),
    }
}

impl EventCounter {
    /// Reads an `EventCounters` event's decoded fields.
    pub fn parse(fields: &[Field]) -> Result<EventCounter, CounterError> {
        let missing = |field| CounterError::Missing {
            event: EVENT_COUNTERS.into(),
            field,
        };
        let p = counter_object(fields, 0).ok_or_else(|| missing("Payload"))?;
        let name = match get(p, "Name") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(missing("Name")),
        };
        let sum = matches!(get(p, "CounterType"), Some(Value::String(t)) if t == "Sum")
            || (get(p, "Mean").is_none() && get(p, "Increment").is_some());
        let (kind, field) = if sum {
            (EventCounterKind::Sum, "Increment")
        } else {
            (EventCounterKind::Mean, "Mean")
        };
        let raw = get(p, field).ok_or_else(|| missing(field))?;
        let value = number(raw).ok_or_else(|| CounterError::Bad {
            event: EVENT_COUNTERS.into(),
            field,
            value: format!("{raw:?}"),
        })?;
        let opt = |n: &str| get(p, n).and_then(number);
        Ok(EventCounter {
            name,
            display_name: text(p, "DisplayName"),
            units: text(p, "DisplayUnits"),
            kind,
            value,
            interval_sec: opt("IntervalSec").unwrap_or(0.0),
            series: text(p, "Series"),
            count: opt("Count"),
            min: opt("Min"),
            max: opt("Max"),
            metadata: text(p, "Metadata"),
        })
    }

    /// Reads `ev` when it is an `EventCounters` event (`Ok(None)` for any other event).
    pub fn from_event(ev: &Event<'_>) -> Result<Option<EventCounter>, CounterError> {
        if ev.metadata_name() != EVENT_COUNTERS {
            return Ok(None);
        }
        EventCounter::parse(&ev.decode_with_metadata().fields).map(Some)
    }
}

/// What a meter's instrument measures, as the Metrics provider reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterKind {
    /// A `Counter`/`ObservableCounter`: `rate` is the increment during the interval.
    Rate,
    /// An `UpDownCounter`/`ObservableUpDownCounter`: `value` is the current value.
    UpDown,
    /// A `Gauge`/`ObservableGauge`: the last value.
    Gauge,
}

/// A collection interval of the Metrics provider (`CollectionStart`/`CollectionStop`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionInterval {
    /// The session that asked for it.
    pub session_id: String,
    /// The interval's start, ns since the Unix epoch (UTC).
    pub start_unix_ns: i64,
    /// The interval's end, ns since the Unix epoch (UTC).
    pub end_unix_ns: i64,
}

/// An instrument: the fields every value event starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instrument {
    /// The session that asked for it.
    pub session_id: String,
    /// The meter's name.
    pub meter: String,
    /// The meter's version (may be empty).
    pub meter_version: String,
    /// The instrument's name.
    pub name: String,
    /// Its unit (may be empty).
    pub unit: String,
}

/// A counter's, up-down counter's or gauge's value for one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct MeterValue {
    /// Which instrument.
    pub instrument: Instrument,
    /// Counter, up-down counter or gauge.
    pub kind: MeterKind,
    /// The time series' tags, in order.
    pub tags: Vec<(String, String)>,
    /// The increment during the interval (counters and up-down counters; None when there was
    /// no measurement).
    pub rate: Option<f64>,
    /// The total (counters, v1+), the current value (up-down counters) or the last value
    /// (gauges); None when there is none.
    pub value: Option<f64>,
}

/// A histogram's summary for one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramValue {
    /// Which instrument.
    pub instrument: Instrument,
    /// The time series' tags, in order.
    pub tags: Vec<(String, String)>,
    /// (quantile, value) pairs: `0.5`, `0.95`, `0.99`.
    pub quantiles: Vec<(f64, f64)>,
    /// How many values were recorded during the interval (v1+).
    pub count: Option<u64>,
    /// Their sum (v1+).
    pub sum: Option<f64>,
}

impl HistogramValue {
    /// The value at quantile `q` (e.g. 0.95), when reported.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        self.quantiles
            .iter()
            .find(|(k, _)| (k - q).abs() < 1e-9)
            .map(|&(_, v)| v)
    }
}

/// An instrument the provider began or stopped reporting, or that was published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentInfo {
    /// Which instrument.
    pub instrument: Instrument,
    /// Its type (`Counter`1`, `Histogram`1`, ...).
    pub instrument_type: String,
    /// Its description.
    pub description: String,
}

/// An event of the `System.Diagnostics.Metrics` provider.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MetricEvent {
    /// An interval's values follow.
    CollectionStart(CollectionInterval),
    /// An interval's values are all written.
    CollectionStop(CollectionInterval),
    /// A counter's, up-down counter's or gauge's value.
    Value(MeterValue),
    /// A histogram's summary.
    Histogram(HistogramValue),
    /// The provider began reporting an instrument.
    BeginInstrumentReporting(InstrumentInfo),
    /// The provider stopped reporting an instrument.
    EndInstrumentReporting(InstrumentInfo),
    /// An instrument was published.
    InstrumentPublished(InstrumentInfo),
    /// The instruments that existed when the session started were all listed.
    InitialInstrumentEnumerationComplete {
        /// The session.
        session_id: String,
    },
    /// The provider failed (`Error`) or an observable instrument's callback threw
    /// (`ObservableInstrumentCallbackError`).
    Error {
        /// The session.
        session_id: String,
        /// The event's name.
        event: String,
        /// The message.
        message: String,
    },
    /// The session tracks its maximum of time series: new ones are not reported.
    TimeSeriesLimitReached {
        /// The session.
        session_id: String,
    },
    /// The session tracks its maximum of histograms: new ones are not reported.
    HistogramLimitReached {
        /// The session.
        session_id: String,
    },
    /// Another session already collects (runtimes before .NET 8 allow one at a time).
    MultipleSessionsNotSupported {
        /// The session that runs.
        running_session_id: String,
    },
    /// A shared session was configured with other limits than this one asked for.
    MultipleSessionsConfiguredIncorrectly {
        /// (field name, value) pairs, as the event wrote them.
        fields: Vec<(String, String)>,
    },
    /// A diagnostic message of the provider.
    Message(String),
}

impl MetricEvent {
    /// Reads a Metrics provider event by its name and decoded fields (`Ok(None)` for a name
    /// this view does not know).
    pub fn parse(event: &str, fields: &[Field]) -> Result<Option<MetricEvent>, CounterError> {
        let session = || text(fields, "sessionId");
        Ok(Some(match event {
            "CollectionStart" => MetricEvent::CollectionStart(interval(event, fields)?),
            "CollectionStop" => MetricEvent::CollectionStop(interval(event, fields)?),
            "CounterRateValuePublished" => {
                MetricEvent::Value(meter_value(event, fields, MeterKind::Rate)?)
            }
            "UpDownCounterRateValuePublished" => {
                MetricEvent::Value(meter_value(event, fields, MeterKind::UpDown)?)
            }
            "GaugeValuePublished" => {
                MetricEvent::Value(meter_value(event, fields, MeterKind::Gauge)?)
            }
            "HistogramValuePublished" => MetricEvent::Histogram(histogram(event, fields)?),
            "BeginInstrumentReporting" => {
                MetricEvent::BeginInstrumentReporting(instrument_info(event, fields)?)
            }
            "EndInstrumentReporting" => {
                MetricEvent::EndInstrumentReporting(instrument_info(event, fields)?)
            }
            "InstrumentPublished" => {
                MetricEvent::InstrumentPublished(instrument_info(event, fields)?)
            }
            "InitialInstrumentEnumerationComplete" => {
                MetricEvent::InitialInstrumentEnumerationComplete {
                    session_id: session(),
                }
            }
            "Error" | "ObservableInstrumentCallbackError" => MetricEvent::Error {
                session_id: session(),
                event: event.to_string(),
                message: text(fields, "errorMessage"),
            },
            "TimeSeriesLimitReached" => MetricEvent::TimeSeriesLimitReached {
                session_id: session(),
            },
            "HistogramLimitReached" => MetricEvent::HistogramLimitReached {
                session_id: session(),
            },
            "MultipleSessionsNotSupportedError" => MetricEvent::MultipleSessionsNotSupported {
                running_session_id: text(fields, "runningSessionId"),
            },
            "MultipleSessionsConfiguredIncorrectlyError" => {
                MetricEvent::MultipleSessionsConfiguredIncorrectly {
                    fields: fields
                        .iter()
                        .map(|f| (f.name.to_string(), text(fields, &f.name)))
                        .collect(),
                }
            }
            "Message" => MetricEvent::Message(text(fields, "Message")),
            _ => return Ok(None),
        }))
    }

    /// Reads `ev` when it is an event of the Metrics provider (`Ok(None)` otherwise).
    pub fn from_event(ev: &Event<'_>) -> Result<Option<MetricEvent>, CounterError> {
        if ev.provider() != METRICS_PROVIDER {
            return Ok(None);
        }
        MetricEvent::parse(ev.metadata_name(), &ev.decode_with_metadata().fields)
    }

    /// The session the event belongs to (empty for events that name none).
    pub fn session_id(&self) -> &str {
        match self {
            MetricEvent::CollectionStart(i) | MetricEvent::CollectionStop(i) => &i.session_id,
            MetricEvent::Value(v) => &v.instrument.session_id,
            MetricEvent::Histogram(h) => &h.instrument.session_id,
            MetricEvent::BeginInstrumentReporting(i)
            | MetricEvent::EndInstrumentReporting(i)
            | MetricEvent::InstrumentPublished(i) => &i.instrument.session_id,
            MetricEvent::InitialInstrumentEnumerationComplete { session_id }
            | MetricEvent::Error { session_id, .. }
            | MetricEvent::TimeSeriesLimitReached { session_id }
            | MetricEvent::HistogramLimitReached { session_id } => session_id,
            MetricEvent::MultipleSessionsNotSupported { .. }
            | MetricEvent::MultipleSessionsConfiguredIncorrectly { .. }
            | MetricEvent::Message(_) => "",
        }
    }
}

fn required<'a>(
    event: &str,
    fields: &'a [Field],
    field: &'static str,
) -> Result<&'a Value, CounterError> {
    get(fields, field).ok_or_else(|| CounterError::Missing {
        event: event.into(),
        field,
    })
}

/// A time field: a `DateTime` (decoded as ISO-8601 UTC text) or text of the same form.
fn time(event: &str, fields: &[Field], field: &'static str) -> Result<i64, CounterError> {
    let v = required(event, fields, field)?;
    v.as_str()
        .and_then(clrspy_values::time::parse_utc)
        .ok_or_else(|| CounterError::Bad {
            event: event.into(),
            field,
            value: format!("{v:?}"),
        })
}

fn interval(event: &str, fields: &[Field]) -> Result<CollectionInterval, CounterError> {
    Ok(CollectionInterval {
        session_id: text(fields, "sessionId"),
        start_unix_ns: time(event, fields, "intervalStartTime")?,
        end_unix_ns: time(event, fields, "intervalEndTime")?,
    })
}

fn instrument(event: &str, fields: &[Field]) -> Result<Instrument, CounterError> {
    required(event, fields, "meterName")?;
    required(event, fields, "instrumentName")?;
    Ok(Instrument {
        session_id: text(fields, "sessionId"),
        meter: text(fields, "meterName"),
        meter_version: text(fields, "meterVersion"),
        name: text(fields, "instrumentName"),
        unit: text(fields, "unit"),
    })
}

/// An optional number: absent or `""` is None; anything else must parse.
fn opt_number(
    event: &str,
    fields: &[Field],
    field: &'static str,
) -> Result<Option<f64>, CounterError> {
    match get(fields, field) {
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(v) => number(v).map(Some).ok_or_else(|| CounterError::Bad {
            event: event.into(),
            field,
            value: format!("{v:?}"),
        }),
    }
}

/// Instruments the runtime declares as (observable) counters that measure a level — a count
/// of things there now, not of things that happened — by meter: their value is the level,
/// their "rate" its change (`queue.length -45 {work_item}/s` said nothing).
const LEVELS: &[(&str, &[&str])] = &[(
    "System.Runtime",
    &[
        "dotnet.thread_pool.thread.count",
        "dotnet.thread_pool.queue.length",
        "dotnet.timer.count",
        "dotnet.assembly.count",
        "dotnet.process.cpu.count",
        "dotnet.process.memory.working_set",
        "dotnet.gc.last_collection.heap.size",
        "dotnet.gc.last_collection.heap.fragmentation.size",
        "dotnet.gc.last_collection.memory.committed_size",
    ],
)];

/// True when instrument `name` of `meter` measures a level, whatever kind it was declared.
pub(crate) fn is_level(meter: &str, name: &str) -> bool {
    LEVELS
        .iter()
        .any(|(m, names)| *m == meter && names.contains(&name))
}

fn meter_value(event: &str, fields: &[Field], kind: MeterKind) -> Result<MeterValue, CounterError> {
    let instrument = instrument(event, fields)?;
    let (mut kind, mut rate, value) = match kind {
        MeterKind::Gauge => (kind, None, opt_number(event, fields, "lastValue")?),
        _ => (
            kind,
            opt_number(event, fields, "rate")?,
            opt_number(event, fields, "value")?,
        ),
    };
    // A level declared as a counter is shown as the level: its value (the observed count),
    // never its change as a rate. A counter whose increment is negative is a level too.
    if kind == MeterKind::Rate
        && value.is_some()
        && (is_level(&instrument.meter, &instrument.name) || rate.is_some_and(|r| r < 0.0))
    {
        kind = MeterKind::UpDown;
        rate = None;
    }
    Ok(MeterValue {
        instrument,
        kind,
        tags: parse_tags(&text(fields, "tags")),
        rate,
        value,
    })
}

fn histogram(event: &str, fields: &[Field]) -> Result<HistogramValue, CounterError> {
    let instrument = instrument(event, fields)?;
    let q = text(fields, "quantiles");
    let quantiles = parse_quantiles(&q).ok_or_else(|| CounterError::Bad {
        event: event.into(),
        field: "quantiles",
        value: q.clone(),
    })?;
    let count = opt_number(event, fields, "count")?;
    Ok(HistogramValue {
        instrument,
        tags: parse_tags(&text(fields, "tags")),
        quantiles,
        count: count.filter(|c| *c >= 0.0).map(|c| c as u64),
        sum: opt_number(event, fields, "sum")?,
    })
}

fn instrument_info(event: &str, fields: &[Field]) -> Result<InstrumentInfo, CounterError> {
    Ok(InstrumentInfo {
        instrument: instrument(event, fields)?,
        instrument_type: text(fields, "instrumentType"),
        description: text(fields, "description"),
    })
}

/// Tags as the Metrics provider writes them, `k=v,k=v`, in order (empty text: none; a part
/// without `=` is a key with an empty value).
pub(crate) fn parse_tags(s: &str) -> Vec<(String, String)> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (p.to_string(), String::new()),
        })
        .collect()
}

/// Quantiles as the Metrics provider writes them, `0.5=v;0.95=v;0.99=v` (empty text: none);
/// None when a part does not read as two numbers.
pub(crate) fn parse_quantiles(s: &str) -> Option<Vec<(f64, f64)>> {
    s.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (q, v) = p.split_once('=')?;
            Some((q.trim().parse().ok()?, v.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
#[path = "counters_tests.rs"]
mod tests;
