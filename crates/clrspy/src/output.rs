//! Errors of the binary (one line plus hints, with an exit code) and writing to stdout.

use std::fmt;
use std::io;

/// An error for the user: a message with context, hints, and an exit code.
#[derive(Debug)]
pub struct CliError {
    message: String,
    hints: Vec<String>,
    code: u8,
    io_kind: Option<io::ErrorKind>,
}

impl CliError {
    /// An error with exit code 1.
    pub fn new(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            hints: Vec::new(),
            code: 1,
            io_kind: None,
        }
    }

    /// Adds a hint line.
    pub fn hint(mut self, h: impl Into<String>) -> CliError {
        self.hints.push(h.into());
        self
    }

    /// Sets the exit code.
    pub fn code(mut self, code: u8) -> CliError {
        self.code = code;
        self
    }

    /// A view that could not be built, its message after `prefix`, with its hint.
    pub fn view(e: clrspy_export::views::ViewError, prefix: &str) -> CliError {
        let err = CliError::new(format!("{prefix}{}", e.message));
        match e.hint {
            Some(h) => err.hint(h),
            None => err,
        }
    }

    /// The hints.
    pub fn hints(&self) -> &[String] {
        &self.hints
    }

    /// The exit code.
    pub fn exit_code(&self) -> u8 {
        self.code
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> CliError {
        let kind = e.kind();
        CliError {
            message: format!("writing output: {e}"),
            hints: Vec::new(),
            code: 1,
            io_kind: Some(kind),
        }
    }
}

impl From<clrspy_cli::Failure> for CliError {
    fn from(f: clrspy_cli::Failure) -> CliError {
        let e = CliError::new(f.message).code(f.code);
        f.hints.into_iter().fold(e, CliError::hint)
    }
}

/// True for a closed pipe (`clrspy events t | head`): not an error for the user.
pub fn is_broken_pipe(e: &CliError) -> bool {
    e.io_kind == Some(io::ErrorKind::BrokenPipe)
}

/// Result of the binary's functions.
pub type CliResult<T> = Result<T, CliError>;

/// The user's error for a collection error: its message, and the hint its kind calls for.
pub(crate) fn collect_error(e: clrspy_collect::Error) -> CliError {
    use clrspy_collect::Error as E;
    let err = CliError::new(e.to_string());
    let hint = match (&e, e.kind()) {
        (E::NoMatch { .. }, _) => "`clrspy ps` lists the .NET processes and their names",
        (E::NoEndpoint { .. }, _) => "`clrspy ps` lists the .NET processes clrspy can see",
        (E::Ambiguous { .. }, _) => "pick one with -p PID",
        (E::Dump { .. }, _) => "the runtime runs createdump as the target's user: the directory must be writable by it, and ptrace must be allowed (containers may need SYS_PTRACE)",
        (E::DumpCheck { .. }, _) => "a process in a container writes the dump inside its own file system",
        (_, clrspy_collect::ErrorKind::PermissionDenied) => {
            "run clrspy as the same user as the target process, or as root"
        }
        (_, clrspy_collect::ErrorKind::DiskFull) => "free some disk space or write the trace elsewhere with -o",
        _ => return err,
    };
    err.hint(hint)
}

/// clrspy's exit code when a program it launched ended with `status`: the program's own, or
/// success when clrspy ended it (said on stderr) or its end is unknown.
pub(crate) fn program_exit_code(
    status: Option<std::process::ExitStatus>,
    ended_by_clrspy: bool,
) -> u8 {
    match status {
        Some(s) if ended_by_clrspy => {
            eprintln!("clrspy ended the program ({s}) when the recording stopped.");
            0
        }
        Some(s) => child_exit_code(&s),
        None => 0,
    }
}

/// Exit code for a child's status: its code, or 128 + the signal that ended it.
fn child_exit_code(status: &std::process::ExitStatus) -> u8 {
    if let Some(c) = status.code() {
        return (c & 0xff) as u8;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return (128 + sig).clamp(0, 255) as u8;
        }
    }
    1
}
