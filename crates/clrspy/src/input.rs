//! Opening trace files (clrspy-analysis' `trace_file`), with the errors said for the user.

use std::io;
use std::path::Path;

pub use clrspy_analysis::trace_file::{trace_stem, FileReader as Reader, OpenError};

use crate::output::CliError;

/// An opened trace whose errors come as the user's.
pub struct OpenTrace(clrspy_analysis::trace_file::OpenTrace);

impl std::ops::Deref for OpenTrace {
    type Target = clrspy_analysis::trace_file::OpenTrace;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl OpenTrace {
    /// A reader over the trace.
    pub fn reader(&self) -> Result<Reader, CliError> {
        self.0.reader().map_err(|e| match &e {
            OpenError::Trace { .. } => self
                .0
                .raw()
                .ok()
                .and_then(|f| not_a_trace(f, &self.0.display()))
                .unwrap_or_else(|| user_error(e)),
            _ => user_error(e),
        })
    }
}

/// Opens a trace file (or a zip holding one).
pub fn open(path: &Path) -> Result<OpenTrace, CliError> {
    clrspy_analysis::trace_file::OpenTrace::open(path)
        .map(OpenTrace)
        .map_err(|e| match &e {
            OpenError::Trace { .. } => std::fs::File::open(path)
                .ok()
                .and_then(|f| not_a_trace(f, &path.display().to_string()))
                .unwrap_or_else(|| user_error(e)),
            _ => user_error(e),
        })
}

/// For a file that is not a trace, what it is instead and the command that reads it: a core
/// dump, a heap snapshot, a compressed file (a dump `clrspy dump` wrote).
fn not_a_trace(mut file: std::fs::File, shown: &str) -> Option<CliError> {
    use std::io::Read;
    let mut head = [0u8; 64];
    let n = file.read(&mut head).ok()?;
    let head = &head[..n];
    if head.starts_with(b"\x7fELF") {
        let what = format!("{shown} is a core dump, not a trace");
        let hint =
            format!("`clrspy dump analyze {shown}` reads it: threads, locks, exceptions, the heap");
        return Some(CliError::new(what).hint(hint));
    }
    if head.windows(10).any(|w| w == b"GCHeapDump") {
        let what = format!("{shown} is a heap snapshot (.gcdump), not a trace");
        let hint = format!(
            "`clrspy heap {shown}` reads it; `clrspy convert {shown} --to html` makes its page"
        );
        return Some(CliError::new(what).hint(hint));
    }
    let zstd = head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    if zstd || head.starts_with(&[0x1f, 0x8b]) {
        let how = if zstd { "zstd" } else { "gzip" };
        let what = format!("{shown} is compressed ({how}), not a trace");
        let hint = format!(
            "a dump `clrspy dump` wrote is read as it is by `clrspy dump analyze {shown}`; a compressed trace must be unpacked first"
        );
        return Some(CliError::new(what).hint(hint));
    }
    None
}

/// The error with the hint that fixes it, when there is one.
pub fn user_error(e: OpenError) -> CliError {
    let hint = match &e {
        OpenError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
            Some("check the path; traces usually end in .nettrace")
        }
        OpenError::Io { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
            Some("the file is not readable by this user: try sudo or fix its permissions")
        }
        OpenError::Unzip { .. } => {
            Some("the temporary directory may be full: set TMPDIR to a larger disk")
        }
        OpenError::Trace { source, .. }
            if matches!(source.kind, nettrace::ErrorKind::NotATrace) =>
        {
            Some("clrspy reads .nettrace and .netperf files written by EventPipe (dotnet-trace, clrspy record, DOTNET_EnableEventPipe)")
        }
        _ => None,
    };
    let err = CliError::new(e.to_string());
    match hint {
        Some(h) => err.hint(h),
        None => err,
    }
}
