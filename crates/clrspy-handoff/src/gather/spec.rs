//! What `clrspy bundle` is asked to gather, and what it left.

use std::path::PathBuf;
use std::time::Duration;

use clrspy_analysis::log_stream::LogLevel;
use clrspy_collect::trigger::Triggers;
use clrspy_collect::Resolved;

use crate::manifest::Manifest;
use crate::symptom::Symptom;

/// What to gather.
pub struct BundleSpec {
    /// The process: attach, or a program to start.
    pub target: Resolved,
    /// The window's length (with a ring: the most it waits for a trigger).
    pub duration: Duration,
    /// The zip to write.
    pub output: PathBuf,
    /// The symptom (chooses the profile and what is taken beside the trace).
    pub symptom: Option<Symptom>,
    /// A profile instead of the symptom's.
    pub profile: Option<String>,
    /// More providers (`Name:Keywords:Level[:Args]`, comma-separated).
    pub providers: Option<String>,
    /// Keep only this many bytes of the newest stream.
    pub ring: Option<u64>,
    /// Stop triggers (the window ends a little after one fires).
    pub triggers: Option<Triggers>,
    /// Keep the bundle only when a trigger fired (a `watch` rule waiting for the slow moment):
    /// otherwise [`HandoffError::NotTriggered`](crate::HandoffError::NotTriggered) and nothing
    /// is written.
    pub require_trigger: bool,
    /// Take a heap snapshot after the window.
    pub with_heap: bool,
    /// Take a dump after the window.
    pub with_dump: bool,
    /// The lowest log level kept.
    pub log_level: LogLevel,
    /// Levels by category (`Microsoft.AspNetCore:Warning;MyApp:Debug`).
    pub log_filter: Option<String>,
    /// Log files to add (glob patterns).
    pub log_files: Vec<String>,
    /// Redact secrets (the default).
    pub redact: bool,
    /// clrspy's own command line, for the manifest (redacted there).
    pub command_line: Vec<String>,
}

/// What a bundle run left.
pub struct BundleOutcome {
    /// The zip.
    pub zip: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// A launched program's exit code, when it ended in the window.
    pub(crate) exit: Option<u8>,
}
