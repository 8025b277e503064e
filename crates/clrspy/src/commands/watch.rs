//! `clrspy watch`: the rules loaded and checked before anything runs, the signals (SIGINT and
//! SIGTERM stop with open traces finished whole, a second one stops waiting; SIGHUP reloads),
//! and a short line per decision on stdout. The watching is clrspy-watch's.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clrspy_rules::{LoadError, RuleSet};
use clrspy_watch::{WatchControl, WatchOptions};

use crate::cli::WatchArgs;
use crate::output::{CliError, CliResult};

/// Signals land here; the watcher reads it.
static CONTROL: WatchControl = WatchControl::new();

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics: safe in a signal handler.
    if sig == libc::SIGHUP {
        CONTROL.request_reload();
    } else {
        CONTROL.request_stop();
    }
}

fn install_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only touches atomics; signal(2) with a valid signal number.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// Runs `clrspy watch`.
pub fn run(args: &WatchArgs) -> CliResult<ExitCode> {
    let rules = RuleSet::load(&args.rules).map_err(|e| match e {
        LoadError::Invalid { path, errors } => {
            for e in &errors {
                eprintln!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message);
            }
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
    install_signals();
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
    clrspy_watch::watch(rules, &opts, &CONTROL, say).map_err(|e| {
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
