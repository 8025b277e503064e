//! The `exceptions` report: by type, with messages, throw stacks and catch sites.

use std::io::{self, Write};

use clrspy_analysis::exceptions::{throw_site, ExceptionType};
use clrspy_analysis::Analysis;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::text::TextStyle;
use super::{sorted_counts, NameCount, ReportKind, ReportOptions, StackCount, TextView};
use crate::units::fit;

/// One exception type.
#[derive(Clone, Debug, Serialize)]
pub struct ExceptionTypeReport {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Times thrown.
    pub count: u64,
    /// Messages, most frequent first.
    pub messages: Vec<NameCount>,
    /// Throw sites (stacks), most frequent first.
    pub throw_sites: Vec<StackCount>,
    /// Where it was thrown: each throw stack's first frame outside the runtime's exception
    /// dispatch, most frequent first.
    pub thrown_in: Vec<NameCount>,
    /// Methods that caught it.
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
        for t in &self.types {
            writeln!(
                out,
                "\n  {:>8}  {}",
                t.count,
                fit(&t.type_name, style.room(12))
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
