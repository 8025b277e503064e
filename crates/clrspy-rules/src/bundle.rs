//! A rule's bundle action: `clrspy bundle` run by `watch` on each process the rule matches —
//! the trace of a window (with `stop_on`: a ring kept until the slow moment fires), its
//! reports, the app's logs, metrics and counters, zipped into the rule's folder. Its fields,
//! the defaults they stand for, and the checks across them (run as the rule is read, so they
//! are placed at the rule).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use clr_events::trigger_spec::TriggerSpec;

use crate::values::{Delay, Dur, ProfileName, ProviderText};

/// A bundle's window when the rule gives no `duration` and no `stop_on`.
pub(crate) const DEFAULT_BUNDLE_WINDOW: Duration = Duration::from_secs(30);

/// Leave a support bundle (`<process>_<pid>_<stamp>.bundle.zip`, as `clrspy bundle` writes
/// it) of each process the rule matches: the trace of a window and its reports, the app's
/// logs, system metrics and the runtime's counters over it, and the manifest. With `stop_on`
/// it waits for the slow moment and keeps the bundle only when a trigger fired. One action
/// under the rule's limits; the zip counts against `disk_mb`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleAction {
    /// The trace's profile (`clrspy record --list-profiles`); when neither it nor
    /// `providers` is given, the bundle's default (aspnet with the System.Net sources). The
    /// logging and counters providers are added to any.
    #[serde(default)]
    pub profile: Option<ProfileName>,
    /// Providers as dotnet-trace writes them, one per string; added to the profile's.
    #[serde(default)]
    pub providers: Vec<ProviderText>,
    /// The window's length (30s when not given). With `stop_on`: the longest it waits for a
    /// trigger (when not given: until the process ends or watch stops).
    #[serde(default)]
    pub duration: Option<Dur>,
    /// While waiting for a trigger, keep only the newest this many megabytes of the trace (a
    /// ring): what led to the slow moment is kept. Needs `stop_on`.
    #[serde(default)]
    #[schemars(range(min = 1, max = 65536))]
    pub ring_mb: Option<u32>,
    /// End the window when one of these happens (the first to fire wins), in the forms of a
    /// trace's `stop_on`: `{"exception": "System.Net.*"}`, `{"gc_pause_ms": 200}`, `"gen2"`,
    /// `{"event": "PROVIDER/EVENT[:FIELD OP VALUE]"}`, `{"counter": "cpu-usage>80"}`. A window
    /// that ends without one leaves no bundle.
    #[serde(default)]
    pub stop_on: Vec<TriggerSpec>,
    /// After a trigger fires, keep recording this long (5s when not given; "0" stops at once).
    #[serde(default)]
    pub after_trigger: Option<Delay>,
    /// Also take, after the window: `"heap"` (a heap snapshot; a full, blocking GC) and/or
    /// `"dump"` (a dump with the heap, compressed).
    #[serde(default, rename = "with")]
    pub with: Vec<BundleExtra>,
    /// The lowest level of the app's log messages kept (information when not given).
    #[serde(default)]
    pub log_level: Option<BundleLogLevel>,
    /// Redact secrets (environment variables, command-line arguments, log messages and the
    /// trace's strings that look like keys, tokens, passwords or connection strings); true
    /// when not given.
    #[serde(default = "yes")]
    #[schemars(default = "yes")]
    pub redact: bool,
}

fn yes() -> bool {
    true
}

/// What a bundle takes after its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BundleExtra {
    /// A heap snapshot (`.gcdump`).
    Heap,
    /// A dump with the heap, compressed.
    Dump,
}

impl BundleExtra {
    /// Its name in the rules file.
    pub fn name(self) -> &'static str {
        match self {
            BundleExtra::Heap => "heap",
            BundleExtra::Dump => "dump",
        }
    }
}

/// The lowest level of log messages a bundle keeps (Microsoft.Extensions.Logging's levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BundleLogLevel {
    /// Everything.
    Trace,
    /// Debug and above.
    Debug,
    /// Information and above.
    #[serde(alias = "info")]
    Information,
    /// Warnings and above.
    #[serde(alias = "warn")]
    Warning,
    /// Errors and above.
    Error,
    /// Critical only.
    Critical,
}

impl BundleLogLevel {
    /// The level's name as the logger writes it (`Information`).
    pub fn name(self) -> &'static str {
        match self {
            BundleLogLevel::Trace => "Trace",
            BundleLogLevel::Debug => "Debug",
            BundleLogLevel::Information => "Information",
            BundleLogLevel::Warning => "Warning",
            BundleLogLevel::Error => "Error",
            BundleLogLevel::Critical => "Critical",
        }
    }
}

impl BundleAction {
    /// The window's length: `duration`, else 30s — or, with `stop_on`, the longest any
    /// duration may be (30 days: until the process ends or watch stops).
    pub fn window(&self) -> Duration {
        match (self.duration, self.stop_on.is_empty()) {
            (Some(d), _) => d.0,
            (None, true) => DEFAULT_BUNDLE_WINDOW,
            (None, false) => clrspy_values::MAX_DURATION,
        }
    }

    /// Whether it takes `extra` after the window.
    pub fn takes(&self, extra: BundleExtra) -> bool {
        self.with.contains(&extra)
    }

    /// The providers joined by commas, as `--providers` takes them; `None` when none.
    pub fn providers_text(&self) -> Option<String> {
        (!self.providers.is_empty()).then(|| {
            self.providers
                .iter()
                .map(|p| p.0.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// Its mistakes across fields, a sentence each, for rule `name`.
    pub(crate) fn mistakes(&self, name: &str) -> Vec<String> {
        let mut m = Vec::new();
        if self.after_trigger.is_some() && self.stop_on.is_empty() {
            m.push(format!(
                "rule \"{name}\": the bundle's \"after_trigger\" needs \"stop_on\" (the trigger it follows)"
            ));
        }
        if self.ring_mb.is_some() && self.stop_on.is_empty() {
            m.push(format!(
                "rule \"{name}\": the bundle's \"ring_mb\" needs \"stop_on\": without a trigger the window has a fixed length and nothing to wait for, so a ring only throws away its start"
            ));
        }
        if self.ring_mb == Some(0) || self.ring_mb.is_some_and(|r| r > 65536) {
            m.push(format!(
                "rule \"{name}\": the bundle's \"ring_mb\" must be between 1 and 65536"
            ));
        }
        if self.stop_on.contains(&TriggerSpec::Exit) {
            m.push(format!(
                "rule \"{name}\": a bundle cannot stop on \"exit\": its heap snapshot, dump and environment need the process alive; the window ends with the process anyway"
            ));
        }
        let mut seen = Vec::new();
        for e in &self.with {
            if seen.contains(e) {
                m.push(format!(
                    "rule \"{name}\": the bundle's \"with\" names \"{}\" twice",
                    e.name()
                ));
            }
            seen.push(*e);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{RuleSet, Syntax};

    fn rule(bundle: &str) -> String {
        format!(
            "{{ \"rules\": [\n  {{ \"name\": \"b\", \"match\": {{ \"name\": \"api*\" }},\n    \"bundle\": {bundle} }} ] }}"
        )
    }

    fn errors(bundle: &str) -> Vec<crate::Diagnostic> {
        RuleSet::parse(&rule(bundle), Syntax::Json).unwrap_err()
    }

    #[test]
    fn a_bundle_alone_is_an_action_with_its_defaults() {
        let set = RuleSet::parse(&rule("{}"), Syntax::Json).unwrap();
        let b = set.rules[0].bundle.as_ref().unwrap();
        assert!(b.redact, "redaction is on unless turned off");
        assert_eq!(b.window(), DEFAULT_BUNDLE_WINDOW);
        assert!(b.profile.is_none() && b.providers_text().is_none());
        assert!(!b.takes(BundleExtra::Heap) && !b.takes(BundleExtra::Dump));
        assert_eq!(b.log_level, None);
    }

    #[test]
    fn every_field_reads_in_json_and_toml_alike() {
        let json = rule(
            r#"{ "profile": "gc-collect", "providers": ["Microsoft-AspNetCore-Server-Kestrel"],
        "ring_mb": 64, "stop_on": [{ "exception": "System.InvalidOperationException" }, "gen2"],
        "after_trigger": "2s", "with": ["heap", "dump"], "log_level": "warn", "redact": false }"#,
        );
        let toml = r#"
[[rules]]
name = "b"
match = { name = "api*" }
[rules.bundle]
profile = "gc-collect"
providers = ["Microsoft-AspNetCore-Server-Kestrel"]
ring_mb = 64
stop_on = [{ exception = "System.InvalidOperationException" }, "gen2"]
after_trigger = "2s"
with = ["heap", "dump"]
log_level = "warning"
redact = false
"#;
        for set in [
            RuleSet::parse(&json, Syntax::Json).unwrap(),
            RuleSet::parse(toml, Syntax::Toml).unwrap(),
        ] {
            let b = set.rules[0].bundle.as_ref().unwrap();
            assert_eq!(b.profile.as_ref().map(|p| p.0.name), Some("gc-collect"));
            assert_eq!(
                b.providers_text().as_deref(),
                Some("Microsoft-AspNetCore-Server-Kestrel")
            );
            assert_eq!(b.ring_mb, Some(64));
            assert_eq!(b.stop_on.len(), 2);
            assert_eq!(b.after_trigger.map(|d| d.0), Some(Duration::from_secs(2)));
            assert!(b.takes(BundleExtra::Heap) && b.takes(BundleExtra::Dump));
            assert_eq!(b.log_level, Some(BundleLogLevel::Warning));
            assert_eq!(b.log_level.map(BundleLogLevel::name), Some("Warning"));
            assert!(!b.redact);
            // With stop_on and no duration, it waits as long as any duration may be.
            assert_eq!(b.window(), clrspy_values::MAX_DURATION);
        }
    }

    #[test]
    fn a_duration_is_the_window_or_the_longest_wait() {
        let fixed = RuleSet::parse(&rule(r#"{ "duration": "45s" }"#), Syntax::Json).unwrap();
        let b = fixed.rules[0].bundle.as_ref().unwrap();
        assert_eq!(b.window(), Duration::from_secs(45));
        let waits = RuleSet::parse(
            &rule(r#"{ "duration": "2h", "stop_on": ["gen2"] }"#),
            Syntax::Json,
        )
        .unwrap();
        let b = waits.rules[0].bundle.as_ref().unwrap();
        assert_eq!(b.window(), Duration::from_secs(7200));
    }

    #[test]
    fn mistakes_across_fields_are_placed_at_the_rule() {
        for (bundle, says) in [
            (r#"{ "ring_mb": 64 }"#, "\"ring_mb\" needs \"stop_on\""),
            (
                r#"{ "after_trigger": "5s" }"#,
                "\"after_trigger\" needs \"stop_on\"",
            ),
            (
                r#"{ "ring_mb": 0, "stop_on": ["gen2"] }"#,
                "between 1 and 65536",
            ),
            (
                r#"{ "ring_mb": 70000, "stop_on": ["gen2"] }"#,
                "between 1 and 65536",
            ),
            (r#"{ "stop_on": ["exit"] }"#, "cannot stop on \"exit\""),
            (r#"{ "with": ["heap", "heap"] }"#, "names \"heap\" twice"),
        ] {
            let e = errors(bundle);
            assert_eq!(e.len(), 1, "{bundle}: {e:?}");
            assert!(e[0].message.contains(says), "{bundle}: {e:?}");
            assert!(e[0].message.starts_with("rule \"b\""), "{e:?}");
            // At the rule's end, where serde reads the rule as a whole (as every check
            // across a rule's fields is placed).
            assert_eq!(e[0].line, 3, "{bundle}: {e:?}");
        }
    }

    #[test]
    fn unknown_values_and_fields_are_placed_at_their_value() {
        let e = errors(r#"{ "with": ["heap", "x"] }"#);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].message
                .contains("unknown variant `x`, expected `heap` or `dump`"),
            "{e:?}"
        );
        assert_eq!((e[0].line, e[0].column), (3, 34), "{e:?}");
        let e = errors(r#"{ "profile": "cpux" }"#);
        assert!(e[0].message.contains("unknown profile \"cpux\""), "{e:?}");
        assert_eq!((e[0].line, e[0].column), (3, 28), "{e:?}");
        let e = errors(r#"{ "log_level": "loud" }"#);
        assert!(e[0].message.contains("unknown variant `loud`"), "{e:?}");
        let e = errors(r#"{ "ring": 5 }"#);
        assert!(e[0].message.contains("unknown field `ring`"), "{e:?}");
        let e = errors(r#"{ "stop_on": [{ "cpu": 80 }] }"#);
        assert!(e[0].message.contains("unknown variant `cpu`"), "{e:?}");
        let e = errors(r#"{ "redact": "yes" }"#);
        assert!(e[0].message.contains("invalid type"), "{e:?}");
    }

    #[test]
    fn a_bundle_in_words() {
        let set = RuleSet::parse(
            &rule(r#"{ "ring_mb": 32, "stop_on": ["gen2"], "with": ["heap"] }"#),
            Syntax::Json,
        )
        .unwrap();
        let words = set.rules[0].actions_in_words();
        assert_eq!(
            words,
            ["bundle (the bundle's profile, when 1 trigger(s) fire, ring 32 MB, with heap, redacted)"]
        );
    }
}
