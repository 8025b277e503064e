//! Redaction: pure functions that find secrets in what clrspy hands over — environment
//! variables, command lines, log messages — and replace them with [`MASK`], saying what kind
//! of secret each was (never its value), so a bundle's manifest and the agent's process
//! routes can list what was taken out and where.
//!
//! A name that looks like a secret's (`…KEY`, `…SECRET…`, `…TOKEN…`, `…PASSWORD…`,
//! `…CONNECTIONSTRING…`, …) has its whole value masked; in any text, the values of secret
//! keys in `key=value` lists (connection strings), a URL's credentials (`user:pass@`), bearer and
//! basic authorizations, JSON Web Tokens, AWS access key ids, and the values of secret
//! command-line options (`--password X`, `--token=X`) are masked where they stand.

use std::ops::Range;

/// What replaces a secret.
pub const MASK: &str = "[redacted]";

/// Words that make a name a secret's name (compared without case, `_`, `-` or `.`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "accountkey",
    "privatekey",
    "sharedaccesskey",
    "clientsecret",
    "connectionstring",
    "connstr",
    "credential",
    "signature",
    "sastoken",
    "authorization",
];

/// The name, lower-cased, without separators.
fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ':' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// True when `name` (an environment variable, a configuration key, an option) names a secret:
/// it holds one of the secret words, or ends in `KEY` (`API_KEY`, `STRIPE_KEY`), but not a
/// name that only mentions keys in passing (`KEYBOARD_LAYOUT`).
pub fn is_secret_name(name: &str) -> bool {
    // An assembly's public key and its token are published with it, not secrets (and every
    // assembly-qualified name in a trace holds `PublicKeyToken=`).
    let n = squash(name)
        .replace("publickeytoken", "")
        .replace("publickey", "");
    // The shell's working directories, not passwords.
    if matches!(n.as_str(), "pwd" | "oldpwd") {
        return false;
    }
    !n.is_empty() && (SECRET_WORDS.iter().any(|w| n.contains(w)) || n.ends_with("key"))
}

/// One secret found: what kind it was.
pub type Found = &'static str;

/// Where a secret is in a text (a byte range on character boundaries) and what kind it is.
pub type Span = (Range<usize>, Found);

/// An environment variable (or any name and value): the value to show, and what was masked.
/// A secret's name masks its whole value; otherwise the value is searched as text.
pub fn redact_pair(name: &str, value: &str) -> (String, Vec<Found>) {
    if is_secret_name(name) && !value.is_empty() {
        return (MASK.to_string(), vec!["secret name"]);
    }
    redact_text(value)
}

/// Masks every secret in free text (a command line, a log message, a connection string); the
/// text back and what was masked, in order.
pub fn redact_text(text: &str) -> (String, Vec<Found>) {
    let spans = secret_spans(text);
    let found = spans.iter().map(|(_, kind)| *kind).collect();
    (apply_mask(text, &spans), found)
}

/// Every secret in `text`: its byte range (on character boundaries) and what kind it was, in
/// order, never overlapping (a secret inside another — a connection string's password after
/// `--password` — is taken by the wider one). [`redact_text`] replaces each with [`MASK`];
/// a trace's scrubber overwrites them in place.
pub fn secret_spans(text: &str) -> Vec<Span> {
    let mut spans = Vec::new();
    url_credential_spans(text, &mut spans);
    key_value_spans(text, &mut spans);
    after_word_spans(text, &mut spans);
    token_spans(text, &mut spans);
    merge_spans(spans)
}

/// Sorted by start, overlapping spans joined; a joined span keeps the kind of its widest part.
pub fn merge_spans(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by(|a, b| a.0.start.cmp(&b.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for (range, kind) in spans {
        match out.last_mut() {
            Some((last, last_kind)) if range.start < last.end => {
                if range.len() > last.len() {
                    *last_kind = kind;
                }
                last.end = last.end.max(range.end);
            }
            _ => out.push((range, kind)),
        }
    }
    out
}

/// `text` with each of `spans` (sorted, not overlapping, on character boundaries) replaced by
/// [`MASK`].
pub fn apply_mask(text: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, _) in spans {
        if range.start < at || range.end > text.len() {
            continue;
        }
        out.push_str(text.get(at..range.start).unwrap_or_default());
        out.push_str(MASK);
        at = range.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

/// `scheme://user:pass@host`: the password (`pass`).
fn url_credential_spans(text: &str, spans: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(at) = text[from..].find("://") {
        let start = from + at + 3;
        let tail = &text[start..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '"' | '\'' | '?' | '#'))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        if let (Some(c), Some(a)) = (authority.find(':'), authority.rfind('@')) {
            if c < a && &authority[c + 1..a] != MASK {
                spans.push((start + c + 1..start + a, "url credentials"));
            }
        }
        from = start + end;
    }
}

/// `Password=x;` `AccountKey=y` (a connection string's pairs, an option's `key=value`): the
/// value of every secret key, up to the next `;`, `&`, `,`, quote or white space.
fn key_value_spans(text: &str, spans: &mut Vec<Span>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let Some(eq) = text[i..].find('=').map(|e| e + i) else {
            break;
        };
        // The key: the word just before `=`.
        let key_start = text[..eq]
            .char_indices()
            .rev()
            .find(|&(_, c)| c.is_whitespace() || matches!(c, ';' | '&' | ',' | '?' | '"' | '\''))
            .map_or(0, |(k, c)| k + c.len_utf8())
            .max(i);
        let key = text[key_start..eq].trim_start_matches('-');
        let value_end = text[eq + 1..]
            .find(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | ',' | '"' | '\''))
            .map_or(text.len(), |e| e + eq + 1);
        if is_secret_name(key) && value_end > eq + 1 && &text[eq + 1..value_end] != MASK {
            spans.push((eq + 1..value_end, "secret value"));
        }
        i = value_end;
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
        }
    }
}

/// `--password X`, `-p:Token X`, `Bearer X`, `Basic X`: the word after a secret option or an
/// authorization scheme.
fn after_word_spans(text: &str, spans: &mut Vec<Span>) {
    let mut mask_next: Option<Found> = None;
    let mut start = 0;
    for w in text.split(' ') {
        let range = start..start + w.len();
        start = range.end + 1;
        if let Some(kind) = mask_next.take() {
            if !w.is_empty() && w != MASK {
                spans.push((range, kind));
                continue;
            }
        }
        let option = w.starts_with('-') && !w.contains('=');
        if option && is_secret_name(w.trim_start_matches('-')) {
            mask_next = Some("secret option");
        } else if w.eq_ignore_ascii_case("bearer") || w.eq_ignore_ascii_case("basic") {
            mask_next = Some("authorization");
        }
    }
}

/// JSON Web Tokens (`eyJ….eyJ….…`) and AWS access key ids (`AKIA` + 16) anywhere.
fn token_spans(text: &str, spans: &mut Vec<Span>) {
    let mut from = 0;
    loop {
        let rest = &text[from..];
        let jwt = rest.find("eyJ");
        let aws = rest.find("AKIA");
        let (at, kind) = match (jwt, aws) {
            (Some(j), Some(a)) if a < j => (a, "aws key"),
            (Some(j), _) => (j, "jwt"),
            (None, Some(a)) => (a, "aws key"),
            (None, None) => break,
        };
        let end = rest[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .map_or(rest.len(), |e| e + at);
        let token = &rest[at..end];
        let is = match kind {
            "jwt" => token.split('.').filter(|p| !p.is_empty()).count() >= 3 && token.len() > 30,
            _ => {
                token.len() == 20
                    && token[4..]
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            }
        };
        if is {
            spans.push((from + at..from + end, kind));
        }
        // `end > at` always (the token starts with ASCII letters): never stuck.
        from += end.max(at + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "DB_PASSWORD",
            "ConnectionStrings__Default",
            "STRIPE_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "Azure.Storage.AccountKey",
            "client-secret",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "KEYBOARD_LAYOUT",
            "DOTNET_gcServer",
            "ASPNETCORE_URLS",
            "PublicKeyToken",
            "PublicKey",
            "",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn pairs_mask_by_name_else_by_value() {
        assert_eq!(
            redact_pair("DB_PASSWORD", "hunter2"),
            (MASK.to_string(), vec!["secret name"])
        );
        let (v, f) = redact_pair("SQL", "Server=db;User Id=app;Password=hunter2;Encrypt=true");
        assert_eq!(v, "Server=db;User Id=app;Password=[redacted];Encrypt=true");
        assert_eq!(f, ["secret value"]);
        assert_eq!(
            redact_pair("PATH", "/usr/bin:/bin"),
            ("/usr/bin:/bin".into(), vec![])
        );
    }

    #[test]
    fn text_masks_every_kind_where_it_stands() {
        let cases = [
            (
                "GET https://alice:s3cr3t@api.example.com/v1?x=1",
                "GET https://alice:[redacted]@api.example.com/v1?x=1",
            ),
            (
                "dotnet app.dll --password hunter2 --port 80",
                "dotnet app.dll --password [redacted] --port 80",
            ),
            ("dotnet app.dll --api-key=abc123 -v", "dotnet app.dll --api-key=[redacted] -v"),
            ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer [redacted]"),
            (
                "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl end",
                "token [redacted] end",
            ),
            ("key AKIAIOSFODNN7EXAMPLE used", "key [redacted] used"),
            (
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFy==;EndpointSuffix=core.windows.net",
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[redacted];EndpointSuffix=core.windows.net",
            ),
        ];
        for (input, want) in cases {
            let (got, found) = redact_text(input);
            assert_eq!(got, want, "{input}");
            assert!(!found.is_empty(), "{input}");
        }
        // Nothing to take out: the text as it was, nothing found.
        let assembly =
            "System.Linq, Version=10.0.0.0, Culture=neutral, PublicKeyToken=b03f5f7f11d50a3a";
        assert_eq!(redact_text(assembly), (assembly.to_string(), vec![]));
        let plain = "Request finished HTTP/1.1 GET http://localhost:5000/items?id=3 - 200 12ms é";
        assert_eq!(redact_text(plain), (plain.to_string(), vec![]));
        assert_eq!(redact_text(""), (String::new(), vec![]));
    }

    #[test]
    fn any_text_is_safe() {
        // Wide white space and other multi-byte characters beside every kind of secret.
        let pieces = [
            "\u{3000}", "é", "🦀", "=", ";", "://", "@", ":", "eyJ", "AKIA", "--token", " ",
            "Password", "Bearer", "x",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let text = format!("{a}{b}{c}{a}=v{c}");
                    let (out, _) = redact_text(&text);
                    assert!(!out.is_empty());
                }
            }
        }
        let (out, found) = redact_text("a\u{3000}Password=hunter2\u{3000}b");
        assert_eq!(out, "a\u{3000}Password=[redacted]\u{3000}b");
        assert_eq!(found, ["secret value"]);
    }

    #[test]
    fn masking_twice_changes_nothing_more() {
        let (once, _) = redact_text("Password=x;Token=y https://u:p@h");
        let (twice, found) = redact_text(&once);
        assert_eq!(once, twice);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn spans_name_the_secret_bytes_and_never_overlap() {
        let text = "run --password Password=hunter2;Timeout=3 https://bob:pa55word@db/x AKIAIOSFODNN7EXAMPLE";
        let spans = secret_spans(text);
        let got: Vec<(&str, Found)> = spans.iter().map(|(r, k)| (&text[r.clone()], *k)).collect();
        assert_eq!(
            got,
            [
                ("Password=hunter2;Timeout=3", "secret option"),
                ("pa55word", "url credentials"),
                ("AKIAIOSFODNN7EXAMPLE", "aws key"),
            ]
        );
        assert_eq!(
            redact_text(text).0,
            "run --password [redacted] https://bob:[redacted]@db/x [redacted]"
        );
        assert!(secret_spans("nothing here = at all").is_empty());
    }

    #[test]
    fn merging_keeps_the_widest_kind() {
        let merged = merge_spans(vec![(4..6, "b"), (0..3, "a"), (2..10, "c"), (12..13, "d")]);
        assert_eq!(merged, [(0..10, "c"), (12..13, "d")]);
        assert_eq!(
            apply_mask("0123456789abcdef", &merged),
            "[redacted]ab[redacted]def"
        );
    }
}
