//! `clrspy top`: the hottest methods of the last few seconds of a running process — a
//! full-screen view on a terminal (`screen`), a plain-text snapshot every interval
//! otherwise (`text`). The session and the windowed table are clrspy-live's
//! ([`clrspy_live::top`]); this module starts them and drives the view.

mod live;
mod screen;
mod text;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clrspy_live::top::{Mode, SortBy};

use clrspy_cli::{Failure, TargetArgs};
use live::{Live, ViewState};

/// `clrspy top`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The process: `-p`, `-n` or `-- COMMAND`.
    #[command(flatten)]
    pub target: TargetArgs,
    /// How often the view refreshes (1s, 500ms; see Values).
    #[arg(long, visible_alias = "interval", value_name = "TIME", default_value = "1s", value_parser = positive_duration)]
    pub refresh: Duration,
    /// The last stretch of time the table covers.
    #[arg(long, value_name = "TIME", default_value = "5s", value_parser = positive_duration)]
    pub window: Duration,
    /// Rows of each snapshot without a terminal.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Stop after this long (otherwise `q`, Ctrl+C or the target's exit).
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub duration: Option<Duration>,
    /// What the table weighs at the start (keys c, w, a switch on a terminal).
    #[arg(long, value_enum, default_value = "cpu")]
    pub mode: ModeArg,
    /// The column the table is ordered by at the start (key s switches on a terminal).
    #[arg(long, value_enum, default_value = "exclusive")]
    pub sort: SortArg,
}

/// `--mode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    /// CPU time by method.
    Cpu,
    /// Waiting (off-CPU) time by method.
    Wait,
    /// Allocated bytes by allocating method.
    Alloc,
    /// Allocated bytes by type.
    AllocType,
}

/// `--sort`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortArg {
    /// The method's own time or bytes.
    Exclusive,
    /// With what it called.
    Inclusive,
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// Runs `clrspy top`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    if args.window < args.refresh {
        return Err(Failure::usage(
            "--window must be at least as long as --refresh",
        ));
    }
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    // Outside the full-screen view Ctrl+C is a signal: stop the session, print the last table.
    clrspy_cli::stop_signal();
    let live = Live::start(&args.target, args.duration)?;
    let mode = match args.mode {
        ModeArg::Cpu => Mode::Cpu,
        ModeArg::Wait => Mode::Wait,
        ModeArg::Alloc => Mode::AllocByMethod,
        ModeArg::AllocType => Mode::AllocByType,
    };
    let sort = match args.sort {
        SortArg::Exclusive => SortBy::Exclusive,
        SortArg::Inclusive => SortBy::Inclusive,
    };
    let mut state = ViewState::new(mode, sort, args.refresh, args.window);
    let shown = if tty {
        screen::run(&live, &mut state)
    } else {
        text::run(&live, &mut state, args.top)
    };
    let finished = live.finish();
    shown?;
    finished?;
    Ok(ExitCode::SUCCESS)
}
