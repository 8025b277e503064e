//! The `waits` report's declaration: waiting time by method ([`super::stack`]), or the callers
//! of a method with `--callers`; its summary section (the run queue: time runnable but
//! waiting for a CPU, the cgroup's throttling, whose load it was) and its HTML section (where
//! threads waited).

use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric};

use super::needs::{Models, Needs};
use super::runqueue::{self, CpuThrottling};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::stack::StackReport;
use super::text::TextStyle;
use super::def::ReportDef;
use super::view::to_json;
use crate::html::markup::table;

/// The `waits` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "waits",
    description: "Waiting time by method (blocked, sleeping, idle threads)",
    needs: Needs::SAMPLES,
    models: Models::Named(&["cpu", "threads", "lines"]),
    rows: None,
    build: |a, o| super::cpu::build(a, Metric::Wait, o),
    summary: Some(SummaryDef {
        order: 20,
        build: |i| Box::new(RunqueueSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// The summary's run-queue section: every thread's time runnable but waiting for a CPU, the
/// cgroup's throttling, and whose load it was.
struct RunqueueSection {
    /// Every thread's measured run-queue time over the window, ms.
    runqueue_ms: Option<f64>,
    /// The threads' CPU time over the same lifetimes, ms.
    thread_cpu_ms: Option<f64>,
    cpu_throttling: Option<CpuThrottling>,
    /// The CPUs the process used and the CPUs it could use.
    load: Option<(f64, f64)>,
    /// The hottest method and its share of CPU, when samples say.
    hottest: Option<(String, f64)>,
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

impl RunqueueSection {
    fn build(i: &SummaryInput<'_>) -> RunqueueSection {
        let cpu = i.stack(Metric::Cpu);
        let measured = runqueue::measured_totals(i.a);
        let cpu_throttling = runqueue::throttling(i.a);
        let load = process_load(i.a, &cpu, cpu_throttling.as_ref());
        let hottest = cpu
            .top_exclusive
            .iter()
            .find(|m| !m.method.starts_with("[idle"))
            .filter(|_| cpu.samples > 0)
            .map(|m| (m.method.clone(), m.percent));
        RunqueueSection {
            runqueue_ms: measured.map(|m| crate::units::round1(m.1)),
            thread_cpu_ms: measured.map(|m| crate::units::round1(m.0)),
            cpu_throttling,
            load,
            hottest,
        }
    }
}

impl SummarySection for RunqueueSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![
            ("runqueue_ms", to_json(&self.runqueue_ms)),
            ("thread_cpu_ms", to_json(&self.thread_cpu_ms)),
            ("cpu_throttling", to_json(&self.cpu_throttling)),
        ]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let lines = runqueue::lines(
            self.thread_cpu_ms.unwrap_or(0.0),
            self.runqueue_ms,
            self.cpu_throttling.as_ref(),
        );
        let Some((head, rest)) = lines.split_first() else {
            return Ok(());
        };
        writeln!(out, "\n{}", style.heading(head))?;
        match self.load {
            // The advice says whose load it was: the process's own, or others'.
            Some((used, cpus)) if !rest.is_empty() => {
                let hottest = self.hottest.as_ref().map(|(m, p)| (m.as_str(), *p));
                writeln!(out, "{}", runqueue::load_line(used, cpus, hottest))?;
            }
            _ => {
                for l in rest {
                    writeln!(out, "{l}")?;
                }
            }
        }
        Ok(())
    }
}

/// The HTML report's waiting time and where threads waited.
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let waits = super::stack::build(i.a, Metric::Wait, &i.options(15));
    HtmlSection {
        facts: vec![Fact {
            order: 20,
            label: "waiting time",
            value: format!("{:.1} ms", waits.total_ms),
        }],
        parts: vec![Part {
            order: 40,
            html: table(
                "Where threads waited (by blocking call)",
                &waits.by_blocking_call,
                "ms",
            ),
        }],
    }
}
