//! The `threads` report: every thread's CPU, waiting and idle time (the runtime's own native
//! threads too, by role), the process's CPU by role with the recording's own cost, and the
//! thread pool.

use std::io::{self, Write};

use clrspy_analysis::cpu::CpuSource;
use clrspy_analysis::threads::{ThreadRole, WorkerPoint};
use clrspy_analysis::{Analysis, StackFilter};
use serde::Serialize;

use super::text::TextStyle;
use super::{sorted_counts, NameCount, ReportKind, ReportOptions, TextView};
use crate::units::{fit, percent, round1};

/// One thread.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRow {
    /// OS thread id.
    pub thread: u64,
    /// Its name, when clrspy recorded it.
    pub name: Option<String>,
    /// What it does: `managed`, or the runtime's role (`jit`, `gc`, `event-pipe`, ...).
    pub role: ThreadRole,
    /// CPU time, ms.
    pub cpu_ms: f64,
    /// Waiting time (blocked, sleeping), ms.
    pub wait_ms: f64,
    /// Idle time (a pool worker or event loop waiting for work), ms.
    pub idle_ms: f64,
    /// The part of `wait_ms` spent ready to run in managed code, outside any blocking call
    /// (waiting for a CPU), ms.
    pub runnable_ms: f64,
    /// Samples of the thread.
    pub samples: u64,
    /// "running" (on a CPU or ready to run), "waiting" (blocked) or "idle": what it did most.
    pub mostly: String,
    /// The frame it was most often seen in.
    pub top_frame: String,
}

/// The CPU of the threads of one role.
#[derive(Clone, Debug, Serialize)]
pub struct RoleTime {
    /// The role.
    pub role: ThreadRole,
    /// Its name in words ("tiered JIT").
    pub label: String,
    /// Threads with CPU.
    pub threads: u64,
    /// Their CPU, ms.
    pub cpu_ms: f64,
}

/// The process's CPU over the window, by who used it.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessCpu {
    /// Every thread's CPU, ms.
    pub cpu_ms: f64,
    /// True when it is the threads' CPU readings (exact to a reading interval).
    pub exact: bool,
    /// How CPU was told from waiting (the same word as the `cpu` report's `method`).
    pub method: CpuSource,
    /// Threads running managed code, ms.
    pub managed_cpu_ms: f64,
    /// The runtime's own threads by role (JIT, GC, EventPipe, ...), busiest first.
    pub runtime_threads: Vec<RoleTime>,
    /// The recording's own cost on the target (EventPipe's threads), ms.
    pub overhead_cpu_ms: f64,
    /// The same as a share of the process's CPU, percent.
    pub overhead_percent: f64,
    /// The recorder's own CPU over the window (clrspy itself, another process), ms; null
    /// when the trace has no such reading.
    pub recorder_cpu_ms: Option<f64>,
    /// The same as a share of the target process's CPU, percent.
    pub recorder_percent: Option<f64>,
}

/// Builds the process's CPU by role.
pub fn process_cpu(a: &Analysis) -> ProcessCpu {
    let profile = a.profile(&StackFilter::default());
    let ms = a.sampling_interval_ns as f64 / 1e6;
    let mut roles: Vec<RoleTime> = Vec::new();
    let (mut total, mut managed) = (0.0, 0.0);
    for t in profile.threads(&a.symbols) {
        let cpu = t.cpu * ms;
        total += cpu;
        let role = a.thread_role(t.thread);
        if role == ThreadRole::Managed {
            managed += cpu;
            continue;
        }
        if cpu <= 0.0 {
            continue;
        }
        match roles.iter_mut().find(|r| r.role == role) {
            Some(r) => {
                r.threads += 1;
                r.cpu_ms += cpu;
            }
            None => roles.push(RoleTime {
                role,
                label: role.label().into(),
                threads: 1,
                cpu_ms: cpu,
            }),
        }
    }
    roles.sort_by(|x, y| y.cpu_ms.total_cmp(&x.cpu_ms).then(x.role.cmp(&y.role)));
    let overhead: f64 = roles
        .iter()
        .filter(|r| r.role.is_overhead())
        .map(|r| r.cpu_ms)
        .sum();
    for r in &mut roles {
        r.cpu_ms = round1(r.cpu_ms);
    }
    let recorder = a.cpu.recorder_cpu_ns().map(|ns| ns as f64 / 1e6);
    ProcessCpu {
        cpu_ms: round1(total),
        exact: a.cpu.source() == CpuSource::ThreadCpuTimes,
        method: a.cpu.source(),
        managed_cpu_ms: round1(managed),
        runtime_threads: roles,
        overhead_cpu_ms: round1(overhead),
        overhead_percent: percent(overhead, total),
        recorder_cpu_ms: recorder.map(round1),
        recorder_percent: recorder.map(|r| percent(r, total)),
    }
}

impl ProcessCpu {
    /// "runtime threads: tiered JIT 1.4 s, GC 0.3 s", or nothing.
    pub fn runtime_line(&self) -> Option<String> {
        let parts: Vec<String> = self
            .runtime_threads
            .iter()
            .map(|r| format!("{} {}", r.label, seconds(r.cpu_ms)))
            .collect();
        (!parts.is_empty()).then(|| format!("runtime threads: {}", parts.join(", ")))
    }

    /// "recording overhead on the target: EventPipe threads 2.2 s (9.5% of the process's
    /// CPU); clrspy itself 0.3 s (1.2%)", or nothing.
    pub fn overhead_line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.overhead_cpu_ms > 0.0 {
            parts.push(format!(
                "recording overhead on the target: EventPipe threads {} ({:.1}% of the process's CPU)",
                seconds(self.overhead_cpu_ms),
                self.overhead_percent
            ));
        }
        if let (Some(ms), Some(pct)) = (self.recorder_cpu_ms, self.recorder_percent) {
            parts.push(format!(
                "clrspy itself {} ({pct:.1}% of the target's CPU)",
                seconds(ms)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A duration in ms as "1.4 s" or "85 ms".
fn seconds(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1e3)
    } else {
        format!("{ms:.0} ms")
    }
}

/// Threads and the thread pool.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadsReport {
    /// Threads by sampled time.
    pub threads: Vec<ThreadRow>,
    /// The process's CPU by role, with the recording's overhead.
    pub process: ProcessCpu,
    /// Highest pool worker count seen.
    pub max_workers: u64,
    /// Pool adjustments made because work was starved.
    pub starvation_adjustments: u64,
    /// Pool adjustments by reason.
    pub adjustments: Vec<NameCount>,
    /// Worker count over time.
    pub worker_timeline: Vec<WorkerPoint>,
    /// Threads created during the trace.
    pub threads_created: u64,
}

/// Builds the threads report.
pub fn build(a: &Analysis, o: &ReportOptions) -> ThreadsReport {
    let profile = a.profile(&StackFilter::default());
    let ms = a.sampling_interval_ns as f64 / 1e6;
    let threads = profile
        .threads(&a.symbols)
        .into_iter()
        .take(o.top)
        .map(|t| ThreadRow {
            thread: t.thread,
            name: a.threads.names.get(&t.thread).cloned(),
            role: a.thread_role(t.thread),
            cpu_ms: round1(t.cpu * ms),
            wait_ms: round1(t.wait * ms),
            idle_ms: round1(t.idle * ms),
            runnable_ms: round1(t.runnable * ms),
            samples: t.samples,
            // Ready to run counts as running: the thread was not blocked.
            mostly: if t.cpu + t.runnable >= t.wait - t.runnable + t.idle {
                "running"
            } else if t.idle > t.wait - t.runnable {
                "idle"
            } else {
                "waiting"
            }
            .into(),
            top_frame: t.top_frame,
        })
        .collect();
    ThreadsReport {
        threads,
        process: process_cpu(a),
        max_workers: a.threads.max_workers,
        starvation_adjustments: a.threads.starvation,
        adjustments: sorted_counts(&a.threads.adjustments, 20),
        worker_timeline: a.threads.timeline.clone(),
        threads_created: a.threads.created,
    }
}

impl TextView for ThreadsReport {
    fn kind(&self) -> ReportKind {
        ReportKind::Threads
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Threads: {} with time; thread pool max {} workers, {} starvation adjustments",
                self.threads.len(),
                self.max_workers,
                self.starvation_adjustments
            ))
        )?;
        let p = &self.process;
        writeln!(
            out,
            "  process CPU {:.1} ms ({})",
            p.cpu_ms,
            p.method.word()
        )?;
        for line in [p.runtime_line(), p.overhead_line()].into_iter().flatten() {
            writeln!(out, "  {line}")?;
        }
        // Columns as wide as their longest entry: names are never cut.
        let nw = self
            .threads
            .iter()
            .map(|t| t.name.as_deref().unwrap_or("-").chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let rw = self
            .threads
            .iter()
            .map(|t| t.role.label().chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(
            out,
            "  {:>8} {:<nw$} {:<rw$} {:>10} {:>10} {:>10} {:<8}  Most seen in",
            "tid", "name", "role", "cpu ms", "wait ms", "idle ms", "mostly"
        )?;
        for t in &self.threads {
            writeln!(
                out,
                "  {:>8} {:<nw$} {:<rw$} {:>10.1} {:>10.1} {:>10.1} {:<8}  {}",
                t.thread,
                t.name.as_deref().unwrap_or("-"),
                t.role.label(),
                t.cpu_ms,
                t.wait_ms,
                t.idle_ms,
                t.mostly,
                fit(&t.top_frame, style.room(60 + nw + rw))
            )?;
        }
        if !self.adjustments.is_empty() {
            writeln!(
                out,
                "  pool adjustments: {}",
                self.adjustments
                    .iter()
                    .map(|c| format!("{} {}", c.name, c.count))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
        Ok(())
    }
}
