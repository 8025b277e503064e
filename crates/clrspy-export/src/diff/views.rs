//! The diff's pictures: a differential flame graph of CPU (the new trace's stacks, each bar's
//! colour its change per unit of work: red grew, blue shrank, drawn by inferno from folded
//! lines with both counts), a self-contained HTML page with it, the two traces' own flame
//! graphs side by side, the verdict and the tables, and a speedscope file of both traces' CPU
//! per unit of work (one profile each).

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};
use rustc_hash::FxHashMap;

use super::model::TraceDiff;
use crate::html::markup::{embed, escape, page_end, page_head};
use crate::{folded, weighted_stacks};

/// Each distinct stack's folded line and its weight (µs of CPU), summed over threads.
fn folded_cpu(a: &Analysis) -> FxHashMap<String, u64> {
    let stacks = weighted_stacks(a, Metric::Cpu, &StackFilter::default());
    let mut out: FxHashMap<String, u64> = FxHashMap::default();
    for line in folded::lines(&stacks, Metric::Cpu.into(), &|_| String::new(), false) {
        if let Some((stack, n)) = line.rsplit_once(' ') {
            *out.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap_or(0);
        }
    }
    out
}

/// Writes the differential flame graph of CPU: the new trace's stacks, each with the base's
/// weight scaled to the new trace's units of work, so that a bar's colour is its change per
/// unit of work.
pub fn write_flamegraph(
    base: &Analysis,
    new: &Analysis,
    d: &TraceDiff,
    out: &mut dyn Write,
) -> io::Result<()> {
    let (b, n) = (folded_cpu(base), folded_cpu(new));
    let scale = if d.base.units > 0.0 {
        d.new.units / d.base.units
    } else {
        1.0
    };
    let mut lines: Vec<String> = n
        .iter()
        .map(|(s, &w)| {
            let before = b.get(s).map_or(0, |&v| (v as f64 * scale).round() as u64);
            format!("{s} {before} {w}")
        })
        .chain(
            b.iter()
                .filter(|(s, _)| !n.contains_key(*s))
                .map(|(s, &v)| format!("{s} {} 0", (v as f64 * scale).round() as u64)),
        )
        .collect();
    lines.sort();
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!("CPU: {} against {}", d.new.label, d.base.label);
    opts.subtitle = Some(format!(
        "widths: the new trace; colours: the change per {} (red grew, blue shrank)",
        d.per
    ));
    opts.count_name = "µs".into();
    opts.image_width = Some(1200);
    if lines.is_empty() {
        return inferno::flamegraph::from_lines(
            &mut opts,
            std::iter::once("[no samples] 1 1"),
            out,
        )
        .map_err(io::Error::other);
    }
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(io::Error::other)
}

/// Writes the diff as a self-contained HTML page: the verdict, the differential flame graph,
/// the two traces' flame graphs side by side, and the tables in text.
pub fn write_html(
    base: &Analysis,
    new: &Analysis,
    d: &TraceDiff,
    out: &mut dyn Write,
) -> io::Result<()> {
    let title = format!("{} against {}", d.new.label, d.base.label);
    let mut h = page_head(&title);
    let _ = write!(
        h,
        "<p>Per {}: {}. <b>Verdict: {}</b> ({} regressions).</p>",
        escape(&d.per),
        escape(&d.per_reason),
        d.verdict,
        d.regressions.len()
    );
    for n in &d.notes {
        let _ = write!(h, "<p class=note>{}</p>", escape(n));
    }
    h.push_str("<h2>CPU, the change per unit of work</h2>");
    let mut svg = Vec::new();
    write_flamegraph(base, new, d, &mut svg)?;
    embed(&mut h, "diff", "differential flame graph", &svg);
    h.push_str("<h2>The two traces</h2><div style=\"display:flex;gap:8px\">");
    for (id, a, label) in [("base", base, &d.base.label), ("new", new, &d.new.label)] {
        let _ = write!(
            h,
            "<div style=\"flex:1;min-width:0\"><p>{}</p>",
            escape(label)
        );
        let mut one = Vec::new();
        let stacks = weighted_stacks(a, Metric::Cpu, &StackFilter::default());
        crate::flamegraph::write(&mut one, &stacks, Metric::Cpu, label, &|t| {
            format!("thread {t}")
        })?;
        embed(&mut h, id, label, &one);
        h.push_str("</div>");
    }
    h.push_str("</div><h2>The tables</h2><pre>");
    let mut t = Vec::new();
    d.write_text(&mut t, &crate::report::TextStyle::default())?;
    h.push_str(&escape(&String::from_utf8_lossy(&t)));
    h.push_str("</pre>");
    h.push_str(&page_end());
    out.write_all(h.as_bytes())
}

/// Writes a speedscope file with both traces' CPU stacks, each a profile of its own ("base: …",
/// "new: …"), in ms per unit of work, so that switching between them compares like with like.
pub fn write_speedscope(
    base: &Analysis,
    new: &Analysis,
    d: &TraceDiff,
    out: &mut dyn Write,
) -> io::Result<()> {
    let per = |a: &Analysis, units: f64| {
        let mut v = weighted_stacks(a, Metric::Cpu, &StackFilter::default());
        for s in &mut v {
            s.weight /= units.max(f64::MIN_POSITIVE);
        }
        v
    };
    let sets = [
        (
            format!("base: {} (ms per {})", d.base.label, d.per),
            per(base, d.base.units),
        ),
        (
            format!("new: {} (ms per {})", d.new.label, d.per),
            per(new, d.new.units),
        ),
    ];
    let name = format!("CPU: {} against {}", d.new.label, d.base.label);
    crate::speedscope::write_sets(out, &sets, Metric::Cpu, &name)
}
