//! The commands: each takes its parsed options and writes to stdout.

mod env;
mod events;
mod info;
mod ps;
mod record;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::output::CliResult;

/// Runs the command line.
pub fn run(cli: Cli) -> CliResult<ExitCode> {
    match cli.command {
        Command::Info(a) => info::run(&a),
        Command::Events(a) => events::run(&a),
        Command::Ps(a) => ps::run(&a),
        Command::Record(a) => record::run(&a),
        Command::Env(a) => env::run(&a),
    }
}
