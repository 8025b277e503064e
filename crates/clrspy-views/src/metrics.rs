//! `clrspy metrics -p PID | -n NAME | -- COMMAND`: the process's and its machine's metrics
//! every interval — CPU per core and of the process, memory, disk and network throughput,
//! load, threads and open files, the container's limits and throttling — as CSV (a row per
//! interval, flushed as it is written), and at the end, when asked, an HTML page of charts.
//! No EventPipe session: everything comes from /proc and the cgroups (clrspy-collect's
//! [`SysSampler`]); the files are clrspy-export's [`metrics`](clrspy_export::metrics).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clrspy_collect::procstat::own_cpu_ns;
use clrspy_collect::sysmetrics::{SysMetricsError, SysSampler};
use clrspy_collect::Resolved;
use clrspy_export::metrics::{MetricsChart, MetricsCsv};

use clrspy_cli::{Failure, TargetArgs};

/// `clrspy metrics`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The process (`-p` takes any process, .NET or not).
    #[command(flatten)]
    pub target: TargetArgs,
    /// Time between rows.
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = positive)]
    pub interval: Duration,
    /// Stop after this long (default: until Ctrl+C or the process's end).
    #[arg(long, value_name = "TIME", value_parser = positive)]
    pub duration: Option<Duration>,
    /// Write the CSV here instead of to standard output.
    #[arg(short = 'o', long, value_name = "FILE.csv")]
    pub output: Option<PathBuf>,
    /// Also write a page of charts (self-contained HTML with SVG) here at the end.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
}

fn positive(s: &str) -> Result<Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// A row's named values (`MetricsRow::columns`).
type Values = [(String, Option<f64>)];

/// Why sampling stopped.
enum End {
    /// The duration passed or Ctrl+C.
    Asked,
    /// The process ended.
    Gone,
}

/// Runs `clrspy metrics`.
pub fn run(args: &Args) -> Result<ExitCode, Failure> {
    args.target.require("metrics")?;
    let mut child = None;
    let (pid, label) = match (&args.target.process_id, args.target.command.is_empty()) {
        // Any process: no diagnostics endpoint needed.
        (Some(pid), _) => {
            if !diagnostics_client::procfs::alive(*pid) {
                return Err(Failure::new(format!("no process {pid}")));
            }
            (*pid, format!("pid {pid}"))
        }
        (None, false) => {
            let c = launch(&args.target.command, args.output.is_none())?;
            let pid = c.id();
            child = Some(c);
            (pid, format!("pid {pid}"))
        }
        (None, true) => match args.target.resolve("metrics")? {
            Resolved::Attach { endpoint, label } => (endpoint.pid, label),
            Resolved::Launch(_) => return Err(Failure::usage("metrics needs a process")),
        },
    };
    clrspy_cli::stop_signal();
    let out: Box<dyn Write> = match &args.output {
        Some(p) => {
            Box::new(BufWriter::new(File::create(p).map_err(|e| {
                Failure::new(format!("cannot create {}: {e}", p.display()))
            })?))
        }
        None => Box::new(io::stdout().lock()),
    };
    let mut csv = MetricsCsv::new(out);
    let mut chart = args.html.as_ref().map(|_| MetricsChart::new());
    let mut sampler = SysSampler::new(pid);
    let cpu_before = own_cpu_ns();
    let started = Instant::now();
    let (end, rows) = sample_loop(args, &mut sampler, &mut child, &mut |ms, values| {
        if let Some(c) = chart.as_mut() {
            c.push(ms, values);
        }
        csv.write(ms, values)
    });
    let end = match end {
        // The reader went away (`| head`): the end, not an error.
        Err(Stop::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => End::Asked,
        Err(Stop::Write(e)) => return Err(Failure::from(e)),
        Err(Stop::Sample(e)) => return Err(Failure::new(format!("metrics of {label}: {e}"))),
        Ok(end) => end,
    };
    let elapsed = started.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (cpu_before, own_cpu_ns()) {
        let ms = b.saturating_sub(a) as f64 / 1e6;
        eprintln!(
            "{rows} row{} of {label} over {elapsed:.1} s; clrspy's own CPU: {ms:.1} ms ({:.3} % of one core, {:.2} ms a row)",
            if rows == 1 { "" } else { "s" },
            ms / 10.0 / elapsed.max(1e-9),
            ms / (rows.max(1) as f64)
        );
    }
    if matches!(end, End::Gone) && child.is_none() {
        eprintln!("{label} has ended");
    }
    if let (Some(path), Some(chart)) = (&args.html, &chart) {
        let mut f = BufWriter::new(
            File::create(path)
                .map_err(|e| Failure::new(format!("cannot create {}: {e}", path.display())))?,
        );
        chart.write_html(&format!("Metrics of {label}"), &mut f)?;
        f.flush()?;
    }
    Ok(match child {
        Some(mut c) => {
            let status = match c.try_wait() {
                Ok(Some(s)) => Some(s),
                // Still running at --duration or Ctrl+C: it was started for this, it ends —
                // asked first (SIGTERM), killed after 3 s.
                _ => {
                    let _ = clrspy_collect::end_child(&mut c, std::time::Duration::from_secs(3));
                    None
                }
            };
            status.map_or(ExitCode::SUCCESS, status_code)
        }
        None => ExitCode::SUCCESS,
    })
}

/// What ended sampling early.
enum Stop {
    /// Writing the CSV failed.
    Write(io::Error),
    /// A reading failed (not the process's end).
    Sample(SysMetricsError),
}

/// Starts the program; its output goes to stderr when the CSV has stdout.
fn launch(command: &[std::ffi::OsString], csv_on_stdout: bool) -> Result<Child, Failure> {
    let (program, rest) = command
        .split_first()
        .ok_or_else(|| Failure::usage("metrics needs a command after --"))?;
    let mut cmd = Command::new(program);
    cmd.args(rest);
    if csv_on_stdout {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = io::stderr().as_fd().try_clone_to_owned() {
                cmd.stdout(Stdio::from(fd));
            }
        }
    }
    cmd.spawn()
        .map_err(|e| Failure::new(format!("cannot start {}: {e}", program.to_string_lossy())))
}

/// The exit code clrspy ends with for the program's status (128 + signal when killed).
fn status_code(s: std::process::ExitStatus) -> ExitCode {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            return ExitCode::from(128u8.saturating_add(sig.clamp(0, 127) as u8));
        }
    }
    ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8)
}

/// Samples every interval (on a fixed schedule from the start, so rows do not drift) until
/// the duration, Ctrl+C or the process's end; how it ended and the rows written.
fn sample_loop(
    args: &Args,
    sampler: &mut SysSampler,
    child: &mut Option<Child>,
    write: &mut dyn FnMut(u64, &Values) -> io::Result<()>,
) -> (Result<End, Stop>, u64) {
    let start = Instant::now();
    let mut rows = 0u64;
    let mut tick = 0u32;
    loop {
        // A launched program that exited is reaped here, so its pid reads as gone.
        if let Some(c) = child.as_mut() {
            if matches!(c.try_wait(), Ok(Some(_))) {
                return (Ok(End::Gone), rows);
            }
        }
        match sampler.sample() {
            Ok(Some(row)) => {
                rows += 1;
                if let Err(e) = write(row.unix_ms, &row.columns()) {
                    return (Err(Stop::Write(e)), rows);
                }
            }
            Ok(None) => {}
            Err(SysMetricsError::Ended { .. }) => return (Ok(End::Gone), rows),
            Err(e) => return (Err(Stop::Sample(e)), rows),
        }
        tick = tick.saturating_add(1);
        let next = args.interval.saturating_mul(tick);
        if args.duration.is_some_and(|d| next > d) {
            return (Ok(End::Asked), rows);
        }
        // Wait for the next tick in short naps, watching Ctrl+C.
        loop {
            if clrspy_cli::interrupted() {
                return (Ok(End::Asked), rows);
            }
            let now = start.elapsed();
            if now >= next {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(100)));
        }
    }
}
