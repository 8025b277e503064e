//! Reading a rules file (JSON or TOML, one schema) into a [`RuleSet`], with the line and column
//! of every error.
//!
//! How the place is found: every value is checked inside the deserializer while it is read
//! (see `values`), so the parser's own position is the value's. serde_json reports the
//! position just after the value; for a string it is moved back to the opening quote. toml
//! reports the value's byte span, turned into a line and column by `text`. Checks across a rule's
//! fields run when the rule is read and point at the rule, all of them. Checks across rules (two
//! rules of one name) find the name's second occurrence in the text. serde stops at its first
//! mistake: `parse_rest` reads the other rules one by one so every rule's is reported.

use std::path::{Path, PathBuf};

use crate::model::{Rule, RulesFile};
use crate::text::{at_offset, json_error, offset_of, toml_error};
pub use crate::text::{Diagnostic, Syntax};

/// Why a rules file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read the rules file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file has mistakes.
    #[error("{}:{}", path.display(), errors.iter().map(|e| format!("{}:{}: {}", e.line, e.column, e.message)).collect::<Vec<_>>().join("; "))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Its mistakes, in file order.
        errors: Vec<Diagnostic>,
    },
}

/// A checked rules file.
#[derive(Debug)]
pub struct RuleSet {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// Where they came from.
    pub source: Option<PathBuf>,
}

impl RuleSet {
    /// Reads and checks the rules file at `path`.
    pub fn load(path: &Path) -> Result<RuleSet, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let syntax = Syntax::guess(path, &text);
        let mut set = RuleSet::parse(&text, syntax).map_err(|errors| LoadError::Invalid {
            path: path.to_path_buf(),
            errors,
        })?;
        set.source = Some(path.to_path_buf());
        Ok(set)
    }

    /// Checks rules given as text. Every mistake is reported, in file order: when the file
    /// does not read as a whole, each rule is read again on its own (see `parse_rest`), so a
    /// run finds the first mistake of every rule; only a file that is not well-formed JSON or
    /// TOML stops at its first syntax error.
    pub fn parse(text: &str, syntax: Syntax) -> Result<RuleSet, Vec<Diagnostic>> {
        let whole = match syntax {
            Syntax::Json => {
                serde_json::from_str::<RulesFile>(text).map_err(|e| json_error(text, &e))
            }
            Syntax::Toml => toml::from_str::<RulesFile>(text).map_err(|e| toml_error(text, &e)),
        };
        let file = match whole {
            Ok(file) => file,
            Err(first) => return Err(in_file_order(with_the_rest(text, syntax, first))),
        };
        let mut errors = Vec::new();
        if file.rules.is_empty() {
            let at = find_nth(text, "rules", 1).unwrap_or(0);
            errors.push(at_offset(
                text,
                at,
                "\"rules\" is empty: watch would do nothing".into(),
            ));
        }
        let names: Vec<&str> = file.rules.iter().map(|r| r.name.as_str()).collect();
        errors.extend(repeated_names(text, &names));
        if !errors.is_empty() {
            return Err(in_file_order(errors));
        }
        Ok(RuleSet {
            rules: file.rules,
            source: None,
        })
    }
}

/// The first mistake serde found, and the first mistake of every other rule, read one by one;
/// the rules that read are checked for repeated names.
fn with_the_rest(text: &str, syntax: Syntax, first: Diagnostic) -> Vec<Diagnostic> {
    let Some(reads) = crate::parse_rest::each_rule(text, syntax) else {
        return vec![first];
    };
    let first_at = offset_of(text, first.line, first.column);
    let mut out = vec![first];
    for (i, read) in reads.iter().enumerate() {
        if let Err(d) = &read.rule {
            // The rule serde stopped in has its mistake already (serde may place a mistake of
            // the whole rule just past its end: a rule runs to the next one).
            let end = reads.get(i + 1).map_or(text.len(), |next| next.span.start);
            if !(read.span.start <= first_at && first_at <= end.max(read.span.end)) {
                out.push(d.clone());
            }
        }
    }
    let names: Vec<&str> = reads
        .iter()
        .filter_map(|r| r.rule.as_ref().ok().map(|r| r.name.as_str()))
        .collect();
    out.extend(repeated_names(text, &names));
    out
}

/// A rule's name given twice: at the name's later occurrence in the text.
fn repeated_names(text: &str, names: &[&str]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            let quoted = format!("\"{name}\"");
            let nth = 1 + names[..i].iter().filter(|o| *o == name).count();
            let at = find_nth(text, &quoted, nth)
                .or_else(|| find_nth(text, &format!("'{name}'"), nth))
                .unwrap_or(0);
            errors.push(at_offset(
                text,
                at,
                format!(
                    "two rules are named \"{name}\": names must differ (each names its output folder)"
                ),
            ));
        }
    }
    errors
}

/// Diagnostics sorted by place, one per mistake: a rule's checks across its fields give all
/// their mistakes in one message, a line each (see `model`), split here.
fn in_file_order(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = diagnostics
        .into_iter()
        .flat_map(|d| {
            let (line, column) = (d.line, d.column);
            d.message
                .split('\n')
                .map(|m| Diagnostic {
                    line,
                    column,
                    message: m.to_string(),
                })
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort_by_key(|d| (d.line, d.column));
    out.dedup();
    out
}

/// The byte offset of the `n`-th (from 1) occurrence of `needle`.
fn find_nth(text: &str, needle: &str, n: usize) -> Option<usize> {
    text.match_indices(needle)
        .nth(n.checked_sub(1)?)
        .map(|(i, _)| i)
}

/// The example of issue 13, verbatim (tests).
#[cfg(test)]
pub(crate) fn tests_example() -> &'static str {
    r#"{ "rules": [
    { "name": "compiler-dumps",
      "match": { "name": "csc*", "command_line": "--shared" },
      "dump": { "type": "mini", "on_exception": ["*.InvalidCastException"], "compress": "gzip" },
      "limits": { "max_actions": 2 } },
    { "name": "slow-web",
      "match": { "name": "web*" },
      "trace": { "profile": "cpu", "ring_mb": 64,
                 "stop_on": [ { "exception": "System.Net.*" }, { "gc_pause_ms": 200 } ],
                 "after_trigger": "5s" } } ] }"#
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::line_column;

    fn issue_example() -> &'static str {
        tests_example()
    }

    fn json_err(text: &str) -> Diagnostic {
        let mut e = RuleSet::parse(text, Syntax::Json).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        e.remove(0)
    }

    fn toml_err(text: &str) -> Diagnostic {
        let mut e = RuleSet::parse(text, Syntax::Toml).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        e.remove(0)
    }

    #[test]
    fn the_issue_example_reads_as_written() {
        let set = RuleSet::parse(issue_example(), Syntax::Json).unwrap();
        assert_eq!(set.rules.len(), 2);
        let d = set.rules[0].dump.as_ref().unwrap();
        assert_eq!(d.on_exception[0].as_str(), "*.InvalidCastException");
        assert_eq!(set.rules[0].limits.max_actions, Some(2));
        let t = set.rules[1].trace.as_ref().unwrap();
        assert_eq!(t.ring_mb, Some(64));
        assert_eq!(t.stop_on.len(), 2);
        assert_eq!(
            t.after_trigger.map(|d| d.0),
            Some(std::time::Duration::from_secs(5))
        );
    }

    #[test]
    fn a_schema_key_is_accepted_and_in_the_schema() {
        let text = r#"{ "$schema": "https://example.com/rules.json",
            "rules": [{ "name": "a", "match": { "name": "x" }, "trace": {} }] }"#;
        assert_eq!(RuleSet::parse(text, Syntax::Json).unwrap().rules.len(), 1);
        let schema = crate::json_schema();
        assert!(schema["properties"].get("$schema").is_some(), "{schema}");
    }

    #[test]
    fn the_same_rules_in_toml() {
        let text = r#"
[[rules]]
name = "compiler-dumps"
match = { name = "csc*", command_line = "--shared" }
dump = { type = "mini", on_exception = ["*.InvalidCastException"], compress = "gzip" }
limits = { max_actions = 2 }

[[rules]]
name = "slow-web"
match.name = "web*"
trace = { profile = "cpu", ring_mb = 64, stop_on = [{ exception = "System.Net.*" }, { gc_pause_ms = 200 }], after_trigger = "5s" }
"#;
        let set = RuleSet::parse(text, Syntax::Toml).unwrap();
        assert_eq!(set.rules.len(), 2);
        assert_eq!(set.rules[1].trace.as_ref().unwrap().stop_on.len(), 2);
    }

    #[test]
    fn a_bad_pattern_is_placed_at_its_value() {
        let text = "{ \"rules\": [\n  { \"name\": \"a\",\n    \"match\": { \"name\": \"\" },\n    \"trace\": {} } ] }";
        let e = json_err(text);
        assert_eq!((e.line, e.column), (3, 24), "{e}");
        assert!(
            e.message.contains("an empty pattern matches nothing"),
            "{e}"
        );
        let t = "[[rules]]\nname = \"a\"\nmatch = { name = \"\" }\ntrace = {}\n";
        let e = toml_err(t);
        assert_eq!((e.line, e.column), (3, 18), "{e}");
        assert!(e.message.contains("empty pattern"), "{e}");
    }

    #[test]
    fn unknown_fields_and_values_are_errors_with_places() {
        let e = json_err("{ \"rules\": [ { \"name\": \"a\", \"mtach\": {} } ] }");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("unknown field `mtach`"), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"},\n\"trace\":{\"profile\":\"cpux\"}}]}",
        );
        assert_eq!((e.line, e.column), (2, 20), "{e}");
        assert!(e.message.contains("unknown profile \"cpux\""), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"},\"trace\":{\"duration\":\"5 parsecs\"}}]}",
        );
        assert!(e.message.contains("'5 parsecs' is not a duration"), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"},\"dump\":{\"type\":\"tiny\"}}]}",
        );
        assert!(e.message.contains("unknown dump type \"tiny\""), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"command_line\":\"(\"},\"dump\":{}}]}",
        );
        assert!(e.message.contains("bad regular expression"), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"},\"trace\":{\"stop_on\":[{\"cpu\":5}]}}]}",
        );
        assert!(e.message.contains("unknown variant `cpu`"), "{e}");
        let e = toml_err(
            "[[rules]]\nname = \"a\"\nmatch = { name = \"x\" }\n[rules.dump]\ncompress = \"rar\"\n",
        );
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("unknown variant `rar`"), "{e}");
    }

    #[test]
    fn rules_that_would_never_act_are_errors() {
        let e = json_err("{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"}}]}");
        assert!(e.message.contains("has no action"), "{e}");
        let e = json_err("{\"rules\":[{\"name\":\"a\",\"match\":{},\"dump\":{}}]}");
        assert!(e.message.contains("no condition"), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"},\"trace\":{\"after_trigger\":\"5s\"}}]}",
        );
        assert!(e.message.contains("needs \"stop_on\""), "{e}");
        let e = json_err("{\"rules\":[]}");
        assert!(e.message.contains("empty"), "{e}");
        let e = json_err(
            "{\"rules\":[{\"name\":\"a\",\"match\":{\"name\":\"x\"},\"dump\":{},\"limits\":{\"max_actions\":0}}]}",
        );
        assert!(e.message.contains("never act"), "{e}");
    }

    #[test]
    fn crash_dumps_read_in_both_syntaxes_and_refuse_a_type() {
        let j = RuleSet::parse(
            r#"{"rules":[{"name":"c","match":{"name":"Workloads*"},"dump":{"on_crash":true,"compress":"gzip"}}]}"#,
            Syntax::Json,
        )
        .unwrap();
        let d = j.rules[0].dump.as_ref().unwrap();
        assert!(d.on_crash && d.on_exception.is_empty());
        let t = RuleSet::parse(
            "[[rules]]\nname = \"c\"\nmatch = { name = \"w*\" }\ndump = { on_crash = true, compress = \"zstd\" }\n",
            Syntax::Toml,
        )
        .unwrap();
        assert!(t.rules[0].dump.as_ref().unwrap().on_crash);
        let e = json_err(
            "{\"rules\":[\n{\"name\":\"c\",\"match\":{\"name\":\"x\"},\"dump\":{\"on_crash\":true,\"type\":\"full\"}}]}",
        );
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("DOTNET_DbgMiniDumpType"), "{e}");
        let e = toml_err(
            "[[rules]]\nname = \"c\"\nmatch = { name = \"x\" }\n[rules.dump]\non_crash = \"yes\"\n",
        );
        assert_eq!(e.line, 5, "{e}");
        let e = json_err(
            r#"{"rules":[{"name":"h","match":{"name":"x"},"dump":{"hold_hook":"/h/ClrspyHold.dll"}}]}"#,
        );
        assert!(e.message.contains("needs \"on_exception\""), "{e}");
        let e = json_err(
            r#"{"rules":[{"name":"h","match":{"name":"x"},"dump":{"on_exception":["X"],"hold_hook":"ClrspyHold.dll"}}]}"#,
        );
        assert!(e.message.contains("absolute path"), "{e}");
        let ok = RuleSet::parse(
            r#"{"rules":[{"name":"h","match":{"name":"x"},"dump":{"on_exception":["X"],"hold_hook":"/h/ClrspyHold.dll"}}]}"#,
            Syntax::Json,
        )
        .unwrap();
        let hook = ok.rules[0].dump.as_ref().unwrap().hold_hook.clone();
        assert_eq!(hook.as_deref(), Some("/h/ClrspyHold.dll"));
    }

    #[test]
    fn duplicate_names_point_at_the_second() {
        let text = "{\"rules\":[\n{\"name\":\"a\",\"match\":{\"name\":\"x\"},\"dump\":{}},\n{\"name\":\"a\",\"match\":{\"name\":\"y\"},\"dump\":{}}]}";
        let e = json_err(text);
        assert_eq!((e.line, e.column), (3, 9), "{e}");
        assert!(e.message.contains("two rules are named \"a\""), "{e}");
    }

    #[test]
    fn syntax_errors_have_places() {
        let e = json_err("{\"rules\": [\n  {\"name\": \"a\",,}]}");
        assert_eq!(e.line, 2, "{e}");
        let e = toml_err("[[rules]]\nname = \n");
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn places() {
        let t = "ab\ncdé\nf";
        assert_eq!(line_column(t, 0), (1, 1));
        assert_eq!(line_column(t, 3), (2, 1));
        assert_eq!(line_column(t, 7), (2, 4));
        assert_eq!(offset_of(t, 2, 3), 5);
        assert_eq!(offset_of(t, 9, 9), t.len());
    }
}
