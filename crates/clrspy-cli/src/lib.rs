//! What every clrspy command shares, whichever product runs it (the live views, the hand-off,
//! the agent, the binary): the error a command fails with ([`Failure`]: one line, hints and
//! the exit code), the flags that name its process ([`TargetArgs`]: `-p`, `-n` or
//! `-- COMMAND`; [`ProcessArgs`]: `-p` or `-n`), and Ctrl+C ([`stop_signal`]).
#![deny(missing_docs)]
#![warn(unreachable_pub)]

use std::ffi::OsString;

use clrspy_collect::{Resolved, StopSignal};

/// Why a view failed: one line for the user, hints, and clrspy's exit code (2 for a wrong
/// command line, 1 otherwise).
#[derive(Debug)]
pub struct Failure {
    /// The message.
    pub message: String,
    /// Hint lines printed after it.
    pub hints: Vec<String>,
    /// The exit code.
    pub code: u8,
}

impl Failure {
    /// A failure with exit code 1.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            hints: Vec::new(),
            code: 1,
        }
    }

    /// A wrong command line (exit code 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            ..Failure::new(message)
        }
    }

    /// Adds a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hints.push(hint.into());
        self
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::new(format!("writing output: {e}"))
    }
}

impl From<clrspy_live::SessionError> for Failure {
    fn from(e: clrspy_live::SessionError) -> Failure {
        Failure::new(e.to_string())
    }
}

impl From<clrspy_collect::Error> for Failure {
    fn from(e: clrspy_collect::Error) -> Failure {
        let hint = match e.kind() {
            clrspy_collect::ErrorKind::PermissionDenied => {
                Some("run clrspy as the same user as the target process, or as root")
            }
            _ => None,
        };
        let f = Failure::new(e.to_string());
        match hint {
            Some(h) => f.hint(h),
            None => f,
        }
    }
}

/// A running process, for the commands that only attach: `-p PID` or `-n NAME`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ProcessArgs {
    /// The process, by id.
    #[arg(
        short = 'p',
        long = "process-id",
        visible_alias = "pid",
        value_name = "PID",
        conflicts_with = "name"
    )]
    pub process_id: Option<u32>,
    /// The process, by name (entry assembly or executable).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
}

impl ProcessArgs {
    /// The process's endpoint and its label for messages; `verb` names the command in the
    /// error when no process was given.
    pub fn resolve(&self, verb: &str) -> Result<(diagnostics_client::Endpoint, String), Failure> {
        let usage = || Failure::usage(format!("{verb} needs a process: -p PID or -n NAME"));
        if self.process_id.is_none() && self.name.is_none() {
            return Err(usage());
        }
        let target = TargetArgs {
            process_id: self.process_id,
            name: self.name.clone(),
            command: Vec::new(),
        };
        match target.resolve(verb)? {
            Resolved::Attach { endpoint, label } => Ok((endpoint, label)),
            Resolved::Launch(_) => Err(usage()),
        }
    }
}

/// The process a command traces or watches: `-p PID`, `-n NAME`, or a program started for it
/// after `--` (traced from its first instruction). Shared by every command that takes one.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TargetArgs {
    /// The process, by id.
    #[arg(short = 'p', long = "process-id", visible_alias = "pid", value_name = "PID", conflicts_with_all = ["name", "command"])]
    pub process_id: Option<u32>,
    /// The process, by name (entry assembly or executable).
    #[arg(short = 'n', long, value_name = "NAME", conflicts_with = "command")]
    pub name: Option<String>,
    /// The program to start and trace from its first instruction, after `--`; it keeps the
    /// terminal, and clrspy exits with its exit code.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl TargetArgs {
    /// Checks that the command `verb` was told which process.
    pub fn require(&self, verb: &str) -> Result<(), Failure> {
        if self.process_id.is_some() || self.name.is_some() || !self.command.is_empty() {
            return Ok(());
        }
        Err(Failure::usage(format!(
            "which process? give -p PID, -n NAME, or -- COMMAND [ARGS] to start one, e.g. `clrspy {verb} -- dotnet app.dll`"
        ))
        .hint("`clrspy ps` lists the .NET processes running now"))
    }

    /// The endpoint to attach to, or the command line to launch; `verb` names the command in
    /// the error when no target was given.
    pub fn resolve(&self, verb: &str) -> Result<Resolved, Failure> {
        self.require(verb)?;
        clrspy_collect::Target::from_args(self.process_id, self.name.as_deref(), &self.command)
            .resolve()
            .map_err(|e| {
                let hint = matches!(
                    e,
                    clrspy_collect::Error::NoMatch { .. }
                        | clrspy_collect::Error::NoEndpoint { .. }
                );
                let f = Failure::from(e);
                if hint {
                    f.hint("`clrspy ps` lists the .NET processes clrspy can see")
                } else {
                    f
                }
            })
    }
}

/// The process-wide stop signal of the commands that run until stopped: Ctrl+C (and SIGTERM,
/// SIGHUP) counted as stop requests, the handler installed on the first call. One handler per
/// process, whichever command asks for it first.
pub fn stop_signal() -> &'static StopSignal {
    static STOP: StopSignal = StopSignal::new();
    static WIRED: std::sync::Once = std::sync::Once::new();
    WIRED.call_once(|| {
        let _ = ctrlc::set_handler(|| STOP.request());
    });
    &STOP
}

/// True once [`stop_signal`] had a request (Ctrl+C was pressed, or SIGTERM came).
pub fn interrupted() -> bool {
    stop_signal().count() > 0
}
