//! The rules file's shape: rules, what they match, their actions and limits. The same types
//! read JSON and TOML and give the JSON Schema; unknown fields are errors, and checks that
//! span several fields of a rule (an action is required, `after_trigger` needs `stop_on`) run
//! as the rule is read, so they too are reported at the rule's place in the file.

use schemars::JsonSchema;
use serde::Deserialize;

use clr_events::trigger_spec::TriggerSpec;

use crate::bundle::BundleAction;
use crate::values::{
    Compression, CounterSpecText, Delay, DumpKind, Dur, Glob, Pattern, ProfileName, ProviderText,
    RuleName, UserSpec,
};

/// A rules file: which .NET processes get which treatment.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "clrspy rules")]
pub(crate) struct RulesFile {
    /// The schema this file follows (for editors; `clrspy rules schema` prints it). Accepted
    /// and not read.
    #[serde(rename = "$schema", default)]
    _schema: Option<String>,
    /// The rules, in order; a process gets the actions of every rule it matches.
    pub(crate) rules: Vec<Rule>,
}

/// One rule: which processes, what to do, and how often at most.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(try_from = "RawRule")]
pub struct Rule {
    /// The rule's name; its files go to a folder of this name in the output folder.
    pub name: String,
    /// Which processes it applies to (all conditions must hold).
    pub matcher: Match,
    /// Record a trace.
    pub trace: Option<TraceAction>,
    /// Write a dump.
    pub dump: Option<DumpAction>,
    /// Take a heap snapshot (`.gcdump`).
    pub heap: Option<HeapAction>,
    /// Collect counters and metrics to a file while the process runs.
    pub counters: Option<CountersAction>,
    /// Leave a support bundle (`clrspy bundle`), at once or when a trigger fires.
    pub bundle: Option<BundleAction>,
    /// The .NET processes started by a process it matched (at any depth) get its actions too.
    pub children: bool,
    /// How much it may do.
    pub limits: Limits,
}

/// A rule as written, before the checks across its fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Rule")]
struct RawRule {
    /// The rule's name; its files go to a folder of this name in the output folder.
    name: RuleName,
    /// Free text for people (JSON has no comments).
    #[serde(default, alias = "comment")]
    #[allow(dead_code)]
    description: Option<String>,
    /// Which processes it applies to: every condition given must hold.
    #[serde(rename = "match")]
    matcher: Match,
    /// Record a trace of the process.
    #[serde(default)]
    trace: Option<TraceAction>,
    /// Write a dump of the process: at once, on the exceptions named, or at its crash.
    #[serde(default)]
    dump: Option<DumpAction>,
    /// Take a heap snapshot (`.gcdump`, as `clrspy gcdump` does) of the process when the rule
    /// matches it. It forces a full, blocking GC in the process.
    #[serde(default)]
    heap: Option<HeapAction>,
    /// Collect counters and metrics (EventCounters and System.Diagnostics.Metrics meters, as
    /// `clrspy counters collect` does) to a file while the process runs, within the rule's
    /// `disk_mb`.
    #[serde(default)]
    counters: Option<CountersAction>,
    /// Leave a support bundle of the process (as `clrspy bundle` does) in the rule's folder:
    /// the trace of a window and its reports, the app's logs, metrics and counters, zipped.
    /// With `stop_on` it waits for the slow moment (keeping the newest `ring_mb` of trace)
    /// and is kept only when a trigger fired.
    #[serde(default)]
    bundle: Option<BundleAction>,
    /// Also every .NET process started by a process this rule matches, directly or through
    /// other processes (a shell script, a build tool): each gets the rule's actions and files
    /// of its own, and counts against `max_actions` like any matched process. The process
    /// matched may itself be a .NET program or not (a script's name or command line).
    #[serde(default)]
    children: bool,
    /// Limits: how many actions, how often, how much disk.
    #[serde(default)]
    limits: Limits,
}

impl TryFrom<RawRule> for Rule {
    type Error = String;

    fn try_from(r: RawRule) -> Result<Rule, String> {
        let name = r.name.0;
        // Every mistake of the rule, a line each (the parser splits them).
        let mut mistakes = Vec::new();
        if r.matcher.is_empty() {
            mistakes.push(format!(
                "rule \"{name}\": \"match\" has no condition; write {{ \"name\": \"*\" }} to mean every .NET process"
            ));
        }
        if r.trace.is_none()
            && r.dump.is_none()
            && r.heap.is_none()
            && r.counters.is_none()
            && r.bundle.is_none()
        {
            mistakes.push(format!(
                "rule \"{name}\" has no action: give it \"trace\", \"dump\", \"heap\", \"counters\" or \"bundle\" (or several)"
            ));
        }
        if let Some(b) = &r.bundle {
            mistakes.extend(b.mistakes(&name));
        }
        if r.counters
            .as_ref()
            .and_then(|c| c.refresh_interval)
            .is_some_and(|d| d.0 < std::time::Duration::from_millis(100))
        {
            mistakes.push(format!(
                "rule \"{name}\": the counters' \"refresh_interval\" must be at least 100ms"
            ));
        }
        if let Some(t) = &r.trace {
            if t.after_trigger.is_some() && t.stop_on.is_empty() {
                mistakes.push(format!(
                    "rule \"{name}\": \"after_trigger\" needs \"stop_on\" (the trigger it follows)"
                ));
            }
            if t.ring_mb == Some(0) || t.ring_mb.is_some_and(|m| m > 65536) {
                mistakes.push(format!(
                    "rule \"{name}\": \"ring_mb\" must be between 1 and 65536"
                ));
            }
            if t.rate_hz == Some(0) || t.rate_hz.is_some_and(|r| r > 10_000) {
                mistakes.push(format!(
                    "rule \"{name}\": \"rate_hz\" must be between 1 and 10000"
                ));
            }
            if t.rate_hz.is_some() && matches!(t.sampler, None | Some(SamplerKind::Runtime)) {
                mistakes.push(format!(
                    "rule \"{name}\": \"rate_hz\" is the kernel sampler's: it needs \"sampler\": \"kernel\" or \"auto\""
                ));
            }
            if t.buffer_mb == Some(0) || t.buffer_mb.is_some_and(|m| m > 4096) {
                mistakes.push(format!(
                    "rule \"{name}\": \"buffer_mb\" must be between 1 and 4096"
                ));
            }
        }
        if matches!(
            r.heap.as_ref().and_then(|h| h.when.as_ref()),
            Some(TriggerSpec::Exit)
        ) {
            mistakes.push(format!(
                "rule \"{name}\": a heap snapshot cannot be taken when the process exits (\"when\": \"exit\")"
            ));
        }
        if let Some(d) = &r.dump {
            if d.hold_hook.is_some() && d.on_exception.is_empty() {
                mistakes.push(format!(
                    "rule \"{name}\": \"hold_hook\" needs \"on_exception\" (the exceptions it holds at)"
                ));
            }
            if d.hold_hook.as_deref().is_some_and(|h| !h.starts_with('/')) {
                mistakes.push(format!(
                    "rule \"{name}\": \"hold_hook\" must be an absolute path (the runtime loads it from its own working directory)"
                ));
            }
            if d.on_crash && d.on_exception.is_empty() && d.kind.is_some() {
                mistakes.push(format!(
                    "rule \"{name}\": \"type\" does not apply to crash dumps: the runtime writes them with the type its DOTNET_DbgMiniDumpType says"
                ));
            }
        }
        if r.limits.max_actions == Some(0) {
            mistakes.push(format!(
                "rule \"{name}\": \"max_actions\": 0 would never act; remove the rule instead"
            ));
        }
        if r.limits.disk_mb == Some(0) {
            mistakes.push(format!(
                "rule \"{name}\": \"disk_mb\": 0 leaves no room for any file"
            ));
        }
        if !mistakes.is_empty() {
            return Err(mistakes.join("\n"));
        }
        Ok(Rule {
            name,
            matcher: r.matcher,
            trace: r.trace,
            dump: r.dump,
            heap: r.heap,
            counters: r.counters,
            bundle: r.bundle,
            children: r.children,
            limits: r.limits,
        })
    }
}

/// Which processes a rule applies to. Every condition given must hold; at least one is needed.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The process name (glob, case-insensitive): its entry assembly (`app` for `dotnet
    /// app.dll`), its executable's file name, or its kernel name (`/proc/PID/comm`).
    #[serde(default, alias = "process_name")]
    pub name: Option<Glob>,
    /// A regular expression found anywhere in the command line (arguments joined by spaces).
    #[serde(default, alias = "cmdline")]
    pub command_line: Option<Pattern>,
    /// The entry assembly's name as the runtime reports it (glob, case-insensitive).
    #[serde(default)]
    pub entry_assembly: Option<Glob>,
    /// The process's real user: a name or a uid.
    #[serde(default)]
    pub user: Option<UserSpec>,
    /// Where the process runs: in a container or not, which PID namespace, which cgroup.
    #[serde(default)]
    pub container: Option<ContainerMatch>,
}

impl Match {
    /// True when no condition is given.
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.command_line.is_none()
            && self.entry_assembly.is_none()
            && self.user.is_none()
            && self.container.as_ref().is_none_or(|c| c.is_empty())
    }
}

/// Container conditions.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContainerMatch {
    /// true: only processes in another PID namespace than clrspy's (a container); false: only
    /// processes in clrspy's own.
    #[serde(default)]
    pub inside: Option<bool>,
    /// The PID namespace's inode number (`readlink /proc/PID/ns/pid` shows `pid:[N]`).
    #[serde(default)]
    pub(crate) pid_namespace: Option<u64>,
    /// A glob over the process's cgroup path (`/proc/PID/cgroup`), e.g. `*docker-*` or
    /// `/system.slice/web.service`.
    #[serde(default)]
    pub cgroup: Option<Glob>,
}

impl ContainerMatch {
    fn is_empty(&self) -> bool {
        self.inside.is_none() && self.pid_namespace.is_none() && self.cgroup.is_none()
    }
}

/// Record a trace of each process the rule matches.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceAction {
    /// A named profile (`clrspy record --list-profiles`); "cpu" when neither it nor
    /// `providers` is given.
    #[serde(default)]
    pub profile: Option<ProfileName>,
    /// Providers as dotnet-trace writes them, one per string; added to the profile's.
    #[serde(default)]
    pub providers: Vec<ProviderText>,
    /// Keep only the last this many megabytes of the trace (a ring), written out when the
    /// trace ends or a stop trigger fires.
    #[serde(default)]
    pub ring_mb: Option<u32>,
    /// Stop after this long (otherwise when the process exits, a trigger fires, or watch stops).
    #[serde(default)]
    pub duration: Option<Dur>,
    /// Stop when one of these happens (the first to fire wins): `{"exception": "System.Net.*"}`,
    /// `{"gc_pause_ms": 200}`, `"gen2"`, `{"event": "PROVIDER/EVENT[:FIELD OP VALUE]"}`,
    /// `{"counter": "cpu-usage>80"}`, `"exit"` (as `clrspy record --stop-on`).
    #[serde(default)]
    pub stop_on: Vec<TriggerSpec>,
    /// After a stop trigger fires, keep recording this long before stopping (5s when not
    /// given; "0" stops at once).
    #[serde(default)]
    pub after_trigger: Option<Delay>,
    /// The runtime's event buffer in megabytes (256 when not given).
    #[serde(default)]
    pub buffer_mb: Option<u32>,
    /// Who takes the CPU samples: "runtime" (the default: the runtime's sample profiler,
    /// which suspends the threads to sample), "kernel" (perf_event_open on the process's
    /// threads: nothing suspended, native frames named; where the kernel refuses, the
    /// runtime's sampler, and the log says why) or "auto" (the kernel's where it samples
    /// kernel mode too, so waits have their stacks; else the runtime's, and the log says why).
    #[serde(default)]
    pub sampler: Option<SamplerKind>,
    /// The kernel sampler's rate: samples per second per thread on a CPU (999 when not given).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub rate_hz: Option<u32>,
}

/// Who takes a trace's CPU samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SamplerKind {
    /// The runtime's sample profiler (suspends the managed threads to walk their stacks).
    Runtime,
    /// The kernel (perf_event_open, cpu-clock, user callchains).
    Kernel,
    /// The kernel where it samples kernel mode too, else the runtime.
    Auto,
}

impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Write a dump of each process the rule matches.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DumpAction {
    /// What the dump holds (mini when not given).
    #[serde(rename = "type", default)]
    pub kind: Option<DumpKind>,
    /// Dump when an exception whose type name matches one of these globs is thrown (first
    /// chance); without it (and without `on_crash`), dump as soon as the process is seen.
    #[serde(default)]
    pub on_exception: Vec<Glob>,
    /// Keep the dump the runtime writes when the process crashes (an unhandled exception, a
    /// fatal signal): once the process is gone, it is compressed into the rule's folder with
    /// its crash report beside it, and the fatal exception logged. The runtime writes it only
    /// when the process was started with `DOTNET_DbgEnableMiniDump=1` (its type is the
    /// runtime's `DOTNET_DbgMiniDumpType`); without it, watch logs that it cannot.
    #[serde(default)]
    pub on_crash: bool,
    /// The hold mode of `on_exception` for processes held at watch's `--listen` port: the
    /// path of clrspy's hook (`ClrspyHold.dll`, built by `hooks/build.sh`), applied to the
    /// runtime while it is held (.NET 8 or later). At a matching first-chance exception the
    /// throwing thread waits until its dump is written, so the dump shows it inside the throw.
    /// Processes found otherwise get the usual `on_exception` watch.
    #[serde(default)]
    pub hold_hook: Option<String>,
    /// Compress the dump once written.
    #[serde(default)]
    pub compress: Compression,
    /// Also read each dump at once (the runtime's own data access library, in a child
    /// process) and write what it says beside it as `DUMP.analysis.json`: the threads and
    /// their stacks, the monitors held with their owners and waiters, the deadlock cycles and
    /// the exceptions the threads hold (`clrspy dump analyze --json`); a crash dump's
    /// analysis names the exception that ended the process. A mini dump has no monitors'
    /// owners: use `"type": "heap"` for hangs.
    #[serde(default)]
    pub analyze: bool,
}

/// Take a heap snapshot (`.gcdump`) of each process the rule matches: when it is matched, or
/// (with `when`) once, the first time a trigger fires in it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeapAction {
    /// Take it when this trigger fires instead of at once (a small session watches the
    /// process for it; the same forms as a trace's `stop_on`): `{"counter":
    /// "gc-heap-size-mb>500"}`, `"gen2"`, `{"gc_pause_ms": 200}`, `{"exception": "System.*"}`,
    /// `{"event": "PROVIDER/EVENT[:FIELD OP VALUE]"}`. One snapshot per process.
    #[serde(default)]
    pub when: Option<TriggerSpec>,
    /// Give up when the snapshot has not completed after this long (30s when not given).
    #[serde(default)]
    pub timeout: Option<Dur>,
}

/// Collect counters and metrics of each process the rule matches into
/// `<process>_<pid>_<stamp>.counters.<format>` in the rule's folder, from the match until the
/// process ends (or watch stops, or the file alone outgrows the rule's `disk_mb`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountersAction {
    /// Which counters, in dotnet-counters' syntax: providers and meters separated by commas,
    /// each optionally with its counters in brackets —
    /// `"System.Runtime,Microsoft.AspNetCore.Hosting[http.server.request.duration]"`;
    /// `EventCounters\\System.Runtime` asks for the old EventCounters. System.Runtime when not
    /// given.
    #[serde(default)]
    pub counters: Option<CounterSpecText>,
    /// How often the runtime publishes them (1s when not given; at least 100ms).
    #[serde(default)]
    pub refresh_interval: Option<Dur>,
    /// The file's format: `jsonl` (one JSON object per value, the default), `csv` or
    /// `prometheus` (text exposition, one block per interval).
    #[serde(default)]
    pub format: CountersFormat,
}

/// The format of a counters action's file.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CountersFormat {
    /// JSON Lines.
    #[default]
    Jsonl,
    /// CSV with a header.
    Csv,
    /// Prometheus' text exposition format.
    Prometheus,
}

impl CountersFormat {
    /// The file's extension after `.counters`.
    pub fn extension(self) -> &'static str {
        match self {
            CountersFormat::Jsonl => "jsonl",
            CountersFormat::Csv => "csv",
            CountersFormat::Prometheus => "prom",
        }
    }
}

/// The heap snapshot's timeout when the rule gives none.
pub(crate) const DEFAULT_HEAP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl HeapAction {
    /// The snapshot's timeout.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout.map_or(DEFAULT_HEAP_TIMEOUT, |d| d.0)
    }
}

/// What a rule may do at most.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// At most this many actions in all (each trace, dump, heap snapshot and bundle counts
    /// one), for the whole time watch runs.
    #[serde(default)]
    pub max_actions: Option<u32>,
    /// At least this long between two actions of the rule.
    #[serde(default)]
    pub cooldown: Option<Dur>,
    /// The rule's output folder may hold at most this many megabytes: the oldest files are
    /// removed first to make room, and a trace that alone outgrows it is stopped. 1024 when
    /// not given.
    #[serde(default, alias = "disk_budget_mb")]
    pub disk_mb: Option<u64>,
}

/// The disk budget of a rule that gives none, in megabytes.
pub(crate) const DEFAULT_DISK_MB: u64 = 1024;

impl Limits {
    /// The disk budget in bytes.
    pub fn disk_bytes(&self) -> u64 {
        self.disk_mb
            .unwrap_or(DEFAULT_DISK_MB)
            .saturating_mul(1024 * 1024)
    }
}
