//! Name patterns, for events (`GC/*`, `Microsoft-Windows-DotNETRuntime`), exception types
//! (`System.Net.*`, `*.InvalidCastException`), process names (`csc?`) and field values: one
//! case rule and one wildcard rule everywhere.
//!
//! - Case-insensitive (`gc/start` matches `GC/Start`).
//! - `*` matches any run of characters (none too), `?` exactly one, anywhere in the pattern;
//!   every other character stands for itself (`/`, `.`, `[` are not special).
//! - The whole text must match: `GC/` does not match `GC/Start`, `GC/*` does.

use std::fmt;

/// A checked name pattern (see the module note): the text as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamePattern {
    text: String,
}

impl NamePattern {
    /// A pattern from its text; an empty one is refused (it would match only empty names:
    /// `*` matches anything).
    pub fn new(text: &str) -> Result<NamePattern, crate::ValueError> {
        if text.is_empty() {
            return Err(crate::ValueError::new(
                "an empty pattern matches nothing; use \"*\" for anything",
            ));
        }
        Ok(NamePattern {
            text: text.to_string(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when `text` matches the whole pattern.
    pub fn is_match(&self, text: &str) -> bool {
        matches(&self.text, text)
    }

    /// True when the pattern has a wildcard (`*` or `?`).
    pub fn has_wildcards(&self) -> bool {
        has_wildcards(&self.text)
    }
}

impl fmt::Display for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// True when `pattern` has a wildcard (`*` or `?`).
pub fn has_wildcards(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

/// The first character of `s` at byte `at` and its length (`at` is a boundary below the end).
fn char_at(s: &str, at: usize) -> (char, usize) {
    s.get(at..)
        .and_then(|r| r.chars().next())
        .map_or(('\0', 1), |c| (c, c.len_utf8()))
}

/// Characters equal when case is ignored.
fn same(a: char, b: char) -> bool {
    a == b
        || a.eq_ignore_ascii_case(&b)
        || (!a.is_ascii() && !b.is_ascii() && a.to_lowercase().eq(b.to_lowercase()))
}

/// True when `text` matches `pattern` (see the module note). Allocates nothing; linear
/// backtracking on the last `*`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let (mut i, mut j) = (0, 0);
    // After the last `*`: where the pattern resumes and where in the text it last tried.
    let mut star: Option<(usize, usize)> = None;
    while j < text.len() {
        let (tc, tl) = char_at(text, j);
        if i < pattern.len() {
            let (pc, pl) = char_at(pattern, i);
            if pc == '*' {
                i += pl;
                star = Some((i, j));
                continue;
            }
            if pc == '?' || same(pc, tc) {
                i += pl;
                j += tl;
                continue;
            }
        }
        match star {
            Some((si, sj)) => {
                let next = sj + char_at(text, sj).1;
                star = Some((si, next));
                i = si;
                j = next;
            }
            None => return false,
        }
    }
    pattern
        .get(i..)
        .is_some_and(|rest| rest.chars().all(|c| c == '*'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_matches() {
        for (p, t) in [
            ("gc/start", "GC/Start"),
            ("GC/*", "GC/Start"),
            ("gc/*", "GC/RestartEEEnd"),
            ("*", "anything"),
            ("*", ""),
            ("**", "x"),
            ("GC/*End", "GC/RestartEEEnd"),
            ("*/Start", "GC/Start"),
            ("System.Net.*", "System.Net.Http.HttpRequestException"),
            ("system.net.*", "System.Net.Sockets.SocketException"),
            ("*Exception", "System.InvalidOperationException"),
            ("*.InvalidCastException", "System.InvalidCastException"),
            ("System.Invalid?astException", "System.InvalidCastException"),
            ("a?c*", "abcdef"),
            ("a*b*c", "aXbYbZc"),
            ("csc?", "csc1"),
            ("web[1]", "WEB[1]"),
            ("Ünï*", "ünïcode"),
            ("?", "ü"),
            (
                "Microsoft-Windows-DotNETRuntime",
                "microsoft-windows-dotnetruntime",
            ),
        ] {
            assert!(matches(p, t), "{p} should match {t}");
        }
    }

    #[test]
    fn refused_matches() {
        for (p, t) in [
            ("GC/", "GC/Start"),
            ("GC/Start", "GC/Start2"),
            ("a?c", "abcd"),
            ("a?c", "ac"),
            ("a*b*c", "aXbYbZ"),
            ("*Cast", "System.InvalidCastException"),
            ("System.Net.*", "System.IO.IOException"),
            ("web[1]", "web1"),
            ("?", ""),
            ("x", ""),
            ("", "x"),
        ] {
            assert!(!matches(p, t), "{p} should not match {t}");
        }
    }

    #[test]
    fn checked_patterns() {
        assert!(NamePattern::new("").is_err());
        let p = NamePattern::new("GC/*").unwrap();
        assert!(p.is_match("gc/start") && p.has_wildcards());
        assert_eq!(p.to_string(), "GC/*");
        assert!(!NamePattern::new("GC/Start").unwrap().has_wildcards());
    }
}
