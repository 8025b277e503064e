//! clrspy: profile and diagnose .NET applications. This binary is thin: it parses the command
//! line, runs a command, and turns errors into one clear line and an exit code.

mod build_info;
mod cli;
mod commands;
mod input;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // `dump analyze` runs the runtime's data access library in a child: this binary, run so.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some(coredump::worker::WORKER_COMMAND) {
        let code = coredump::worker::worker_main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
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
