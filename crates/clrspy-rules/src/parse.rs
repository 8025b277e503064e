//! Reading a rules file (JSON or TOML, one schema) into a [`RuleSet`], with the line and column
//! of every error.
//!
//! How the place is found: every value is checked inside the deserializer while it is read
//! (see `values`), so the parser's own position is the value's. serde_json reports the
//! position just after the value; for a string it is moved back to the opening quote. toml
//! reports the value's byte span, turned into a line and column here. Checks across a rule's
//! fields run when the rule is read and point at the rule. Checks across rules (two rules of
//! one name) find the name's second occurrence in the text.

use std::path::{Path, PathBuf};

use crate::model::{Rule, RulesFile};

/// The two spellings of a rules file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// JSON.
    Json,
    /// TOML.
    Toml,
}

impl Syntax {
    /// The syntax a file name says (`.toml` is TOML, `.json` JSON), else what the text looks
    /// like (JSON starts with `{`).
    pub fn guess(path: &Path, text: &str) -> Syntax {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => Syntax::Toml,
            Some(e) if e.eq_ignore_ascii_case("json") => Syntax::Json,
            _ if text.trim_start().starts_with('{') => Syntax::Json,
            _ => Syntax::Toml,
        }
    }
}

/// One mistake in a rules file, with its place (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Line, from 1.
    pub line: usize,
    /// Column (characters), from 1.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

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

    /// Checks rules given as text.
    pub fn parse(text: &str, syntax: Syntax) -> Result<RuleSet, Vec<Diagnostic>> {
        let file: RulesFile = match syntax {
            Syntax::Json => serde_json::from_str(text).map_err(|e| vec![json_error(text, &e)])?,
            Syntax::Toml => toml::from_str(text).map_err(|e| vec![toml_error(text, &e)])?,
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
        for (i, r) in file.rules.iter().enumerate() {
            if file.rules[..i].iter().any(|o| o.name == r.name) {
                let quoted = format!("\"{}\"", r.name);
                let nth = 1 + file.rules[..i].iter().filter(|o| o.name == r.name).count();
                let at = find_nth(text, &quoted, nth)
                    .or_else(|| find_nth(text, &format!("'{}'", r.name), nth))
                    .unwrap_or(0);
                errors.push(at_offset(
                    text,
                    at,
                    format!(
                        "two rules are named \"{}\": names must differ (each names its output folder)",
                        r.name
                    ),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(RuleSet {
            rules: file.rules,
            source: None,
        })
    }
}

/// The byte offset of the `n`-th (from 1) occurrence of `needle`.
fn find_nth(text: &str, needle: &str, n: usize) -> Option<usize> {
    text.match_indices(needle)
        .nth(n.checked_sub(1)?)
        .map(|(i, _)| i)
}

/// A diagnostic at byte `offset` of `text`.
fn at_offset(text: &str, offset: usize, message: String) -> Diagnostic {
    let (line, column) = line_column(text, offset);
    Diagnostic {
        line,
        column,
        message,
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// The byte offset of 1-based `line` and `column` (characters).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let rest = &text[start..];
    start
        + rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}

/// A serde_json error as a diagnostic: its message without the position it appends, at its
/// position, moved back to the start of the string it points after.
fn json_error(text: &str, e: &serde_json::Error) -> Diagnostic {
    let full = e.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    };
    if e.line() == 0 {
        return Diagnostic {
            line: 1,
            column: 1,
            message,
        };
    }
    let end = offset_of(text, e.line(), e.column());
    // serde_json's column is the last character it read; a string value ends there.
    let value_end = (end + 1).min(text.len());
    let start = if e.is_data() && text[..value_end].ends_with('"') {
        string_start(text, value_end - 1).unwrap_or(end)
    } else {
        end
    };
    at_offset(text, start, message)
}

/// The opening quote of the JSON string whose closing quote is at byte `close`.
fn string_start(text: &str, close: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = close;
    while i > 0 {
        i -= 1;
        if bytes[i] == b'"' {
            let backslashes = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
            if backslashes % 2 == 0 {
                return Some(i);
            }
        }
        if bytes[i] == b'\n' {
            return None;
        }
    }
    None
}

/// A toml error as a diagnostic: its message at the start of its span.
fn toml_error(text: &str, e: &toml::de::Error) -> Diagnostic {
    let at = e.span().map_or(0, |s| s.start);
    at_offset(text, at, e.message().trim().to_string())
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
