//! Stop triggers: conditions on the live event stream (a first-chance exception of some types,
//! a long GC pause, a gen2 GC, any event with a condition on a payload field, a runtime counter
//! over a threshold) or the target's exit. The first to fire is spliced into the trace as a
//! clrspy `Trigger` event, and the recording goes on for a delay (so the trace holds what
//! followed too) before it stops.
//!
//! A [`TriggerSpec`] has two written forms. In a rules file (serde, externally tagged):
//! `{"exception": "System.Net.*"}`, `{"gc_pause_ms": 200}`, `"gen2"`,
//! `{"event": "Provider/EventName:Field>Value"}`, `{"counter": "cpu-usage>80"}`, `"exit"`.
//! On the command line (`--stop-on KIND=VALUE`, [`std::str::FromStr`]; `-` and `_` alike in
//! kinds): `exception=GLOB`, `gc-pause-ms=N`, `gen2`, `event=PROVIDER/EVENT[:FIELD OP VALUE]`,
//! `counter=NAME OP NUMBER`, `exit`. See [`EventCondition`] and [`CounterCondition`].
//!
//! [`Triggers`] turns specs into what a recording needs: the providers they need
//! ([`Triggers::apply`]) and an [`EventConsumer`] ([`Triggers::consumer`]) whose
//! [`Action::Trigger`] the pump acts on.

use std::fmt;
use std::time::Duration;

use diagnostics_client::{Provider, SessionConfig};
use nettrace::{Event, Value};
use rustc_hash::FxHashMap;

use crate::tap::{Action, EventConsumer};

use clr_events::trigger_spec::{CounterCondition, EventCondition, Op, TriggerSpec};

/// The runtime's exception keyword.
const EXCEPTION_KEYWORD: u64 = 0x8000;
/// The runtime's GC keyword.
const GC_KEYWORD: u64 = 0x1;
/// Informational.
const INFORMATIONAL: u32 = 4;
/// The runtime's counters' EventSource.
pub(crate) const COUNTERS_PROVIDER: &str = "System.Runtime";
/// The default delay after a trigger fires (as PerfView's).
pub const DEFAULT_AFTER: Duration = Duration::from_secs(5);

/// Runtime event ids the triggers read.
mod rt {
    pub(crate) const GC_START: u32 = 1;
    pub(crate) const GC_RESTART_EE_END: u32 = 3;
    pub(crate) const GC_SUSPEND_EE_BEGIN: u32 = 9;
    pub(crate) const EXCEPTION_THROWN: u32 = 80;
}

pub use crate::tap::Fired;

impl Fired {
    /// The exit trigger, fired `elapsed` into the recording.
    pub fn exit(elapsed: Duration) -> Fired {
        Fired {
            trigger: TriggerSpec::Exit.to_string(),
            reason: "the target exited".into(),
            provider: String::new(),
            event: String::new(),
            timestamp: 0,
            time_ns: elapsed.as_nanos().min(i64::MAX as u128) as i64,
        }
    }
}

impl fmt::Display for Fired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trigger {} fired: {}", self.trigger, self.reason)?;
        if !self.event.is_empty() {
            write!(
                f,
                " ({}/{} at {:.3} s)",
                self.provider,
                self.event,
                self.time_ns as f64 / 1e9
            )?;
        }
        Ok(())
    }
}

/// A set of triggers and the delay after the first fires.
#[derive(Clone, Debug, PartialEq)]
pub struct Triggers {
    /// The triggers; the first to fire stops the recording.
    pub specs: Vec<TriggerSpec>,
    /// How long to go on recording after it fired.
    pub after: Duration,
}

impl Triggers {
    /// Triggers with the default delay.
    pub fn new(specs: Vec<TriggerSpec>) -> Triggers {
        Triggers {
            specs,
            after: DEFAULT_AFTER,
        }
    }

    /// True when the target's exit is a trigger.
    pub fn on_exit(&self) -> bool {
        self.specs.contains(&TriggerSpec::Exit)
    }

    /// Adds to `config` what the triggers need to see their events: the runtime's exception
    /// or GC keyword at informational, System.Runtime's counters every second, and the
    /// provider of an event trigger (all keywords, verbose) when the session lacks it.
    pub fn apply(&self, config: &mut SessionConfig) {
        let rt = clr_events::RUNTIME_PROVIDER;
        for s in &self.specs {
            match s {
                TriggerSpec::Exception(_) => add(config, rt, EXCEPTION_KEYWORD, INFORMATIONAL),
                TriggerSpec::GcPauseMs(_) | TriggerSpec::Gen2 => {
                    add(config, rt, GC_KEYWORD, INFORMATIONAL)
                }
                TriggerSpec::Counter(_) => {
                    add(config, COUNTERS_PROVIDER, 0, INFORMATIONAL);
                    if let Some(p) = config
                        .providers
                        .iter_mut()
                        .find(|p| p.name == COUNTERS_PROVIDER)
                    {
                        let has = p
                            .arguments
                            .as_deref()
                            .is_some_and(|a| a.contains("EventCounterIntervalSec"));
                        if !has {
                            p.arguments = Some(match p.arguments.take() {
                                Some(a) if !a.is_empty() => {
                                    format!("{a};EventCounterIntervalSec=1")
                                }
                                _ => "EventCounterIntervalSec=1".into(),
                            });
                        }
                    }
                }
                TriggerSpec::Event(c) => {
                    let glob = clrspy_values::pattern::has_wildcards(&c.provider);
                    let known = config
                        .providers
                        .iter()
                        .any(|p| p.name.eq_ignore_ascii_case(&c.provider));
                    if !glob && !known {
                        add(config, &c.provider, u64::MAX, 5);
                    }
                }
                TriggerSpec::Exit => {}
            }
        }
    }

    /// Installs the triggers in a recording's `live` feed: their event consumer, and the
    /// target's exit when it is one (see [`LiveFeeds::exit_trigger`](crate::LiveFeeds::exit_trigger)).
    pub fn install(&self, live: &mut crate::LiveFeeds<'_>) {
        live.consumers.extend(self.consumer());
        live.exit_trigger |= self.on_exit();
    }

    /// The consumer that watches the events; None when no trigger reads events.
    pub fn consumer(&self) -> Option<Box<dyn EventConsumer>> {
        self.specs
            .iter()
            .any(TriggerSpec::needs_events)
            .then(|| Box::new(TriggerConsumer::new(self)) as Box<dyn EventConsumer>)
    }
}

/// Adds `keywords` at `level` at least to provider `name` (adding it when missing).
fn add(config: &mut SessionConfig, name: &str, keywords: u64, level: u32) {
    match config.providers.iter_mut().find(|p| p.name == name) {
        Some(p) => {
            p.keywords |= keywords;
            p.level = p.level.max(level);
        }
        None => config.providers.push(Provider {
            name: name.into(),
            keywords,
            level,
            arguments: None,
        }),
    }
}

/// Watches events for the triggers; fires once.
pub(crate) struct TriggerConsumer {
    specs: Vec<TriggerSpec>,
    after: Duration,
    /// When the runtime began suspending for a GC (ns since the trace start).
    suspend_at: Option<i64>,
    fired: bool,
    /// Per metadata row: which specs name its events ([`TriggerConsumer::names`]).
    named: FxHashMap<u64, u64>,
    has_event_specs: bool,
}

impl TriggerConsumer {
    /// A consumer for `t`.
    pub(crate) fn new(t: &Triggers) -> TriggerConsumer {
        TriggerConsumer {
            specs: t.specs.clone(),
            after: t.after,
            suspend_at: None,
            fired: false,
            named: FxHashMap::default(),
            has_event_specs: t.specs.iter().any(|s| matches!(s, TriggerSpec::Event(_))),
        }
    }

    /// Which of the first 64 specs name `ev`'s provider and event (bit k for spec k; event
    /// specs only), cached per metadata row: names are matched once per row, not per event.
    fn names(&mut self, ev: &Event<'_>) -> u64 {
        let key = ev.metadata_key();
        if let Some(&v) = self.named.get(&key).filter(|_| key != 0) {
            return v;
        }
        let v = self
            .specs
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, s)| matches!(s, TriggerSpec::Event(c) if names_event(c, ev)))
            .fold(0u64, |m, (k, _)| m | 1 << k);
        if key != 0 && self.named.len() < 100_000 {
            self.named.insert(key, v);
        }
        v
    }

    /// The first trigger `ev` fires, with why.
    fn check(&mut self, ev: &Event<'_>) -> Option<(String, String)> {
        let runtime = ev.provider() == clr_events::RUNTIME_PROVIDER;
        let id = ev.event_id();
        if runtime && id == rt::GC_SUSPEND_EE_BEGIN {
            // Reason 1: for a GC; 6: to prepare one. Other suspensions are no GC pause.
            let d = fields(ev);
            let reason = get(&d, "Reason").and_then(Value::as_u64);
            self.suspend_at = matches!(reason, Some(1 | 6)).then(|| ev.timestamp_ns());
        }
        let named = if self.has_event_specs {
            self.names(ev)
        } else {
            0
        };
        let mut hit = None;
        for (k, s) in self.specs.iter().enumerate() {
            let why = match s {
                TriggerSpec::Exception(glob) if runtime && id == rt::EXCEPTION_THROWN => {
                    let d = fields(ev);
                    let ty = get(&d, "ExceptionType").and_then(Value::as_str);
                    ty.filter(|t| clrspy_values::pattern_matches(glob, t))
                        .map(|t| {
                            let msg = get(&d, "ExceptionMessage").and_then(Value::as_str);
                            match msg {
                                Some(m) if !m.is_empty() => format!("{t} thrown: {m}"),
                                _ => format!("{t} thrown"),
                            }
                        })
                }
                TriggerSpec::GcPauseMs(ms) if runtime && id == rt::GC_RESTART_EE_END => {
                    self.suspend_at.and_then(|at| {
                        let pause = (ev.timestamp_ns() - at) as f64 / 1e6;
                        (pause > *ms as f64)
                            .then(|| format!("a GC paused the runtime {pause:.1} ms"))
                    })
                }
                TriggerSpec::Gen2 if runtime && id == rt::GC_START => {
                    let d = fields(ev);
                    let depth = get(&d, "Depth").and_then(Value::as_u64);
                    // Type 1 is a background GC.
                    let ty = get(&d, "Type").and_then(Value::as_u64).unwrap_or(0);
                    (depth == Some(2) && ty != 1).then(|| {
                        let reason = get(&d, "Reason").and_then(Value::as_u64).unwrap_or(0);
                        format!("a blocking gen2 GC started (reason {reason})")
                    })
                }
                TriggerSpec::Event(c) => {
                    let names = if k < 64 {
                        named & (1 << k) != 0
                    } else {
                        names_event(c, ev)
                    };
                    names.then(|| event_hit(c, ev)).flatten()
                }
                TriggerSpec::Counter(c) if ev.provider() == COUNTERS_PROVIDER => counter_hit(c, ev),
                _ => None,
            };
            if let Some(w) = why {
                hit = Some((s.to_string(), w));
                break;
            }
        }
        if runtime && id == rt::GC_RESTART_EE_END {
            self.suspend_at = None;
        }
        hit
    }
}

impl EventConsumer for TriggerConsumer {
    fn event(&mut self, ev: &Event<'_>) -> Action {
        if self.fired {
            return Action::Continue;
        }
        let Some((trigger, reason)) = self.check(ev) else {
            return Action::Continue;
        };
        self.fired = true;
        Action::Trigger {
            fired: Fired {
                trigger,
                reason,
                provider: ev.provider().to_string(),
                event: event_name(ev),
                timestamp: ev.timestamp,
                time_ns: ev.timestamp_ns(),
            },
            after: self.after,
        }
    }
}

/// TraceEvent's name of an event, else its metadata's, else its id.
fn event_name(ev: &Event<'_>) -> String {
    clr_events::event_name(ev.provider(), ev.event_id(), ev.version())
        .map(str::to_string)
        .or_else(|| (!ev.metadata_name().is_empty()).then(|| ev.metadata_name().to_string()))
        .unwrap_or_else(|| format!("EventID({})", ev.event_id()))
}

/// A field's value by name.
fn get<'a>(fields: &'a [nettrace::Field], name: &str) -> Option<&'a Value> {
    fields.iter().find(|f| f.name == name).map(|f| &f.value)
}

/// An event's fields: by the built-in layout, else by its metadata.
fn fields(ev: &Event<'_>) -> Vec<nettrace::Field> {
    match clr_events::decode(
        ev.provider(),
        ev.event_id(),
        ev.version(),
        ev.payload,
        ev.pointer_size(),
    ) {
        Some(d) => d.fields,
        None => ev.decode_with_metadata().fields,
    }
}

/// True when `c` names `ev`'s provider and event.
fn names_event(c: &EventCondition, ev: &Event<'_>) -> bool {
    clrspy_values::pattern_matches(&c.provider, ev.provider())
        && (clrspy_values::pattern_matches(&c.event, &event_name(ev))
            || clrspy_values::pattern_matches(&c.event, ev.metadata_name())
            || c.event == ev.event_id().to_string())
}

/// An event `c` names (provider and name already matched) fires when its field condition holds.
fn event_hit(c: &EventCondition, ev: &Event<'_>) -> Option<String> {
    let name = event_name(ev);
    let Some(fc) = &c.field else {
        return Some(format!("{}/{name}", ev.provider()));
    };
    let fields = fields(ev);
    let f = fields
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(&fc.name))?;
    compare(&f.value, fc.op, &fc.value).then(|| {
        format!(
            "{}/{name} with {}={}",
            ev.provider(),
            f.name,
            show(&f.value)
        )
    })
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v
            .as_f64()
            .map(|x| x.to_string())
            .unwrap_or_else(|| format!("{v:?}")),
    }
}

/// `value OP want`: numbers as numbers, text as a glob (`==`, `!=`).
fn compare(value: &Value, op: Op, want: &str) -> bool {
    if let (Some(a), Ok(b)) = (value.as_f64(), want.parse::<f64>()) {
        return op.holds(a, b);
    }
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        _ => return false,
    };
    match op {
        Op::Eq => clrspy_values::pattern_matches(want, &text),
        Op::Ne => !clrspy_values::pattern_matches(want, &text),
        _ => false,
    }
}

/// A System.Runtime `EventCounters` event: its counter's name and value (mean, else
/// increment), through clr-events' view.
fn counter_value(ev: &Event<'_>) -> Option<(String, f64)> {
    let c = clr_events::counters::EventCounter::from_event(ev).ok()??;
    Some((c.name, c.value))
}

fn counter_hit(c: &CounterCondition, ev: &Event<'_>) -> Option<String> {
    let (name, value) = counter_value(ev)?;
    (name == c.counter_name() && c.op.holds(value, c.value))
        .then(|| format!("counter {name} = {value:.1}"))
}

#[cfg(test)]
#[path = "trigger_tests.rs"]
mod tests;
