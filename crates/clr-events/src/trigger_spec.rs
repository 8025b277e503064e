//! The stop triggers' written forms: [`TriggerSpec`] and its conditions, with serde (rules
//! files), a JSON Schema, and [`FromStr`] (the command line's `KIND=VALUE`); clrspy-collect's
//! triggers match them on a recording's events with clrspy-values' name patterns
//! (case-insensitive, `*` and `?` anywhere).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One stop trigger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TriggerSpec {
    /// A first-chance exception whose type name matches the name pattern (`*`, `?`,
    /// case-insensitive), e.g.
    /// `System.Net.*`.
    Exception(String),
    /// A GC pause (the runtime suspended to restarted) longer than this many milliseconds.
    GcPauseMs(u64),
    /// A blocking (non-background) gen2 GC starts.
    Gen2,
    /// An event by provider and name, with an optional condition on a payload field.
    Event(EventCondition),
    /// A runtime counter over (or under) a threshold.
    Counter(CounterCondition),
    /// The target exits.
    Exit,
}

impl TriggerSpec {
    /// True for triggers read from events (all but [`TriggerSpec::Exit`]).
    pub fn needs_events(&self) -> bool {
        !matches!(self, TriggerSpec::Exit)
    }
}

impl fmt::Display for TriggerSpec {
    /// The command-line form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TriggerSpec::Exception(g) => write!(f, "exception={g}"),
            TriggerSpec::GcPauseMs(n) => write!(f, "gc-pause-ms={n}"),
            TriggerSpec::Gen2 => f.write_str("gen2"),
            TriggerSpec::Event(c) => write!(f, "event={c}"),
            TriggerSpec::Counter(c) => write!(f, "counter={c}"),
            TriggerSpec::Exit => f.write_str("exit"),
        }
    }
}

impl FromStr for TriggerSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<TriggerSpec, String> {
        let (kind, value) = match s.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (s.trim(), None),
        };
        let kind = kind.to_ascii_lowercase().replace('_', "-");
        let need = |v: Option<&'_ str>| -> Result<String, String> {
            v.filter(|v| !v.is_empty())
                .map(str::to_string)
                .ok_or_else(|| format!("--stop-on {kind} needs a value: {kind}=..."))
        };
        Ok(match kind.as_str() {
            "exception" => TriggerSpec::Exception(need(value)?),
            "gc-pause-ms" | "gc-pause" => TriggerSpec::GcPauseMs(
                need(value)?
                    .trim_end_matches("ms")
                    .parse()
                    .map_err(|_| format!("gc-pause-ms takes milliseconds, not '{s}'"))?,
            ),
            "gen2" => TriggerSpec::Gen2,
            "exit" => TriggerSpec::Exit,
            "event" => TriggerSpec::Event(need(value)?.parse()?),
            "counter" => TriggerSpec::Counter(need(value)?.parse()?),
            _ => {
                return Err(format!(
                    "unknown trigger '{kind}' (exception, gc-pause-ms, gen2, event, counter, exit)"
                ))
            }
        })
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `=` or `==` (a glob for text)
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    /// Splits `s` at its first comparison: (left, op, right).
    fn split(s: &str) -> Option<(&str, Op, &str)> {
        let i = s.find(['>', '<', '=', '!'])?;
        let rest = &s[i..];
        let (op, n) = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            (">", Op::Gt),
            ("<", Op::Lt),
            ("=", Op::Eq),
        ]
        .iter()
        .find(|(t, _)| rest.starts_with(t))
        .map(|(t, o)| (*o, t.len()))?;
        Some((s[..i].trim(), op, rest[n..].trim()))
    }

    /// True when `a OP b` holds.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// An event by provider and name (globs), optionally with a condition on one payload field:
/// `PROVIDER/EVENT[:FIELD OP VALUE]`, OP one of `> >= < <= == = !=`. The event name is
/// TraceEvent's for the runtime's events (`GC/Start`, `Exception/Start`), else the name in the
/// trace's metadata; the event id in decimal matches too. A number compares as a number; text
/// with `==`/`!=` as a glob. Examples: `Microsoft-Windows-DotNETRuntime/GC/Start:Depth>=2`,
/// `My-Source/Request*:Status==500`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub struct EventCondition {
    /// Provider name (glob).
    pub provider: String,
    /// Event name (glob) or id.
    pub event: String,
    /// A payload field's condition.
    pub field: Option<FieldCondition>,
}

/// `FIELD OP VALUE`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldCondition {
    /// The field's name (case-insensitive).
    pub name: String,
    /// The comparison.
    pub op: Op,
    /// The value, as written.
    pub value: String,
}

impl fmt::Display for EventCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.event)?;
        if let Some(c) = &self.field {
            write!(f, ":{}{}{}", c.name, c.op.as_str(), c.value)?;
        }
        Ok(())
    }
}

impl FromStr for EventCondition {
    type Err = String;

    fn from_str(s: &str) -> Result<EventCondition, String> {
        let bad = || format!("event trigger '{s}': expected PROVIDER/EVENT[:FIELD>VALUE]");
        let (provider, rest) = s.split_once('/').ok_or_else(bad)?;
        let (event, cond) = match rest.split_once(':') {
            Some((e, c)) => (e, Some(c)),
            None => (rest, None),
        };
        if provider.trim().is_empty() || event.trim().is_empty() {
            return Err(bad());
        }
        let field = match cond {
            None => None,
            Some(c) => {
                let (name, op, value) = Op::split(c).ok_or_else(bad)?;
                if name.is_empty() || value.is_empty() {
                    return Err(bad());
                }
                Some(FieldCondition {
                    name: name.into(),
                    op,
                    value: value.into(),
                })
            }
        };
        Ok(EventCondition {
            provider: provider.trim().into(),
            event: event.trim().into(),
            field,
        })
    }
}

impl TryFrom<String> for EventCondition {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<EventCondition> for String {
    fn from(c: EventCondition) -> String {
        c.to_string()
    }
}

/// A runtime counter (System.Runtime's EventCounters, read every second) against a threshold:
/// `NAME OP NUMBER`. Names: `cpu-usage` (% of all cores), `working-set-mb`,
/// `gc-heap-size-mb`, `threadpool-queue-length`, or any other counter of System.Runtime by
/// its name (its mean, or its increment over the interval).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub struct CounterCondition {
    /// The name as written.
    pub name: String,
    /// The comparison.
    pub op: Op,
    /// The threshold.
    pub value: f64,
}

impl CounterCondition {
    /// The counter's name in System.Runtime's payloads.
    pub fn counter_name(&self) -> &str {
        match self.name.as_str() {
            "working-set-mb" => "working-set",
            "gc-heap-size-mb" => "gc-heap-size",
            n => n,
        }
    }
}

impl fmt::Display for CounterCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.name, self.op.as_str(), self.value)
    }
}

impl FromStr for CounterCondition {
    type Err = String;

    fn from_str(s: &str) -> Result<CounterCondition, String> {
        let bad = || format!("counter trigger '{s}': expected NAME>NUMBER, e.g. cpu-usage>80");
        let (name, op, value) = Op::split(s).ok_or_else(bad)?;
        let value = value.parse::<f64>().map_err(|_| bad())?;
        if name.is_empty() || !value.is_finite() {
            return Err(bad());
        }
        Ok(CounterCondition {
            name: name.to_ascii_lowercase().replace('_', "-"),
            op,
            value,
        })
    }
}

impl TryFrom<String> for CounterCondition {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<CounterCondition> for String {
    fn from(c: CounterCondition) -> String {
        c.to_string()
    }
}

impl schemars::JsonSchema for Op {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Op".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

impl schemars::JsonSchema for FieldCondition {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FieldCondition".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}
