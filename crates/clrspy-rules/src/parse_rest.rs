//! Every mistake of a rules file, not only the first. serde stops reading at its first error,
//! so when the whole file does not read, a file that is still well-formed JSON or TOML is read
//! again rule by rule: each rule on its own gives its own first mistake, at its own place, and
//! the rules that read are checked against each other (two of one name).
//!
//! Places: a JSON rule is read from its own bytes of the text (serde_json's raw values borrow
//! them), so its positions are exact; a TOML rule is read from a value that knows only the
//! rule's span, so its mistake is placed at the key the message names (``unknown field `x` ``,
//! ``invalid value for `x` ``) when that key is in the rule's text, else at the rule's start.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::model::Rule;
use crate::text::{at_offset, json_error, offset_of, Diagnostic, Syntax};

/// One rule read on its own: where it stands in the text, and it or its first mistake.
pub(crate) struct RuleRead {
    /// Its bytes in the text.
    pub(crate) span: Range<usize>,
    /// The rule, or its first mistake (placed in the whole text).
    pub(crate) rule: Result<Rule, Diagnostic>,
}

/// Each rule of `text` read on its own, or `None` when the text is not well-formed (then
/// serde's first error is all there is to say) or has no list of rules.
pub(crate) fn each_rule(text: &str, syntax: Syntax) -> Option<Vec<RuleRead>> {
    match syntax {
        Syntax::Json => each_json_rule(text),
        Syntax::Toml => each_toml_rule(text),
    }
}

fn each_json_rule(text: &str) -> Option<Vec<RuleRead>> {
    let top: BTreeMap<String, &RawValue> = serde_json::from_str(text).ok()?;
    let rules: Vec<&RawValue> = serde_json::from_str(top.get("rules")?.get()).ok()?;
    let base = text.as_ptr() as usize;
    let reads = rules
        .into_iter()
        .filter_map(|raw| {
            let own = raw.get();
            // A raw value borrows the text it was read from: its address is its place.
            let start = (own.as_ptr() as usize).checked_sub(base)?;
            let span = start..start + own.len();
            let rule = serde_json::from_str::<Rule>(own).map_err(|e| {
                let d = json_error(own, &e);
                at_offset(text, start + offset_of(own, d.line, d.column), d.message)
            });
            Some(RuleRead { span, rule })
        })
        .collect();
    Some(reads)
}

/// The rules of a TOML file, each with its span.
#[derive(Deserialize)]
struct TomlOutline {
    #[serde(default)]
    rules: Vec<toml::Spanned<toml::Value>>,
}

fn each_toml_rule(text: &str) -> Option<Vec<RuleRead>> {
    let outline: TomlOutline = toml::from_str(text).ok()?;
    let starts: Vec<usize> = outline.rules.iter().map(|r| r.span().start).collect();
    let reads = outline
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, spanned)| {
            // A `[[rules]]` table's span is its header: the rule runs to the next one.
            let next = starts.get(i + 1).copied().unwrap_or(text.len());
            let span = spanned.span().start..spanned.span().end.max(next);
            let rule = spanned.into_inner().try_into::<Rule>().map_err(|e| {
                let message = e.message().trim().to_string();
                let at = place_in(text, span.clone(), &message).unwrap_or(span.start);
                at_offset(text, at, message)
            });
            RuleRead { span, rule }
        })
        .collect();
    Some(reads)
}

/// Where in `span` the mistake `message` speaks of stands: the key it names between
/// backquotes, else the first value it quotes.
fn place_in(text: &str, span: Range<usize>, message: &str) -> Option<usize> {
    if let Some(at) = named_key(message).and_then(|key| key_in(text, span.clone(), key)) {
        return Some(at);
    }
    let start = message.find('"')?;
    let len = message[start + 1..].find('"')? + 2;
    let quoted = &message[start..start + len];
    let within = text.get(span.clone())?;
    within.find(quoted).map(|i| span.start + i)
}

/// The key a serde message names between backquotes (``unknown field `x` ``), if any.
fn named_key(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len]).filter(|k| !k.is_empty())
}

/// Where `key` stands as a key (`key =`, `key=`) inside `span` of `text`.
fn key_in(text: &str, span: Range<usize>, key: &str) -> Option<usize> {
    let within = text.get(span.clone())?;
    within.match_indices(key).find_map(|(i, _)| {
        let before = within[..i].chars().next_back();
        let after = within[i + key.len()..].trim_start_matches([' ', '\t', '"']);
        let starts_key = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        (starts_key && after.starts_with('=')).then_some(span.start + i)
    })
}

#[cfg(test)]
mod tests {
    use crate::model::SamplerKind;
    use crate::parse::{RuleSet, Syntax};

    /// The fuzzer's find: serde_json's error column points at a multi-byte character (a BOM
    /// inside the text); the diagnostic lands on it, no panic.
    #[test]
    fn an_error_at_a_multi_byte_character_is_a_diagnostic() {
        let text = "{\n  \"rse[ul:\" \n\u{feff}mpielr-dumps# ";
        let e = RuleSet::parse(text, Syntax::Json).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].line, 3, "{e:?}");
    }

    #[test]
    fn every_rule_with_a_mistake_is_reported_in_json() {
        let text = r#"{ "rules": [
  { "name": "a", "match": { "name": "web*" }, "trace": { "profile": "nope" } },
  { "name": "b", "match": { "name": "x" }, "dump": { "type": "mini" } },
  { "name": "c", "match": {}, "dump": { "type": "mini" } },
  { "name": "d", "match": { "name": "y" }, "dump": { "typo": 1 } }
] }"#;
        let e = RuleSet::parse(text, Syntax::Json).unwrap_err();
        let lines: Vec<usize> = e.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![2, 4, 5], "{e:?}");
        assert!(e[0].message.contains("nope"), "{e:?}");
        assert!(e[1].message.contains("has no condition"), "{e:?}");
        assert!(e[2].message.contains("typo"), "{e:?}");
        // The unknown field is placed on its key.
        assert_eq!(e[2].column, 54, "{e:?}");
    }

    #[test]
    fn every_rule_with_a_mistake_is_reported_in_toml() {
        let text = r#"
[[rules]]
name = "a"
match = { name = "web*" }
trace = { profile = "nope" }

[[rules]]
name = "b"
match = { name = "x" }
dump = { type = "mini" }

[[rules]]
name = "c"
match = { name = "y" }
dump = { type = "mini", typo = 1 }
"#;
        let e = RuleSet::parse(text, Syntax::Toml).unwrap_err();
        let lines: Vec<usize> = e.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![5, 15], "{e:?}");
        assert!(e[0].message.contains("nope"), "{e:?}");
        assert!(e[1].message.contains("typo"), "{e:?}");
        // Each at its value or key.
        assert_eq!((e[0].column, e[1].column), (21, 25), "{e:?}");
    }

    #[test]
    fn the_kernel_sampler_s_rate_is_checked() {
        let ok = r#"{ "rules": [ { "name": "a", "match": { "name": "w" },
            "trace": { "sampler": "kernel", "rate_hz": 499 } } ] }"#;
        let set = RuleSet::parse(ok, Syntax::Json).unwrap();
        let t = set.rules[0].trace.as_ref().unwrap();
        assert_eq!(
            (t.sampler, t.rate_hz),
            (Some(SamplerKind::Kernel), Some(499))
        );
        let default = r#"{ "rules": [ { "name": "a", "match": { "name": "w" },
            "trace": { "sampler": "kernel" } } ] }"#;
        let set = RuleSet::parse(default, Syntax::Json).unwrap();
        let t = set.rules[0].trace.as_ref().unwrap();
        assert_eq!((t.sampler, t.rate_hz), (Some(SamplerKind::Kernel), None));
        let auto = r#"{ "rules": [ { "name": "a", "match": { "name": "w" },
            "trace": { "sampler": "auto", "rate_hz": 199 } } ] }"#;
        let set = RuleSet::parse(auto, Syntax::Json).unwrap();
        let t = set.rules[0].trace.as_ref().unwrap();
        assert_eq!((t.sampler, t.rate_hz), (Some(SamplerKind::Auto), Some(199)));
        let runtime = r#"{ "rules": [ { "name": "a", "match": { "name": "w" },
            "trace": { "sampler": "runtime" } } ] }"#;
        let set = RuleSet::parse(runtime, Syntax::Json).unwrap();
        let t = set.rules[0].trace.as_ref().unwrap();
        assert_eq!(t.sampler, Some(SamplerKind::Runtime));
        for (trace, says) in [
            (
                r#"{ "sampler": "kernel", "rate_hz": 0 }"#,
                "between 1 and 10000",
            ),
            (
                r#"{ "sampler": "kernel", "rate_hz": 20000 }"#,
                "between 1 and 10000",
            ),
            (
                r#"{ "sampler": "runtime", "rate_hz": 100 }"#,
                "needs \"sampler\": \"kernel\" or \"auto\"",
            ),
            (
                r#"{ "rate_hz": 100 }"#,
                "needs \"sampler\": \"kernel\" or \"auto\"",
            ),
            (r#"{ "sampler": "perf" }"#, "perf"),
        ] {
            let text = format!(
                r#"{{ "rules": [ {{ "name": "a", "match": {{ "name": "w" }}, "trace": {trace} }} ] }}"#
            );
            let e = RuleSet::parse(&text, Syntax::Json).unwrap_err();
            assert!(e[0].message.contains(says), "{trace}: {e:?}");
        }
    }

    #[test]
    fn names_repeated_beside_another_mistake_are_reported_too() {
        let text = r#"{ "rules": [
  { "name": "a", "match": { "name": "x" }, "dump": { "type": "mini" } },
  { "name": "a", "match": { "name": "y" }, "dump": { "type": "mini" } },
  { "name": "b", "match": { "name": "z" }, "dump": { "type": "huge" } }
] }"#;
        let e = RuleSet::parse(text, Syntax::Json).unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].message.contains("two rules are named"), "{e:?}");
        assert_eq!(e[0].line, 3);
        assert!(e[1].message.contains("huge"), "{e:?}");
    }

    #[test]
    fn every_check_across_a_rules_fields_is_reported() {
        let text = r#"{ "rules": [
  { "name": "a", "match": {}, "limits": { "max_actions": 0 } }
] }"#;
        let e = RuleSet::parse(text, Syntax::Json).unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e.iter().all(|d| d.line == e[0].line), "{e:?}");
        let all: Vec<&str> = e.iter().map(|d| d.message.as_str()).collect();
        assert!(all.iter().any(|m| m.contains("no condition")), "{all:?}");
        assert!(all.iter().any(|m| m.contains("no action")), "{all:?}");
        assert!(all.iter().any(|m| m.contains("never act")), "{all:?}");
    }

    #[test]
    fn a_file_that_is_not_well_formed_has_its_one_syntax_error() {
        let e = RuleSet::parse("{ \"rules\": [ { \"name\": ", Syntax::Json).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
    }
}
