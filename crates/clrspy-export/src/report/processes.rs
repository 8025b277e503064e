//! The `processes` report: a folder of traces of one process tree (`record --children`) read
//! as one — CPU per process with its command line and hottest method, the hottest methods
//! across the tree, and what recording the tree cost.
//!
//! Each trace is analysed on its own and folded into the report as it comes
//! (`ProcessesBuilder::add`), so a tree of many traces takes the memory of one analysis.

use std::collections::HashMap;
use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};
use serde::Serialize;

use super::process::process_cpu;
use super::rows::MethodWeight;
use super::text::{method_table, TextStyle, Unit};
use super::view::TextView;
use crate::units::{fit, percent, round1};

/// The traces of a folder (`*.nettrace`, `*.nettrace.zip`; not its subfolders), by name.
pub fn traces_in(dir: &std::path::Path) -> io::Result<Vec<std::path::PathBuf>> {
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase());
            p.is_file()
                && name.is_some_and(|n| n.ends_with(".nettrace") || n.ends_with(".nettrace.zip"))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// The report of folder `dir` with the `top` hottest methods: each of its traces analysed by
/// `analyze` in turn (a trace it fails on is listed as not read); an error (said for the
/// user) when the folder cannot be listed or holds no trace.
pub fn of_folder(
    dir: &std::path::Path,
    top: usize,
    analyze: &mut dyn FnMut(&std::path::Path) -> Result<Analysis, String>,
) -> Result<ProcessesReport, String> {
    let traces = traces_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if traces.is_empty() {
        return Err(format!("{}: no .nettrace files in it", dir.display()));
    }
    let mut tree = ProcessesBuilder::new();
    for t in &traces {
        let name = t.file_name().map_or_else(
            || t.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match analyze(t) {
            Ok(a) => tree.add(&name, &a),
            Err(e) => tree.unreadable(&name, &e),
        }
    }
    Ok(tree.finish(&dir.display().to_string(), top))
}

/// One process of the tree.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessRow {
    /// Its trace's file name.
    pub trace: String,
    /// The process id, when the trace says.
    pub pid: Option<u64>,
    /// The program (entry assembly or executable), when the trace says.
    pub program: Option<String>,
    /// The command line (EventPipe's `ProcessInfo`, .NET 5+), when the trace has it.
    pub command_line: Option<String>,
    /// First to last event, ms.
    pub duration_ms: f64,
    /// The process's CPU over its trace, ms.
    pub cpu_ms: f64,
    /// True when that CPU is measured (thread CPU readings), not estimated from samples.
    pub exact: bool,
    /// CPUs it used on average (its CPU over its duration).
    pub(crate) cpus_used: f64,
    /// Its share of the tree's CPU, percent.
    pub percent: f64,
    /// Its hottest method (CPU, exclusive; clrspy's bracketed groups skipped), when sampled.
    pub hottest: Option<MethodWeight>,
    /// EventPipe's threads in it (the recording's cost inside the target), ms.
    pub(crate) eventpipe_cpu_ms: f64,
    /// clrspy's own CPU recording it (its session), ms, when the trace has the readings.
    pub(crate) recorder_cpu_ms: Option<f64>,
}

/// A trace of the folder that could not be read.
#[derive(Clone, Debug, Serialize)]
pub struct Unreadable {
    /// Its file name.
    pub trace: String,
    /// Why.
    pub error: String,
}

/// What recording the tree cost.
#[derive(Clone, Debug, Serialize)]
pub struct RecordingCost {
    /// EventPipe's threads in every target, ms.
    pub(crate) eventpipe_cpu_ms: f64,
    /// Their share of the tree's CPU, percent.
    pub(crate) eventpipe_percent: f64,
    /// clrspy's sessions, summed, ms (null when no trace has the readings).
    pub(crate) recorder_cpu_ms: Option<f64>,
    /// How to record the tree for less, one piece of advice a line.
    pub advice: Vec<String>,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessesReport {
    /// The folder, as the user named it.
    pub folder: String,
    /// Every process's CPU, ms.
    pub(crate) total_cpu_ms: f64,
    /// Every process, busiest first.
    pub processes: Vec<ProcessRow>,
    /// The hottest methods across the tree: each method's exclusive CPU summed over the
    /// processes, percent of the tree's CPU.
    pub(crate) top_exclusive: Vec<MethodWeight>,
    /// What the recording cost.
    pub recording: RecordingCost,
    /// Traces that could not be read (the report covers the others).
    pub unreadable: Vec<Unreadable>,
}

/// Builds a [`ProcessesReport`] one analysis at a time.
#[derive(Debug, Default)]
pub(crate) struct ProcessesBuilder {
    processes: Vec<ProcessRow>,
    methods: HashMap<String, (f64, f64)>,
    unreadable: Vec<Unreadable>,
    samples_seen: bool,
}

impl ProcessesBuilder {
    /// An empty report.
    pub(crate) fn new() -> ProcessesBuilder {
        ProcessesBuilder::default()
    }

    /// Folds in the analysis of the trace named `trace`.
    pub(crate) fn add(&mut self, trace: &str, a: &Analysis) {
        let p = process_cpu(a);
        let profile = a.profile(&StackFilter::default());
        let (excl, _) = profile.top(Metric::Cpu, &a.symbols);
        let ms = profile.interval_ns as f64 / 1e6;
        let total = profile.total(Metric::Cpu);
        let sampled = profile.rows.iter().any(|r| r.samples > 0);
        self.samples_seen |= sampled;
        let hottest = excl
            .iter()
            .filter(|_| sampled)
            .find(|m| !m.0.starts_with('['))
            .map(|m| MethodWeight {
                method: m.0.clone(),
                samples: round1(m.1),
                percent: percent(m.1, total),
                ms: round1(m.1 * ms),
                called_from: None,
            });
        if sampled {
            for (name, w) in excl {
                let e = self.methods.entry(name).or_default();
                e.0 += w;
                e.1 += w * ms;
            }
        }
        let duration_ms = a.duration_ns as f64 / 1e6;
        self.processes.push(ProcessRow {
            trace: trace.to_string(),
            pid: a.process_id,
            program: a.process_name.clone(),
            command_line: a.command_line.clone(),
            duration_ms: round1(duration_ms),
            cpu_ms: p.cpu_ms,
            exact: p.exact,
            cpus_used: if duration_ms > 0.0 {
                (p.cpu_ms / duration_ms * 100.0).round() / 100.0
            } else {
                0.0
            },
            percent: 0.0,
            hottest,
            eventpipe_cpu_ms: p.overhead_cpu_ms,
            recorder_cpu_ms: p.recorder_cpu_ms,
        });
    }

    /// Notes a trace that could not be read.
    pub(crate) fn unreadable(&mut self, trace: &str, error: &str) {
        self.unreadable.push(Unreadable {
            trace: trace.to_string(),
            error: error.to_string(),
        });
    }

    /// The report of folder `folder`, with the `top` hottest methods.
    pub(crate) fn finish(mut self, folder: &str, top: usize) -> ProcessesReport {
        let total: f64 = self.processes.iter().map(|p| p.cpu_ms).sum();
        for p in &mut self.processes {
            p.percent = percent(p.cpu_ms, total);
        }
        self.processes.sort_by(|a, b| {
            b.cpu_ms
                .total_cmp(&a.cpu_ms)
                .then_with(|| a.trace.cmp(&b.trace))
        });
        let mut methods: Vec<(String, (f64, f64))> = self.methods.into_iter().collect();
        methods.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1).then_with(|| a.0.cmp(&b.0)));
        let top_exclusive = methods
            .into_iter()
            .take(top)
            .map(|(method, (samples, ms))| MethodWeight {
                method,
                samples: round1(samples),
                percent: percent(ms, total),
                ms: round1(ms),
                called_from: None,
            })
            .collect();
        let eventpipe: f64 = self.processes.iter().map(|p| p.eventpipe_cpu_ms).sum();
        let recorder: Vec<f64> = self
            .processes
            .iter()
            .filter_map(|p| p.recorder_cpu_ms)
            .collect();
        let recording = RecordingCost {
            eventpipe_cpu_ms: round1(eventpipe),
            eventpipe_percent: percent(eventpipe, total),
            recorder_cpu_ms: (!recorder.is_empty()).then(|| round1(recorder.iter().sum())),
            advice: advice(self.samples_seen),
        };
        ProcessesReport {
            folder: folder.to_string(),
            total_cpu_ms: round1(total),
            processes: self.processes,
            top_exclusive,
            recording,
            unreadable: self.unreadable,
        }
    }
}

/// How to record a tree for less: each process pays for EventPipe's session (its threads, and
/// the stacks it walks); clrspy pays for reading and decoding.
fn advice(sampled: bool) -> Vec<String> {
    let mut a = Vec::new();
    if sampled {
        a.push(
            "the CPU profile (1 ms samples of every thread, each with its stack) is most of the cost: \
             for GCs, exceptions or loads record `--profile gc-collect` or `--profile dotnet-common` \
             (no samples; --list-profiles)"
                .to_string(),
        );
    }
    a.push(
        "`--no-stacks` keeps the events but not their stacks (smaller traces, less work in each \
         process; no call paths in the reports)"
            .to_string(),
    );
    a.push(
        "a build's short-lived processes each pay the session's start and rundown: `record -p PID` \
         on the one long process that matters costs the rest nothing"
            .to_string(),
    );
    a
}

impl TextView for ProcessesReport {
    /// The summary of a folder (a process tree).
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "{}: {} processes, {:.1} s of CPU",
                self.folder,
                self.processes.len(),
                self.total_cpu_ms / 1e3
            ))
        )?;
        for u in &self.unreadable {
            writeln!(out, "  not read: {}: {}", u.trace, u.error)?;
        }
        writeln!(
            out,
            "  {:>10} {:>5} {:>6}  {:<8} program (command line)",
            "CPU ms", "CPUs", "%", "pid"
        )?;
        for p in &self.processes {
            let pid = p.pid.map_or_else(|| "?".to_string(), |p| p.to_string());
            let name = match (&p.program, &p.command_line) {
                (Some(prog), Some(line)) => format!("{prog} ({line})"),
                (Some(prog), None) => prog.clone(),
                (None, Some(line)) => line.clone(),
                (None, None) => p.trace.clone(),
            };
            let estimated = if p.exact { "" } else { "~" };
            writeln!(
                out,
                "  {:>10} {:>5.2} {:>5.1}%  {pid:<8} {}",
                format!("{estimated}{:.1}", p.cpu_ms),
                p.cpus_used,
                p.percent,
                fit(&name, style.room(36))
            )?;
            if let Some(h) = &p.hottest {
                writeln!(
                    out,
                    "  {:>34} hottest: {} ({:.1}% of its CPU)   {}",
                    "",
                    fit(&h.method, style.room(70)),
                    h.percent,
                    p.trace
                )?;
            } else {
                writeln!(out, "  {:>34} {}", "", p.trace)?;
            }
        }
        if !self.top_exclusive.is_empty() {
            writeln!(
                out,
                "\n{}",
                style.heading("Hottest across the tree (CPU, exclusive, % of the tree's CPU):")
            )?;
            method_table(out, &self.top_exclusive, Unit::Ms, style)?;
        }
        let r = &self.recording;
        let mut parts = Vec::new();
        if r.eventpipe_cpu_ms > 0.0 {
            parts.push(format!(
                "EventPipe threads in the processes {:.1} s ({:.1}% of the tree's CPU)",
                r.eventpipe_cpu_ms / 1e3,
                r.eventpipe_percent
            ));
        }
        if let Some(ms) = r.recorder_cpu_ms {
            parts.push(format!(
                "clrspy's sessions {:.1} s ({:.1}% of the tree's CPU)",
                ms / 1e3,
                percent(ms, self.total_cpu_ms)
            ));
        }
        if parts.is_empty() {
            parts.push("not measured in these traces".to_string());
        }
        writeln!(
            out,
            "\n{}",
            style.heading(&format!("Recording cost: {}", parts.join("; ")))
        )?;
        writeln!(out, "  To record the tree for less:")?;
        for a in &r.advice {
            writeln!(out, "  - {a}")?;
        }
        if let Some(busiest) = self.processes.first() {
            writeln!(out, "\n{}", style.heading("Next"))?;
            writeln!(
                out,
                "  clrspy report {}/{}   (the busiest process)",
                self.folder.trim_end_matches('/'),
                busiest.trace
            )?;
        }
        Ok(())
    }
}
