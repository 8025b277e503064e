//! The commands: each takes its parsed options and writes to stdout.

mod capture;
mod convert;
mod diff;
mod dump;
mod dump_analyze;
mod env;
mod events;
mod hangs_now;
mod heap;
mod heap_input;
mod heap_snap;
mod heap_watch;
mod info;
mod manual;
mod profile;
mod ps;
mod record;
mod record_dumps;
mod record_heap;
mod repair;
mod report;
mod rules;
mod tree;
mod watch;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::output::CliResult;

/// Runs the command line.
pub fn run(cli: Cli) -> CliResult<ExitCode> {
    match cli.command {
        Command::Info(a) => info::run(&a),
        Command::Events(a) => events::run(&a),
        Command::Ps(a) => ps::run(&a),
        Command::Record(a) => {
            if !a.list_profiles {
                a.target.require("record")?;
            }
            record::run(&a)
        }
        Command::Env(a) => env::run(&a),
        Command::Dump(a) => dump::run(&a),
        Command::Report(a) => report::run(&a),
        // A heap snapshot converts through the heap views.
        Command::Convert(a) if heap::is_snapshot(&a.input.trace) => heap::convert_snapshot(&a),
        Command::Convert(a) => convert::run(&a),
        Command::Repair(a) => repair::run(&a),
        Command::Rules(a) => rules::run(&a),
        Command::Watch(a) => watch::run(&a),
        Command::Gcdump(a) => heap::run_gcdump(&a),
        Command::Heap(a) => heap::run_heap(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Counters(a) => Ok(clrspy_views::counters::run(&a)?),
        Command::Stack(a) => Ok(clrspy_views::stack::run(&a)?),
        Command::Logs(a) => Ok(clrspy_views::logs::run(&a)?),
        Command::Metrics(a) => Ok(clrspy_views::metrics::run(&a)?),
        Command::Bundle(a) => Ok(clrspy_handoff::cmd::run(&a)?),
        Command::Agent(a) => Ok(clrspy_agent::run(&a)?),
        Command::Doctor(a) => Ok(clrspy_handoff::doctor::run(&a)?),
        Command::Profile(a) => {
            a.target.require("profile")?;
            profile::run(&a)
        }
        Command::Top(a) => Ok(clrspy_views::top::run(&a)?),
        Command::Completions(a) => manual::completions(&a),
        Command::Man(a) => manual::man(&a),
    }
}
