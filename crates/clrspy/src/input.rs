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
        self.0.reader().map_err(user_error)
    }
}

/// Opens a trace file (or a zip holding one).
pub fn open(path: &Path) -> Result<OpenTrace, CliError> {
    clrspy_analysis::trace_file::OpenTrace::open(path)
        .map(OpenTrace)
        .map_err(user_error)
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
