//! clrspy's hand-off: what a support engineer needs, gathered in one zip, and advice on what
//! to gather for a symptom.
//!
//! - [`gather`]: `clrspy bundle` — one session (the symptom's profile plus the logging and
//!   counters providers) for the window, system metrics every second beside it, then the
//!   reports, logs and counters derived from the trace file as offline, heap snapshots or a dump
//!   after the window;
//! - [`scrub`]: redaction of what goes in (environment, command lines, log files, the trace's
//!   own strings), remembering where and what kind — never the values;
//! - `facts`: the machine's and the target's facts (OS, kernel, distro, container, runtime,
//!   entry assembly and its informational version, privileges, free disk);
//! - `manifest`, `index`, `package`, `verify`: `MANIFEST.md` and `manifest.json` with
//!   every file's size and SHA-256, the offline `index.html`, the owner-only zip, and
//!   `clrspy bundle verify`;
//! - [`doctor`]: `clrspy doctor` — the environment, the plan for a symptom, and carrying it out;
//! - `symptom`: the symptoms both know.
//!
//! The binary parses the flags (the `Args` types of [`cmd`]) and calls their `run`.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod cmd;
pub mod doctor;
mod facts;
pub mod gather;
mod index;
mod manifest;
mod package;
pub mod scrub;
mod symptom;
mod verify;

pub use manifest::{FileEntry, Manifest, Redaction};
pub use symptom::Symptom;

/// Why a hand-off step failed: the message names the file or process and what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The window ended before any trigger fired (the bundle wanted one): why it ended.
    #[error("no trigger fired: {0}")]
    NotTriggered(String),
    /// Anything else, said in one line.
    #[error("{0}")]
    Other(String),
}

impl HandoffError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> HandoffError {
        HandoffError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
