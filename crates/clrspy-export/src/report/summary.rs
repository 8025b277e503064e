//! The `summary` report: one screen over everything the trace supports, with the commands to
//! run next. It is made of the other reports' objects (top 5 of each).

use std::io::{self, Write};

use clrspy_analysis::cpu::CpuSource;
use clrspy_analysis::{Analysis, DecodeFailures, Metric};
use serde::Serialize;

use super::alloc::AllocReport;
use super::contention::ContentionReport;
use super::exceptions::ExceptionsReport;
use super::runqueue::{self, CpuThrottling};
use super::stack::StackReport;
use super::text::{method_table, TextStyle, Unit};
use super::view::{ReportKind, ReportOptions, TextView};
use crate::units::human_bytes;
use clrspy_analysis::gc::GcTotals;

/// The GC part of the summary: totals only.
#[derive(Clone, Debug, Serialize)]
pub struct GcSummary {
    /// Totals over the window.
    pub totals: GcTotals,
}

/// The summary.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryReport {
    /// The trace, as the user named it.
    pub trace: String,
    /// First to last event, ms.
    pub duration_ms: f64,
    /// Events read.
    pub events: u64,
    /// Events the runtime lost.
    pub dropped_events: u64,
    /// Method names for code jitted before the session are in the trace.
    pub has_rundown: bool,
    /// clrspy's thread CPU readings are in the trace.
    pub has_thread_cpu: bool,
    /// Why reading stopped early (damage), when it did.
    pub read_error: Option<String>,
    /// Events of the runtime's known providers that could not be decoded.
    pub undecodable_events: u64,
    /// Those events by name: `event`, `count`, `first_error`.
    pub decode_errors: Vec<DecodeFailures>,
    /// CPU time by method (top 5).
    pub cpu: StackReport,
    /// Waiting time by method (top 5).
    pub waits: StackReport,
    /// Every thread's time runnable but waiting for a CPU (on a run queue) over the window,
    /// summed, ms; null when the trace has no run-queue readings.
    pub runqueue_ms: Option<f64>,
    /// The threads' CPU time over the same lifetimes, ms; null with `runqueue_ms`.
    pub thread_cpu_ms: Option<f64>,
    /// The CPU throttling of the target's cgroup over the window (`periods`,
    /// `throttled_periods`, `throttled_ms`, ...); null without cgroup readings.
    pub cpu_throttling: Option<CpuThrottling>,
    /// GC totals.
    pub gc: GcSummary,
    /// Allocations (top 5).
    pub alloc: AllocReport,
    /// Exceptions (top 5).
    pub exceptions: ExceptionsReport,
    /// Contention (top 5).
    pub contention: ContentionReport,
    /// What to run next, one command (or advice) per line.
    pub next: Vec<String>,
    /// The CPUs the process used over the window and the CPUs it could use (its cgroup's limit,
    /// else the machine's), when both are known: text only.
    #[serde(skip)]
    pub load: Option<(f64, f64)>,
    /// The stop trigger that ended the recording, if one did (key absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<clrspy_analysis::inventory::TriggerNote>,
}

/// The CPUs the process used over the window (its CPU time over the window's length) and the
/// CPUs it could use: the cgroup's limit when it has one, else the trace's CPU count.
fn process_load(
    a: &Analysis,
    cpu: &StackReport,
    throttling: Option<&CpuThrottling>,
) -> Option<(f64, f64)> {
    let window_ms = a.window_ns() as f64 / 1e6;
    let cpu_ms = cpu.process.as_ref().map(|p| p.cpu_ms)?;
    let cpus = throttling
        .and_then(|t| t.limit_cpus)
        .or_else(|| cpu.cpus.map(f64::from))?;
    (window_ms > 0.0 && cpus > 0.0).then(|| (cpu_ms / window_ms, cpus))
}

/// Builds the summary.
pub fn build(a: &Analysis, o: &ReportOptions) -> SummaryReport {
    let five = ReportOptions {
        top: 5,
        tree: None,
        ..o.clone()
    };
    let cpu = super::stack::build(a, Metric::Cpu, &five);
    let waits = super::stack::build(a, Metric::Wait, &five);
    let gc = super::gc::build(a, &five);
    let alloc = super::alloc::build(a, &five);
    let exceptions = super::exceptions::build(a, &five);
    let contention = super::contention::build(a, &five);
    let path = &o.trace;
    let mut next = Vec::new();
    if cpu.total_ms > 0.0 || waits.total_ms > 0.0 {
        next.push(format!(
            "clrspy report {path} cpu --tree   (call tree of CPU time)"
        ));
        // The hottest method of the program (clrspy's bracketed groups are no method).
        if let Some(m) = cpu
            .top_exclusive
            .iter()
            .find(|m| !m.method.starts_with('['))
        {
            next.push(format!(
                "clrspy report {path} cpu --callers {}   (every path to the hottest method)",
                shell_quote(&m.method)
            ));
        }
        next.push(format!(
            "clrspy report {path} waits        (where threads block)"
        ));
    } else {
        next.push(if o.narrowed {
            "no samples in this window or filter: widen --from/--to, --thread, --focus or --exclude"
                .into()
        } else {
            "no CPU samples: record with --profile cpu for hot methods".into()
        });
    }
    if gc.totals.count > 0 {
        next.push(format!(
            "clrspy report {path} gc           (one row per GC)"
        ));
    }
    if alloc.ticks > 0 {
        next.push(format!(
            "clrspy report {path} alloc        (types and allocating stacks)"
        ));
    }
    if exceptions.total > 0 {
        next.push(format!(
            "clrspy report {path} exceptions   (messages, throw and catch sites)"
        ));
    }
    if contention.count > 0 {
        next.push(format!(
            "clrspy report {path} contention   (who waited on which lock)"
        ));
    }
    let measured = runqueue::measured_totals(a);
    let cpu_throttling = runqueue::throttling(a);
    let load = process_load(a, &cpu, cpu_throttling.as_ref());
    SummaryReport {
        load,
        runqueue_ms: measured.map(|m| crate::units::round1(m.1)),
        thread_cpu_ms: measured.map(|m| crate::units::round1(m.0)),
        cpu_throttling,
        trace: path.clone(),
        duration_ms: a.duration_ns as f64 / 1e6,
        events: a.events,
        dropped_events: a.dropped_events,
        has_rundown: a.has_rundown,
        has_thread_cpu: a.has_thread_cpu,
        read_error: a.read_error.clone(),
        undecodable_events: a.undecodable,
        decode_errors: a.decode_errors().to_vec(),
        cpu,
        waits,
        gc: GcSummary { totals: gc.totals },
        alloc,
        exceptions,
        contention,
        next,
        trigger: a.trigger.clone(),
    }
}

impl TextView for SummaryReport {
    fn kind(&self) -> ReportKind {
        ReportKind::Summary
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "{}: {:.2} s, {} events",
                self.trace,
                self.duration_ms / 1e3,
                self.events
            ))
        )?;
        if let Some(t) = &self.trigger {
            let at = match t.event_ns {
                Some(ns) => format!(" at {:.3} s ({})", ns as f64 / 1e9, t.event),
                None => String::new(),
            };
            writeln!(
                out,
                "  stopped by trigger {}{at}: {}; {:.1} s recorded after it",
                t.trigger,
                t.reason,
                f64::from(t.after_ms) / 1e3
            )?;
        }
        self.write_warnings(out)?;
        let (cpu, waits) = (&self.cpu, &self.waits);
        if cpu.total_ms > 0.0 || waits.total_ms > 0.0 {
            let how = cpu.method.word();
            writeln!(
                out,
                "\n{}",
                style.heading(&format!(
                    "CPU {:.0} ms, waiting {:.0} ms ({how})",
                    cpu.total_ms, waits.total_ms
                ))
            )?;
            writeln!(out, "  how: {}", cpu.basis())?;
            if let Some(p) = &cpu.process {
                for line in [p.runtime_line(), p.overhead_line()].into_iter().flatten() {
                    writeln!(out, "  {line}")?;
                }
            }
            if cpu.samples == 0 {
                writeln!(
                    out,
                    "  hottest: not known (no CPU samples; the CPU above is the threads' readings)"
                )?;
            } else {
                writeln!(out, "  hottest (CPU, exclusive):")?;
                method_table(out, &cpu.top_exclusive, Unit::Ms, style)?;
            }
            if let Some(w) = waits
                .by_blocking_call
                .iter()
                .find(|m| !m.method.starts_with('['))
            {
                writeln!(
                    out,
                    "  most waited in: {} ({:.1}% of waiting)",
                    w.method, w.percent
                )?;
            }
        }
        let contention = runqueue::lines(
            self.thread_cpu_ms.unwrap_or(0.0),
            self.runqueue_ms,
            self.cpu_throttling.as_ref(),
        );
        if let Some((head, rest)) = contention.split_first() {
            writeln!(out, "\n{}", style.heading(head))?;
            match self.load {
                // The advice says whose load it was: the process's own, or others'.
                Some((used, cpus)) if !rest.is_empty() => {
                    let hottest = cpu
                        .top_exclusive
                        .iter()
                        .find(|m| !m.method.starts_with("[idle"))
                        .filter(|_| cpu.samples > 0)
                        .map(|m| (m.method.as_str(), m.percent));
                    writeln!(out, "{}", runqueue::load_line(used, cpus, hottest))?;
                }
                _ => {
                    for l in rest {
                        writeln!(out, "{l}")?;
                    }
                }
            }
        }
        let t = &self.gc.totals;
        if t.count > 0 {
            writeln!(out, "\n{}", style.heading(&format!("GC: {} collections (gen0 {}, gen1 {}, gen2 {}), paused {:.1} ms total, max {:.2} ms, {:.2}% of the time", t.count, t.per_generation[0], t.per_generation[1], t.per_generation[2], t.total_pause_ms, t.max_pause_ms, t.paused_percent)))?;
        }
        if self.alloc.ticks > 0 {
            writeln!(
                out,
                "\n{}",
                style.heading(&format!(
                    "Allocations: ~{}",
                    human_bytes(self.alloc.total_bytes)
                ))
            )?;
            for t in self.alloc.types.iter().take(3) {
                writeln!(
                    out,
                    "  {:>10} {:>5.1}%  {}",
                    human_bytes(t.bytes),
                    t.percent,
                    t.type_name
                )?;
            }
        }
        if self.exceptions.total > 0 {
            writeln!(
                out,
                "\n{}",
                style.heading(&format!("Exceptions: {} thrown", self.exceptions.total))
            )?;
            for t in self.exceptions.types.iter().take(3) {
                writeln!(out, "  {:>8}  {}", t.count, t.type_name)?;
            }
        }
        let c = &self.contention;
        if c.count > 0 {
            writeln!(
                out,
                "\n{}",
                style.heading(&format!(
                    "Lock contention: {} waits, {:.1} ms",
                    c.count, c.total_wait_ms
                ))
            )?;
            if let Some(m) = c.top_exclusive.first() {
                writeln!(out, "  most waited: {} ({:.1} ms)", m.method, m.ms)?;
            }
        }
        writeln!(out, "\n{}", style.heading("Next"))?;
        for h in &self.next {
            writeln!(out, "  {h}")?;
        }
        Ok(())
    }
}

/// `s` as one shell word: as it is when it holds only safe characters, else single-quoted.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._+-:/,=@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl SummaryReport {
    fn write_warnings(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.dropped_events > 0 {
            writeln!(
                out,
                "  {} events were lost by the runtime (buffer full): counts are low",
                self.dropped_events
            )?;
        }
        if self.undecodable_events > 0 {
            writeln!(
                out,
                "  {} events could not be decoded (their payload did not match the runtime's layout): counts may be low",
                self.undecodable_events
            )?;
            for d in &self.decode_errors {
                writeln!(out, "    {} {}: {}", d.count, d.event, d.first_error)?;
            }
        }
        if !self.has_rundown && self.cpu.method != CpuSource::None {
            writeln!(
                out,
                "  no rundown in this trace: methods jitted before the recording have no names ([native], or [jitted code, unnamed]); stop a recording with one Ctrl+C so clrspy waits for the rundown, or record with `clrspy record -- COMMAND`, which records the program's method loads from its start"
            )?;
        }
        Ok(())
    }
}
