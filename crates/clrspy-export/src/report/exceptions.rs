//! The `exceptions` report: by type, with messages, throw stacks and catch sites.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::exceptions::{rethrow_helper, short_method, throw_site, ExceptionType};
use clrspy_analysis::source_lines::SourceLines;
use clrspy_analysis::stacks::StackId;
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
    models: Models::Named(&["exceptions", "lines"]),
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
    /// Of `count`, rethrows of an exception already in flight: `throw;` from a handler (the
    /// event's flag), or a throw by a rethrow helper (`ExceptionDispatchInfo.Throw` as an
    /// `await` of a faulted task does, MVC's `Rethrow`).
    pub rethrown: u64,
    /// Of `count`, the exceptions themselves: `count` − `rethrown`.
    pub thrown: u64,
    /// Catch handlers that ran for it, every catching method's (one exception caught,
    /// rethrown and caught again counts twice; first-chance: per handler, not per exception).
    pub catches: u64,
    /// Messages, most frequent first.
    pub messages: Vec<NameCount>,
    /// Throws of messages left out of `messages`.
    pub(crate) messages_more: u64,
    /// Throw stacks, most frequent first, the exceptions' own (the original throw sites)
    /// before the rethrows'.
    pub(crate) throw_sites: Vec<StackCount>,
    /// Throws of stacks left out of `throw_sites`.
    pub(crate) throw_sites_more: u64,
    /// Where the exceptions were thrown (rethrows left out): each throw stack's first frame
    /// outside the runtime's exception dispatch, most frequent first.
    pub(crate) thrown_in: Vec<NameCount>,
    /// Throws of sites left out of `thrown_in`.
    pub(crate) thrown_in_more: u64,
    /// Where they were rethrown: the helper or handler that threw them on, most first.
    pub(crate) rethrown_in: Vec<NameCount>,
    /// Rethrows of sites left out of `rethrown_in`.
    pub(crate) rethrown_in_more: u64,
    /// Methods that caught it: the catch handlers that ran in each, most first.
    pub(crate) catch_sites: Vec<NameCount>,
    /// Handlers of methods left out of `catch_sites`.
    pub(crate) catch_sites_more: u64,
}

impl ExceptionTypeReport {
    /// The sentence that says it: "50 thrown (in Orders.Get), each rethrown 8 times through
    /// async frames", or "3 thrown" when none was rethrown.
    pub(crate) fn said(&self) -> String {
        let mut s = format!("{} thrown", self.thrown);
        if let Some(site) = self.thrown_in.first() {
            let more = if self.thrown_in.len() > 1 || self.thrown_in_more > 0 {
                ", mostly"
            } else {
                ""
            };
            s.push_str(&format!(" (in {}{more})", short_method(&site.name)));
        }
        if self.rethrown == 0 {
            return s;
        }
        let how = if self
            .rethrown_in
            .iter()
            .any(|r| r.name.contains("Awaiter") || r.name.contains("ExceptionDispatchInfo"))
        {
            " through async frames"
        } else {
            ""
        };
        if self.thrown > 0 && self.rethrown.is_multiple_of(self.thrown) {
            let each = match self.rethrown / self.thrown {
                1 => "once".to_string(),
                n => format!("{n} times"),
            };
            s.push_str(&format!(", each rethrown {each}{how}"));
        } else {
            s.push_str(&format!(", rethrown {} times{how}", self.rethrown));
        }
        s
    }
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
    let lines = a.source_lines();
    let types = types
        .into_iter()
        .map(|(name, t)| type_report(a, &lines, name, &t))
        .collect();
    ExceptionsReport {
        total: a.exceptions.total,
        types,
    }
}

/// Throw stacks kept per type.
const THROW_STACKS: usize = 5;

/// One type's row: its throws told apart from its rethrows by their stacks.
fn type_report(
    a: &Analysis,
    lines: &SourceLines<'_>,
    name: String,
    t: &ExceptionType,
) -> ExceptionTypeReport {
    let mut thrown_in: FxHashMap<String, u64> = FxHashMap::default();
    let mut rethrown_in: FxHashMap<String, u64> = FxHashMap::default();
    // (frames, count, rethrows among them, the stack)
    let mut stacks: Vec<(Vec<String>, u64, u64, Option<StackId>)> =
        Vec::with_capacity(t.stacks.len());
    for (&s, &c) in &t.stacks {
        let frames = a.frames(s);
        let site = throw_site(&frames).unwrap_or("[no stack]").to_string();
        let rethrows = if rethrow_helper(&frames).is_some() {
            c
        } else {
            t.flagged.get(&s).copied().unwrap_or(0).min(c)
        };
        if rethrows > 0 {
            *rethrown_in.entry(site.clone()).or_default() += rethrows;
        }
        if c > rethrows {
            *thrown_in.entry(site).or_default() += c - rethrows;
        }
        stacks.push((frames, c, rethrows, s));
    }
    // The exceptions' own stacks first, then the rethrows'.
    stacks.sort_by(|x, y| {
        (x.2 == x.1)
            .cmp(&(y.2 == y.1))
            .then_with(|| y.1.cmp(&x.1))
            .then_with(|| x.0.cmp(&y.0))
    });
    let stacks_total: u64 = stacks.iter().map(|s| s.1).sum();
    stacks.truncate(THROW_STACKS);
    let throw_sites: Vec<StackCount> = stacks
        .into_iter()
        .map(|(frames, count, _, s)| StackCount {
            frames,
            count,
            weight: None,
            lines: super::lines::stack_lines(a, lines, s),
        })
        .collect();
    let rethrown: u64 = rethrown_in.values().sum();
    let (messages, messages_more) = counts_and_more(&t.messages, 10);
    let (thrown_in, thrown_in_more) = counts_and_more(&thrown_in, 5);
    let (rethrown_in, rethrown_in_more) = counts_and_more(&rethrown_in, 5);
    let (catch_sites, catch_sites_more) = counts_and_more(&t.catches, 5);
    ExceptionTypeReport {
        type_name: name,
        count: t.count,
        rethrown,
        thrown: t.count.saturating_sub(rethrown),
        catches: t.catches.values().sum(),
        messages,
        messages_more,
        throw_sites_more: stacks_total - throw_sites.iter().map(|s| s.count).sum::<u64>(),
        throw_sites,
        thrown_in,
        thrown_in_more,
        rethrown_in,
        rethrown_in_more,
        catch_sites,
        catch_sites_more,
    }
}

/// The `top` largest counts of a map, and the sum of the counts left out.
fn counts_and_more(m: &FxHashMap<String, u64>, top: usize) -> (Vec<NameCount>, u64) {
    let rows = sorted_counts(m, top);
    let shown: u64 = rows.iter().map(|r| r.count).sum();
    let all: u64 = m.values().sum();
    (rows, all.saturating_sub(shown))
}

impl TextView for ExceptionsReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!("Exceptions: {}", self.said()))
        )?;
        if !self.types.is_empty() {
            writeln!(
                out,
                "  counts: thrown = the exceptions (Exception/Start events that were no rethrow); rethrown = thrown on by an await of a faulted task, a framework's rethrow helper or `throw;`; caught in = catch handlers that ran, per method (an exception caught, rethrown and caught again counts in each)"
            )?;
        }
        for t in &self.types {
            writeln!(
                out,
                "\n  {:>8}  {}: {}",
                t.count,
                fit(&t.type_name, style.room(14)),
                t.said()
            )?;
            write_counts(out, style, "message", &t.messages, 3, t.messages_more)?;
            write_counts(out, style, "thrown in", &t.thrown_in, 3, t.thrown_in_more)?;
            write_counts(out, style, "rethrown in", &t.rethrown_in, 3, t.rethrown_in_more)?;
            if let Some(top) = t.throw_sites.first() {
                write_throw_stack(out, top, style)?;
            }
            if t.catches > 0 {
                writeln!(out, "  {:>8}    catch handlers ran", t.catches)?;
            }
            write_counts(out, style, "caught in", &t.catch_sites, 2, t.catch_sites_more)?;
        }
        Ok(())
    }
}

impl ExceptionsReport {
    /// "450 thrown" and, when some were rethrows, how many exceptions they were.
    fn said(&self) -> String {
        let rethrown: u64 = self.types.iter().map(|t| t.rethrown).sum();
        if rethrown == 0 {
            return format!("{} thrown", self.total);
        }
        format!(
            "{} thrown ({} exceptions, {} rethrows of them)",
            self.total,
            self.total.saturating_sub(rethrown),
            rethrown
        )
    }
}

/// Up to `show` rows of a list as `count    label: name`, then what the list left out.
fn write_counts(
    out: &mut dyn Write,
    style: &TextStyle,
    label: &str,
    rows: &[NameCount],
    show: usize,
    more: u64,
) -> io::Result<()> {
    for r in rows.iter().take(show) {
        writeln!(
            out,
            "  {:>8}    {label}: {}",
            r.count,
            fit(&r.name, style.room(16 + label.len()))
        )?;
    }
    let hidden = rows.len().saturating_sub(show);
    let left: u64 = rows.iter().skip(show).map(|r| r.count).sum::<u64>() + more;
    if left > 0 {
        let others = if more > 0 {
            "others".to_string()
        } else {
            format!("{hidden} more (--json lists them)")
        };
        writeln!(out, "  {left:>8}    {label}: … {others}")?;
    }
    Ok(())
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
    for (i, f) in frames.iter().enumerate().take(THROW_FRAMES) {
        let f = match s.lines.get(from + i).and_then(Option::as_deref) {
            Some(line) => format!("{f} at {line}"),
            None => f.clone(),
        };
        writeln!(out, "  {:>8}      {}", "", fit(&f, style.room(16)))?;
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
            style.heading(&format!("Exceptions: {}", self.exceptions.said()))
        )?;
        for t in self.exceptions.types.iter().take(3) {
            writeln!(out, "  {:>8}  {}: {}", t.count, t.type_name, t.said())?;
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
