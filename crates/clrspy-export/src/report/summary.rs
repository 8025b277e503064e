//! The `summary` report: one screen over everything the trace supports, with the commands to
//! run next. Past its heading and warnings it is made of the summary sections that the
//! registry's reports declare ([`super::sections`]), in their order: it names no report, and
//! the registry hands it those sections ([`report`], [`build`]).

use std::io::{self, Write};

use clrspy_analysis::cpu::CpuSource;
use clrspy_analysis::{Analysis, DecodeFailures};
use serde::ser::{Error as _, SerializeMap};
use serde::{Serialize, Serializer};

use super::needs::{Models, Needs};
use super::sections::{SummaryDef, SummaryInput, SummarySection};
use super::text::TextStyle;
use super::def::ReportDef;
use super::view::{Report, ReportOptions, TextView};

/// The `summary` report's declaration with its builder, which the registry gives: it builds
/// the summary ([`build`]) from the summary sections of the registry's reports.
pub const fn report(build: fn(&Analysis, &ReportOptions) -> Report) -> ReportDef {
    ReportDef {
        name: "summary",
        description: "One screen over everything the trace supports, with what to look at next",
        needs: Needs::SAMPLES,
        models: Models::OfSummarySections,
        rows: None,
        build,
        summary: None,
        html: None,
    }
}

/// What the summary says of the trace itself, before the sections.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryHeader {
    /// The trace, as the user named it.
    pub trace: String,
    /// First to last event, ms.
    pub duration_ms: f64,
    /// Events read.
    pub events: u64,
    /// Events the runtime lost.
    pub dropped_events: u64,
    /// Method names for code jitted before the session are in the trace.
    pub has_rundown: bool,
    /// clrspy's thread CPU readings are in the trace.
    pub has_thread_cpu: bool,
    /// Why reading stopped early (damage), when it did.
    pub read_error: Option<String>,
    /// Events of the runtime's known providers that could not be decoded.
    pub(crate) undecodable_events: u64,
    /// Those events by name: `event`, `count`, `first_error`.
    pub decode_errors: Vec<DecodeFailures>,
    /// How CPU was told from waiting (the rundown warning applies to sampled traces): text only.
    #[serde(skip)]
    pub(crate) cpu_source: CpuSource,
}

/// The summary: its header, the reports' sections, what to run next. Its JSON is the
/// header's keys, each section's keys in order, `next`, and `trigger` when a trigger stopped
/// the recording.
pub struct SummaryReport {
    /// What it says of the trace.
    pub header: SummaryHeader,
    /// The reports' sections, in their order.
    pub sections: Vec<Box<dyn SummarySection>>,
    /// What to run next, one command (or advice) per line: the sections' in their order.
    pub next: Vec<String>,
    /// The stop trigger that ended the recording, if one did (key absent otherwise).
    pub trigger: Option<clrspy_analysis::inventory::TriggerNote>,
}

impl std::fmt::Debug for SummaryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryReport")
            .field("header", &self.header)
            .field("sections", &self.sections.len())
            .field("next", &self.next)
            .finish()
    }
}

impl Serialize for SummaryReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match serde_json::to_value(&self.header).map_err(S::Error::custom)? {
            serde_json::Value::Object(header) => {
                for (k, v) in &header {
                    m.serialize_entry(k, v)?;
                }
            }
            _ => return Err(S::Error::custom("the summary's header is no object")),
        }
        for section in &self.sections {
            for (k, v) in section.json() {
                m.serialize_entry(k, &v)?;
            }
        }
        m.serialize_entry("next", &self.next)?;
        if let Some(t) = &self.trigger {
            m.serialize_entry("trigger", t)?;
        }
        m.end()
    }
}

/// Builds the summary of `sections` (those of every report that declares one), smallest order
/// first.
pub fn build(a: &Analysis, o: &ReportOptions, sections: &[SummaryDef]) -> SummaryReport {
    let input = SummaryInput::new(a, o);
    let mut defs = sections.to_vec();
    defs.sort_by_key(|d| d.order);
    let sections: Vec<Box<dyn SummarySection>> = defs.iter().map(|d| (d.build)(&input)).collect();
    let next = sections
        .iter()
        .flat_map(|s| s.next().iter().cloned())
        .collect();
    SummaryReport {
        header: SummaryHeader {
            trace: o.trace.clone(),
            duration_ms: a.duration_ns as f64 / 1e6,
            events: a.events,
            dropped_events: a.dropped_events,
            has_rundown: a.has_rundown,
            has_thread_cpu: a.has_thread_cpu,
            read_error: a.read_error.clone(),
            undecodable_events: a.undecodable,
            decode_errors: a.decode_errors().to_vec(),
            cpu_source: a.cpu.source(),
        },
        sections,
        next,
        trigger: a.trigger.clone(),
    }
}

impl TextView for SummaryReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let h = &self.header;
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "{}: {:.2} s, {} events",
                h.trace,
                h.duration_ms / 1e3,
                h.events
            ))
        )?;
        if let Some(t) = &self.trigger {
            let at = match t.event_ns {
                Some(ns) => format!(" at {:.3} s ({})", ns as f64 / 1e9, t.event),
                None => String::new(),
            };
            writeln!(
                out,
                "  stopped by trigger {}{at}: {}; {:.1} s recorded after it",
                t.trigger,
                t.reason,
                f64::from(t.after_ms) / 1e3
            )?;
        }
        self.write_warnings(out)?;
        for section in &self.sections {
            section.write_text(out, style)?;
        }
        writeln!(out, "\n{}", style.heading("Next"))?;
        for n in &self.next {
            writeln!(out, "  {n}")?;
        }
        Ok(())
    }
}

impl SummaryReport {
    fn write_warnings(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.header.dropped_events > 0 {
            writeln!(
                out,
                "  {} events were lost by the runtime (buffer full): counts are low",
                self.header.dropped_events
            )?;
        }
        if self.header.undecodable_events > 0 {
            writeln!(
                out,
                "  {} events could not be decoded (their payload did not match the runtime's layout): counts may be low",
                self.header.undecodable_events
            )?;
            for d in &self.header.decode_errors {
                writeln!(out, "    {} {}: {}", d.count, d.event, d.first_error)?;
            }
        }
        if !self.header.has_rundown && self.header.cpu_source != CpuSource::None {
            writeln!(
                out,
                "  no rundown in this trace: methods jitted before the recording have no names ([native], or [jitted code, unnamed]); stop a recording with one Ctrl+C so clrspy waits for the rundown, or record with `clrspy record -- COMMAND`, which records the program's method loads from its start"
            )?;
        }
        Ok(())
    }
}
