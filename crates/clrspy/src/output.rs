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

/// True for a closed pipe (`clrspy events t | head`): not an error for the user.
pub fn is_broken_pipe(e: &CliError) -> bool {
    e.io_kind == Some(io::ErrorKind::BrokenPipe)
}

/// Result of the binary's functions.
pub type CliResult<T> = Result<T, CliError>;
