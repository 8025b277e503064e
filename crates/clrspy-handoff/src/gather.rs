//! `clrspy bundle`'s gathering: one EventPipe session for the window (the symptom's profile
//! plus the logging and counters providers), system metrics every second beside it, then —
//! from the trace file, as offline — the reports, the app's logs and the runtime's counters;
//! heap snapshots or a dump after the window; all into a staging folder that
//! [`package`](crate::package) turns into the zip.
//!
//! OWNER: the lead.

use std::path::PathBuf;
use std::time::Duration;

use clrspy_analysis::log_stream::LogLevel;
use clrspy_collect::trigger::Triggers;
use clrspy_collect::{Resolved, StopSignal};

use crate::manifest::Manifest;
use crate::symptom::Symptom;
use crate::HandoffError;

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
    pub exit: Option<u8>,
}

/// Gathers a bundle as `spec` says until the duration, a trigger, `stop` or the target's end;
/// `say` gets one line per step for the user.
pub fn gather(
    spec: &BundleSpec,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<BundleOutcome, HandoffError> {
    let _ = (spec, stop, say);
    Err(HandoffError::Other("bundle: not written yet".into()))
}
