//! The rules file's checked values: globs, regular expressions, durations, profile and
//! provider names, dump types, users, rule names. Each is checked while it is read (inside the
//! deserializer's visitor), so a bad value is an error at its own line and column in JSON and
//! TOML alike, never a rule that silently never fires.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A value written as a string and checked as it is read.
trait Checked: Sized {
    /// What a valid value looks like, for error messages.
    const EXPECTING: &'static str;
    /// Parses and checks the text.
    fn check(s: &str) -> Result<Self, String>;
}

/// Implements `Deserialize` (through [`Checked`]) and `JsonSchema` (a string with a
/// description, and a pattern or examples when given) for a checked string type.
macro_rules! checked_string {
    ($ty:ident, $name:literal, $schema:tt) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(<$ty as Checked>::EXPECTING)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        <$ty as Checked>::check(s).map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

/// A name pattern (clrspy-values' one grammar: `*` any run, `?` one character,
/// case-insensitive).
#[derive(Clone, Debug)]
pub struct Glob(clrspy_values::NamePattern);

impl Glob {
    /// The glob as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// True when `s` matches.
    pub fn is_match(&self, s: &str) -> bool {
        self.0.is_match(s)
    }
}

impl Checked for Glob {
    const EXPECTING: &'static str = "a glob such as \"web*\"";
    fn check(s: &str) -> Result<Glob, String> {
        clrspy_values::NamePattern::new(s)
            .map(Glob)
            .map_err(|e| e.to_string())
    }
}

checked_string!(Glob, "Glob", {
    "type": "string",
    "minLength": 1,
    "description": "A name pattern: * any run of characters, ? one character, anywhere; case-insensitive; every other character stands for itself.",
    "examples": ["web*", "csc", "*.InvalidCastException"]
});

/// A regular expression (Rust `regex` syntax), searched anywhere in the text.
#[derive(Clone, Debug)]
pub struct Pattern {
    text: String,
    re: regex::Regex,
}

impl Pattern {
    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the expression occurs in `s`.
    pub fn is_match(&self, s: &str) -> bool {
        self.re.is_match(s)
    }
}

impl Checked for Pattern {
    const EXPECTING: &'static str = "a regular expression";
    fn check(s: &str) -> Result<Pattern, String> {
        let re = regex::RegexBuilder::new(s)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| {
                // The regex crate's message spans lines (a caret under the spot): keep its
                // last line, which says what is wrong.
                let text = e.to_string();
                let why = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid")
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string();
                format!("bad regular expression \"{s}\": {why}")
            })?;
        Ok(Pattern {
            text: s.to_string(),
            re,
        })
    }
}

checked_string!(Pattern, "Regex", {
    "type": "string",
    "description": "A regular expression (Rust regex syntax), found anywhere in the command line.",
    "examples": ["--shared", "Environment=Production"]
});

/// A length of time more than zero, in the one duration grammar (clrspy-values): `"5s"`,
/// `"250ms"`, `"10m"`, `"2h"`; a bare number is seconds; at most 30 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl Checked for Dur {
    const EXPECTING: &'static str = "a duration such as \"5s\", \"250ms\", \"10m\" or \"1h\"";
    fn check(s: &str) -> Result<Dur, String> {
        parse_duration(s).map(Dur)
    }
}

/// Parses a duration more than zero (see [`Dur`]).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// The schema's pattern of a duration: a number, an optional unit.
const DURATION_PATTERN: &str = "^\\s*([0-9]+(\\.[0-9]*)?|\\.[0-9]+)\\s*(ms|s|m|min|h)?\\s*$";

checked_string!(Dur, "Duration", {
    "type": "string",
    "pattern": DURATION_PATTERN,
    "description": "A duration more than 0: a number and a unit (ms, s, m, h); a bare number is seconds; at most 30 days.",
    "examples": ["5s", "250ms", "10m", "30"]
});

/// The delay after a stop trigger fires, in the one duration grammar: `"5s"`, `"500ms"`,
/// `"0"` (none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delay(pub Duration);

impl Checked for Delay {
    const EXPECTING: &'static str = "a delay such as \"5s\", \"500ms\" or \"0\"";
    fn check(s: &str) -> Result<Delay, String> {
        clrspy_values::parse_duration(s)
            .map(Delay)
            .map_err(|e| e.to_string())
    }
}

checked_string!(Delay, "Delay", {
    "type": "string",
    "pattern": DURATION_PATTERN,
    "description": "A delay: a number and a unit (ms, s, m, h); a bare number is seconds; 0 for none; at most 30 days.",
    "examples": ["5s", "500ms", "0"]
});

/// A named recording profile (`clrspy record --list-profiles`).
#[derive(Clone, Debug)]
pub struct ProfileName(pub &'static clr_events::profiles::Profile);

impl Checked for ProfileName {
    const EXPECTING: &'static str = "a profile name such as \"cpu\"";
    fn check(s: &str) -> Result<ProfileName, String> {
        clr_events::profiles::find_profile(s)
            .map(ProfileName)
            .ok_or_else(|| {
                let known: Vec<&str> = clr_events::profiles::PROFILES
                    .iter()
                    .map(|p| p.name)
                    .collect();
                format!("unknown profile \"{s}\" (known: {})", known.join(", "))
            })
    }
}

impl JsonSchema for ProfileName {
    fn schema_name() -> Cow<'static, str> {
        "Profile".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = clr_events::profiles::PROFILES
            .iter()
            .flat_map(|p| std::iter::once(p.name).chain(p.aliases.iter().copied()))
            .collect();
        json_schema!({
            "type": "string",
            "enum": names,
            "description": "A recording profile (clrspy record --list-profiles)."
        })
    }
}

impl<'de> Deserialize<'de> for ProfileName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ProfileName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(ProfileName::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ProfileName, E> {
                ProfileName::check(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// One provider in dotnet-trace's `Name[:Keywords[:Level[:Args]]]` form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderText(pub String);

impl Checked for ProviderText {
    const EXPECTING: &'static str =
        "a provider such as \"Microsoft-Windows-DotNETRuntime:gc+exception:4\"";
    fn check(s: &str) -> Result<ProviderText, String> {
        if s.contains(',') && !s.contains('"') {
            return Err(format!(
                "\"{s}\" holds several providers: give each its own string in the list"
            ));
        }
        clr_events::provider_spec::parse_provider(s)
            .map(|_| ProviderText(s.to_string()))
            .map_err(|e| format!("bad provider \"{s}\": {e}"))
    }
}

checked_string!(ProviderText, "Provider", {
    "type": "string",
    "description": "A provider as dotnet-trace writes it: Name[:Keywords[:Level[:Key=Value;...]]].",
    "examples": ["Microsoft-Windows-DotNETRuntime:gc+exception:4", "System.Net.Http"]
});

/// Which counters, in dotnet-counters' `--counters` syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSpecText(pub String);

impl Checked for CounterSpecText {
    const EXPECTING: &'static str =
        "counters such as \"System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]\"";
    fn check(s: &str) -> Result<CounterSpecText, String> {
        s.parse::<clr_events::counter_spec::CounterSpec>()
            .map(|_| CounterSpecText(s.to_string()))
            .map_err(|e| {
                let e = e.to_string();
                format!(
                    "bad counters \"{s}\": {}",
                    e.trim_start_matches("--counters: ")
                )
            })
    }
}

checked_string!(CounterSpecText, "CounterSpec", {
    "type": "string",
    "description": "Providers and meters separated by commas, each optionally with its counters in brackets (dotnet-counters' syntax); EventCounters\\NAME asks for the old EventCounters of NAME.",
    "examples": ["System.Runtime", "System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]"]
});

/// What a dump holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpKind(pub diagnostics_client::DumpType);

impl Checked for DumpKind {
    const EXPECTING: &'static str = "a dump type: mini, heap, triage or full";
    fn check(s: &str) -> Result<DumpKind, String> {
        diagnostics_client::DumpType::from_name(s)
            .map(DumpKind)
            .ok_or_else(|| format!("unknown dump type \"{s}\" (known: mini, heap, triage, full)"))
    }
}

checked_string!(DumpKind, "DumpType", {
    "type": "string",
    "enum": ["mini", "normal", "heap", "withheap", "triage", "full"],
    "description": "What the dump holds: mini (stacks, modules), heap (what heap analysis needs), triage (mini without personal data), full (all memory)."
});

/// A rule's name: it names the rule's output folder, so letters, digits, `.`, `_`, `-`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleName(pub String);

impl Checked for RuleName {
    const EXPECTING: &'static str = "a rule name (letters, digits, '.', '_', '-')";
    fn check(s: &str) -> Result<RuleName, String> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if ok {
            Ok(RuleName(s.to_string()))
        } else {
            Err(format!(
                "bad rule name \"{s}\": it names the rule's output folder, so 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"
            ))
        }
    }
}

checked_string!(RuleName, "RuleName", {
    "type": "string",
    "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$",
    "description": "The rule's name; it also names the rule's output folder."
});

/// A user: a numeric uid or a name from `/etc/passwd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserSpec {
    /// By uid.
    Uid(u32),
    /// By name.
    Name(String),
}

impl<'de> Deserialize<'de> for UserSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UserSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a user name or a numeric uid")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<UserSpec, E> {
                u32::try_from(v)
                    .map(UserSpec::Uid)
                    .map_err(|_| E::custom(format!("uid {v} is out of range")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<UserSpec, E> {
                u32::try_from(v)
                    .map(UserSpec::Uid)
                    .map_err(|_| E::custom(format!("uid {v} is out of range")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<UserSpec, E> {
                if s.is_empty() {
                    return Err(E::custom("an empty user name matches nobody"));
                }
                Ok(match s.parse::<u32>() {
                    Ok(uid) => UserSpec::Uid(uid),
                    Err(_) => UserSpec::Name(s.to_string()),
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for UserSpec {
    fn schema_name() -> Cow<'static, str> {
        "User".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": ["string", "integer"],
            "description": "A user name (from /etc/passwd) or a numeric uid: the process's real user."
        })
    }
}

/// How a dump file is compressed once written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Left as the runtime wrote it.
    #[default]
    None,
    /// gzip (`.gz`).
    Gzip,
    /// zstd (`.zst`).
    Zstd,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(Delay::check("0"), Ok(Delay(Duration::ZERO)));
        assert_eq!(Delay::check("2"), Ok(Delay(Duration::from_secs(2))));
        assert!(Delay::check("-1s").is_err());
        for bad in [
            "", "s", "5 sec", "-1s", "0s", "0", "1e9h", "5.s.", "NaNs", "31d", "721h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn globs_and_patterns() {
        let g = Glob::check("csc*").unwrap();
        assert!(g.is_match("csc") && g.is_match("CSC.dll") && !g.is_match("vbcsc"));
        // `[` is a character like any other: one wildcard rule everywhere.
        let g = Glob::check("web[").unwrap();
        assert!(g.is_match("WEB[") && !g.is_match("web"));
        assert!(Glob::check("").is_err());
        let p = Pattern::check("--shared").unwrap();
        assert!(p.is_match("dotnet csc.dll --shared /x"));
        let e = Pattern::check("a(b").unwrap_err();
        assert!(e.contains("bad regular expression \"a(b\""), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn names() {
        assert!(ProfileName::check("cpu").is_ok());
        assert!(ProfileName::check("cpu-sampling").is_ok());
        assert!(ProfileName::check("cpux")
            .unwrap_err()
            .contains("known: cpu"));
        assert!(DumpKind::check("mini").is_ok());
        assert!(DumpKind::check("tiny").is_err());
        assert!(RuleName::check("slow-web").is_ok());
        for bad in ["", "a/b", "..", ".x", "a b"] {
            assert!(RuleName::check(bad).is_err(), "{bad}");
        }
        assert!(ProviderText::check("Microsoft-Windows-DotNETRuntime:gc:4").is_ok());
        assert!(ProviderText::check("A:zz").is_err());
        assert!(ProviderText::check("A,B").is_err());
    }
}
