//! `clrspy counters list|monitor|collect`: the well-known counter sources, a live table of a
//! process's counters, or its counters to CSV, JSON Lines or Prometheus text. The session is
//! clrspy-live's [`CountersSession`]; the rows come from clrspy-analysis, the files from
//! clrspy-export; this module holds the options, the loop and the terminal.

mod table;

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use clrspy_analysis::counters::catalog::{SourceKind, KNOWN};
use clrspy_analysis::counters::{CounterRow, CounterSpec, CounterUpdate};
use clrspy_collect::{ChildOutput, LaunchOptions, Resolved};
use clrspy_export::counters::{CounterFile, CounterFormat, CounterWriter};
use clrspy_live::counters::{CountersOptions, CountersSession};
use clrspy_live::ChildEnd;

use clrspy_cli::{Failure, TargetArgs};

/// `clrspy counters`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// `clrspy counters` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// The well-known counter sources (.NET 8, 9, 10) and their counters.
    #[command(after_help = "Examples:\n  clrspy counters list")]
    List,
    /// A live table of a process's counters, refreshed each interval.
    #[command(
        after_help = "Examples:\n  clrspy counters monitor -p 1234\n  clrspy counters monitor -p 1234 --counters System.Runtime,Microsoft.AspNetCore.Hosting"
    )]
    Monitor(SessionArgs),
    /// A process's counters to a file (CSV, JSON Lines, Prometheus text), one value a line.
    #[command(
        after_help = "Examples:\n  clrspy counters collect -p 1234 --duration 60s -o counters.csv\n  clrspy counters collect -p 1234 --format jsonl -o counters.jsonl"
    )]
    Collect(CollectArgs),
}

/// What a counters session asks for, and of which process.
#[derive(clap::Args, Debug, Clone)]
pub struct SessionArgs {
    /// Sources and counters, in dotnet-counters' syntax:
    /// `System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]`;
    /// `EventCounters\NAME` asks for a source's EventCounters, not its meter.
    #[arg(long, value_name = "SPEC", default_value = "System.Runtime", value_parser = spec)]
    pub counters: CounterSpec,
    /// How often the runtime reports (a number and a unit; a bare number is seconds).
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = interval)]
    pub refresh_interval: Duration,
    /// Stop after this long (default: until Ctrl+C or the program's end).
    #[arg(long, value_name = "TIME", value_parser = positive)]
    pub duration: Option<Duration>,
    /// The most histograms the runtime tracks for this session.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_histograms: u32,
    /// The most time series (instrument and tag combinations) the runtime tracks.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_time_series: u32,
    /// The process.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `clrspy counters collect`.
#[derive(clap::Args, Debug)]
pub struct CollectArgs {
    /// The session.
    #[command(flatten)]
    pub session: SessionArgs,
    /// The file format.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,
    /// The file (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// CSV, a header line then one value a line.
    Csv,
    /// JSON Lines: one object per value (`json`, dotnet-counters' word, is taken for it).
    #[value(alias = "json")]
    Jsonl,
    /// The Prometheus text exposition format (a file is rewritten whole each interval).
    Prometheus,
}

fn spec(s: &str) -> Result<CounterSpec, String> {
    s.parse()
        .map_err(|e: clrspy_analysis::counters::SpecError| e.to_string())
}

fn interval(s: &str) -> Result<Duration, String> {
    let d = clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())?;
    if d < Duration::from_millis(100) {
        return Err("the refresh interval is at least 100ms".into());
    }
    Ok(d)
}

fn positive(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// Runs `clrspy counters`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    match &args.action {
        Action::List => list(&mut io::stdout().lock())
            .map(|_| ExitCode::SUCCESS)
            .map_err(Failure::from),
        Action::Monitor(s) => monitor(s),
        Action::Collect(c) => collect(c),
    }
}

/// Prints the catalogue.
fn list(out: &mut dyn Write) -> io::Result<()> {
    for s in KNOWN {
        let kind = match s.kind {
            SourceKind::Meter => "meter",
            SourceKind::EventCounters => "EventCounters",
        };
        writeln!(out, "{} ({kind}, {})", s.name, s.since)?;
        let w = s.counters.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (name, what) in s.counters {
            writeln!(out, "    {name:<w$}  {what}")?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "Any EventSource's counters and any meter can be asked for by name: --counters 'NAME[counter,...]'."
    )?;
    writeln!(
        out,
        "On .NET 9+, System.Runtime is shown as its meter; --counters 'EventCounters\\System.Runtime' shows the EventCounters."
    )
}

fn start(
    s: &SessionArgs,
    target: Resolved,
    child_output: ChildOutput,
) -> Result<CountersSession, Failure> {
    let opts = CountersOptions {
        spec: s.counters.clone(),
        refresh: s.refresh_interval,
        max_histograms: s.max_histograms,
        max_time_series: s.max_time_series,
        duration: s.duration,
        buffer_mb: clrspy_live::counters::BUFFER_MB,
    };
    let session = match target {
        Resolved::Attach { endpoint, .. } => CountersSession::attach(endpoint, &opts)?,
        Resolved::Launch(command) => {
            let launch = LaunchOptions {
                stdout: child_output,
                ..LaunchOptions::default()
            };
            CountersSession::launch(command, &opts, launch)?
        }
    };
    for n in session.notes() {
        eprintln!("{n}");
    }
    Ok(session)
}

/// What the loop waits for updates between draws: the runtime writes an interval's events
/// together, so a quiet spell this long ends one.
const QUIET: Duration = Duration::from_millis(150);

/// Reads the session until it ends, handing each interval's rows to `sink` (batched: rows that
/// arrive together go together) and saying each note once on stderr.
fn pump(
    session: &CountersSession,
    sink: &mut dyn FnMut(&[CounterRow]) -> io::Result<()>,
) -> Result<(), Failure> {
    let mut pending: Vec<CounterRow> = Vec::new();
    let mut stopping = false;
    loop {
        if clrspy_cli::interrupted() && !stopping {
            stopping = true;
            session.stop();
        }
        match session.next(QUIET) {
            Ok(CounterUpdate::Rows(rows)) => pending.extend(rows),
            Ok(CounterUpdate::Note(n)) => eprintln!("{n}"),
            Err(RecvTimeoutError::Timeout) => {
                if !pending.is_empty() {
                    sink(&pending)?;
                    pending.clear();
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                if !pending.is_empty() {
                    sink(&pending)?;
                }
                return Ok(());
            }
        }
    }
}

/// The exit code: the launched program's (0 when clrspy ended it), else 0.
pub(crate) fn exit_code(end: Option<ChildEnd>) -> ExitCode {
    let Some(end) = end else {
        return ExitCode::SUCCESS;
    };
    if end.terminated_by_clrspy {
        return ExitCode::SUCCESS;
    }
    match end.status {
        Some(s) => {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                if let Some(sig) = s.signal() {
                    return ExitCode::from(128u8.saturating_add(sig.clamp(0, 127) as u8));
                }
            }
            ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8)
        }
        None => ExitCode::SUCCESS,
    }
}

fn finish(session: CountersSession) -> Result<ExitCode, Failure> {
    let end = session.join()?;
    Ok(exit_code(end))
}

fn collect(c: &CollectArgs) -> Result<ExitCode, Failure> {
    let format = match c.format {
        Format::Csv => CounterFormat::Csv,
        Format::Jsonl => CounterFormat::JsonLines,
        Format::Prometheus => CounterFormat::Prometheus,
    };
    // The program's own output must not mix with rows on stdout.
    let child_output = if c.output.is_some() {
        ChildOutput::Inherit
    } else {
        ChildOutput::ToStderr
    };
    let target = c.session.target.resolve("counters")?;
    let file = match &c.output {
        Some(p) => Some(
            CounterFile::create(p, format)
                .map_err(|e| Failure::new(format!("cannot write {}: {e}", p.display())))?,
        ),
        None => None,
    };
    clrspy_cli::stop_signal();
    let session = start(&c.session, target, child_output)?;
    let result = match file {
        Some(mut f) => pump(&session, &mut |rows| f.write_rows(rows)),
        None => {
            let mut w = CounterWriter::new(io::stdout(), format);
            pump(&session, &mut |rows| w.write_rows(rows))
        }
    };
    if result.is_err() {
        session.stop();
    }
    let code = finish(session)?;
    result.map(|_| code)
}

fn monitor(s: &SessionArgs) -> Result<ExitCode, Failure> {
    let tty = io::stdout().is_terminal();
    let target = s.target.resolve("counters")?;
    clrspy_cli::stop_signal();
    let session = start(
        s,
        target,
        if tty {
            ChildOutput::Null
        } else {
            ChildOutput::ToStderr
        },
    )?;
    let mut view = table::Table::new(s.refresh_interval);
    let result = if tty {
        match table::Screen::enter() {
            Ok(mut screen) => pump(&session, &mut |rows| {
                view.add(rows);
                screen.show(&view)
            }),
            Err(e) => Err(e.into()),
        }
    } else {
        let mut out = io::stdout();
        pump(&session, &mut |rows| {
            view.add(rows);
            out.write_all(view.block().as_bytes())?;
            out.flush()
        })
    };
    if result.is_err() {
        session.stop();
    }
    let code = finish(session)?;
    result.map(|_| code)
}
