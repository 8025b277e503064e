//! The `threads` report: every thread's CPU, waiting and idle time (the runtime's own native
//! threads too, by role), its wall time split into CPU, run queue and blocked, the process's
//! CPU by role with the recording's own cost, the cgroup's CPU throttling, and the thread
//! pool.

use std::io::{self, Write};

use clrspy_analysis::threads::{ThreadRole, WorkerPoint};
use clrspy_analysis::{Analysis, StackFilter};
use serde::Serialize;

use super::rows::{sorted_counts, NameCount};
use super::runqueue::{self, CpuThrottling, RunqueueSource};
use super::needs::{Models, Needs};
use super::process::{process_cpu, ProcessCpu};
use super::text::TextStyle;
use super::def::ReportDef;
use super::view::{ReportOptions, TextView};
use crate::units::{fit, round1};

/// The `threads` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "threads",
    description: "Threads and the thread pool",
    needs: Needs::SAMPLES,
    models: Models::Named(&["cpu", "threads"]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: None,
    html: None,
};

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
    /// Time runnable but waiting for a CPU (on a run queue), ms: measured, or estimated from
    /// the samples (see [`ThreadsReport::runqueue_source`]).
    pub(crate) runqueue_ms: f64,
    /// Time neither on a CPU nor waiting for one (sleeping, waiting on I/O, a lock or for
    /// work), ms. Measured: `lifetime_ms` - `cpu_ms` - `runqueue_ms`; estimated: the sampled
    /// waiting and idle time minus `runqueue_ms`.
    pub(crate) blocked_ms: f64,
    /// The wall time the three above split: the thread's lifetime in the trace's window (from
    /// the reading before it was first seen, or the window's start, to its end, or the
    /// window's end), ms; null without run-queue readings.
    pub(crate) lifetime_ms: Option<f64>,
    /// Waiting time seen by the samples (blocked, sleeping, and waiting for a CPU), ms.
    pub wait_ms: f64,
    /// Idle time seen by the samples (a pool worker or event loop waiting for work), ms.
    pub(crate) idle_ms: f64,
    /// The older name of `runqueue_ms` (the same value).
    pub(crate) runnable_ms: f64,
    /// Samples of the thread.
    pub samples: u64,
    /// "running" (on a CPU or ready to run), "waiting" (blocked) or "idle": what it did most.
    pub mostly: String,
    /// The frame it was most often seen in.
    pub top_frame: String,
}

/// Threads and the thread pool.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadsReport {
    /// Every thread with time, busiest first (all of them, whatever `--top` says).
    pub threads: Vec<ThreadRow>,
    /// Rows the text view shows (the first ones).
    #[serde(skip)]
    pub show: usize,
    /// The process's CPU by role, with the recording's overhead.
    pub process: ProcessCpu,
    /// Highest pool worker count seen.
    pub max_workers: u64,
    /// Pool adjustments made because work was starved.
    pub starvation_adjustments: u64,
    /// Pool adjustments by reason.
    pub adjustments: Vec<NameCount>,
    /// Worker count over time.
    pub(crate) worker_timeline: Vec<WorkerPoint>,
    /// Threads created during the trace.
    pub(crate) threads_created: u64,
    /// Where `runqueue_ms` comes from: `schedstat` (measured) or `estimate` (from samples).
    pub(crate) runqueue_source: RunqueueSource,
    /// The CPU throttling of the target's cgroup over the window; null without cgroup
    /// readings.
    pub(crate) cpu_throttling: Option<CpuThrottling>,
}

/// Builds the threads report.
pub fn build(a: &Analysis, o: &ReportOptions) -> ThreadsReport {
    let profile = a.profile(&StackFilter::default());
    let ms = a.sampling_interval_ns as f64 / 1e6;
    let times: rustc_hash::FxHashMap<u64, clrspy_analysis::runqueue::ThreadTime> =
        if a.cpu.has_runqueue() {
            a.cpu.thread_times().collect()
        } else {
            Default::default()
        };
    let mut threads: Vec<ThreadRow> = profile
        .threads(&a.symbols)
        .into_iter()
        .map(|t| {
            let (wait, idle) = (t.wait * ms, t.idle * ms);
            let measured = times.get(&t.thread);
            let (cpu, runq, blocked, lifetime) = match measured {
                Some(w) => (
                    w.cpu_ns / 1e6,
                    w.runqueue_ns / 1e6,
                    w.blocked_ns() / 1e6,
                    Some(w.lifetime_ns / 1e6),
                ),
                None => {
                    let runq = t.runnable * ms;
                    (t.cpu * ms, runq, (wait - runq).max(0.0) + idle, None)
                }
            };
            // Idle is part of blocked: where blocked is measured and the samples saw more
            // idle time than that (their stand-in period is not the readings' clock), the
            // idle share is capped at the measured blocked time.
            let idle = idle.min(blocked);
            // What the thread did most, from the same parts the row shows when they are
            // measured; from the samples otherwise (code that meant to run counts as
            // running, also when the runtime held it: a GC, the sampler's suspensions).
            let most = if measured.is_some() {
                mostly(cpu, runq, blocked, idle)
            } else {
                mostly(t.cpu * ms, t.ready * ms, wait - t.ready * ms + idle, idle)
            };
            ThreadRow {
                thread: t.thread,
                name: a.thread_name(t.thread),
                role: a.thread_role(t.thread),
                cpu_ms: round1(cpu),
                runqueue_ms: round1(runq),
                blocked_ms: round1(blocked),
                lifetime_ms: lifetime.map(round1),
                wait_ms: round1(wait),
                idle_ms: round1(idle),
                runnable_ms: round1(runq),
                samples: t.samples,
                mostly: most.into(),
                top_frame: t.top_frame,
            }
        })
        .collect();
    threads.extend(unsampled_rows(a, &times, &threads));
    ThreadsReport {
        threads,
        show: o.top,
        process: process_cpu(a),
        max_workers: a.threads.max_workers,
        starvation_adjustments: a.threads.starvation,
        adjustments: sorted_counts(&a.threads.adjustments, 20),
        worker_timeline: a.threads.timeline.clone(),
        threads_created: a.threads.created,
        runqueue_source: RunqueueSource::of(a),
        cpu_throttling: runqueue::throttling(a),
    }
}

/// The threads that neither ran nor were sampled in the window but lived in it (blocked all
/// the time, or only waiting for a CPU), after the others: the most run-queue time first.
fn unsampled_rows(
    a: &Analysis,
    times: &rustc_hash::FxHashMap<u64, clrspy_analysis::runqueue::ThreadTime>,
    listed: &[ThreadRow],
) -> Vec<ThreadRow> {
    let seen: rustc_hash::FxHashSet<u64> = listed.iter().map(|r| r.thread).collect();
    let mut rest: Vec<(u64, clrspy_analysis::runqueue::ThreadTime)> = times
        .iter()
        .filter(|(t, w)| !seen.contains(t) && w.lifetime_ns > 0.0)
        .map(|(&t, &w)| (t, w))
        .collect();
    rest.sort_by(|x, y| {
        y.1.runqueue_ns
            .total_cmp(&x.1.runqueue_ns)
            .then(x.0.cmp(&y.0))
    });
    rest.into_iter()
        .map(|(t, w)| {
            let role = a.thread_role(t);
            let (cpu, runq, blocked) = (w.cpu_ns / 1e6, w.runqueue_ns / 1e6, w.blocked_ns() / 1e6);
            ThreadRow {
                thread: t,
                name: a.thread_name(t),
                role,
                cpu_ms: round1(cpu),
                runqueue_ms: round1(runq),
                blocked_ms: round1(blocked),
                lifetime_ms: Some(round1(w.lifetime_ns / 1e6)),
                wait_ms: 0.0,
                idle_ms: 0.0,
                runnable_ms: round1(runq),
                samples: 0,
                mostly: mostly(cpu, runq, blocked, 0.0).into(),
                top_frame: if matches!(
                    role,
                    ThreadRole::Managed | ThreadRole::Native | ThreadRole::Unknown
                ) {
                    "[not sampled]".into()
                } else {
                    role.frame()
                },
            }
        })
        .collect()
}

/// What a thread did most: "running" (on a CPU or ready to run: it was not blocked), "idle"
/// (waiting for work) or "waiting" (blocked). `blocked` includes `idle`.
fn mostly(cpu: f64, ready: f64, blocked: f64, idle: f64) -> &'static str {
    if cpu + ready >= blocked {
        "running"
    } else if idle > blocked - idle {
        "idle"
    } else {
        "waiting"
    }
}

impl ThreadsReport {
    /// Every thread's CPU and run-queue time, ms (all of them, shown or not: the same
    /// totals at any `--top`).
    fn cpu_and_runqueue(&self) -> (f64, f64) {
        let measured = self.runqueue_source == RunqueueSource::Schedstat;
        self.threads
            .iter()
            .filter(|t| !measured || t.lifetime_ms.is_some())
            .fold((0.0, 0.0), |(c, r), t| (c + t.cpu_ms, r + t.runqueue_ms))
    }
}

impl ThreadsReport {
    /// The rows the text view shows: the first `show` (at least one).
    fn shown(&self) -> &[ThreadRow] {
        &self.threads[..self.threads.len().min(self.show.max(1))]
    }

    /// "28 with time" or "20 of 28 with time shown (--top N or --json for all)".
    fn count_line(&self) -> String {
        let (n, all) = (self.shown().len(), self.threads.len());
        if n < all {
            format!("{n} of {all} with time shown (--top N or --json for all)")
        } else {
            format!("{all} with time")
        }
    }
}

impl TextView for ThreadsReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Threads: {}; thread pool max {} workers, {} starvation adjustments",
                self.count_line(),
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
        let (cpu, runq) = self.cpu_and_runqueue();
        let measured = self.runqueue_source == RunqueueSource::Schedstat;
        for line in runqueue::lines(cpu, measured.then_some(runq), self.cpu_throttling.as_ref()) {
            writeln!(out, "  {line}")?;
        }
        let rows = self.shown();
        if !rows.is_empty() {
            writeln!(
                out,
                "  each thread's time: cpu + runq (ready, waiting for a CPU) + blocked (idle is part of blocked); runq {}",
                self.runqueue_source.words()
            )?;
        }
        // Columns as wide as their longest entry: names are never cut.
        let nw = rows
            .iter()
            .map(|t| t.name.as_deref().unwrap_or("-").chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let rw = rows
            .iter()
            .map(|t| t.role.label().chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(
            out,
            "  {:>8} {:<nw$} {:<rw$} {:>10} {:>10} {:>10} {:>10} {:<8}  Most seen in",
            "tid", "name", "role", "cpu ms", "runq ms", "blocked ms", "idle ms", "mostly"
        )?;
        for t in rows {
            writeln!(
                out,
                "  {:>8} {:<nw$} {:<rw$} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:<8}  {}",
                t.thread,
                t.name.as_deref().unwrap_or("-"),
                t.role.label(),
                t.cpu_ms,
                t.runqueue_ms,
                t.blocked_ms,
                t.idle_ms,
                t.mostly,
                fit(&t.top_frame, style.room(71 + nw + rw))
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

