//! The `cpu` report's declaration: CPU time by method ([`super::stack`]), or the callers of a
//! method with `--callers` (`report::callers`); its summary section (CPU and waiting time,
//! the hottest methods) and its HTML sections (the hot method tables, the callers and callees
//! of the hottest methods).

use std::io::{self, Write};
use std::rc::Rc;

use clrspy_analysis::{Analysis, Metric};

use super::needs::{Models, Needs};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::stack::StackReport;
use super::text::{method_table, TextStyle, Unit};
use super::def::ReportDef;
use super::view::{to_json, Report, ReportOptions};
use crate::html::links;
use crate::html::markup::{escape, table};

/// The `cpu` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "cpu",
    description: "CPU time by method (waiting threads excluded)",
    needs: Needs::SAMPLES,
    // Stacks of waiting threads are grouped by the threads' names and roles.
    models: Models::Named(&["cpu", "threads", "lines"]),
    rows: None,
    build: |a, o| build(a, Metric::Cpu, o),
    summary: Some(SummaryDef {
        order: 10,
        build: |i| Box::new(TimeSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// The time report of `metric` (CPU or waiting): the methods' table, or with `--callers` the
/// callers of the method named.
pub(crate) fn build(a: &Analysis, metric: Metric, o: &ReportOptions) -> Report {
    match &o.callers {
        Some(m) => Box::new(super::callers::build(a, metric, m, o)),
        None => Box::new(super::stack::build(a, metric, o)),
    }
}

/// The summary's section of CPU and waiting time: the `cpu` and `waits` keys, the hottest
/// methods and where threads waited.
struct TimeSection {
    cpu: Rc<StackReport>,
    waits: Rc<StackReport>,
    next: Vec<String>,
}

impl TimeSection {
    fn build(i: &SummaryInput<'_>) -> TimeSection {
        let cpu = i.stack(Metric::Cpu);
        let waits = i.stack(Metric::Wait);
        let path = &i.o.trace;
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
            next.push(if i.o.narrowed {
                "no samples in this window or filter: widen --from/--to, --thread, --focus or --exclude"
                    .into()
            } else {
                "no CPU samples: record with --profile cpu for hot methods".into()
            });
        }
        TimeSection { cpu, waits, next }
    }
}

impl SummarySection for TimeSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![
            ("cpu", to_json(&*self.cpu)),
            ("waits", to_json(&*self.waits)),
        ]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let (cpu, waits) = (&self.cpu, &self.waits);
        if !(cpu.total_ms > 0.0 || waits.total_ms > 0.0) {
            return Ok(());
        }
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
        match &waits.parked {
            // Threads parked the whole window wait by design: the other threads' waiting (of
            // those that ran work or waited for a lock) is what tells where the work waited.
            Some(p) => {
                let parked = format!(
                    "{} thread{} parked the whole window left out: {}",
                    p.threads,
                    if p.threads == 1 { "" } else { "s" },
                    p.names.join(", ")
                );
                match &p.others_most_waited_in {
                    Some(w) => writeln!(
                        out,
                        "  most waited in: {} ({:.1}% of the other threads' waiting; {parked})",
                        w.method, w.percent
                    )?,
                    None => writeln!(out, "  waiting: none by the other threads ({parked})")?,
                }
            }
            None => {
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
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
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

/// The HTML report's CPU time, how it was told from waiting, the hot methods (exclusive and
/// inclusive) and the callers and callees of the five hottest.
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let cpu = super::stack::build(i.a, Metric::Cpu, &i.options(25));
    let mut tables = table("Hot methods: CPU, exclusive", &cpu.top_exclusive, "ms");
    tables.push_str(&table(
        "Hot methods: CPU, inclusive",
        &cpu.top_inclusive,
        "ms",
    ));
    HtmlSection {
        facts: vec![
            Fact {
                order: 10,
                label: "CPU time",
                value: format!("{:.1} ms", cpu.total_ms),
            },
            Fact {
                order: 25,
                label: "how CPU was told from waiting",
                value: escape(&cpu.method_note),
            },
        ],
        parts: vec![
            Part {
                order: 10,
                html: tables,
            },
            Part {
                order: 30,
                html: links::section(i.a, &cpu.top_exclusive, i.filter, 5),
            },
        ],
    }
}
