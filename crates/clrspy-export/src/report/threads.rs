//! The `threads` report: each sampled thread's CPU and waiting time, and the thread pool.

use std::io::{self, Write};

use clrspy_analysis::threads::WorkerPoint;
use clrspy_analysis::{Analysis, StackFilter};
use serde::Serialize;

use super::text::TextStyle;
use super::{sorted_counts, NameCount, ReportKind, ReportOptions, ReportView};
use crate::units::{fit, round1};

/// One thread.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRow {
    /// OS thread id.
    pub thread: u64,
    /// Its name, when clrspy recorded it.
    pub name: Option<String>,
    /// CPU time, ms.
    pub cpu_ms: f64,
    /// Waiting time, ms.
    pub wait_ms: f64,
    /// "running" or "waiting": what it did most.
    pub mostly: String,
    /// The frame it was most often seen in.
    pub top_frame: String,
}

/// Threads and the thread pool.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadsReport {
    /// Threads by sampled time.
    pub threads: Vec<ThreadRow>,
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
        .map(|(t, c, w, f)| ThreadRow {
            thread: t,
            name: a.threads.names.get(&t).cloned(),
            cpu_ms: round1(c * ms),
            wait_ms: round1(w * ms),
            mostly: if c >= w { "running" } else { "waiting" }.into(),
            top_frame: f,
        })
        .collect();
    ThreadsReport {
        threads,
        max_workers: a.threads.max_workers,
        starvation_adjustments: a.threads.starvation,
        adjustments: sorted_counts(&a.threads.adjustments, 20),
        worker_timeline: a.threads.timeline.clone(),
        threads_created: a.threads.created,
    }
}

impl ReportView for ThreadsReport {
    fn kind(&self) -> ReportKind {
        ReportKind::Threads
    }

    fn json(&self) -> serde_json::Value {
        super::to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Threads: {} sampled; thread pool max {} workers, {} starvation adjustments",
                self.threads.len(),
                self.max_workers,
                self.starvation_adjustments
            ))
        )?;
        writeln!(
            out,
            "  {:>8} {:<16} {:>10} {:>10} {:<8}  Most seen in",
            "tid", "name", "cpu ms", "wait ms", "mostly"
        )?;
        for t in &self.threads {
            writeln!(
                out,
                "  {:>8} {:<16} {:>10.1} {:>10.1} {:<8}  {}",
                t.thread,
                fit(t.name.as_deref().unwrap_or("-"), 16),
                t.cpu_ms,
                t.wait_ms,
                t.mostly,
                fit(&t.top_frame, style.room(62))
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
