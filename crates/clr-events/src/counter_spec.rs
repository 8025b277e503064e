//! The `--counters` spec in dotnet-counters' syntax — `System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]`,
//! `EventCounters\System.Runtime` for a source's EventCounters only — and the plan it turns
//! into: which EventSources to ask for EventCounters and which meters to ask the Metrics
//! provider for.

use std::fmt;
use std::str::FromStr;

/// The prefix that asks for a source's EventCounters, not its meter.
pub(crate) const EVENT_COUNTERS_PREFIX: &str = "EventCounters\\";
/// The runtime's own counters: an EventSource, and from .NET 9 also a meter.
pub(crate) const SYSTEM_RUNTIME: &str = "System.Runtime";

/// One source of the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSource {
    /// The EventSource or meter.
    pub name: String,
    /// The counters or instruments asked for (empty: all).
    pub instruments: Vec<String>,
    /// True for `EventCounters\NAME`: its EventCounters only.
    pub event_counters_only: bool,
}

/// What `--counters` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    /// The sources, in the order given.
    pub sources: Vec<CounterSource>,
}

impl Default for CounterSpec {
    /// `System.Runtime`.
    fn default() -> CounterSpec {
        CounterSpec {
            sources: vec![CounterSource {
                name: SYSTEM_RUNTIME.into(),
                instruments: Vec::new(),
                event_counters_only: false,
            }],
        }
    }
}

/// Why a spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--counters: {0}")]
pub struct SpecError(String);

impl FromStr for CounterSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<CounterSpec, SpecError> {
        let mut sources = Vec::new();
        for item in split_top(s)? {
            let item = item.trim();
            if item.is_empty() {
                return Err(SpecError(format!("an empty source in {s:?}")));
            }
            let (name, instruments) = match item.split_once('[') {
                Some((name, rest)) => {
                    let list = rest
                        .strip_suffix(']')
                        .ok_or_else(|| SpecError(format!("{item:?}: text after ']'")))?;
                    let names: Vec<String> = list
                        .split(',')
                        .map(|n| n.trim().to_string())
                        .filter(|n| !n.is_empty())
                        .collect();
                    if names.is_empty() {
                        return Err(SpecError(format!("{item:?}: no counter between [ and ]")));
                    }
                    (name.trim(), names)
                }
                None => (item, Vec::new()),
            };
            let (name, only) = match name.strip_prefix(EVENT_COUNTERS_PREFIX) {
                Some(n) => (n.trim(), true),
                None => (name, false),
            };
            if name.is_empty() || name.contains(['[', ']', ';', '\\']) {
                return Err(SpecError(format!("{item:?}: not a source name")));
            }
            sources.push(CounterSource {
                name: name.to_string(),
                instruments,
                event_counters_only: only,
            });
        }
        if sources.is_empty() {
            return Err(SpecError("no source".into()));
        }
        Ok(CounterSpec { sources })
    }
}

/// Splits at commas outside brackets; fails on unbalanced brackets.
fn split_top(s: &str) -> Result<Vec<&str>, SpecError> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(SpecError(format!("unbalanced brackets in {s:?}")));
        }
    }
    if depth != 0 {
        return Err(SpecError(format!("unbalanced brackets in {s:?}")));
    }
    out.push(&s[from..]);
    Ok(out)
}

impl fmt::Display for CounterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.sources.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if s.event_counters_only {
                f.write_str(EVENT_COUNTERS_PREFIX)?;
            }
            f.write_str(&s.name)?;
            if !s.instruments.is_empty() {
                write!(f, "[{}]", s.instruments.join(","))?;
            }
        }
        Ok(())
    }
}

/// What a session asks for, from a spec and the target's runtime version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterPlan {
    /// EventSources asked for their EventCounters.
    pub event_counter_sources: Vec<String>,
    /// The Metrics provider's `Metrics` argument items: `Meter` or `Meter\instrument`.
    pub meters: Vec<String>,
    /// What was decided, for the user (said once on stderr).
    pub notes: Vec<String>,
}

impl CounterSpec {
    /// The plan for a target whose runtime's major version is `runtime_major` (None when not
    /// known yet, as for a program started by clrspy). A source is asked both ways (meter and
    /// EventCounters) and the meter wins where both report (see
    /// [`CounterSpec::wants_event_counter`]); `System.Runtime` is a meter from .NET 9 and
    /// EventCounters before, and both when the version is not known.
    pub fn plan(&self, runtime_major: Option<u32>) -> CounterPlan {
        let mut plan = CounterPlan::default();
        for s in &self.sources {
            let (meter, ec) = if s.event_counters_only {
                (false, true)
            } else if s.name == SYSTEM_RUNTIME {
                match runtime_major {
                    Some(v) if v >= 9 => (true, false),
                    Some(_) => (false, true),
                    None => (true, true),
                }
            } else {
                (true, true)
            };
            if ec && !plan.event_counter_sources.contains(&s.name) {
                plan.event_counter_sources.push(s.name.clone());
            }
            if meter {
                if s.instruments.is_empty() {
                    plan.meters.push(s.name.clone());
                } else {
                    plan.meters
                        .extend(s.instruments.iter().map(|i| format!("{}\\{i}", s.name)));
                }
            }
            if s.name == SYSTEM_RUNTIME && !s.event_counters_only {
                plan.notes.push(match runtime_major {
                    Some(v) if v >= 9 => format!(
                        "System.Runtime: the .NET {v} meter (dotnet.* names); its EventCounters (cpu-usage, gc-heap-size, ...) with --counters 'EventCounters\\System.Runtime'"
                    ),
                    Some(v) => format!(
                        "System.Runtime: EventCounters (the runtime is .NET {v}; its meter came with .NET 9)"
                    ),
                    None => "System.Runtime: the meter where the runtime has one (.NET 9+), else its EventCounters; the EventCounters with --counters 'EventCounters\\System.Runtime'".into(),
                });
            }
        }
        plan
    }

    /// True when an EventCounters value of `provider`'s counter `name` is wanted: the spec
    /// names the source (and the counter, when it lists counters), and — unless asked for
    /// with `EventCounters\` — no meter of the same name reports (`meter_seen`).
    pub fn wants_event_counter(
        &self,
        provider: &str,
        name: &str,
        meter_seen: impl Fn(&str) -> bool,
    ) -> bool {
        self.sources.iter().any(|s| {
            s.name.eq_ignore_ascii_case(provider)
                && (s.instruments.is_empty() || s.instruments.iter().any(|i| i == name))
                && (s.event_counters_only || !meter_seen(provider))
        })
    }
}
