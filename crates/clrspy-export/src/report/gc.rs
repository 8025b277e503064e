//! The `gc` report: one row per GC, and totals over the analysed window.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::gc::{GcKind, GcRow, GcTotals};
use clrspy_analysis::Analysis;
use serde::Serialize;

use super::text::TextStyle;
use super::needs::{GC, Models, Needs};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::def::ReportDef;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;
use crate::units::round3;

/// The `gc` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "gc",
    description: "One row per GC, and totals",
    needs: Needs::runtime(GC, 4),
    // The GC report shows the allocation rate beside the GCs.
    models: Models::Named(&["gc", "alloc"]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 30,
        build: |i| Box::new(GcSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// GCs.
#[derive(Clone, Debug, Serialize)]
pub struct GcReport {
    /// "server" or "workstation" (null when the trace does not say).
    pub gc_mode: Option<GcKind>,
    /// Background GCs enabled (null when the trace does not say).
    pub concurrent: Option<bool>,
    /// GC heaps (null when the trace does not say).
    pub heaps: Option<u32>,
    /// One row per GC (all of them, whatever `--top` says).
    pub gcs: Vec<GcRow>,
    /// Totals.
    pub totals: GcTotals,
    /// Rows the text view shows (the last ones).
    #[serde(skip)]
    pub show: usize,
}

/// Builds the GC report. Percentages and rates are over the analysed window (`--from`/`--to`
/// clipped to the trace), not the whole trace.
pub fn build(a: &Analysis, o: &ReportOptions) -> GcReport {
    let alloc = (a.alloc.ticks > 0).then_some(a.alloc.total_bytes);
    let mut gcs = a.gc.gcs.clone();
    // The file interleaves threads: list GCs in the order they ran.
    gcs.sort_by(|x, y| {
        x.number
            .cmp(&y.number)
            .then(x.start_ms.total_cmp(&y.start_ms))
    });
    for g in &mut gcs {
        g.pause_ms = round3(g.pause_ms);
        g.duration_ms = g.duration_ms.map(round3);
        g.start_ms = round3(g.start_ms);
    }
    let mut totals = a.gc.totals(a.window_ns(), alloc);
    // Sums over no GCs are -0.0.
    for v in [
        &mut totals.total_pause_ms,
        &mut totals.max_pause_ms,
        &mut totals.p50_pause_ms,
        &mut totals.p95_pause_ms,
        &mut totals.p99_pause_ms,
        &mut totals.paused_percent,
    ] {
        *v += 0.0;
    }
    let mode = a.gc.mode;
    GcReport {
        gc_mode: mode.gc_mode,
        concurrent: mode.concurrent,
        heaps: mode.heaps,
        gcs,
        totals,
        show: o.top,
    }
}

impl GcReport {
    /// "Server GC, 2 heaps, concurrent": what the trace says of the GC's flavour.
    fn mode_line(&self) -> String {
        let mut parts = vec![match self.gc_mode {
            Some(k) => format!("{k} GC"),
            None => "GC flavour unknown (no GC/GlobalHeapHistory nor GC/Triggered events)".into(),
        }];
        if let Some(h) = self.heaps {
            parts.push(format!("{h} heap{}", if h == 1 { "" } else { "s" }));
        }
        match self.concurrent {
            Some(true) => parts.push("concurrent (background GCs)".into()),
            Some(false) => parts.push("not concurrent".into()),
            None => {}
        }
        parts.join(", ")
    }
}

impl TextView for GcReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let t = &self.totals;
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "GCs: {} (gen0 {}, gen1 {}, gen2 {}; induced gen2 {})",
                t.count, t.per_generation[0], t.per_generation[1], t.per_generation[2], t.induced
            ))
        )?;
        writeln!(out, "  {}", self.mode_line())?;
        writeln!(
            out,
            "  pauses: total {:.1} ms, max {:.2} ms, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; {:.2}% of the time paused",
            t.total_pause_ms, t.max_pause_ms, t.p50_pause_ms, t.p95_pause_ms, t.p99_pause_ms, t.paused_percent
        )?;
        if let Some(rate) = t.allocation_mb_per_s {
            writeln!(out, "  allocation rate: {rate:.1} MB/s")?;
        }
        if let Some(p) = t.peak_heap_mb {
            writeln!(out, "  peak heap after a GC: {p:.1} MB")?;
        }
        writeln!(
            out,
            "  by reason: {}",
            t.per_reason
                .iter()
                .map(|c| format!("{} {}", c.name, c.count))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(
            out,
            "\n  {:>6} {:>4} {:<18} {:<13} {:>10} {:>9} {:>10} {:>9}",
            "GC#", "gen", "reason", "type", "start ms", "pause ms", "heap MB", "promo MB"
        )?;
        let skip = self.gcs.len().saturating_sub(self.show.max(1));
        if skip > 0 {
            writeln!(
                out,
                "  ({skip} earlier GCs not shown; --top N or --json for all)"
            )?;
        }
        let opt = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| format!("{x:.1}"));
        for g in self.gcs.iter().skip(skip) {
            writeln!(
                out,
                "  {:>6} {:>4} {:<18} {:<13} {:>10.1} {:>9.2} {:>10} {:>9}",
                g.number,
                g.generation,
                g.reason.to_string(),
                g.kind.to_string(),
                g.start_ms,
                g.pause_ms,
                opt(g.heap_after_mb),
                opt(g.promoted_mb)
            )?;
        }
        Ok(())
    }
}

/// The GC part of the summary: totals only.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct GcSummary {
    /// Totals over the window.
    pub(crate) totals: GcTotals,
}

/// The summary's GC section: the `gc` key and one line of totals.
struct GcSection {
    gc: GcSummary,
    next: Vec<String>,
}

impl GcSection {
    fn build(i: &SummaryInput<'_>) -> GcSection {
        let gc = build(i.a, &i.o);
        let next = (gc.totals.count > 0)
            .then(|| {
                format!(
                    "clrspy report {} gc           (one row per GC)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        GcSection {
            gc: GcSummary { totals: gc.totals },
            next,
        }
    }
}

impl SummarySection for GcSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![("gc", to_json(&self.gc))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let t = &self.gc.totals;
        if t.count > 0 {
            writeln!(out, "\n{}", style.heading(&format!("GC: {} collections (gen0 {}, gen1 {}, gen2 {}), paused {:.1} ms total, max {:.2} ms, {:.2}% of the time", t.count, t.per_generation[0], t.per_generation[1], t.per_generation[2], t.total_pause_ms, t.max_pause_ms, t.paused_percent)))?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's GC count and pauses, and the timeline of every GC's pause.
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let gc = build(i.a, &i.options(usize::MAX));
    HtmlSection {
        facts: vec![Fact {
            order: 30,
            label: "GCs",
            value: format!(
                "{} (paused {:.1} ms, {:.2}% of the time)",
                gc.totals.count, gc.totals.total_pause_ms, gc.totals.paused_percent
            ),
        }],
        parts: vec![Part {
            order: 50,
            html: timeline(i.a, &gc),
        }],
    }
}

/// The GC pause timeline, as inline SVG.
fn timeline(a: &Analysis, gc: &GcReport) -> String {
    let mut h = String::from("<h2>GC pauses over time</h2>");
    if gc.gcs.is_empty() {
        h.push_str("<p class=note>no GC events in this trace</p>");
        return h;
    }
    let w = 1000.0;
    let ht = 160.0;
    let span = (a.duration_ns as f64 / 1e6).max(1.0);
    let max = gc.gcs.iter().map(|g| g.pause_ms).fold(0.1, f64::max);
    let _ = write!(
        h,
        "<svg id=gc-timeline width={w} height={} viewBox=\"0 0 {w} {}\" role=img>",
        ht + 20.0,
        ht + 20.0
    );
    let _ = write!(h, "<line x1=0 y1={ht} x2={w} y2={ht} stroke=#999 />");
    for g in &gc.gcs {
        let x = (g.start_ms / span * w).clamp(0.0, w - 2.0);
        let bh = (g.pause_ms / max * (ht - 10.0)).max(1.0);
        let color = match g.generation {
            2 => "#c0392b",
            1 => "#e67e22",
            _ => "#2e86c1",
        };
        let _ = write!(
            h,
            "<rect x={x:.1} y={:.1} width=3 height={bh:.1} fill={color}><title>GC #{} gen{} {}: {:.2} ms pause at {:.0} ms</title></rect>",
            ht - bh, g.number, g.generation, escape(&g.reason.to_string()), g.pause_ms, g.start_ms
        );
    }
    let _ = write!(h, "<text x=0 y={} font-size=11>0 ms</text><text x={} y={} font-size=11 text-anchor=end>{:.0} ms</text><text x=4 y=12 font-size=11>max pause {:.2} ms</text></svg>", ht + 14.0, w, ht + 14.0, span, max);
    h.push_str("<p class=note>blue gen0, orange gen1, red gen2; bar height = pause</p>");
    h
}
