//! The collection layer's errors: one enum whose variants carry the path, pid or name involved
//! and the error underneath ([`std::error::Error::source`]), and a coarse [`ErrorKind`] a front
//! end maps to its hints without reading the message.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// What can go wrong while finding a target, recording it or dumping it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Creating or writing the output file failed (full disk, permissions).
    #[error("writing {}: {source}", path.display())]
    Output {
        /// The output file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Talking to the runtime failed.
    #[error("{0}")]
    Client(#[from] diagnostics_client::Error),
    /// The program to trace could not be started.
    #[error("cannot start '{}': {source}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The launched program exited before a .NET runtime connected.
    #[error("the program exited ({status}) before a .NET runtime connected: it is not a .NET (Core 3.0+) program, or DOTNET_EnableDiagnostics=0 is set")]
    NotDotnet {
        /// How it exited.
        status: ExitStatus,
    },
    /// A stop was requested before the launched program's runtime connected.
    #[error("stopped before the program's runtime connected")]
    StoppedBeforeStart,
    /// No process has this pid.
    #[error("no process with pid {pid}")]
    NoProcess {
        /// The pid asked for.
        pid: u32,
    },
    /// The process exists but has no diagnostics endpoint.
    #[error("process {pid} has no .NET diagnostics endpoint (not a .NET process, or diagnostics are disabled with DOTNET_EnableDiagnostics=0)")]
    NoEndpoint {
        /// The pid asked for.
        pid: u32,
    },
    /// No .NET process has this name.
    #[error("no .NET process named '{name}'")]
    NoMatch {
        /// The name asked for.
        name: String,
    },
    /// Several .NET processes have this name.
    #[error("{} .NET processes are named '{name}': {}", pids.len(), pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        /// The name asked for.
        name: String,
        /// The processes with that name.
        pids: Vec<u32>,
    },
    /// A dump cannot be written where it was asked for.
    #[error("cannot write the dump to {}: {why}", path.display())]
    DumpPath {
        /// The dump path.
        path: PathBuf,
        /// Why not.
        why: String,
    },
    /// The runtime could not write the dump.
    #[error("process {pid}: the dump failed: {source}")]
    Dump {
        /// The target.
        pid: u32,
        /// The runtime's answer.
        #[source]
        source: diagnostics_client::Error,
    },
    /// The runtime reported a dump, but the file is missing, unreadable or not a core file.
    #[error("the runtime reported success but {}: {why}", path.display())]
    DumpCheck {
        /// The dump path.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
        /// The OS error, when reading it failed.
        #[source]
        source: Option<io::Error>,
    },
}

/// The kind of an [`Error`], for choosing a hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The output could not be written (other than a full disk or permissions).
    Output,
    /// The disk is full.
    DiskFull,
    /// The OS refused access (another user's process or file).
    PermissionDenied,
    /// The target is gone or its endpoint cannot be reached.
    TargetGone,
    /// The target is not a .NET process, or diagnostics are disabled in it.
    NotDotnet,
    /// No process matches the pid or name.
    NoTarget,
    /// Several processes match the name.
    Ambiguous,
    /// The runtime's reply broke the protocol.
    Protocol,
    /// The runtime did not answer in time.
    Timeout,
    /// The runtime refused the command (an HRESULT).
    Refused,
    /// The program could not be started.
    Launch,
    /// The user stopped before anything happened.
    Stopped,
    /// A dump could not be written or checked.
    Dump,
    /// Not available on this platform.
    Unsupported,
}

fn io_kind(e: &io::Error, otherwise: ErrorKind) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::StorageFull => ErrorKind::DiskFull,
        io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
        _ => otherwise,
    }
}

/// The kind of a diagnostics client error.
pub(crate) fn client_kind(e: &diagnostics_client::Error) -> ErrorKind {
    use diagnostics_client::Error as C;
    match e {
        C::Connect { source, .. } => match source.kind() {
            io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
            _ => ErrorKind::TargetGone,
        },
        C::Io { source, .. } => match source.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
            io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
            _ => ErrorKind::TargetGone,
        },
        C::Protocol { .. } => ErrorKind::Protocol,
        C::Runtime { .. } => ErrorKind::Refused,
        C::Unsupported => ErrorKind::Unsupported,
        _ => ErrorKind::Protocol,
    }
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Output { source, .. } => io_kind(source, ErrorKind::Output),
            Error::Client(e) => client_kind(e),
            Error::Spawn { source, .. } => io_kind(source, ErrorKind::Launch),
            Error::NotDotnet { .. } | Error::NoEndpoint { .. } => ErrorKind::NotDotnet,
            Error::StoppedBeforeStart => ErrorKind::Stopped,
            Error::NoProcess { .. } | Error::NoMatch { .. } => ErrorKind::NoTarget,
            Error::Ambiguous { .. } => ErrorKind::Ambiguous,
            Error::DumpPath { .. } => ErrorKind::Output,
            Error::Dump { source, .. } => match client_kind(source) {
                ErrorKind::Refused => ErrorKind::Dump,
                k => k,
            },
            Error::DumpCheck { source, .. } => match source {
                Some(e) => io_kind(e, ErrorKind::Dump),
                None => ErrorKind::Dump,
            },
        }
    }

    /// An output error for `path`.
    pub(crate) fn output(path: &std::path::Path, source: io::Error) -> Error {
        Error::Output {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn kinds_and_sources() {
        let full = Error::output(
            std::path::Path::new("/x/t.nettrace"),
            io::Error::from(io::ErrorKind::StorageFull),
        );
        assert_eq!(full.kind(), ErrorKind::DiskFull);
        assert!(full.source().is_some());
        assert!(full.to_string().starts_with("writing /x/t.nettrace: "));
        let denied = Error::Client(diagnostics_client::Error::Connect {
            path: "/tmp/s".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        });
        assert_eq!(denied.kind(), ErrorKind::PermissionDenied);
        assert!(denied.source().is_some());
        let many = Error::Ambiguous {
            name: "app".into(),
            pids: vec![3, 4],
        };
        assert_eq!(many.to_string(), "2 .NET processes are named 'app': 3, 4");
        let check = Error::DumpCheck {
            path: "/d".into(),
            why: "it is cut short".into(),
            source: Some(io::Error::from(io::ErrorKind::UnexpectedEof)),
        };
        assert_eq!(check.kind(), ErrorKind::Dump);
        assert!(check.source().is_some());
    }
}
