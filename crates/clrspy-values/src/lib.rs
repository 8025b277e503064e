//! The grammars of clrspy's values, one per kind, shared by every command-line flag and every
//! rules-file field so that one value means one thing everywhere. Pure string logic: this crate
//! depends on nothing of clrspy's, and every layer may use it.
//!
//! - [`duration`]: `250ms`, `5s`, `1.5m`, `2h`; a bare number is seconds; at most 30 days.
//! - [`size`]: `512KB`, `64MB`, `1.5GB` (powers of 1024); a bare number is the caller's unit.
//! - [`pattern`]: name patterns (`GC/*`, `System.Net.*`, `csc?`): case-insensitive, `*` any
//!   run, `?` one character, anywhere in the pattern.
//! - [`human_bytes`]: a byte count for people (`1.5 KB`, `4.0 MB`, `1.25 GB`).
//! - [`time`]: UTC times, the calendar and their ISO 8601 text (`2026-11-27T11:46:40.120Z`).
//!
//! Errors are [`ValueError`]s that name the bad value and say what a good one looks like.

#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod duration;
pub mod pattern;
pub mod redact;
pub mod size;
pub mod time;

pub use duration::{parse_duration, parse_positive_duration, MAX_DURATION};
pub use pattern::{matches as pattern_matches, NamePattern};
pub use size::{human_bytes, parse_size, SizeUnit, MAX_SIZE};

/// A value that does not follow its grammar: the value as written and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ValueError {
    message: String,
}

impl ValueError {
    /// An error with this message (it names the value).
    pub(crate) fn new(message: impl Into<String>) -> ValueError {
        ValueError {
            message: message.into(),
        }
    }
}

/// Splits `"1.5 GB"` into its number (digits and at most one dot, at least one digit) and
/// the unit after it (trimmed); None when the number part is malformed.
pub(crate) fn split_number(s: &str) -> Option<(f64, &str)> {
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    if !num.bytes().any(|b| b.is_ascii_digit()) || num.matches('.').count() > 1 {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit.trim()))
}
