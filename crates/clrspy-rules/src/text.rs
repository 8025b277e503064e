//! The rules file as text: its two syntaxes, places in it (1-based line and column, from byte
//! offsets and back), and a mistake at its place ([`Diagnostic`]) from what serde_json or toml
//! said.

use std::path::Path;

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

/// A diagnostic at byte `offset` of `text`.
pub(crate) fn at_offset(text: &str, offset: usize, message: String) -> Diagnostic {
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
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
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
pub(crate) fn json_error(text: &str, e: &serde_json::Error) -> Diagnostic {
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
    let value_end = text
        .get(end..)
        .and_then(|rest| rest.chars().next())
        .map_or(text.len(), |c| end + c.len_utf8());
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
pub(crate) fn toml_error(text: &str, e: &toml::de::Error) -> Diagnostic {
    let at = e.span().map_or(0, |s| s.start);
    at_offset(text, at, e.message().trim().to_string())
}
