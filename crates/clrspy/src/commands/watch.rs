//! `clrspy watch`: the rules loaded and checked before anything runs, and a short line per
//! decision on stdout. The watching, and its signals (stop, reload), are clrspy-watch's.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clrspy_rules::{LoadError, RuleSet};
use clrspy_watch::WatchOptions;

use crate::cli::WatchArgs;
use crate::output::{CliError, CliResult};

/// Runs `clrspy watch`.
pub fn run(args: &WatchArgs) -> CliResult<ExitCode> {
    let rules = RuleSet::load(&args.rules).map_err(|e| match e {
        LoadError::Invalid { path, errors } => {
            super::rules::say_mistakes(&path, &errors);
            CliError::new(format!(
                "{}: {} mistake(s); nothing was started",
                path.display(),
                errors.len()
            ))
            .hint(
                "`clrspy rules check FILE` checks a rules file; `clrspy rules example` prints one",
            )
            .code(2)
        }
        e => CliError::new(e.to_string()).code(2),
    })?;
    let control = clrspy_watch::signal_control();
    let opts = WatchOptions {
        rules_path: args.rules.clone(),
        out: args.out.clone(),
        listen: args.listen.clone(),
        poll: Duration::from_millis(args.poll_ms),
    };
    let quiet = args.quiet;
    let say = Box::new(move |d: &clrspy_rules::Decision| {
        if quiet && d.event == clrspy_rules::DecisionKind::Seen {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", d.human());
        let _ = out.flush();
    });
    clrspy_watch::watch(rules, &opts, control, say).map_err(|e| {
        let hint = match &e {
            clrspy_watch::WatchError::Listen { .. } => {
                "the socket path must be under 104 bytes, in a writable folder"
            }
            _ => "give a writable folder with --out",
        };
        CliError::new(e.to_string()).hint(hint)
    })?;
    // Failed actions are in the log; a watch that stopped when asked succeeded.
    Ok(ExitCode::SUCCESS)
}
