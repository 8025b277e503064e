//! The `findings` report: the known .NET performance mistakes the trace shows, each with its
//! evidence (the figures, the call sites and a stack), its fix and the guidance it follows.
//! The rules are one file each under `rules` (their thresholds said there and in
//! docs/findings.md); they read the other reports, built once ([`finding::Input`]). The
//! summary leads with the findings of warning and above (order 1), the HTML report with all
//! of them (part order 5).

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::Analysis;
use serde::Serialize;

use super::def::ReportDef;
use super::needs::{Models, Needs, SAMPLING};
use super::sections::{HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection};
use super::text::TextStyle;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;

mod finding;
mod heap_growth;
mod rules;

pub(crate) use heap_growth::heap_growth;

pub use finding::{Fact, Finding, Severity, Site};

/// The runtime's keywords the rules read: the sampling set (GC, exceptions, contention,
/// the thread pool, method names) and wait handles (.NET 9+: sync-over-async).
const KEYWORDS: u64 = SAMPLING | 0x400_0000_0000;

/// What the findings need recorded: samples, the runtime's events at verbose level (lock
/// waits, allocation ticks), ASP.NET Core's requests and System.Net's connections.
const NEEDS: Needs = Needs::runtime(KEYWORDS, 5)
    .with_samples()
    .with_providers(concat!(
        "System.Net.Http:0xFFFFFFFFFFFFFFFF:4,System.Net.NameResolution:0xFFFFFFFFFFFFFFFF:4,",
        "Microsoft.AspNetCore.Hosting:0:4,Microsoft-AspNetCore-Server-Kestrel:0:4,",
        "System.Threading.Tasks.TplEventSource:0x80:4"
    ));

/// The `findings` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "findings",
    description: "Known .NET performance mistakes the trace shows, with their evidence and fix",
    needs: NEEDS,
    models: Models::Named(&[
        "cpu",
        "threads",
        "hangs",
        "exceptions",
        "gc",
        "alloc",
        "contention",
        "requests",
        "http",
    ]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 1,
        build: |i| Box::new(FindingsSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// The findings of a trace.
#[derive(Clone, Debug, Serialize)]
pub struct FindingsReport {
    /// Every finding, most severe first (the rules' order within a severity).
    pub findings: Vec<Finding>,
    /// The ids of the rules that ran (each found something or not).
    pub rules: Vec<&'static str>,
}

/// Runs every rule over `a`.
pub fn build(a: &Analysis, o: &ReportOptions) -> FindingsReport {
    let input = finding::Input::new(a, o);
    let mut findings: Vec<Finding> = rules::ALL.iter().filter_map(|r| r.run(&input)).collect();
    // Stable: the rules' order within a severity.
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    FindingsReport {
        findings,
        rules: rules::ALL.iter().map(|r| r.id).collect(),
    }
}

impl FindingsReport {
    /// The findings of `severity` and above.
    pub fn at_least(&self, severity: Severity) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.severity >= severity)
    }
}

/// A finding's first line: `warning  sync-over-async: pool threads blocked …`.
fn headline(f: &Finding) -> String {
    format!("{:<8} {}: {}", f.severity.name(), f.id, f.said)
}

/// One finding in text: its title and id, what it said, its evidence, sites and stack, the fix
/// and the link.
pub(crate) fn write_finding(out: &mut dyn Write, f: &Finding, style: &TextStyle) -> io::Result<()> {
    writeln!(out, "\n{}", style.heading(&format!("{} [{}]", f.title, f.id)))?;
    writeln!(out, "  {}: {}", f.severity.name(), f.said)?;
    for fact in &f.evidence {
        writeln!(out, "    {}: {}", fact.name, fact.value)?;
    }
    if !f.sites.is_empty() {
        writeln!(out, "  where:")?;
        for s in &f.sites {
            writeln!(out, "    {:>5.1}%  {}  ({})", s.percent, s.name, s.value)?;
        }
    }
    if !f.stack.is_empty() {
        writeln!(out, "  stack (innermost first):")?;
        for frame in f.stack.iter().take(12) {
            writeln!(out, "    {frame}")?;
        }
        if f.stack.len() > 12 {
            writeln!(out, "    … {} more frames", f.stack.len() - 12)?;
        }
    }
    writeln!(out, "  fix: {}", f.fix)?;
    writeln!(out, "  see: {}", f.link)
}

impl TextView for FindingsReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Findings: {} ({} rules)",
                match self.findings.len() {
                    0 => "none".to_string(),
                    1 => "1".to_string(),
                    n => n.to_string(),
                },
                self.rules.len()
            ))
        )?;
        if self.findings.is_empty() {
            writeln!(
                out,
                "  None of the known mistakes ({}) shows in this trace.",
                self.rules.join(", ")
            )?;
            return Ok(());
        }
        for f in &self.findings {
            write_finding(out, f, style)?;
        }
        Ok(())
    }
}

/// The summary's findings: its first lines (warnings and above; infos counted).
struct FindingsSection {
    report: FindingsReport,
    next: Vec<String>,
}

impl FindingsSection {
    fn build(i: &SummaryInput<'_>) -> FindingsSection {
        let report = build(i.a, &i.o);
        let next = (!report.findings.is_empty())
            .then(|| format!("clrspy report {} findings      (the evidence and the fix of each finding)", i.o.trace))
            .into_iter()
            .collect();
        FindingsSection { report, next }
    }
}

/// The summary's JSON of a finding: what it is and what it said.
#[derive(Serialize)]
struct Brief<'a> {
    id: &'a str,
    severity: Severity,
    title: &'a str,
    said: &'a str,
}

impl SummarySection for FindingsSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        let briefs: Vec<Brief<'_>> = self
            .report
            .findings
            .iter()
            .map(|f| Brief {
                id: f.id,
                severity: f.severity,
                title: f.title,
                said: &f.said,
            })
            .collect();
        vec![("findings", to_json(&briefs))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let shown: Vec<&Finding> = self.report.at_least(Severity::Warning).collect();
        let infos = self.report.findings.len() - shown.len();
        if shown.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n{}", style.heading("Findings"))?;
        for f in shown {
            writeln!(out, "  {}", headline(f))?;
        }
        if infos > 0 {
            writeln!(out, "  and {infos} of severity info")?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's findings: every finding, its evidence and fix; nothing when none.
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let r = build(i.a, &i.options(20));
    if r.findings.is_empty() {
        return HtmlSection::default();
    }
    let mut h = String::from("<h2>Findings</h2>");
    for f in &r.findings {
        let _ = write!(
            h,
            "<div class=\"finding {}\"><h3>{}: {} <small>[{}]</small></h3><p>{}</p><ul>",
            f.severity.name(),
            f.severity.name(),
            escape(f.title),
            f.id,
            escape(&f.said)
        );
        for fact in &f.evidence {
            let _ = write!(h, "<li>{}: {}</li>", escape(&fact.name), escape(&fact.value));
        }
        h.push_str("</ul>");
        if !f.sites.is_empty() {
            h.push_str("<table><tr><th class=n>%</th><th>Where</th><th>What</th></tr>");
            for s in &f.sites {
                let _ = write!(
                    h,
                    "<tr><td class=n>{:.1}</td><td>{}</td><td>{}</td></tr>",
                    s.percent,
                    escape(&s.name),
                    escape(&s.value)
                );
            }
            h.push_str("</table>");
        }
        let _ = write!(
            h,
            "<p><b>Fix:</b> {} <a href=\"{}\">{}</a></p></div>",
            escape(f.fix),
            escape(f.link),
            escape(f.link)
        );
    }
    HtmlSection {
        facts: Vec::new(),
        parts: vec![Part { order: 5, html: h }],
    }
}
