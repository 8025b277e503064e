//! `clrspy bundle`'s gathering: one EventPipe session for the window (the symptom's profile
//! plus the logging and counters providers), system metrics every second beside it, then —
//! from the trace file, as offline — the reports, the app's logs and the runtime's counters;
//! heap snapshots or a dump after the window; all into a staging folder that
//! [`package`](crate::package) turns into the zip.
//!
//! OWNER: the lead.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clrspy_analysis::log_stream::LogLevel;
use clrspy_collect::trigger::Triggers;
use clrspy_collect::{Resolved, StopSignal};

use crate::manifest::{FileEntry, Manifest};
use crate::symptom::Symptom;
use crate::HandoffError;

mod derive;
mod run;
mod session;
mod side;

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
    /// otherwise [`HandoffError::NotTriggered`] and nothing is written.
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
    pub exit: Option<u8>,
}

/// The staging folder (owner-only, beside the zip, removed at the end) and the files put in
/// it, each with what it is.
pub struct Staging {
    root: PathBuf,
    files: Vec<FileEntry>,
}

impl Staging {
    /// A new folder beside `zip`.
    fn new(zip: &Path) -> Result<Staging, HandoffError> {
        let dir = zip
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let root = dir.join(format!(
            ".clrspy-bundle-{}-{}",
            std::process::id(),
            unix_ms()
        ));
        crate::package::create_private_dir(&root).map_err(|e| HandoffError::io(&root, e))?;
        Ok(Staging {
            root,
            files: Vec::new(),
        })
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `rel` (its folders made, owner-only), recorded as `what`.
    pub fn create(&mut self, rel: &str, what: &str) -> Result<PathBuf, HandoffError> {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            crate::package::create_private_dir(parent).map_err(|e| HandoffError::io(parent, e))?;
        }
        self.files.retain(|f| f.path != rel);
        self.files.push(FileEntry {
            path: rel.to_string(),
            what: what.to_string(),
            ..FileEntry::default()
        });
        Ok(path)
    }

    /// Writes `rel` (owner-only) with `body`, recorded as `what`.
    pub fn write(
        &mut self,
        rel: &str,
        what: &str,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), HandoffError> {
        let path = self.create(rel, what)?;
        let file = crate::package::write_private(&path).map_err(|e| HandoffError::io(&path, e))?;
        let mut w = BufWriter::new(file);
        body(&mut w)
            .and_then(|()| w.flush())
            .map_err(|e| HandoffError::io(&path, e))
    }

    /// Forgets `rel` (a file that was not made after all) and removes it.
    fn drop_file(&mut self, rel: &str) {
        self.files.retain(|f| f.path != rel);
        let _ = std::fs::remove_file(self.root.join(rel));
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Now, ms since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Gathers a bundle as `spec` says until the duration, a trigger, `stop` or the target's end;
/// `say` gets one line per step for the user.
pub fn gather(
    spec: BundleSpec,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<BundleOutcome, HandoffError> {
    run::gather(spec, stop, say)
}
