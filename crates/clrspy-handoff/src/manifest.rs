//! The bundle's manifest: `manifest.json` (data) and `MANIFEST.md` (the same for people: the
//! support checklist filled in, every file with its size and SHA-256, what was redacted where,
//! and the privacy notice).
//!
//! OWNER: helper PACKAGE writes `MANIFEST.md` here; the types are shared and stay as they are
//! (add fields, do not rename).

use serde::{Deserialize, Serialize};

use crate::facts::{SystemFacts, TargetFacts};

/// Everything `manifest.json` holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest's format version (1).
    pub format: u32,
    /// The process the bundle is about.
    pub target: TargetFacts,
    /// The machine it ran on.
    pub system: SystemFacts,
    /// When the window began (UTC, RFC 3339).
    pub started_utc: String,
    /// When the window ended (UTC, RFC 3339).
    pub ended_utc: String,
    /// clrspy's own command line (redacted).
    pub command: String,
    /// clrspy's version.
    pub clrspy_version: String,
    /// The symptom the bundle was gathered for, if one was named.
    pub symptom: Option<String>,
    /// The trace profile or providers recorded.
    pub profile: String,
    /// Every file in the bundle but the manifest itself.
    pub files: Vec<FileEntry>,
    /// What was redacted, and where (never the values).
    pub redacted: Vec<Redaction>,
    /// Things the reader should know: what is missing and why, what was taken after the window.
    pub notes: Vec<String>,
}

/// One file of the bundle.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileEntry {
    /// Its path in the zip (`/`-separated).
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// SHA-256 of its bytes, lower-case hex.
    pub sha256: String,
    /// What it is, for people ("the trace", "CPU report (text)").
    pub what: String,
}

/// One redaction: where it was and what kind of secret — never the value.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Redaction {
    /// Where: `environment: API_KEY`, `command line (argument 3)`, `trace (log message)`,
    /// `logs/app.log line 12`.
    #[serde(rename = "where")]
    pub where_: String,
    /// What kind: `secret name`, `connection string password`, `bearer token`, ...
    pub what: String,
}
