//! The hold mode where Unix sockets are missing: the server cannot start (the hook talks to
//! clrspy over a Unix socket).

use std::ffi::OsString;
use std::path::Path;

use crate::dumper::{DumpOutcome, DumpPlan, OnDump};
use crate::{Error, Result};

/// Serves the hook's hold requests (Unix only).
#[derive(Debug)]
pub(crate) struct HoldServer(());

impl HoldServer {
    /// Fails: the hold mode needs Unix sockets.
    pub(crate) fn start(plan: DumpPlan, _on_dump: OnDump) -> Result<HoldServer> {
        Err(Error::Output {
            path: plan.dir,
            source: std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the hold mode needs Unix sockets",
            ),
        })
    }

    /// Fails: the hold mode needs Unix sockets.
    pub(crate) fn start_gated(
        plan: DumpPlan,
        _gate: Option<std::sync::Arc<dyn crate::DumpGate>>,
        on_dump: OnDump,
    ) -> Result<HoldServer> {
        HoldServer::start(plan, on_dump)
    }

    /// No environment.
    pub(crate) fn env(
        &self,
        _hook: &Path,
        _patterns: &[String],
        _max: u32,
    ) -> Vec<(OsString, OsString)> {
        Vec::new()
    }

    /// Nothing was dumped.
    pub(crate) fn finish(self) -> Vec<DumpOutcome> {
        Vec::new()
    }
}
