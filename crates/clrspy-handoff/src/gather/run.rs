//! The order of a bundle: what is taken before the window (stacks, the first heap snapshot),
//! the window (the session, metrics beside it), what after (the second snapshot, a dump), then
//! redaction — of the environment and command lines first, so the secrets they hold are known
//! and masked in the trace too —, the files derived from the redacted trace, the manifest and
//! the zip.

use std::time::Duration;

use clrspy_collect::kernel::SamplerChoice;
use clrspy_collect::{ChildOutput, Progress, Resolved, RunObserver, Started, StopSignal};
use clrspy_export::metrics::utc_iso;
use clrspy_live::recording::closing::closing_lines;
use clrspy_live::recording::{Extras, KernelNote, RunSpec};
use diagnostics_client::Endpoint;

use super::side::{self, Metrics};
use super::spec::{BundleOutcome, BundleSpec};
use super::staging::{unix_ms, Staging};
use super::{derive, session};
use crate::manifest::Manifest;
use crate::scrub::Redactor;
use crate::HandoffError;

/// The front end of the window: starts the metrics when the process is known, says when a
/// trigger fired.
struct Window<'a> {
    metrics: Option<Metrics>,
    pid: Option<u32>,
    told_trigger: bool,
    /// A launched program's facts and arguments, read once it runs (it may be gone at the
    /// window's end).
    launched: Option<(crate::facts::TargetFacts, Vec<String>)>,
    launched_pid: Option<u32>,
    say: &'a mut dyn FnMut(&str),
}

impl RunObserver for Window<'_> {
    fn started(&mut self, what: Started<'_>) {
        let pid = match what {
            Started::Attach { .. } => self.pid,
            Started::Launch { pid, .. } => {
                self.launched_pid = Some(pid);
                Some(pid)
            }
        };
        if let Some(pid) = pid {
            self.pid = Some(pid);
            self.metrics = Some(Metrics::start(pid));
        }
    }

    fn progress(&mut self, p: &Progress) {
        if let (Some(pid), None) = (self.launched_pid, &self.launched) {
            if p.elapsed >= Duration::from_secs(1) {
                self.launched = Some((crate::facts::target(pid), read_cmdline(pid)));
            }
        }
        if let (Some(left), false) = (p.stopping_in, self.told_trigger) {
            self.told_trigger = true;
            (self.say)(&format!(
                "a stop trigger fired: recording {:.1} s more",
                left.as_secs_f64()
            ));
        }
    }
}

/// Gathers the bundle (see the module's note).
pub(super) fn gather(
    mut spec: BundleSpec,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<BundleOutcome, HandoffError> {
    let mut staging = Staging::new(&spec.output)?;
    let mut notes: Vec<String> = Vec::new();
    let endpoint = match &spec.target {
        Resolved::Attach { endpoint, .. } => Some(endpoint.clone()),
        Resolved::Launch(_) => None,
    };
    let runtime_major = endpoint
        .as_ref()
        .and_then(clrspy_live::counters::runtime_major);
    let planned = session::plan(&spec, runtime_major).map_err(HandoffError::Other)?;
    let heap_diff = spec.symptom.is_some_and(|s| s.heap_diff());
    // The target's facts, arguments and environment while it surely runs.
    let mut facts = endpoint.as_ref().map(|e| crate::facts::target(e.pid));
    let mut argv = endpoint.as_ref().map(|e| read_cmdline(e.pid));
    let env = match &endpoint {
        Some(e) => diagnostics_client::process_environment(e, Duration::from_secs(5))
            .map_err(|e| notes.push(format!("no environment: {e}")))
            .ok(),
        None => Some(std::env::vars().collect()),
    };
    let before = match &endpoint {
        Some(e) => before_window(&spec, e, heap_diff, &mut staging, &mut notes, stop, say)?,
        None => {
            if heap_diff || spec.with_heap || spec.with_dump {
                notes.push("heap snapshots and dumps are taken of a running process (-p or -n), not of one started with --".into());
            }
            None
        }
    };
    let started_ms = unix_ms();
    let extras = Extras {
        ring: spec.ring,
        triggers: spec.triggers.take(),
        ..Extras::default()
    };
    let target_proc = std::mem::replace(&mut spec.target, Resolved::Launch(Vec::new()));
    if let Resolved::Launch(command) = &target_proc {
        argv = Some(
            command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        );
    }
    let known_pid = endpoint.as_ref().map(|e| e.pid);
    let (outcome, metrics_run, seen) = window(
        target_proc,
        extras,
        known_pid,
        &planned,
        &mut staging,
        spec.duration,
        stop,
        say,
    )?;
    let ended_ms = unix_ms();
    let summary = &outcome.summary;
    if spec.require_trigger && summary.reason != clrspy_collect::StopReason::Triggered {
        let why = match summary.reason {
            clrspy_collect::StopReason::Duration => "the window's time passed",
            clrspy_collect::StopReason::Requested => "stopped on request",
            _ => "the process ended",
        };
        return Err(HandoffError::NotTriggered(why.into()));
    }
    for line in closing_lines(summary, None) {
        say(&line);
    }
    if let Some(n) = outcome.child.map(|c| c.extra_runtimes).filter(|n| *n > 0) {
        let line = format!(
            "{n} other .NET process{} started by the program ran untraced: the trace, the reports and the logs are the first runtime's only",
            if n == 1 { "" } else { "es" }
        );
        say(&line);
        notes.push(line);
    }
    if let Some((f, args)) = seen.launched {
        facts = Some(f);
        if !args.is_empty() {
            argv = Some(args);
        }
    }
    let mut target = facts
        .or_else(|| seen.pid.map(crate::facts::target))
        .unwrap_or_default();
    // The heap diff's findings (a type that grew, held by a static) join the trace's.
    let heap_findings = match &endpoint {
        Some(e) => after_window(&spec, e, before, &mut staging, &mut notes, stop, say),
        None => Vec::new(),
    };
    // Redaction: what the environment and command lines hold first, then the trace.
    let mut red = Redactor::new(spec.redact);
    redact_process(&mut red, env.as_deref(), argv, &mut target, &mut staging)?;
    let window = Times {
        started_utc: utc_iso(started_ms),
        ended_utc: utc_iso(ended_ms),
        planned: &planned,
    };
    let manifest = finish(
        &spec,
        target,
        window,
        metrics_run,
        red,
        notes,
        heap_findings,
        &mut staging,
        say,
    )?;
    let exit = outcome
        .child
        .and_then(|c| c.status)
        .and_then(|s| s.code())
        .map(|c| c.clamp(0, 255) as u8);
    Ok(BundleOutcome {
        zip: spec.output.clone(),
        manifest,
        exit,
    })
}

/// The process's environment (written to `environment.txt`) and command line (into `target`)
/// through the redactor, which learns their secrets for the rest.
fn redact_process(
    red: &mut Redactor,
    env: Option<&[(String, String)]>,
    argv: Option<Vec<String>>,
    target: &mut crate::facts::TargetFacts,
    staging: &mut Staging,
) -> Result<(), HandoffError> {
    if let Some(env) = env {
        let shown = red.env(env, "environment");
        staging.write(
            "environment.txt",
            "the process's environment variables (secrets redacted)",
            |w| {
                for (k, v) in &shown {
                    writeln!(w, "{k}={v}")?;
                }
                Ok(())
            },
        )?;
    }
    // Never the raw line: the arguments as read, else the facts' line as text.
    target.command_line = match argv.filter(|a| !a.is_empty()) {
        Some(a) => red.args(&a, "target command line").join(" "),
        None => red.text(&target.command_line, "target command line"),
    };
    Ok(())
}

/// The window's times and session, for the manifest.
struct Times<'a> {
    started_utc: String,
    ended_utc: String,
    planned: &'a session::Planned,
}

/// After the window and the process: the trace scrubbed, the log files copied, the derived
/// files, the metrics, the manifest and the zip.
#[allow(clippy::too_many_arguments)]
fn finish(
    spec: &BundleSpec,
    target: crate::facts::TargetFacts,
    window: Times<'_>,
    metrics_run: Option<side::MetricsRun>,
    mut red: Redactor,
    mut notes: Vec<String>,
    heap_findings: Vec<crate::manifest::FindingBrief>,
    staging: &mut Staging,
    say: &mut dyn FnMut(&str),
) -> Result<Manifest, HandoffError> {
    let command = red
        .args(&spec.command_line, "clrspy command line")
        .join(" ");
    let trace = staging.root().join("trace.nettrace");
    let masked = red.trace_in_place(&trace)?;
    if masked.secrets > 0 {
        say(&format!("{} secrets masked in the trace", masked.secrets));
    }
    copy_log_files(&spec.log_files, &mut red, staging, &mut notes)?;
    say("deriving the reports, logs and counters from the trace ...");
    let derived = derive::derive(&trace, window.planned, staging)?;
    if let Some(e) = &derived.read_error {
        notes.push(format!("the trace ends early: {e}"));
    }
    if let Some(mut run) = metrics_run {
        if let Some(e) = &run.error {
            notes.push(format!("metrics stopped early: {e}"));
        }
        let label = format!("{} (pid {})", target.name, target.pid);
        side::write_metrics(&mut run, &derived.gc_heap, &label, staging)?;
        notes.push(format!(
            "metrics: {} rows; sampling cost {:.3} % of one core",
            run.rows.len(),
            run.cpu_ns as f64 / 1e7 / run.elapsed.as_secs_f64().max(1e-9)
        ));
    }
    notes.push(format!(
        "{} log messages, {} counter values, reports: {}",
        derived.log_records,
        derived.counter_rows,
        derived.reports.join(", ")
    ));
    if !spec.redact {
        notes
            .push("redaction was turned off with --no-redact: secrets may be in every file".into());
    }
    let mut manifest = Manifest {
        format: 1,
        target,
        system: crate::facts::system(),
        started_utc: window.started_utc,
        ended_utc: window.ended_utc,
        command,
        clrspy_version: env!("CARGO_PKG_VERSION").to_string(),
        symptom: spec.symptom.map(|s| s.name().to_string()),
        profile: window.planned.profile.clone(),
        files: staging.files.clone(),
        redacted: red.redactions().to_vec(),
        notes,
        findings: {
            let mut f = derived.findings;
            f.extend(heap_findings);
            // Most severe first, as the trace's are.
            let rank = |s: &str| match s {
                "critical" => 0,
                "warning" => 1,
                _ => 2,
            };
            f.sort_by_key(|x| rank(&x.severity));
            f
        },
    };
    say("writing the zip ...");
    crate::package::finish(staging.root(), &mut manifest, &spec.output)?;
    Ok(manifest)
}

/// Before the window: every thread's stack (hangs, slow requests) and the first heap snapshot
/// (a leak). A failed stack snapshot is a note; a failed heap snapshot ends the bundle (the
/// diff was the point).
fn before_window(
    spec: &BundleSpec,
    endpoint: &Endpoint,
    heap_diff: bool,
    staging: &mut Staging,
    notes: &mut Vec<String>,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<Option<clrspy_analysis::heap::HeapModel>, HandoffError> {
    if spec.symptom.is_some_and(|s| s.stacks_first()) {
        say("taking every thread's stack ...");
        if let Err(e) = side::stacks(endpoint, staging) {
            notes.push(e.to_string());
        }
    }
    if spec.symptom == Some(crate::symptom::Symptom::Hang) {
        say("reading who holds which monitor now (a heap dump, read and deleted) ...");
        match side::monitors(endpoint, staging) {
            Ok(line) => say(&line),
            Err(e) => notes.push(e.to_string()),
        }
    }
    if !heap_diff {
        return Ok(None);
    }
    say("heap snapshot 1 of 2, before the window (it forces a full, blocking GC) ...");
    side::heap_snapshot(
        endpoint,
        "heap/before.gcdump",
        "heap snapshot before the window",
        staging,
        stop,
        say,
    )
    .map(Some)
}

/// After the window: the second heap snapshot and the diff, or the one asked for; the dump.
/// A failure is a note: the trace is the bundle's main part.
fn after_window(
    spec: &BundleSpec,
    endpoint: &Endpoint,
    before: Option<clrspy_analysis::heap::HeapModel>,
    staging: &mut Staging,
    notes: &mut Vec<String>,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Vec<crate::manifest::FindingBrief> {
    let mut findings = Vec::new();
    if before.is_some() || spec.with_heap {
        let n = if before.is_some() { "2 of 2, " } else { "" };
        say(&format!(
            "heap snapshot {n}after the window (it forces a full, blocking GC) ..."
        ));
        match side::heap_snapshot(
            endpoint,
            "heap/after.gcdump",
            "heap snapshot after the window",
            staging,
            stop,
            say,
        ) {
            Ok(after) => {
                if let Some(old) = &before {
                    match side::heap_diff(old, &after, staging) {
                        Ok(f) => findings = f,
                        Err(e) => notes.push(format!("no heap diff: {e}")),
                    }
                }
            }
            Err(e) => {
                staging.drop_file("heap/after.gcdump");
                notes.push(format!("no heap snapshot after the window: {e}"));
            }
        }
    }
    if spec.with_dump {
        say("writing a dump (with the heap, gzip) ...");
        match side::dump(endpoint, staging) {
            Ok(bytes) => say(&format!("dump: {:.1} MB", bytes as f64 / 1e6)),
            Err(e) => {
                staging.drop_file("dump/core.dmp.gz");
                notes.push(format!("no dump: {e}"));
            }
        }
    }
    findings
}

/// What the window saw of the process: its pid, and a launched program's facts and arguments.
struct Seen {
    pid: Option<u32>,
    launched: Option<(crate::facts::TargetFacts, Vec<String>)>,
}

/// The window: the session into `trace.nettrace`, metrics beside it.
#[allow(clippy::too_many_arguments)]
fn window(
    target: Resolved,
    mut extras: Extras,
    known_pid: Option<u32>,
    planned: &session::Planned,
    staging: &mut Staging,
    duration: Duration,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<(clrspy_collect::RunOutcome, Option<side::MetricsRun>, Seen), HandoffError> {
    let trace = staging.create("trace.nettrace", "the EventPipe trace of the window")?;
    // The runtime's sampler suspends every thread at each sample: on a process of hundreds
    // of threads (a hang's waiters, a starved pool) that is most of its CPU. There the
    // kernel's samples, which cost a blocked thread nothing, where the kernel allows them.
    let threads = match &target {
        Resolved::Attach { endpoint, .. } => diagnostics_client::procfs::thread_count(endpoint.pid),
        _ => None,
    };
    if let Some(n) = threads.filter(|&n| n >= MANY_THREADS) {
        extras.sampler = SamplerChoice::Auto(clrspy_sampler::DEFAULT_RATE_HZ);
        say(&format!(
            "{n} threads: CPU samples from the kernel's sampler where it is allowed (the runtime's suspends every thread at each sample: on this many, most of the process's CPU)"
        ));
    }
    let mut kernel_note = None;
    let prepared = extras
        .prepare(&target, &planned.config, Box::new(|_| {}), &mut |n| {
            kernel_note = Some(n)
        })
        .map_err(|e| HandoffError::Other(e.to_string()))?;
    match kernel_note {
        Some(KernelNote::On(rate, _)) => say(&format!(
            "the kernel samples the CPU at {rate} Hz (nothing suspended)"
        )),
        Some(KernelNote::Runtime(why)) => say(&format!("the runtime's sampler samples: {why}")),
        _ => {}
    }
    let spec = RunSpec {
        output: Some(trace.clone()),
        duration: Some(duration),
        thread_cpu: Some(Duration::from_millis(100)),
        stop,
        child_stdout: ChildOutput::Inherit,
    };
    say(&format!(
        "recording for up to {:.0} s ({}) ...",
        duration.as_secs_f64(),
        planned.profile
    ));
    let mut w = Window {
        metrics: None,
        pid: known_pid,
        told_trigger: false,
        launched: None,
        launched_pid: None,
        say,
    };
    let outcome = prepared.run(target, spec, &mut w);
    let metrics = w.metrics.take().map(Metrics::finish);
    let seen = Seen {
        pid: w.pid,
        launched: w.launched.take(),
    };
    extras.finish();
    let outcome = outcome.map_err(|e| HandoffError::Other(e.to_string()))?;
    Ok((outcome, metrics, seen))
}

/// From this many threads on, a bundle samples with the kernel's sampler where it is allowed:
/// the runtime's suspends every thread at each sample, which on a process of hundreds of
/// threads (a hang's waiters, a starved pool) is most of its CPU.
pub(crate) const MANY_THREADS: u64 = 100;

/// A process's arguments (`/proc/PID/cmdline`), empty when unreadable.
fn read_cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The files of `--logs GLOB`, each line through the redactor, into `logs/files/`.
fn copy_log_files(
    globs: &[String],
    red: &mut Redactor,
    staging: &mut Staging,
    notes: &mut Vec<String>,
) -> Result<(), HandoffError> {
    for pattern in globs {
        let found = glob_files(pattern);
        if found.is_empty() {
            notes.push(format!("--logs {pattern}: no file matched"));
        }
        for src in found {
            let name = src
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "log".into());
            let rel = format!("logs/files/{name}");
            let dst = staging.create(&rel, &format!("log file {}", src.display()))?;
            if let Err(e) = red.copy_file(&src, &dst, &rel) {
                staging.drop_file(&rel);
                notes.push(format!("{}: {e}", src.display()));
            }
        }
    }
    Ok(())
}

/// The files `pattern` names: itself without wildcards, else the files of its folder whose
/// names match its last part (`*`, `?`; at most 100, by name).
fn glob_files(pattern: &str) -> Vec<std::path::PathBuf> {
    let path = std::path::Path::new(pattern);
    if !clrspy_values::pattern::has_wildcards(pattern) {
        return if path.is_file() {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        dir
    };
    let name = name.to_string_lossy();
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter(|e| {
                    clrspy_values::pattern::matches(&name, &e.file_name().to_string_lossy())
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.truncate(100);
    found
}
