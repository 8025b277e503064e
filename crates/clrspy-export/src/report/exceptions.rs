//! The `exceptions` report: by type, with messages, throw stacks and catch sites.

use std::io::{self, Write};

use clrspy_analysis::exceptions::{throw_site, ExceptionType};
use clrspy_analysis::Analysis;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::rows::{sorted_counts, NameCount, StackCount};
use super::text::TextStyle;
use super::view::{ReportKind, ReportOptions, TextView};
use crate::units::fit;

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
    pub throw_sites: Vec<StackCount>,
    /// Where it was thrown: each throw stack's first frame outside the runtime's exception
    /// dispatch, most frequent first.
    pub thrown_in: Vec<NameCount>,
    /// Methods that caught it: the catch handlers that ran in each, most first.
    pub catch_sites: Vec<NameCount>,
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
    fn kind(&self) -> ReportKind {
        ReportKind::Exceptions
    }

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
