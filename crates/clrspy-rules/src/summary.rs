//! A checked rules file in words and as JSON (`clrspy rules check`): each rule's actions in a
//! phrase, and a file's mistakes with their places.

use std::path::Path;

use serde_json::{json, Value};

use crate::{Diagnostic, Rule, RuleSet};

impl Rule {
    /// What the rule does, one phrase an action: `trace (cpu, 600s)`, `dump (mini, on
    /// *.InvalidCastException)`, the crash dump, `bundle (cpu, 30s window, redacted)`, the
    /// same for child processes.
    pub fn actions_in_words(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(t) = &self.trace {
            let what = t
                .profile
                .as_ref()
                .map(|p| p.0.name.to_string())
                .unwrap_or_else(|| {
                    if t.providers.is_empty() {
                        "cpu".into()
                    } else {
                        "providers".into()
                    }
                });
            let mut s = format!("trace ({what}");
            if let Some(d) = t.duration {
                s.push_str(&format!(", {:?}", d.0));
            }
            if let Some(m) = t.ring_mb {
                s.push_str(&format!(", ring {m} MB"));
            }
            if !t.stop_on.is_empty() {
                s.push_str(&format!(", {} stop trigger(s)", t.stop_on.len()));
            }
            s.push(')');
            a.push(s);
        }
        if let Some(d) = &self.dump {
            let kind = match d.kind.map(|k| k.0) {
                Some(diagnostics_client::DumpType::WithHeap) => "heap",
                Some(diagnostics_client::DumpType::Triage) => "triage",
                Some(diagnostics_client::DumpType::Full) => "full",
                _ => "mini",
            };
            let when = if d.on_exception.is_empty() {
                "at once".to_string()
            } else {
                let globs: Vec<&str> = d.on_exception.iter().map(|g| g.as_str()).collect();
                format!("on {}", globs.join(", "))
            };
            if d.on_crash {
                a.push("the runtime's crash dump, when the process crashes".into());
            }
            if !d.on_crash || !d.on_exception.is_empty() {
                let held = if d.hold_hook.is_some() {
                    ", the throwing thread held for processes held at --listen"
                } else {
                    ""
                };
                let read = if d.analyze { ", read at once" } else { "" };
                a.push(format!("dump ({kind}, {when}{held}{read})"));
            }
        }
        if let Some(h) = &self.heap {
            let when = h
                .when
                .as_ref()
                .map_or("at once".to_string(), |w| format!("once, when {w} fires"));
            a.push(format!(
                "heap snapshot ({when}, timeout {}s)",
                h.timeout().as_secs()
            ));
        }
        if let Some(c) = &self.counters {
            let which = c
                .counters
                .as_ref()
                .map_or("System.Runtime", |t| t.0.as_str());
            let every = c.refresh_interval.map_or(1.0, |d| d.0.as_secs_f64());
            a.push(format!(
                "counters ({which}, every {every}s, to .counters.{} while the process runs)",
                c.format.extension()
            ));
        }
        if let Some(b) = &self.bundle {
            a.push(bundle_in_words(b));
        }
        if self.children {
            a.push("the same for every .NET process a matched process starts".into());
        }
        a
    }
}

/// A bundle action in a phrase: `bundle (cpu, 30s window, redacted)`.
fn bundle_in_words(b: &crate::BundleAction) -> String {
    let mut s = format!(
        "bundle ({}",
        b.profile
            .as_ref()
            .map_or("the bundle's profile", |p| p.0.name)
    );
    if b.stop_on.is_empty() {
        s.push_str(&format!(", {}s window", b.window().as_secs()));
    } else {
        s.push_str(&format!(", when {} trigger(s) fire", b.stop_on.len()));
    }
    if let Some(m) = b.ring_mb {
        s.push_str(&format!(", ring {m} MB"));
    }
    let with: Vec<&str> = b.with.iter().map(|e| e.name()).collect();
    if !with.is_empty() {
        s.push_str(&format!(", with {}", with.join(" and ")));
    }
    s.push_str(if b.redact {
        ", redacted)"
    } else {
        ", not redacted)"
    });
    s
}

impl RuleSet {
    /// A valid file as one JSON object: `file`, `valid` (true), and its `rules` with their
    /// `name` and `actions` ([`Rule::actions_in_words`]).
    pub fn check_json(&self, file: &Path) -> Value {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|r| json!({ "name": r.name, "actions": r.actions_in_words() }))
            .collect();
        json!({ "file": file.display().to_string(), "valid": true, "rules": rules })
    }
}

/// An invalid file as one JSON object: `file`, `valid` (false), and its `errors` with their
/// `line`, `column` and `message`.
pub fn mistakes_json(file: &Path, errors: &[Diagnostic]) -> Value {
    let list: Vec<Value> = errors
        .iter()
        .map(|e| json!({"line": e.line, "column": e.column, "message": e.message}))
        .collect();
    json!({ "file": file.display().to_string(), "valid": false, "errors": list })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Syntax, EXAMPLE_TOML};

    #[test]
    fn the_example_rules_in_words() {
        let set = RuleSet::parse(EXAMPLE_TOML, Syntax::Toml).unwrap();
        let words: Vec<Vec<String>> = set.rules.iter().map(Rule::actions_in_words).collect();
        assert_eq!(
            words,
            [
                vec!["dump (mini, on *.InvalidCastException)"],
                vec!["the runtime's crash dump, when the process crashes"],
                vec![
                    "trace (cpu, 600s)",
                    "the same for every .NET process a matched process starts"
                ],
                vec!["trace (cpu, ring 64 MB, 2 stop trigger(s))"],
                vec![
                    "bundle (the bundle's profile, when 2 trigger(s) fire, ring 128 MB, redacted)"
                ],
            ]
        );
        let v = set.check_json(Path::new("r.toml"));
        assert_eq!(v["valid"], true);
        assert_eq!(v["rules"][2]["name"], "test-run");
        assert_eq!(v["rules"][2]["actions"][1], words[2][1]);
    }

    #[test]
    fn dumps_at_once_held_and_on_crash_with_exceptions() {
        let text = r#"{"rules": [
            {"name": "a", "match": {"name": "w*"}, "dump": {"type": "full", "analyze": true}},
            {"name": "b", "match": {"name": "w*"}, "dump": {"type": "heap",
              "on_exception": ["X", "Y"], "on_crash": true, "hold_hook": "/h/ClrspyHold.dll"}},
            {"name": "c", "match": {"name": "w*"}, "trace": {"providers": ["P"], "duration": "5s"}}
        ]}"#;
        let set = RuleSet::parse(text, Syntax::Json).unwrap();
        assert_eq!(
            set.rules[0].actions_in_words(),
            ["dump (full, at once, read at once)"]
        );
        assert_eq!(
            set.rules[1].actions_in_words(),
            [
                "the runtime's crash dump, when the process crashes",
                "dump (heap, on X, Y, the throwing thread held for processes held at --listen)"
            ]
        );
        assert_eq!(set.rules[2].actions_in_words(), ["trace (providers, 5s)"]);
    }

    #[test]
    fn a_heap_action_alone_is_an_action_with_its_timeout() {
        let text = r#"{"rules": [
            {"name": "a", "match": {"name": "w*"}, "heap": {}},
            {"name": "b", "match": {"name": "w*"}, "heap": {"timeout": "2m"}, "dump": {}}
        ]}"#;
        let set = RuleSet::parse(text, Syntax::Json).unwrap();
        assert_eq!(
            set.rules[0].actions_in_words(),
            ["heap snapshot (at once, timeout 30s)"]
        );
        assert_eq!(
            set.rules[1].actions_in_words(),
            [
                "dump (mini, at once)",
                "heap snapshot (at once, timeout 120s)"
            ]
        );
        let bad = r#"{"rules": [{"name": "a", "match": {"name": "w*"}, "heap": {"every": "5s"}}]}"#;
        let e = RuleSet::parse(bad, Syntax::Json).unwrap_err();
        assert!(
            e[0].message.contains("unknown field `every`"),
            "{}",
            e[0].message
        );
        let set = RuleSet::parse(
            r#"{"rules": [{"name": "a", "match": {"name": "w*"},
                "heap": {"when": {"counter": "gc-heap-size-mb>500"}}}]}"#,
            Syntax::Json,
        )
        .unwrap();
        assert_eq!(
            set.rules[0].actions_in_words(),
            ["heap snapshot (once, when counter=gc-heap-size-mb>500 fires, timeout 30s)"]
        );
        let bad =
            r#"{"rules": [{"name": "a", "match": {"name": "w*"}, "heap": {"when": "exit"}}]}"#;
        let e = RuleSet::parse(bad, Syntax::Json).unwrap_err();
        assert!(e[0].message.contains("exits"), "{}", e[0].message);
        let bad =
            r#"{"rules": [{"name": "a", "match": {"name": "w*"}, "heap": {"timeout": "0s"}}]}"#;
        assert!(RuleSet::parse(bad, Syntax::Json).is_err());
        let schema = crate::json_schema().to_string();
        assert!(schema.contains("HeapAction"), "{schema}");
    }

    #[test]
    fn a_counters_action_alone_is_an_action() {
        let text = r#"{"rules": [
            {"name": "a", "match": {"name": "w*"}, "counters": {}},
            {"name": "b", "match": {"name": "w*"}, "counters": {"format": "csv",
                "counters": "System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]",
                "refresh_interval": "5s"}}
        ]}"#;
        let set = RuleSet::parse(text, Syntax::Json).unwrap();
        assert_eq!(
            set.rules[0].actions_in_words(),
            ["counters (System.Runtime, every 1s, to .counters.jsonl while the process runs)"]
        );
        assert_eq!(
            set.rules[1].actions_in_words(),
            ["counters (System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration], every 5s, to .counters.csv while the process runs)"]
        );
        for (bad, says) in [
            (r#"{"counters": "A,,B"}"#, "empty source"),
            (r#"{"counters": "A[x"}"#, "unbalanced brackets"),
            (r#"{"counters": "[x]"}"#, "not a source name"),
            (r#"{"refresh_interval": "10ms"}"#, "at least 100ms"),
            (r#"{"format": "xml"}"#, "unknown variant"),
        ] {
            let text = format!(
                r#"{{"rules": [{{"name": "a", "match": {{"name": "w*"}}, "counters": {bad}}}]}}"#
            );
            let e = RuleSet::parse(&text, Syntax::Json).unwrap_err();
            assert!(e[0].message.contains(says), "{bad}: {}", e[0].message);
        }
        let schema = crate::json_schema().to_string();
        assert!(schema.contains("CountersAction"), "{schema}");
    }

    #[test]
    fn mistakes_keep_their_places() {
        let errors = RuleSet::parse("{\"rules\": 3}", Syntax::Json).unwrap_err();
        let v = mistakes_json(Path::new("bad.json"), &errors);
        assert_eq!(v["valid"], false);
        assert_eq!(v["file"], "bad.json");
        assert_eq!(v["errors"][0]["line"], errors[0].line);
        assert_eq!(v["errors"][0]["message"], errors[0].message.as_str());
    }
}
