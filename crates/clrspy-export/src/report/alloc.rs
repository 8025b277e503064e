//! The `alloc` report: estimated bytes by type and heap, allocating methods and stacks.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::alloc::HeapKind;
use clrspy_analysis::Analysis;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::rows::{MethodWeight, StackCount};
use super::text::{method_table, TextStyle, Unit};
use super::needs::{GC, Models, Needs};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::def::ReportDef;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;
use crate::units::{fit, human_bytes, percent};

/// The `alloc` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "alloc",
    description: "Allocations by type and stack",
    // Allocation ticks are verbose.
    needs: Needs::runtime(GC, 5),
    models: Models::Named(&["alloc"]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 40,
        build: |i| Box::new(AllocSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// One allocated type.
#[derive(Clone, Debug, Serialize)]
pub struct TypeBytes {
    /// The type name.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Estimated bytes allocated (what the ticks stand for).
    pub bytes: u64,
    /// Allocation ticks (samples) naming this type.
    pub count: u64,
    /// Which heap.
    pub heap: HeapKind,
    /// Share of all allocated bytes, percent.
    pub percent: f64,
}

/// Allocations.
#[derive(Clone, Debug, Serialize)]
pub struct AllocReport {
    /// Allocation ticks in the trace.
    pub ticks: u64,
    /// Estimated bytes allocated.
    pub total_bytes: u64,
    /// Types by bytes, all heaps.
    pub types: Vec<TypeBytes>,
    /// Methods by allocated bytes (the first managed frame of each allocating stack).
    pub(crate) top_methods: Vec<MethodWeight>,
    /// Heaviest allocating stacks.
    pub stacks: Vec<StackCount>,
}

/// The heap's name as the report prints it.
pub(crate) fn heap_name(h: HeapKind) -> &'static str {
    match h {
        HeapKind::Small => "small",
        HeapKind::Large => "large",
        HeapKind::Pinned => "pinned",
    }
}

/// The first managed frame of a stack (leaf first), or its leaf.
pub(crate) fn first_managed(frames: &[String]) -> String {
    frames
        .iter()
        .find(|f| !f.starts_with('[') && !f.contains('!'))
        .or_else(|| frames.first())
        .cloned()
        .unwrap_or_else(|| "[no stack]".into())
}

/// Builds the allocation report.
pub fn build(a: &Analysis, o: &ReportOptions) -> AllocReport {
    let top = o.top;
    let total = a.alloc.total_bytes.max(1) as f64;
    let mut types: Vec<TypeBytes> = a
        .alloc
        .by_type
        .iter()
        .map(|(&(t, heap), v)| TypeBytes {
            type_name: a.alloc.type_name(t).to_string(),
            bytes: v.bytes,
            count: v.count,
            heap,
            percent: percent(v.bytes as f64, total),
        })
        .collect();
    types.sort_by(|x, y| {
        y.bytes
            .cmp(&x.bytes)
            .then_with(|| x.type_name.cmp(&y.type_name))
    });
    types.truncate(top);
    let entries: Vec<_> = a.alloc.by_stack.iter().map(|(k, v)| (*k, *v)).collect();
    let mut methods: FxHashMap<String, u64> = FxHashMap::default();
    let mut stacks: FxHashMap<Vec<String>, (u64, u64)> = FxHashMap::default();
    for ((_, _, stack), (count, bytes)) in entries {
        let frames = a.frames(stack);
        *methods.entry(first_managed(&frames)).or_default() += bytes;
        let e = stacks.entry(frames).or_default();
        e.0 += count;
        e.1 += bytes;
    }
    let mut top_methods: Vec<MethodWeight> = methods
        .into_iter()
        .map(|(method, b)| MethodWeight {
            method,
            samples: b as f64,
            percent: percent(b as f64, total),
            ms: 0.0,
            called_from: None,
        })
        .collect();
    top_methods.sort_by(|x, y| {
        y.samples
            .total_cmp(&x.samples)
            .then_with(|| x.method.cmp(&y.method))
    });
    top_methods.truncate(top);
    let mut stacks: Vec<StackCount> = stacks
        .into_iter()
        .map(|(frames, (count, bytes))| StackCount {
            frames,
            count,
            weight: Some(bytes as f64),
            lines: Vec::new(),
        })
        .collect();
    stacks.sort_by(|x, y| {
        y.weight
            .unwrap_or(0.0)
            .total_cmp(&x.weight.unwrap_or(0.0))
            .then_with(|| x.frames.cmp(&y.frames))
    });
    stacks.truncate(top.min(10));
    AllocReport {
        ticks: a.alloc.ticks,
        total_bytes: a.alloc.total_bytes,
        types,
        top_methods,
        stacks,
    }
}

impl TextView for AllocReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Allocations: {} estimated from {} allocation ticks (one per ~100 KB)",
                human_bytes(self.total_bytes),
                self.ticks
            ))
        )?;
        if self.ticks == 0 {
            writeln!(
                out,
                "  none in this trace: record with --profile alloc (or gc-verbose)"
            )?;
        }
        writeln!(
            out,
            "  {:>10} {:>7} {:>7} {:>6}  Type",
            "bytes", "%", "ticks", "heap"
        )?;
        for t in &self.types {
            writeln!(
                out,
                "  {:>10} {:>6.1}% {:>7} {:>6}  {}",
                human_bytes(t.bytes),
                t.percent,
                t.count,
                heap_name(t.heap),
                fit(&t.type_name, style.room(38))
            )?;
        }
        writeln!(out, "\n{}", style.heading("Allocating methods"))?;
        method_table(out, &self.top_methods, Unit::Bytes, style)?;
        if !self.stacks.is_empty() {
            writeln!(
                out,
                "\n{}",
                style.heading("Allocating stacks (heaviest first, innermost frame first)")
            )?;
        }
        for s in self.stacks.iter().take(5) {
            writeln!(
                out,
                "  {:>10} in {} ticks",
                human_bytes(s.weight.unwrap_or(0.0) as u64),
                s.count
            )?;
            for f in s.frames.iter().take(12) {
                writeln!(out, "      {}", fit(f, style.room(6)))?;
            }
            if s.frames.len() > 12 {
                writeln!(
                    out,
                    "      ({} more frames; --json has them all)",
                    s.frames.len() - 12
                )?;
            }
        }
        Ok(())
    }
}

/// The summary's allocation section: the `alloc` key (top 5) and the three largest types.
struct AllocSection {
    alloc: AllocReport,
    next: Vec<String>,
}

impl AllocSection {
    fn build(i: &SummaryInput<'_>) -> AllocSection {
        let alloc = build(i.a, &i.o);
        let next = (alloc.ticks > 0)
            .then(|| {
                format!(
                    "clrspy report {} alloc        (types and allocating stacks)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        AllocSection { alloc, next }
    }
}

impl SummarySection for AllocSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![("alloc", to_json(&self.alloc))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if self.alloc.ticks == 0 {
            return Ok(());
        }
        writeln!(
            out,
            "\n{}",
            style.heading(&format!(
                "Allocations: ~{}",
                human_bytes(self.alloc.total_bytes)
            ))
        )?;
        for t in self.alloc.types.iter().take(3) {
            writeln!(
                out,
                "  {:>10} {:>5.1}%  {}",
                human_bytes(t.bytes),
                t.percent,
                t.type_name
            )?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's allocated bytes and its table of allocated types.
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let alloc = build(i.a, &i.options(20));
    let allocated = if alloc.ticks == 0 {
        "not recorded (record with --profile alloc)".to_string()
    } else {
        format!("{:.1} MB", alloc.total_bytes as f64 / 1048576.0)
    };
    let mut h = String::from("<h2>Allocations by type</h2><table><tr><th class=n>MB</th><th class=n>%</th><th class=n>ticks</th><th>heap</th><th>Type</th></tr>");
    if alloc.types.is_empty() {
        h.push_str("<tr><td colspan=5>no allocation ticks (record with --profile alloc)</td></tr>");
    }
    for t in &alloc.types {
        let _ = write!(
            h,
            "<tr><td class=n>{:.2}</td><td class=n>{:.1}</td><td class=n>{}</td><td>{:?}</td><td>{}</td></tr>",
            t.bytes as f64 / 1048576.0,
            t.percent,
            t.count,
            t.heap,
            escape(&t.type_name)
        );
    }
    h.push_str("</table>");
    HtmlSection {
        facts: vec![Fact {
            order: 40,
            label: "allocated (estimate)",
            value: escape(&allocated),
        }],
        parts: vec![Part { order: 60, html: h }],
    }
}
