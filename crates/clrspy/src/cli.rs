//! Command-line definitions (clap derive). Parsed flags become plain option structs here;
//! nothing below this module sees clap.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
pub use clrspy_cli::TargetArgs;
use clrspy_collect::kernel::SamplerChoice;
use clrspy_export::{Format, Metric, ReportKind};
use clrspy_values::NamePattern;

/// A value parser for one of the registries' enums (formats, reports, metrics): the names
/// and descriptions come from the registry, so `--help` lists exactly what exists.
fn choice<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
    help: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(
        all.iter()
            .map(move |&v| PossibleValue::new(name(v)).help(help(v))),
    )
    .try_map(move |s: String| {
        all.iter()
            .copied()
            .find(|&v| name(v) == s)
            .ok_or_else(|| format!("unknown value '{s}'"))
    })
}

fn format_parser() -> impl TypedValueParser<Value = Format> {
    choice(&Format::ALL, Format::name, Format::description)
}

fn metric_parser() -> impl TypedValueParser<Value = Metric> {
    choice(&Metric::ALL, Metric::name, Metric::description)
}

fn report_parser() -> impl TypedValueParser<Value = ReportKind> {
    choice(&ReportKind::ALL, ReportKind::name, ReportKind::description)
}

/// A name pattern (clrspy-values: case-insensitive, `*` and `?` anywhere).
fn name_pattern(s: &str) -> Result<NamePattern, String> {
    NamePattern::new(s).map_err(|e| e.to_string())
}

/// `--thread-cpu-interval`'s default as clap shows and parses it: clrspy-collect's
/// `THREAD_CPU_INTERVAL`, in milliseconds.
fn thread_cpu_default() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{}ms",
            clrspy_collect::procstat::THREAD_CPU_INTERVAL.as_millis()
        )
    })
}

/// A duration more than zero (clrspy-values' grammar: `250ms`, `5s`, `2m`, `1h`; a bare number
/// is seconds).
fn positive_duration(s: &str) -> Result<std::time::Duration, String> {
    clrspy_values::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// A duration, zero allowed.
fn duration(s: &str) -> Result<std::time::Duration, String> {
    clrspy_values::parse_duration(s).map_err(|e| e.to_string())
}

/// A ring size (the size grammar, a bare number is bytes; at least 64KB).
fn ring_size(s: &str) -> Result<u64, String> {
    clrspy_collect::parse_ring_size(s)
}

/// A dump type and the name it was given by.
#[derive(Clone, Debug)]
pub struct DumpKind {
    /// As written.
    pub text: String,
    /// The type.
    pub value: diagnostics_client::DumpType,
}

/// A dump type (mini, heap, triage, full).
fn dump_type(s: &str) -> Result<DumpKind, String> {
    diagnostics_client::DumpType::from_name(s)
        .map(|value| DumpKind {
            text: s.to_string(),
            value,
        })
        .ok_or_else(|| format!("unknown dump type '{s}' (mini, heap, triage, full)"))
}

/// A dump compression (gzip, zstd, none).
fn dump_compression(s: &str) -> Result<clrspy_collect::Compression, String> {
    clrspy_collect::Compression::parse(s)
        .ok_or_else(|| format!("unknown compression '{s}' (gzip, zstd, none)"))
}

/// A point in the trace (`--from`, `--to`): a duration since its start, zero allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracePoint {
    /// As written.
    pub text: String,
    /// Nanoseconds since the trace's start.
    pub ns: i64,
}

fn trace_point(s: &str) -> Result<TracePoint, String> {
    let d = clrspy_values::parse_duration(s).map_err(|e| e.to_string())?;
    Ok(TracePoint {
        text: s.to_string(),
        ns: i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    })
}

/// Profile and diagnose .NET applications: read and report EventPipe traces.
#[derive(Debug, Parser)]
#[command(name = "clrspy", version = crate::build_info::VERSION, long_version = crate::build_info::LONG_VERSION, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Summarize a trace: format, start time, process, duration, events per provider and per
    /// event, and whether it ended cleanly or is truncated.
    #[command(
        after_help = "Examples:\n  clrspy info app.nettrace\n  clrspy info app.nettrace --json"
    )]
    Info(InfoArgs),
    /// List the events of a trace, one per line, with their decoded fields.
    #[command(
        after_help = "Examples:\n  clrspy events app.nettrace --event 'GC/*'\n  clrspy events app.nettrace --provider Microsoft-Windows-DotNETRuntime --json | head"
    )]
    Events(EventsArgs),
    /// List the .NET processes on this machine and their runtime versions.
    #[command(after_help = "Examples:\n  clrspy ps\n  clrspy ps --json")]
    Ps(PsArgs),
    /// Record an EventPipe trace from a running .NET process, or from a program clrspy starts
    /// (`clrspy record [options] -- program args`): from its first instruction.
    #[command(
        after_help = "Examples:\n  clrspy record -p 1234 --duration 30s\n  clrspy record -o app.nettrace -- dotnet app.dll\n  clrspy record -n MyApp --ring 256MB --stop-on exception=InvalidOperationException"
    )]
    Record(RecordArgs),
    /// Print the environment variables of a running .NET process.
    #[command(
        after_help = "Examples:\n  clrspy env -p 1234\n  clrspy env -p 1234 --set DOTNET_gcServer=1"
    )]
    Env(EnvArgs),
    /// Write a core dump of a running .NET process (its runtime writes it; no SDK needed).
    #[command(
        after_help = "Examples:\n  clrspy dump -p 1234 -o app.dmp\n  clrspy dump analyze app.dmp.zst\n  clrspy dump analyze app.dmp.zst locks"
    )]
    Dump(DumpArgs),
    /// Reports a developer reads: CPU and waiting time by method, allocations, exceptions,
    /// lock contention, GCs, threads; given the folder of `record --children`, the process
    /// tree's CPU per process and hottest methods.
    #[command(
        after_help = "Examples:\n  clrspy report app.nettrace\n  clrspy report app.nettrace cpu --tree\n  clrspy report hangs -p 1234"
    )]
    Report(ReportArgs),
    /// Convert a trace for a viewer: speedscope, folded stacks, flame graph SVG, ...; a heap
    /// snapshot (.gcdump) to folded, flamegraph, speedscope (its root paths weighted by
    /// retained bytes) or html (the heap page).
    #[command(
        after_help = "Examples:\n  clrspy convert app.nettrace --to speedscope -o app.speedscope.json\n  clrspy convert app.nettrace --to html -o app.html\n  clrspy convert heap.gcdump --to flamegraph -o heap.svg"
    )]
    Convert(ConvertArgs),
    /// Record and report in one step: `clrspy profile -- program args`, or `-p PID --duration 10s`.
    #[command(
        after_help = "Examples:\n  clrspy profile -- dotnet app.dll\n  clrspy profile -p 1234 --duration 10s\n  clrspy profile -p 1234 --duration 10s --alloc --json"
    )]
    Profile(ProfileArgs),
    /// Make a cut or damaged trace whole: keep every whole block and the whole events of a cut
    /// one, drop the rest, end it validly (every reader opens the result); NetPerf becomes
    /// NetTrace.
    #[command(after_help = "Examples:\n  clrspy repair cut.nettrace -o whole.nettrace")]
    Repair(RepairArgs),
    /// Rules files for `clrspy watch`: check one, print the JSON Schema, print an example.
    #[command(
        after_help = "Examples:\n  clrspy rules example > rules.toml\n  clrspy rules check rules.toml\n  clrspy rules schema > rules.schema.json"
    )]
    Rules(RulesArgs),
    /// Watch for .NET processes and apply a rules file (traces, dumps) to every new one, until
    /// stopped (Ctrl+C, SIGTERM); SIGHUP reloads the rules.
    #[command(
        after_help = "Examples:\n  clrspy watch --rules rules.toml\n  clrspy watch --rules rules.toml -o /var/lib/clrspy-watch"
    )]
    Watch(WatchArgs),
    /// Take a heap snapshot (.gcdump) of a running .NET process (it forces a full, blocking
    /// GC), or convert a trace's heap dump events with --from.
    #[command(
        after_help = "Examples:\n  clrspy gcdump -p 1234 -o before.gcdump\n  clrspy gcdump --from app.nettrace -o heap.gcdump"
    )]
    Gcdump(GcdumpArgs),
    /// What a heap snapshot (.gcdump, or a trace with heap dump events) holds: types by
    /// retained and shallow bytes, roots; `heap diff OLD NEW` compares two.
    #[command(
        after_help = "Examples:\n  clrspy heap app.gcdump\n  clrspy heap diff before.gcdump after.gcdump\n  clrspy heap watch -p 1234 --count 3 --every 30s"
    )]
    Heap(HeapArgs),
    /// Did it get slower? Two traces compared per unit of work (CPU and waits by method,
    /// allocations, exceptions, locks, GCs, routes, outgoing HTTP), each change judged against
    /// what sampling explains and a threshold; `--fail-if` for CI. Two .gcdump files compare as
    /// `heap diff` does.
    #[command(
        after_help = "Examples:\n  clrspy diff before.nettrace after.nettrace\n  clrspy diff before.nettrace after.nettrace --fail-if 'cpu:+10%,p99:+20%,alloc:+15%'\n  clrspy diff before.zip after.zip --per seconds --json\n  clrspy diff before.gcdump after.gcdump"
    )]
    Diff(DiffArgs),
    /// A process's counters and meters: list, monitor live, collect to CSV/JSON Lines/Prometheus.
    #[command(
        after_help = "Examples:\n  clrspy counters monitor -p 1234\n  clrspy counters collect -p 1234 --duration 60s -o counters.csv\n  clrspy counters list"
    )]
    Counters(clrspy_views::counters::Args),
    /// The hottest methods of the last few seconds, live: CPU, waiting or allocations.
    #[command(after_help = "Examples:\n  clrspy top -p 1234\n  clrspy top -p 1234 --mode alloc")]
    Top(clrspy_views::top::Args),
    /// Every thread's stack now, innermost first, with thread ids and names.
    #[command(after_help = "Examples:\n  clrspy stack -p 1234\n  clrspy stack -n MyApp --json")]
    Stack(clrspy_views::stack::Args),
    /// The app's own log messages (ILogger, through its EventSource logger), live.
    #[command(
        after_help = "Examples:\n  clrspy logs -p 1234\n  clrspy logs -p 1234 --level Warning --json"
    )]
    Logs(clrspy_views::logs::Args),
    /// System and process metrics every interval (CPU, memory, disk, network, limits) as CSV.
    #[command(
        after_help = "Examples:\n  clrspy metrics -p 1234 --duration 60s -o metrics.csv\n  clrspy metrics -p 1234 --duration 60s -o metrics.csv --html metrics.html"
    )]
    Metrics(clrspy_views::metrics::Args),
    /// Everything a support engineer needs in one zip: trace, reports, logs, metrics, counters,
    /// manifest with checksums, secrets redacted; `bundle verify FILE.zip` checks one.
    #[command(
        after_help = "Examples:\n  clrspy bundle -p 1234 --symptom high-cpu -o case.zip\n  clrspy bundle -p 1234 --symptom hang -o hang.zip\n  clrspy bundle verify case.zip"
    )]
    Bundle(clrspy_handoff::cmd::BundleArgs),
    /// What to collect for a symptom here (environment, steps, commands, costs); --run does it.
    #[command(
        after_help = "Examples:\n  clrspy doctor\n  clrspy doctor --symptom memory-leak -p 1234\n  clrspy doctor --symptom high-cpu -p 1234 --run"
    )]
    Doctor(clrspy_handoff::doctor::Args),
    /// An authenticated HTTP API over the .NET processes here (`new-key`, `schema`; docs/agent.md).
    #[command(
        after_help = "Examples:\n  clrspy agent new-key\n  clrspy agent --config agent.toml"
    )]
    Agent(clrspy_agent::AgentArgs),
    /// Print a shell's completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  clrspy completions bash > /etc/bash_completion.d/clrspy\n  clrspy completions zsh > \"${fpath[1]}/_clrspy\"\n  clrspy completions fish > ~/.config/fish/completions/clrspy.fish"
    )]
    Completions(CompletionsArgs),
    /// Print clrspy's manual page (roff), or a command's; --dir writes one page per command.
    #[command(
        after_help = "Examples:\n  clrspy man | man -l -\n  clrspy man record | man -l -\n  clrspy man --dir /usr/local/share/man/man1"
    )]
    Man(ManArgs),
}

/// `clrspy completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `clrspy man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`record`, `heap diff`: words of the command line);
    /// none for clrspy's own.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every command's page into this folder (clrspy.1, clrspy-record.1, ...) instead.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// `clrspy gcdump`.
#[derive(Debug, Args)]
pub struct GcdumpArgs {
    /// The process.
    #[arg(short = 'p', long = "process-id", visible_alias = "pid", value_name = "PID", conflicts_with_all = ["name", "from"])]
    pub process_id: Option<u32>,
    /// The process, by name.
    #[arg(short = 'n', long, value_name = "NAME", conflicts_with = "from")]
    pub name: Option<String>,
    /// Convert the heap dump of this recorded trace instead.
    #[arg(long, value_name = "TRACE")]
    pub from: Option<PathBuf>,
    /// Output file (default: <pid>_<time>.gcdump, or the trace's name with .gcdump).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Give up when the dump has not completed after this long (e.g. 30s, 2m).
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = positive_duration)]
    pub timeout: std::time::Duration,
    /// Take the snapshot of a heap over 4 GB without asking (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
}

/// `clrspy heap watch`.
#[derive(Debug, Args)]
pub struct HeapWatchArgs {
    /// The process.
    #[command(flatten)]
    pub process: clrspy_cli::ProcessArgs,
    /// Time between the starts of two snapshots (e.g. 60s, 5m).
    #[arg(long, value_name = "TIME", default_value = "60s", value_parser = positive_duration)]
    pub every: std::time::Duration,
    /// Snapshots to take (at least 2).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..))]
    pub count: u32,
    /// Directory for the snapshots (<pid>_<time>_<i>.gcdump; default: the current one).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Give up on one snapshot when it has not completed after this long.
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = positive_duration)]
    pub timeout: std::time::Duration,
    /// Snapshot a heap over 4 GB without asking (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Rows per table.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Write one JSON object at the end (keys in docs/heap-json.md).
    #[arg(long)]
    pub json: bool,
}

/// `clrspy heap`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct HeapArgs {
    /// `diff OLD NEW`.
    #[command(subcommand)]
    pub action: Option<HeapAction>,
    /// A .gcdump, or a trace with heap dump events.
    #[arg(value_name = "FILE", required = true)]
    pub file: Option<PathBuf>,
    /// Rows per table.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// One type: count, bytes, retained bytes and the paths from the roots that hold it.
    #[arg(long = "type", value_name = "TYPE")]
    pub type_name: Option<String>,
    /// Write one JSON object (keys in docs/heap-json.md).
    #[arg(long)]
    pub json: bool,
}

/// `clrspy heap` verbs.
#[derive(Debug, Subcommand)]
pub enum HeapAction {
    /// Take snapshots of a live process (`--count`, `--every` apart) and report the types that
    /// grew in every interval, and what holds them.
    #[command(
        after_help = "Examples:\n  clrspy heap watch -p 1234\n  clrspy heap watch -p 1234 --count 5 --every 5m"
    )]
    Watch(HeapWatchArgs),
    /// Compare two snapshots per type, by growth (`heap diff BUNDLE.zip`: a bundle's two).
    #[command(
        after_help = "Examples:\n  clrspy heap diff before.gcdump after.gcdump\n  clrspy heap diff case.zip\n  clrspy heap diff before.gcdump after.gcdump --html diff.html"
    )]
    Diff {
        /// The older snapshot (a .gcdump, a trace with heap dump events, a zip's only
        /// snapshot or `ZIP:ENTRY`); a bundle's zip alone compares its
        /// heap/before.gcdump with its heap/after.gcdump.
        old: PathBuf,
        /// The newer snapshot.
        new: Option<PathBuf>,
        /// Write one JSON object (keys in docs/heap-json.md).
        #[arg(long)]
        json: bool,
        /// Rows in the table.
        #[arg(long, value_name = "N", default_value_t = 20)]
        top: usize,
        /// Also write the comparison as a self-contained HTML page to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
}

/// `clrspy rules`.
#[derive(Debug, Args)]
pub struct RulesArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: RulesAction,
}

/// `clrspy rules` verbs.
#[derive(Debug, Subcommand)]
pub enum RulesAction {
    /// Check a rules file (JSON or TOML): every mistake with its line and column.
    #[command(
        after_help = "Examples:\n  clrspy rules check rules.toml\n  clrspy rules check rules.json --json"
    )]
    Check {
        /// The rules file (.json or .toml).
        file: PathBuf,
        /// Write the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print the rules file's JSON Schema (point an editor at it to complete and check).
    #[command(after_help = "Examples:\n  clrspy rules schema > rules.schema.json")]
    Schema,
    /// Print a commented rules file to start from (TOML; --json for JSON).
    #[command(
        after_help = "Examples:\n  clrspy rules example > rules.toml\n  clrspy rules example --json > rules.json"
    )]
    Example {
        /// JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
}

/// `clrspy watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The rules file (JSON or TOML); `clrspy rules example` prints one to start from.
    #[arg(long, value_name = "FILE")]
    pub rules: PathBuf,
    /// The output folder: decisions.jsonl, and a folder per rule for its files.
    #[arg(short = 'o', long, value_name = "DIR", default_value = "clrspy-watch")]
    pub out: PathBuf,
    /// Also listen on this socket as a reverse diagnostic port: programs started with
    /// DOTNET_DiagnosticPorts=SOCKET,connect,suspend wait at their first instruction until
    /// their rules are applied.
    #[arg(long, value_name = "SOCKET")]
    pub listen: Option<PathBuf>,
    /// How often to look for new processes, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(10..=1000))]
    pub poll_ms: u64,
    /// Print nothing for processes no rule matches (they are still logged).
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// `clrspy repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub input: TraceArg,
    /// The repaired trace (default: beside the input, `<name>.repaired.nettrace`; for a
    /// `.netperf`, `<name>.nettrace` unless it exists).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write what was kept and lost as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `clrspy profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// CPU and waiting time by method (samples).
    #[arg(long)]
    pub cpu: bool,
    /// Allocations by type and stack.
    #[arg(long)]
    pub alloc: bool,
    /// Exceptions.
    #[arg(long)]
    pub exceptions: bool,
    /// Lock contention.
    #[arg(long)]
    pub contention: bool,
    /// GCs.
    #[arg(long)]
    pub gc: bool,
    /// Stop after this long (attach; a duration, see Values); otherwise Ctrl+C or the
    /// program's end.
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub duration: Option<std::time::Duration>,
    /// Where to keep the trace (default: <name>_<yyyyMMdd_HHmmss>.nettrace).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Rows per table.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub top: usize,
    /// Print the reports as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also convert the trace for a viewer (the .nettrace is kept).
    #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
    pub format: Option<Format>,
    #[command(flatten)]
    pub sampler: SamplerArgs,
}

/// Who takes the CPU samples (`record`, `profile`).
#[derive(Debug, Args)]
pub struct SamplerArgs {
    /// Who takes the CPU samples: `auto` (the default) is the kernel's where it samples kernel
    /// mode too (root, CAP_PERFMON or perf_event_paranoid ≤ 1: waits get their stacks), else
    /// the runtime's, saying why; `kernel` (perf_event_open on the target's threads: nothing
    /// suspended, native frames too; Linux; refused by the kernel, it falls back to `runtime`
    /// and says why), or `runtime` (the runtime's sample profiler, which suspends the threads
    /// ~1000 times a second).
    #[arg(long, value_name = "WHO", default_value = "auto", value_parser = ["runtime", "kernel", "auto"])]
    pub sampler: String,
    /// The kernel sampler's rate: samples per second per thread on a CPU.
    #[arg(long, value_name = "HZ", default_value_t = clrspy_sampler::DEFAULT_RATE_HZ, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rate: u32,
}

impl SamplerArgs {
    /// Who is asked to take the CPU samples.
    pub fn choice(&self) -> SamplerChoice {
        match self.sampler.as_str() {
            "kernel" => SamplerChoice::Kernel(self.rate),
            "runtime" => SamplerChoice::Runtime,
            _ => SamplerChoice::Auto(self.rate),
        }
    }
}

/// `clrspy convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: TraceArg,
    /// The output format. A heap snapshot (.gcdump) converts to folded, flamegraph and
    /// speedscope (paths from the roots along the dominator tree, weighted by retained bytes)
    /// and html (its heap page); --metric, --thread and --just-my-code are for traces.
    #[arg(long = "to", value_name = "FORMAT", alias = "format", value_parser = format_parser())]
    pub to: Format,
    /// Output file (default: the trace's name with the format's extension; `-` for stdout).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// What the stacks weigh.
    #[arg(long, default_value = "cpu", value_parser = metric_parser())]
    pub metric: Metric,
    /// Only this thread (OS thread id).
    #[arg(long, value_name = "TID")]
    pub thread: Option<u64>,
    #[command(flatten)]
    pub grouping: GroupingArgs,
    #[command(flatten)]
    pub images: ImageArgs,
}

/// `clrspy report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub input: TraceArg,
    /// The report.
    #[arg(default_value = "summary", value_parser = report_parser())]
    pub kind: ReportKind,
    /// Rows per table.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Also print the call tree (cpu, waits).
    #[arg(long)]
    pub tree: bool,
    /// Call tree depth, in frames (default 30; with --callers, up to the roots).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Call tree: children shown per node.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub width: usize,
    /// Call tree: hide nodes under this percent of the total.
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    pub cutoff: f64,
    /// Re-root stacks at the outermost frame containing METHOD (cpu, waits); the tree shows
    /// the heaviest path from a thread's root to it above.
    #[arg(long, value_name = "METHOD")]
    pub focus: Option<String>,
    /// The merged tree of METHOD's callers up to the thread roots (cpu, waits): the method
    /// named exactly so, else the heaviest one whose name contains METHOD.
    #[arg(long, value_name = "METHOD")]
    pub callers: Option<String>,
    /// Also rank the hottest source lines, `file:line` (cpu, waits): from the JIT's maps in
    /// the trace and the app's portable PDBs (beside its assemblies, embedded in them, or in
    /// a --symbols directory).
    #[arg(long)]
    pub lines: bool,
    #[command(flatten)]
    pub grouping: GroupingArgs,
    /// Drop stacks with a frame containing PATTERN (repeatable).
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Only this thread (OS thread id).
    #[arg(long, value_name = "TID")]
    pub thread: Option<u64>,
    /// Only events from this time on (a duration since the trace start: 2.5, 250ms, 2s ...).
    #[arg(long, value_name = "TIME", value_parser = trace_point)]
    pub from: Option<TracePoint>,
    /// Only events before this time.
    #[arg(long, value_name = "TIME", value_parser = trace_point)]
    pub to: Option<TracePoint>,
    /// Write JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write every request to FILE as it is read, one JSON object a line (the http and
    /// requests reports).
    #[arg(long, value_name = "FILE")]
    pub requests_jsonl: Option<PathBuf>,
    #[command(flatten)]
    pub images: ImageArgs,
    /// `report hangs -p PID`: a running process instead of a trace. A heap dump of it now
    /// (kept, as `clrspy dump` names it) is read for the deadlocks, the monitors held and who
    /// waits for them — a hang that began before any recording is named too.
    #[arg(
        short = 'p',
        long = "process-id",
        visible_alias = "pid",
        value_name = "PID"
    )]
    pub process_id: Option<u32>,
}

/// `clrspy dump`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DumpArgs {
    /// `analyze FILE`.
    #[command(subcommand)]
    pub action: Option<DumpAction>,
    #[command(flatten)]
    pub process: Option<ProcessArg>,
    /// mini (stacks, modules), heap (plus the managed heap: for leaks), triage (small, personal
    /// data removed) or full (all memory).
    #[arg(long = "type", value_name = "TYPE", default_value = "heap", value_parser = dump_type)]
    pub dump_type: DumpKind,
    /// Output file (default: core_<pid>_<yyyyMMdd_HHmmss> in the current directory).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the runtime's crash report (JSON) beside the dump.
    #[arg(long)]
    pub crash_report: bool,
    /// How long to wait for the dump to be written (a bare number is seconds).
    #[arg(long, value_name = "TIME", default_value = "300s", value_parser = positive_duration)]
    pub timeout: std::time::Duration,
    /// Compress the dump as the runtime writes it, so the raw core never lands on disk: zstd
    /// (the default: fast, adds .zst), gzip (.gz) or none (a raw core that debuggers open
    /// as it is).
    #[arg(long, value_name = "HOW", default_value = "zstd", value_parser = dump_compression)]
    pub compress: clrspy_collect::Compression,
}

/// `clrspy dump` verbs.
#[derive(Debug, Subcommand)]
pub enum DumpAction {
    /// Read a core dump with no SDK: the deadlocks first, the monitors held, the threads and
    /// their stacks, the exceptions, the heap by type, the modules (the runtime's own data
    /// access library reads it, in a child process).
    #[command(
        after_help = "Examples:\n  clrspy dump analyze core_1234_20261207_101500.zst\n  clrspy dump analyze core.zst locks\n  clrspy dump analyze core.zst heap --type '*Customer*' --json"
    )]
    Analyze(DumpAnalyzeArgs),
}

/// What `dump analyze` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DumpView {
    /// Deadlocks, monitors, threads and exceptions in short.
    Summary,
    /// Every managed thread with its stack (`clrstack -all`).
    Threads,
    /// Monitors held: owner, waiters, and the deadlock cycles (`syncblk`).
    Locks,
    /// The exceptions threads hold, with their inner chains (`pe`).
    Exceptions,
    /// Objects by type, count and bytes (`dumpheap -stat`).
    Heap,
    /// The images the process had mapped.
    Modules,
    /// What holds an object alive: the path from a root (`gcroot ADDRESS`, or `--type T` for
    /// a few objects of a type).
    Gcroot,
}

/// `clrspy dump analyze`.
#[derive(Debug, Args)]
pub struct DumpAnalyzeArgs {
    /// The core dump: raw, seekable zstd as `clrspy dump` writes it (read in place), other
    /// zstd or gzip (unpacked to a temporary file first).
    #[arg(value_name = "DUMP")]
    pub file: PathBuf,
    /// What to show.
    #[arg(value_name = "VIEW", value_enum, default_value = "summary")]
    pub view: DumpView,
    /// gcroot: the object's address (hex).
    #[arg(value_name = "ADDRESS")]
    pub address: Option<String>,
    /// Write JSON (keys in docs/dump-analyze.md).
    #[arg(long)]
    pub json: bool,
    /// The data access library (libmscordaccore.so) of the dump's runtime build, when neither
    /// the copy beside the dump nor an installed runtime is that build.
    #[arg(long, value_name = "PATH")]
    pub dac: Option<PathBuf>,
    /// heap: only the types whose name matches; gcroot: the first objects of those types
    /// (with `*` or `?` the whole name must match, without them a part; case-insensitive).
    #[arg(long = "type", value_name = "PATTERN")]
    pub type_name: Option<String>,
    /// heap: rows in the table (0 for all).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub top: usize,
}

/// `clrspy env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    pub process: ProcessArg,
    /// Write a JSON object instead of KEY=VALUE lines.
    #[arg(long)]
    pub json: bool,
    /// Set a variable inside the process instead of listing (NAME=VALUE; .NET 6+). The program
    /// sees it the next time it reads it (e.g. a startup hook or a config reload).
    #[arg(long, value_name = "NAME=VALUE")]
    pub set: Vec<String>,
}

/// `clrspy record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Providers: `Name[:Keywords[:Level[:Key=Value;...]]]`, comma-separated; keywords in hex
    /// or by name joined with '+' (gc+exception).
    #[arg(long, value_name = "LIST")]
    pub providers: Option<String>,
    /// Runtime keywords by name, joined with '+' (gc+exception+contention), as dotnet-trace.
    #[arg(long, value_name = "KEYWORDS")]
    pub clrevents: Option<String>,
    /// Level for --clrevents (0-5 or a name; default informational).
    #[arg(long, value_name = "LEVEL", requires = "clrevents")]
    pub clrevents_level: Option<String>,
    /// A named profile (default: cpu when no --providers); see --list-profiles.
    #[arg(long)]
    pub profile: Option<String>,
    /// List the profiles and what they enable.
    #[arg(long)]
    pub list_profiles: bool,
    /// Stop after this long (5s, 250ms, 2m; see Values); otherwise Ctrl+C or the target's exit.
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub duration: Option<std::time::Duration>,
    /// Output file (default: <name>_<yyyyMMdd_HHmmss>.nettrace, UTC).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// The runtime's buffer for the session: a size (512MB, 1GB); a bare number is MB.
    #[arg(long, value_name = "SIZE", default_value = "256", value_parser = clrspy_collect::parse_buffer_size)]
    pub buffer_size: u32,
    /// Do not ask for rundown at the end (faster stop; methods jitted earlier stay unnamed).
    #[arg(long)]
    pub no_rundown: bool,
    /// Do not record a stack with each event (smaller traces; .NET 6+).
    #[arg(long)]
    pub no_stacks: bool,
    /// How often to read each thread's CPU time from /proc into the trace (Linux), e.g. 50ms
    /// (with the kernel sampler at least 100ms: its samples measure CPU already).
    #[arg(long, value_name = "TIME", default_value = thread_cpu_default(), value_parser = positive_duration)]
    pub thread_cpu_interval: std::time::Duration,
    /// Do not record thread CPU times.
    #[arg(long)]
    pub no_thread_cpu: bool,
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Also convert the trace for a viewer when recording ends (the .nettrace is kept).
    #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
    pub format: Option<Format>,
    /// Keep only the newest SIZE of the stream (64MB, 512KB; MB = 2^20 bytes): bounded disk
    /// however long it runs; the file is still a whole trace with its rundown.
    #[arg(long, value_name = "SIZE", value_parser = ring_size)]
    pub ring: Option<u64>,
    /// Stop when KIND=VALUE fires (repeatable; the first stops): exception=GLOB,
    /// gc-pause-ms=N, gen2, event=PROVIDER/EVENT[:FIELD>VALUE], counter=NAME>N (cpu-usage,
    /// working-set-mb, gc-heap-size-mb, threadpool-queue-length), exit.
    #[arg(long, value_name = "KIND=VALUE")]
    pub stop_on: Vec<String>,
    /// After a trigger fires, keep recording this long (default 5s; 0 for none).
    #[arg(long, value_name = "TIME", requires = "stop_on", value_parser = duration)]
    pub after_trigger: Option<std::time::Duration>,
    /// When the stop trigger fires, also take a heap snapshot of the process (a .gcdump
    /// beside the trace, <trace stem>_<time>.gcdump) while the recording goes on (-p/-n).
    #[arg(long, requires = "stop_on")]
    pub snapshot_heap: bool,
    /// Write a dump at each first-chance exception of this type (a glob over the full name,
    /// e.g. '*.InvalidCastException', or the bare type name); repeat or comma-separate.
    #[arg(long, value_name = "TYPE")]
    pub dump_on_exception: Vec<String>,
    /// At most this many exception dumps.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        requires = "dump_on_exception"
    )]
    pub max_dumps: u32,
    /// What the exception dumps hold: mini, heap, triage or full.
    #[arg(long, value_name = "TYPE", default_value = "mini", value_parser = dump_type)]
    pub dump_type: DumpKind,
    /// Compress the dumps as they are written: gzip (.dmp.gz), zstd (.dmp.zst) or none.
    #[arg(long, value_name = "HOW", default_value = "gzip", value_parser = dump_compression)]
    pub dump_compress: clrspy_collect::Compression,
    /// Where the dumps go (default: the trace's directory).
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<std::path::PathBuf>,
    /// Also have createdump write its crash report (every thread's stack, JSON) beside each
    /// exception dump: <dump>.crashreport.json.
    #[arg(long, requires = "dump_on_exception")]
    pub dump_crash_report: bool,
    /// Hold the throwing thread until its dump is written, so the dump shows the throw: the
    /// startup hook built by hooks/build.sh (ClrspyHold.dll) is loaded into the program
    /// started with -- (.NET 8+).
    #[arg(long, value_name = "DLL", requires = "dump_on_exception")]
    pub dump_hold_hook: Option<std::path::PathBuf>,
    /// A launched program that crashes also leaves a dump (--dump-type, --dump-compress)
    /// beside its crash report.
    #[arg(long, conflicts_with = "no_crash_report")]
    pub dump_on_crash: bool,
    /// Trace the launched program and every .NET process it starts (directly or through
    /// other programs), each into its own trace <name>_<pid>.nettrace in the directory -o
    /// names (created if missing). Processes still running when the program ends (build
    /// servers) have their traces finished then and are left running.
    #[arg(long, requires = "command")]
    pub children: bool,
    /// Do not have a launched program's runtime write a crash report
    /// (<trace>_crash_<pid>.dmp.crashreport.json) when it crashes.
    #[arg(long)]
    pub no_crash_report: bool,
}

/// `clrspy ps`.
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Write a JSON list instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The "just my code" grouping of `report` and `convert`.
#[derive(Debug, Args)]
pub struct GroupingArgs {
    /// Fold the runtime's and frameworks' frames (System.*, Microsoft.*, Interop, generated
    /// code, native frames) into the frame where your code calls them. With
    /// `=PREFIX[,PREFIX...]` (e.g. `--just-my-code=Contoso.*`), only frames starting with
    /// those prefixes are your code.
    #[arg(
        long,
        value_name = "PREFIXES",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub just_my_code: Option<String>,
    /// One more framework prefix for --just-my-code, e.g. `Newtonsoft.*` (repeatable; implies
    /// --just-my-code).
    #[arg(long, value_name = "PREFIX")]
    pub framework: Vec<String>,
    /// Native frames (the kernel sampler's stacks have them): `group` each run of them into
    /// one frame named by what did the work (`[JIT compiler: libclrjit.so]`, `[runtime:
    /// libcoreclr.so]`, `[libc]`, a library's own function), `show` every frame, or `fold`
    /// them into the managed code that called them.
    #[arg(long, value_name = "HOW", default_value = "group", value_parser = ["group", "show", "fold"])]
    pub native: String,
}

impl GroupingArgs {
    /// The grouping asked for, if any.
    pub fn rule(&self) -> Option<clrspy_analysis::JustMyCode> {
        clrspy_analysis::JustMyCode::from_flags(self.just_my_code.as_deref(), &self.framework)
    }

    /// How native frames are shown (`--native`).
    pub fn native_view(&self) -> clrspy_analysis::NativeView {
        clrspy_analysis::NativeView::from_name(&self.native).unwrap_or_default()
    }
}

/// Where precompiled code's names come from (`report`, `convert`).
#[derive(Debug, Args)]
pub struct ImageArgs {
    /// A directory holding copies of the trace's .NET images (matched by file name), to name
    /// precompiled (ReadyToRun) code on another machine than the recording's (repeatable).
    #[arg(long = "symbols", value_name = "DIR")]
    pub symbols: Vec<PathBuf>,
    /// Name precompiled code only from the trace and the --symbols directories, never from
    /// the image files at the paths the trace recorded.
    #[arg(long)]
    pub no_local_images: bool,
}

impl ImageArgs {
    /// The image sources of the flags.
    pub fn sources(&self) -> clrspy_analysis::r2r::ImageSources {
        clrspy_analysis::r2r::ImageSources {
            dirs: self.symbols.clone(),
            original_paths: !self.no_local_images,
        }
    }
}

/// The running process of `dump` and `env`.
#[derive(Debug, Args)]
pub struct ProcessArg {
    /// The process.
    #[arg(
        short = 'p',
        long = "process-id",
        visible_alias = "pid",
        value_name = "PID"
    )]
    pub process_id: u32,
}

/// `clrspy diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The base: a trace (.nettrace, a .zip holding one, a bundle) or a .gcdump.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The trace (or .gcdump) to compare with it.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// What the figures are divided by: requests, seconds, or ops:EVENT (events of that name,
    /// `Provider/Event` or the event's name). Default: requests when both traces served some,
    /// else seconds.
    #[arg(long, value_name = "UNIT", value_parser = |s: &str| s.parse::<clrspy_export::diff::Per>())]
    pub per: Option<clrspy_export::diff::Per>,
    /// Exit 1 when a row of these figures regressed beyond its threshold (which replaces the
    /// default): `cpu:+10%,p99:+20%,alloc:+15%`. Figures: cpu, wait, alloc, exceptions,
    /// contention, gc, requests, p50, p95, p99, errors, http.
    #[arg(long, value_name = "LIMITS", value_parser = |s: &str| s.parse::<clrspy_export::diff::FailIf>())]
    pub fail_if: Option<clrspy_export::diff::FailIf>,
    /// Rows per table besides the ones judged changed.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Also write the differential flame graph of CPU to FILE (SVG: the new trace's stacks,
    /// red grew, blue shrank, per unit of work).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write a self-contained HTML page to FILE: the verdict, the differential flame
    /// graph, both traces' flame graphs side by side, the tables.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write a speedscope file to FILE: both traces' CPU, a profile each, in ms per unit
    /// of work.
    #[arg(long, value_name = "FILE")]
    pub speedscope: Option<PathBuf>,
    /// Write one JSON object (keys in docs/report-json.md).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub images: ImageArgs,
}

/// The trace argument shared by commands.
#[derive(Debug, Args)]
pub struct TraceArg {
    /// Trace file: .nettrace, .netperf, or a .zip holding one trace.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
}

/// `clrspy info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub input: TraceArg,
    /// Write one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `clrspy events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    #[command(flatten)]
    pub input: TraceArg,
    /// Only events of this provider (a name pattern: case-insensitive, `*` and `?`).
    #[arg(long, value_name = "P", value_parser = name_pattern)]
    pub provider: Option<NamePattern>,
    /// Only events with this name ("GC/Start", "GC/*", "Method/LoadVerbose", the trace's own
    /// event name; a name pattern) or event id.
    #[arg(long, value_name = "NAME", value_parser = name_pattern)]
    pub event: Option<NamePattern>,
    /// Stop after this many matching events.
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<u64>,
    /// Write JSON Lines (one object per event) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Leave stacks out of the text output (JSON always has them).
    #[arg(long)]
    pub no_stacks: bool,
    /// List events in file order instead of timestamp order (the runtime interleaves threads;
    /// by default events are sorted between the trace's sequence points).
    #[arg(long)]
    pub file_order: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_flags() {
        let cli = Cli::try_parse_from([
            "clrspy",
            "events",
            "t.nettrace",
            "--provider",
            "Foo",
            "--event",
            "GC/Start",
            "-n",
            "5",
            "--json",
        ])
        .unwrap();
        match cli.command {
            Command::Events(a) => {
                assert_eq!(a.provider.as_ref().map(NamePattern::as_str), Some("Foo"));
                assert_eq!(a.event.as_ref().map(NamePattern::as_str), Some("GC/Start"));
                assert_eq!(a.limit, Some(5));
                assert!(a.json);
            }
            _ => panic!("wrong command"),
        }
    }

    #[test]
    fn rejects_bad_limit() {
        assert!(Cli::try_parse_from(["clrspy", "events", "t", "--limit", "x"]).is_err());
    }

    fn record(args: &[&str]) -> Result<RecordArgs, clap::Error> {
        let mut all = vec!["clrspy", "record"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all).map(|c| match c.command {
            Command::Record(a) => a,
            _ => unreachable!("record parses as record"),
        })
    }

    #[test]
    fn typed_flags_parse_with_the_one_grammar() {
        use std::time::Duration;
        let a = record(&[
            "-p",
            "1",
            "--duration",
            "30",
            "--ring",
            "8MB",
            "--buffer-size",
            "1GB",
            "--stop-on",
            "gen2",
            "--after-trigger",
            "0",
            "--thread-cpu-interval",
            "50ms",
        ])
        .unwrap();
        assert_eq!(a.duration, Some(Duration::from_secs(30)));
        assert_eq!(a.ring, Some(8 << 20));
        assert_eq!(a.buffer_size, 1024);
        assert_eq!(a.after_trigger, Some(Duration::ZERO));
        assert_eq!(a.thread_cpu_interval, Duration::from_millis(50));
        assert_eq!(a.target.process_id, Some(1));
        let d = record(&["-p", "1"]).unwrap();
        assert_eq!((d.buffer_size, d.dump_type.text.as_str()), (256, "mini"));
        assert_eq!(
            d.thread_cpu_interval,
            clrspy_collect::procstat::THREAD_CPU_INTERVAL
        );
        assert_eq!(
            record(&["-p", "1", "--buffer-size", "64"])
                .unwrap()
                .buffer_size,
            64
        );
        for bad in [
            ["--duration", "0"],
            ["--duration", "soon"],
            ["--duration", "31d"],
            ["--ring", "1KB"],
            ["--ring", "lots"],
            ["--buffer-size", "1.5"],
            ["--buffer-size", "512KB"],
            ["--dump-type", "tiny"],
            ["--dump-compress", "zip"],
            ["--thread-cpu-interval", "0"],
        ] {
            let mut args = vec!["-p", "1"];
            args.extend_from_slice(&bad);
            let e = record(&args).unwrap_err();
            assert!(e.to_string().contains(bad[1]), "{bad:?}: {e}");
        }
    }

    #[test]
    fn target_flags_are_one_group() {
        let a = record(&["-n", "web", "--duration", "5s"]).unwrap();
        assert_eq!(a.target.name.as_deref(), Some("web"));
        let a = record(&["--", "dotnet", "app.dll"]).unwrap();
        assert_eq!(a.target.command.len(), 2);
        assert!(record(&["-p", "1", "-n", "web"]).is_err());
        assert!(record(&["-n", "web", "--", "dotnet"]).is_err());
        let p = Cli::try_parse_from(["clrspy", "profile", "-p", "7", "--duration", "2"]).unwrap();
        match p.command {
            Command::Profile(a) => {
                assert_eq!(a.target.process_id, Some(7));
                assert_eq!(a.duration, Some(std::time::Duration::from_secs(2)));
            }
            _ => panic!("wrong command"),
        }
    }

    #[test]
    fn report_window_and_event_patterns() {
        let r = Cli::try_parse_from(["clrspy", "report", "t", "--from", "0", "--to", "2.5"]);
        match r.unwrap().command {
            Command::Report(a) => {
                assert_eq!(a.from.map(|p| p.ns), Some(0));
                assert_eq!(a.to.map(|p| p.ns), Some(2_500_000_000));
            }
            _ => panic!("wrong command"),
        }
        assert!(Cli::try_parse_from(["clrspy", "report", "t", "--from", "-1s"]).is_err());
        let e = Cli::try_parse_from(["clrspy", "events", "t", "--event", "gc/*"]).unwrap();
        match e.command {
            Command::Events(a) => assert!(a.event.unwrap().is_match("GC/Start")),
            _ => panic!("wrong command"),
        }
        assert!(Cli::try_parse_from(["clrspy", "events", "t", "--provider", ""]).is_err());
    }
}

#[cfg(test)]
mod example_tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// The words of an example line (`clrspy ...`), single quotes grouping, up to a pipe or
    /// a redirection.
    fn words(line: &str) -> Vec<String> {
        let line = line.split(['|', '>']).next().unwrap_or(line);
        let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
        for c in line.chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Every command's help ends with examples, and each example parses as clrspy's command
    /// line does (its flags, values and commands exist): they cannot drift from the flags.
    #[test]
    fn every_commands_examples_parse() {
        let cmd = Cli::command();
        let mut checked = 0;
        // Every command and every subcommand but clap's own `help`.
        let mut all: Vec<&clap::Command> = Vec::new();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            all.push(sub);
            all.extend(sub.get_subcommands().filter(|s| s.get_name() != "help"));
        }
        for sub in all {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains("Examples:"),
                "`clrspy {}` has no examples",
                sub.get_name()
            );
            for line in help
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("clrspy "))
            {
                let w = words(line);
                if let Err(e) = Cli::try_parse_from(&w) {
                    panic!("{line}: {e}");
                }
                checked += 1;
            }
        }
        assert!(checked > 40, "{checked}");
    }
}
