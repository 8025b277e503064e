//! The `exceptions` report: by type, with messages, throw stacks and catch sites.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::exceptions::{throw_site, ExceptionType};
use clrspy_analysis::Analysis;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::rows::{sorted_counts, NameCount, StackCount};
use super::text::TextStyle;
use super::needs::{EXCEPTION, Models, Needs};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::def::ReportDef;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;
use crate::units::fit;

/// The `exceptions` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "exceptions",
    description: "Exceptions by type, message, throw and catch site",
    needs: Needs::runtime(EXCEPTION, 4),
    models: Models::Named(&["exceptions"]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 50,
        build: |i| Box::new(ExceptionsSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// One exception type.
#[derive(Clone, Debug, Serialize)]
pub struct ExceptionTypeReport {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Times thrown (`Exception/Start`: rethrows included).
    pub count: u64,
    /// Of `count`, rethrows (`throw;` from a handler: the same exception thrown on).
    pub rethrown: u64,
    /// Catch handlers that ran for it, every catching method's (one exception caught,
    /// rethrown and caught again counts twice; first-chance: per handler, not per exception).
    pub catches: u64,
    /// Messages, most frequent first.
    pub messages: Vec<NameCount>,
    /// Throw sites (stacks), most frequent first.
    pub(crate) throw_sites: Vec<StackCount>,
    /// Where it was thrown: each throw stack's first frame outside the runtime's exception
    /// dispatch, most frequent first.
    pub(crate) thrown_in: Vec<NameCount>,
    /// Methods that caught it: the catch handlers that ran in each, most first.
    pub(crate) catch_sites: Vec<NameCount>,
}

/// Exceptions.
#[derive(Clone, Debug, Serialize)]
pub struct ExceptionsReport {
    /// Exceptions thrown.
    pub total: u64,
    /// By type, most first.
    pub types: Vec<ExceptionTypeReport>,
}

/// Builds the exceptions report.
pub fn build(a: &Analysis, o: &ReportOptions) -> ExceptionsReport {
    let mut types: Vec<(String, ExceptionType)> = a
        .exceptions
        .types
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    types.sort_by(|x, y| y.1.count.cmp(&x.1.count).then_with(|| x.0.cmp(&y.0)));
    types.truncate(o.top);
    let types = types
        .into_iter()
        .map(|(name, t)| {
            let mut thrown_in: FxHashMap<String, u64> = FxHashMap::default();
            for (&s, &c) in &t.stacks {
                let frames = a.frames(s);
                let site = throw_site(&frames).unwrap_or("[no stack]");
                *thrown_in.entry(site.to_string()).or_default() += c;
            }
            let mut sites: Vec<StackCount> = t
                .stacks
                .iter()
                .map(|(&s, &c)| StackCount {
                    frames: a.frames(s),
                    count: c,
                    weight: None,
                })
                .collect();
            sites.sort_by(|x, y| y.count.cmp(&x.count).then_with(|| x.frames.cmp(&y.frames)));
            sites.truncate(5);
            ExceptionTypeReport {
                type_name: name,
                count: t.count,
                rethrown: t.rethrown,
                catches: t.catches.values().sum(),
                messages: sorted_counts(&t.messages, 10),
                throw_sites: sites,
                thrown_in: sorted_counts(&thrown_in, 5),
                catch_sites: sorted_counts(&t.catches, 5),
            }
        })
        .collect();
    ExceptionsReport {
        total: a.exceptions.total,
        types,
    }
}

impl TextView for ExceptionsReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!("Exceptions: {} thrown", self.total))
        )?;
        if !self.types.is_empty() {
            writeln!(
                out,
                "  counts: thrown = Exception/Start events (rethrows included, said apart); caught in = catch handlers that ran, per method (an exception caught, rethrown and caught again counts in each)"
            )?;
        }
        for t in &self.types {
            let rethrown = if t.rethrown > 0 {
                format!(" ({} of them rethrown)", t.rethrown)
            } else {
                String::new()
            };
            writeln!(
                out,
                "\n  {:>8}  {}{rethrown}",
                t.count,
                fit(&t.type_name, style.room(12 + rethrown.len()))
            )?;
            for m in t.messages.iter().take(3) {
                writeln!(
                    out,
                    "  {:>8}    message: {}",
                    m.count,
                    fit(&m.name, style.room(23))
                )?;
            }
            for s in t.thrown_in.iter().take(2) {
                writeln!(
                    out,
                    "  {:>8}    thrown in: {}",
                    s.count,
                    fit(&s.name, style.room(25))
                )?;
            }
            if let Some(top) = t.throw_sites.first() {
                write_throw_stack(out, top, style)?;
            }
            if t.catches > 0 {
                writeln!(out, "  {:>8}    catch handlers ran", t.catches)?;
            }
            for c in t.catch_sites.iter().take(2) {
                writeln!(
                    out,
                    "  {:>8}    caught in: {}",
                    c.count,
                    fit(&c.name, style.room(25))
                )?;
            }
        }
        Ok(())
    }
}

/// Frames of the commonest throw stack shown in the text (the JSON has them all).
const THROW_FRAMES: usize = 8;

/// The commonest throw stack, from its throw site (the runtime's dispatch frames left out)
/// outwards.
fn write_throw_stack(out: &mut dyn Write, s: &StackCount, style: &TextStyle) -> io::Result<()> {
    let from = s
        .frames
        .iter()
        .position(|f| !clrspy_analysis::exceptions::is_dispatch_frame(f))
        .unwrap_or(0);
    let frames = &s.frames[from..];
    if frames.is_empty() {
        return Ok(());
    }
    writeln!(out, "  {:>8}    throw stack (the commonest):", s.count)?;
    for f in frames.iter().take(THROW_FRAMES) {
        writeln!(out, "  {:>8}      {}", "", fit(f, style.room(16)))?;
    }
    if frames.len() > THROW_FRAMES {
        writeln!(
            out,
            "  {:>8}      … {} more frames (--json for all)",
            "",
            frames.len() - THROW_FRAMES
        )?;
    }
    Ok(())
}

/// The summary's exceptions section: the `exceptions` key (top 5) and the three most thrown
/// types.
struct ExceptionsSection {
    exceptions: ExceptionsReport,
    next: Vec<String>,
}

impl ExceptionsSection {
    fn build(i: &SummaryInput<'_>) -> ExceptionsSection {
        let exceptions = build(i.a, &i.o);
        let next = (exceptions.total > 0)
            .then(|| {
                format!(
                    "clrspy report {} exceptions   (messages, throw and catch sites)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        ExceptionsSection { exceptions, next }
    }
}

impl SummarySection for ExceptionsSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![("exceptions", to_json(&self.exceptions))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if self.exceptions.total == 0 {
            return Ok(());
        }
        writeln!(
            out,
            "\n{}",
            style.heading(&format!("Exceptions: {} thrown", self.exceptions.total))
        )?;
        for t in self.exceptions.types.iter().take(3) {
            writeln!(out, "  {:>8}  {}", t.count, t.type_name)?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's exception count and its table of exception types.
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let exc = build(i.a, &i.options(20));
    let mut h = String::from("<h2>Exceptions</h2><table><tr><th class=n>count</th><th>Type</th><th>Most frequent message</th></tr>");
    if exc.types.is_empty() {
        h.push_str("<tr><td colspan=3>none in this trace</td></tr>");
    }
    for t in &exc.types {
        let msg = t.messages.first().map(|m| m.name.as_str()).unwrap_or("");
        let _ = write!(
            h,
            "<tr><td class=n>{}</td><td>{}</td><td>{}</td></tr>",
            t.count,
            escape(&t.type_name),
            escape(msg)
        );
    }
    h.push_str("</table>");
    HtmlSection {
        facts: vec![Fact {
            order: 50,
            label: "exceptions",
            value: exc.total.to_string(),
        }],
        parts: vec![Part { order: 70, html: h }],
    }
}
