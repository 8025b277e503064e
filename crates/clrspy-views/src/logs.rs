//! `clrspy logs -p PID | -n NAME | -- COMMAND`: the application's own ILogger messages, live,
//! through its EventSource logger — as the console logger writes them (with the UTC time,
//! scopes and exceptions), or as JSON Lines. The session is clrspy-live's [`LogsSession`], the
//! records come from clrspy-analysis' log stream, their text and JSON from clrspy-export.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use clrspy_analysis::log_stream::{LogLevel, LogRecord};
use clrspy_collect::{ChildOutput, LaunchOptions, Resolved};
use clrspy_export::log_text::{write_log_json, write_log_text};
use clrspy_live::logs::{check_filter, LogUpdate, LogsOptions, LogsSession};

use clrspy_cli::{Failure, TargetArgs};

/// `clrspy logs`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The process.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The lowest level shown: Trace, Debug, Information, Warning, Error, Critical.
    #[arg(long, value_name = "LEVEL", default_value = "Information", value_parser = level)]
    pub level: LogLevel,
    /// Levels by category: `Microsoft.AspNetCore:Warning;MyApp.*:Debug` (a category is a prefix
    /// of the logger's name, the longest that matches decides; the rest at --level).
    #[arg(long, value_name = "SPECS", value_parser = filter)]
    pub filter: Option<String>,
    /// One JSON object a line (timestamp, level, category, event_id, event_name, message,
    /// args, exception, scopes, thread_id).
    #[arg(long)]
    pub json: bool,
    /// Stop after this long (default: until Ctrl+C or the program's end).
    #[arg(long, value_name = "TIME", value_parser = positive)]
    pub duration: Option<Duration>,
}

fn level(s: &str) -> Result<LogLevel, String> {
    LogLevel::parse(s).ok_or_else(|| {
        format!("unknown level '{s}' (Trace, Debug, Information, Warning, Error, Critical, None)")
    })
}

fn filter(s: &str) -> Result<String, String> {
    check_filter(s).map(|()| s.to_string())
}

fn positive(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// Said once when no message came for this long.
const SILENT_HINT_AFTER: Duration = Duration::from_secs(10);

/// What to say when no message came: the app may log nothing at these levels, or have no
/// EventSource logger.
fn silent_hint(level: LogLevel) -> String {
    format!(
        "no log message yet: the app logs nothing at {level} or above, or has no EventSource logger — ASP.NET Core and the Generic Host add one by default; elsewhere add `builder.AddEventSourceLogger()` (package Microsoft.Extensions.Logging.EventSource) to the logging setup"
    )
}

/// Runs `clrspy logs`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    let target = args.target.resolve("logs")?;
    let opts = LogsOptions {
        level: args.level,
        filter: args.filter.clone(),
        duration: args.duration,
    };
    clrspy_cli::stop_signal();
    // Said once the session started (an attach): what is logged from then on comes.
    let mut started = None;
    let session = match target {
        Resolved::Attach { endpoint, label } => {
            let s = LogsSession::attach(endpoint, &opts)?;
            started = Some(label);
            s
        }
        Resolved::Launch(command) => {
            // The program's own output goes to stderr: stdout is the logs'.
            let launch = LaunchOptions {
                stdout: ChildOutput::ToStderr,
                ..LaunchOptions::default()
            };
            LogsSession::launch(command, &opts, launch)?
        }
    };
    let mut out = io::stdout().lock();
    let json = args.json;
    let result = pump(&session, args.level, started, &mut |r| {
        if json {
            write_log_json(&mut out, r)?;
        } else {
            write_log_text(&mut out, r)?;
        }
        out.flush()
    });
    if result.is_err() {
        session.stop();
    }
    let end = session.join()?;
    let (messages, hinted) = match result {
        // The reader went away (`| head`): the end, not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        r => r.map_err(Failure::from)?,
    };
    if messages == 0 && !hinted {
        eprintln!("{}", silent_hint(args.level));
    }
    Ok(crate::counters::exit_code(end))
}

/// Writes every message until the session ends: how many, and whether the silence was told.
fn pump(
    session: &LogsSession,
    level: LogLevel,
    mut label: Option<String>,
    write: &mut dyn FnMut(&LogRecord) -> io::Result<()>,
) -> io::Result<(u64, bool)> {
    let started = Instant::now();
    let (mut messages, mut hinted, mut stopping) = (0u64, false, false);
    loop {
        if clrspy_cli::interrupted() && !stopping {
            stopping = true;
            session.stop();
        }
        match session.next(Duration::from_millis(200)) {
            Ok(LogUpdate::Record(r)) => {
                messages += 1;
                write(&r)?;
            }
            Ok(LogUpdate::Note(n)) => eprintln!("{n}"),
            Ok(LogUpdate::Started) => {
                if let Some(label) = label.take() {
                    eprintln!("Logs of {label} from now on (Ctrl+C ends):");
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if messages == 0 && !hinted && started.elapsed() >= SILENT_HINT_AFTER {
                    hinted = true;
                    eprintln!("{}", silent_hint(level));
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Ok((messages, hinted)),
        }
    }
}
