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
    let n = squash(name);
    // The shell's working directories, not passwords.
    if matches!(n.as_str(), "pwd" | "oldpwd") {
        return false;
    }
    !n.is_empty() && (SECRET_WORDS.iter().any(|w| n.contains(w)) || n.ends_with("key"))
}

/// One secret found: what kind it was.
pub type Found = &'static str;

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
    let mut found = Vec::new();
    let mut out = mask_url_credentials(text, &mut found);
    out = mask_key_values(&out, &mut found);
    out = mask_after_words(&out, &mut found);
    out = mask_tokens(&out, &mut found);
    (out, found)
}

/// `scheme://user:pass@host` → `scheme://user:[redacted]@host`.
fn mask_url_credentials(text: &str, found: &mut Vec<Found>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '"' | '\'' | '?' | '#'))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        let colon = authority.find(':');
        match authority.rfind('@') {
            Some(a) if colon.is_some_and(|c| c < a && &authority[c + 1..a] != MASK) => {
                let colon = colon.unwrap_or(0);
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[a..]);
                found.push("url credentials");
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// `Password=x;` `AccountKey=y` (a connection string's pairs, an option's `key=value`): the
/// value of every secret key is masked up to the next `;`, `&`, `,` or white space.
fn mask_key_values(text: &str, found: &mut Vec<Found>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let Some(eq) = text[i..].find('=').map(|e| e + i) else {
            out.push_str(&text[i..]);
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
        out.push_str(&text[i..=eq]);
        if is_secret_name(key) && value_end > eq + 1 && &text[eq + 1..value_end] != MASK {
            out.push_str(MASK);
            found.push("secret value");
        } else {
            out.push_str(&text[eq + 1..value_end]);
        }
        i = value_end;
        if i < bytes.len() && bytes[i] == b'=' {
            out.push('=');
            i += 1;
        }
    }
    out
}

/// `--password X`, `-p:Token X`, `Bearer X`, `Basic X`: the word after a secret option or an
/// authorization scheme is masked.
fn mask_after_words(text: &str, found: &mut Vec<Found>) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut mask_next: Option<Found> = None;
    for w in words {
        if let Some(kind) = mask_next.take() {
            if !w.is_empty() && w != MASK {
                out.push(MASK.to_string());
                found.push(kind);
                continue;
            }
        }
        let option = w.starts_with('-') && !w.contains('=');
        if option && is_secret_name(w.trim_start_matches('-')) {
            mask_next = Some("secret option");
        } else if w.eq_ignore_ascii_case("bearer") || w.eq_ignore_ascii_case("basic") {
            mask_next = Some("authorization");
        }
        out.push(w.to_string());
    }
    out.join(" ")
}

/// JSON Web Tokens (`eyJ….eyJ….…`) and AWS access key ids (`AKIA` + 16) anywhere.
fn mask_tokens(text: &str, found: &mut Vec<Found>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
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
        out.push_str(&rest[..at]);
        if is {
            out.push_str(MASK);
            found.push(kind);
        } else {
            out.push_str(token);
        }
        rest = &rest[end..];
        if end == at {
            // Never stuck: move past one character.
            let step = rest.chars().next().map_or(0, char::len_utf8);
            out.push_str(&rest[..step]);
            rest = &rest[step..];
            if step == 0 {
                break;
            }
        }
    }
    out.push_str(rest);
    out
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
}
