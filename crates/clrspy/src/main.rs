//! clrspy: profile and diagnose .NET applications. This binary is thin: it parses the command
//! line, runs a command, and turns errors into one clear line and an exit code.

mod cli;
mod commands;
mod input;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            if output::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("clrspy: error: {e:#}");
            for hint in e.hints() {
                eprintln!("hint: {hint}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
