//! Redaction of what goes into a bundle: the target's environment and command line, free text
//! (log lines, exception messages), log files copied line by line, and the trace's own
//! strings, masked in place so the file stays a valid trace. The [`Redactor`] remembers the
//! exact secret values it took from the environment and the command line ("learned literals")
//! and masks them wherever they appear later, even where no pattern would find them (an app
//! that logs its configuration), and it records where each secret was and what kind it was —
//! never the value — for the manifest.
//!
//! The patterns are `clrspy_values::redact`'s; `trace` finds the trace's text runs.

mod file;
mod trace;

use std::collections::HashMap;
use std::path::Path;

use clrspy_values::redact::{self, Found, Span, MASK};

pub use trace::TraceScrub;

use crate::manifest::Redaction;
use crate::HandoffError;

/// The shortest secret value learned as a literal: shorter ones (`1`, `true`, `admin`) would
/// mask ordinary words everywhere.
pub(crate) const MIN_LITERAL: usize = 6;

/// What a learned literal is reported as when it is found without a pattern.
const LITERAL: Found = "known secret value";

/// Masks secrets in what goes into a bundle and remembers where they were. Disabled
/// (`--no-redact`), every call hands its input back unchanged and nothing is recorded.
#[derive(Debug, Default)]
pub struct Redactor {
    enabled: bool,
    /// Exact secret values taken from the environment and command line, longest first.
    literals: Vec<String>,
    /// The records, merged by where and kind.
    found: Vec<Redaction>,
    /// (where, kind) → (index in `found`, count).
    index: HashMap<(String, &'static str), (usize, u64)>,
}

impl Redactor {
    /// A redactor; `enabled: false` keeps everything as it is.
    pub fn new(enabled: bool) -> Redactor {
        Redactor {
            enabled,
            ..Redactor::default()
        }
    }

    /// Environment variables: the values of secret names masked whole (and learned as
    /// literals, with each secret part of a connection string), other values searched as text.
    /// `where_` names the source (`environment`); records say `environment: NAME`. Returns
    /// the variables to show, in order.
    pub fn env(&mut self, vars: &[(String, String)], where_: &str) -> Vec<(String, String)> {
        if !self.enabled {
            return vars.to_vec();
        }
        // Learn first, so a secret also held by another variable is masked there too.
        for (name, value) in vars {
            if redact::is_secret_name(name) && !value.is_empty() {
                self.learn_value(value);
            }
        }
        vars.iter()
            .map(|(name, value)| {
                let place = format!("{where_}: {name}");
                if redact::is_secret_name(name) && !value.is_empty() {
                    self.record(&place, "secret name");
                    (name.clone(), MASK.to_string())
                } else {
                    (name.clone(), self.text(value, &place))
                }
            })
            .collect()
    }

    /// A command line's arguments: the argument after a secret option (`--password X`) and
    /// the value of a secret option given with `=` (`--Db:Password=X`, `--token=X`) are masked
    /// whole; in other arguments, connection strings' secrets (`Password=...;`), URL
    /// credentials and tokens are masked where they stand. All are learned as literals.
    /// `where_` names the source (`command line`); records say `command line (argument N)`,
    /// counting from 0.
    pub fn args(&mut self, args: &[String], where_: &str) -> Vec<String> {
        if !self.enabled {
            return args.to_vec();
        }
        // Learn every secret first, then mask each argument with all of them known.
        let mut plans = Vec::with_capacity(args.len());
        let mut after_option = false;
        for arg in args {
            let plan = if after_option && !arg.is_empty() && arg != MASK {
                self.learn_value(arg);
                Plan::Whole
            } else if let Some(eq) = secret_option_value(arg) {
                self.learn_value(&arg[eq + 1..]);
                Plan::Value(eq)
            } else {
                for (range, _) in redact::secret_spans(arg) {
                    self.learn(&arg[range]);
                }
                Plan::Text
            };
            after_option = plan == Plan::Text
                && arg.starts_with('-')
                && !arg.contains('=')
                && redact::is_secret_name(arg.trim_start_matches('-'));
            plans.push(plan);
        }
        args.iter()
            .zip(plans)
            .enumerate()
            .map(|(i, (arg, plan))| {
                let place = format!("{where_} (argument {i})");
                match plan {
                    Plan::Whole => {
                        self.record(&place, "secret option");
                        MASK.to_string()
                    }
                    Plan::Value(eq) => {
                        self.record(&place, "secret value");
                        format!("{}{MASK}", &arg[..=eq])
                    }
                    Plan::Text => self.text(arg, &place),
                }
            })
            .collect()
    }

    /// Free text (a log line, an exception message, a command line in one string): the
    /// patterns' secrets and every learned literal masked, each recorded under `where_`.
    pub(crate) fn text(&mut self, text: &str, where_: &str) -> String {
        if !self.enabled {
            return text.to_string();
        }
        let spans = self.spans(text);
        if spans.is_empty() {
            return text.to_string();
        }
        for (_, kind) in &spans {
            self.record(where_, kind);
        }
        redact::apply_mask(text, &spans)
    }

    /// A text file copied to `dst` (created owner-only) with every line through
    /// [`Redactor::text`], streamed (any size); bytes that are not UTF-8 are copied as they
    /// are and the text around them is still searched. Returns the bytes written.
    pub(crate) fn copy_file(
        &mut self,
        src: &Path,
        dst: &Path,
        where_: &str,
    ) -> Result<u64, HandoffError> {
        file::copy(&mut |line| self.text(line, where_), src, dst)
    }

    /// A trace file rewritten in place: every secret in its strings (UTF-16LE and UTF-8 text)
    /// overwritten with as many `*` characters, so its framing stays valid and every reader
    /// opens it. Records say `trace (<provider>/<event>)`, or `trace` outside any event.
    pub fn trace_in_place(&mut self, path: &Path) -> Result<TraceScrub, HandoffError> {
        if !self.enabled {
            return Ok(TraceScrub::default());
        }
        let spans = |text: &str| self.spans(text);
        let (done, places) = trace::scrub(path, &spans)?;
        for (place, kind) in places {
            self.record(&place, kind);
        }
        Ok(done)
    }

    /// What was redacted, where: one entry per place and kind, with a count in `what` when it
    /// was more than once (`secret name (3×)`).
    pub fn redactions(&self) -> &[Redaction] {
        &self.found
    }

    /// The secrets in `text`: the patterns' and the learned literals', merged, in order.
    pub(crate) fn spans(&self, text: &str) -> Vec<Span> {
        let mut spans = redact::secret_spans(text);
        for literal in &self.literals {
            spans.extend(
                text.match_indices(literal.as_str())
                    .map(|(at, _)| (at..at + literal.len(), LITERAL)),
            );
        }
        redact::merge_spans(spans)
    }

    /// Notes one secret found at `where_`.
    pub(crate) fn record(&mut self, where_: &str, kind: &'static str) {
        let key = (where_.to_string(), kind);
        let (at, n) = match self.index.get(&key) {
            Some(&(at, n)) => (at, n + 1),
            None => {
                self.found.push(Redaction {
                    where_: where_.to_string(),
                    what: kind.to_string(),
                });
                (self.found.len() - 1, 1)
            }
        };
        self.index.insert(key, (at, n));
        if n > 1 {
            self.found[at].what = format!("{kind} ({n}×)");
        }
    }

    /// Learns a secret value: the whole of it, and each secret part of it (a connection
    /// string's password, a URL's credentials).
    fn learn_value(&mut self, value: &str) {
        self.learn(value);
        for (range, _) in redact::secret_spans(value) {
            self.learn(&value[range]);
        }
    }

    /// Remembers `literal` (trimmed) when it is long enough to be a secret.
    fn learn(&mut self, literal: &str) {
        let literal = literal.trim();
        if literal.chars().count() < MIN_LITERAL
            || literal == MASK
            || self.literals.iter().any(|l| l == literal)
        {
            return;
        }
        for v in variants(literal) {
            if !self.literals.contains(&v) {
                self.literals.push(v);
            }
        }
        // Longest first: a literal inside another is masked with it.
        self.literals.sort_by_key(|l| std::cmp::Reverse(l.len()));
    }
}

/// How one argument is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Masked whole (it follows a secret option).
    Whole,
    /// Its value after the `=` at this byte masked whole (`--Db:Password=X`).
    Value(usize),
    /// Searched as text.
    Text,
}

/// The `=` of an argument `[-]-NAME=VALUE` or `/NAME=VALUE` whose name is a secret's and
/// whose value is not empty or masked already.
fn secret_option_value(arg: &str) -> Option<usize> {
    let eq = arg.find('=')?;
    let name = arg[..eq].trim_start_matches(['-', '/']);
    let value = &arg[eq + 1..];
    let plain = !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == ';');
    (plain && redact::is_secret_name(name) && !value.is_empty() && value != MASK).then_some(eq)
}

/// The forms a secret takes in what a .NET app writes: as it is, in JSON (standard escapes,
/// and System.Text.Json's default encoder, which writes `&`, `+`, `'`, `<`, `>`, `` ` ``,
/// quotes and non-ASCII as `\uXXXX`), and percent-encoded in a URL.
fn variants(literal: &str) -> Vec<String> {
    let mut json = String::with_capacity(literal.len());
    let mut dotnet = String::with_capacity(literal.len());
    let mut url = String::with_capacity(literal.len());
    for c in literal.chars() {
        let short = match c {
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            _ => None,
        };
        let mut units = [0u16; 2];
        let hex: String = c
            .encode_utf16(&mut units)
            .iter()
            .map(|u| format!("\\u{u:04X}"))
            .collect();
        match (short, c) {
            (Some(s), _) => json.push_str(s),
            (None, '"') => json.push_str("\\\""),
            (None, c) if (c as u32) < 0x20 => json.push_str(&hex),
            (None, c) => json.push(c),
        }
        match (short, c) {
            (Some(s), _) => dotnet.push_str(s),
            (None, '"' | '&' | '\'' | '+' | '<' | '>' | '`') => dotnet.push_str(&hex),
            (None, c) if (c as u32) < 0x20 || (c as u32) > 0x7E => dotnet.push_str(&hex),
            (None, c) => dotnet.push(c),
        }
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~') {
            url.push(c);
        } else {
            let mut bytes = [0u8; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                url.push_str(&format!("%{b:02X}"));
            }
        }
    }
    let mut all = vec![literal.to_string()];
    for v in [json, dotnet, url] {
        if !all.contains(&v) {
            all.push(v);
        }
    }
    all
}

#[cfg(test)]
mod tests;
