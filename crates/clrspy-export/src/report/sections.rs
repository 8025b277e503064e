//! What a report adds to the two views composed of every report: its section of the summary
//! ([`SummaryDef`]) and of the HTML report ([`HtmlDef`]), declared in the report's
//! [`ReportDef`](super::ReportDef). The summary and the HTML report lay out the sections of
//! the registry's reports by their order numbers and name no report.
//!
//! The orders in use — summary: the findings 1, CPU and waiting time 10, the run queue 20, GC 30,
//! allocations 40, exceptions 50, contention 60; HTML facts: CPU time 10, waiting time 20,
//! how CPU was told from waiting 25, GCs 30, allocated 40, exceptions 50; HTML parts: the findings 5, the CPU
//! tables 10, the flame graphs 20 (the HTML report's own, `html::FLAME_GRAPHS`), the
//! callers and callees 30, waiting 40, GC pauses 50, allocations 60, exceptions 70.

use std::cell::OnceCell;
use std::io::{self, Write};
use std::rc::Rc;

use clrspy_analysis::{Analysis, Metric, StackFilter};

use super::stack::{self, StackReport};
use super::text::TextStyle;
use super::view::ReportOptions;

/// A report's section of the summary.
#[derive(Clone, Copy, Debug)]
pub struct SummaryDef {
    /// Its place among the sections, smallest first (in the text and the JSON).
    pub order: u32,
    /// Builds it.
    pub build: fn(&SummaryInput<'_>) -> Box<dyn SummarySection>,
}

/// What the summary's sections are built from: the analysis, the summary's options (top 5,
/// no tree), and the CPU and waiting reports several sections read, built once.
pub struct SummaryInput<'a> {
    /// The analysis.
    pub a: &'a Analysis,
    /// The options of every section.
    pub o: ReportOptions,
    cpu: OnceCell<Rc<StackReport>>,
    waits: OnceCell<Rc<StackReport>>,
}

impl<'a> SummaryInput<'a> {
    /// The input of a summary built with `o`.
    pub fn new(a: &'a Analysis, o: &ReportOptions) -> SummaryInput<'a> {
        SummaryInput {
            a,
            o: ReportOptions {
                top: 5,
                tree: None,
                ..o.clone()
            },
            cpu: OnceCell::new(),
            waits: OnceCell::new(),
        }
    }

    /// The CPU or waiting report with the summary's options, built on first use.
    pub fn stack(&self, metric: Metric) -> Rc<StackReport> {
        let cell = if metric == Metric::Cpu {
            &self.cpu
        } else {
            &self.waits
        };
        cell.get_or_init(|| Rc::new(stack::build(self.a, metric, &self.o)))
            .clone()
    }
}

/// A built section of the summary.
pub trait SummarySection {
    /// Its keys of the summary's JSON, in order (docs/report-json.md).
    fn json(&self) -> Vec<(&'static str, serde_json::Value)>;
    /// Its text, each block led by an empty line; nothing when it has nothing to say.
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()>;
    /// What to run next, in the summary's "Next" list.
    fn next(&self) -> &[String] {
        &[]
    }
}

/// A report's section of the HTML report.
#[derive(Clone, Copy, Debug)]
pub struct HtmlDef {
    /// Builds it.
    pub build: fn(&HtmlInput<'_>) -> HtmlSection,
}

/// What the HTML report's sections are built from.
pub struct HtmlInput<'a> {
    /// The analysis.
    pub a: &'a Analysis,
    /// The stack filter of the whole report (a thread, `--just-my-code`).
    pub filter: &'a StackFilter,
}

impl HtmlInput<'_> {
    /// Report options with `top` rows and the report's filter.
    pub fn options(&self, top: usize) -> ReportOptions {
        ReportOptions {
            top,
            filter: self.filter.clone(),
            ..ReportOptions::default()
        }
    }
}

/// A report's section of the HTML report: rows of the facts table, and parts of the page.
#[derive(Clone, Debug, Default)]
pub struct HtmlSection {
    /// Rows of the facts table at the top.
    pub facts: Vec<Fact>,
    /// Parts of the page.
    pub parts: Vec<Part>,
}

/// A row of the HTML report's facts table.
#[derive(Clone, Debug)]
pub struct Fact {
    /// Its place among the rows, smallest first.
    pub order: u32,
    /// What it is (text).
    pub label: &'static str,
    /// Its value (HTML, escaped).
    pub value: String,
}

/// A part of the HTML report's page.
#[derive(Clone, Debug)]
pub struct Part {
    /// Its place among the parts, smallest first.
    pub order: u32,
    /// Its HTML.
    pub html: String,
}
