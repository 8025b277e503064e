//! One self-contained HTML report that opens offline (no network, no external files): the
//! trace's facts and an interactive flame graph (inferno's SVG with its search and zoom, in an
//! iframe's srcdoc so its script runs in a document of its own), around the HTML sections the
//! registry's reports declare ([`crate::report::sections`]): today CPU and waiting time by
//! method, the callers and callees of the hottest methods, a GC pause timeline drawn as inline
//! SVG, and the allocation and exception tables.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};

use crate::report::sections::{HtmlInput, Part};
use crate::report::ReportKind;
use crate::{flamegraph, thread_label, weighted_stacks};

pub mod heap;
pub(crate) mod links;
pub(crate) mod markup;

use markup::embed;
pub use markup::escape;

/// Where the flame graphs go among the parts of the page ([`Part::order`]).
pub(crate) const FLAME_GRAPHS: u32 = 20;

/// Writes the report; its flame graph weighs `metric` (CPU, waiting time or allocated bytes).
pub fn write(a: &Analysis, title: &str, metric: Metric, out: &mut dyn Write) -> io::Result<()> {
    write_with(a, title, metric, &StackFilter::default(), out)
}

/// [`write()`] with a stack filter (a thread, `--just-my-code`) for its tables and graph. The
/// page is the trace's facts, then the HTML sections of the registry's reports
/// ([`crate::report::sections`]) and the flame graphs, by their order.
pub(crate) fn write_with(
    a: &Analysis,
    title: &str,
    metric: Metric,
    filter: &StackFilter,
    out: &mut dyn Write,
) -> io::Result<()> {
    let input = HtmlInput { a, filter };
    let mut facts = Vec::new();
    let mut parts = Vec::new();
    for def in ReportKind::ALL.into_iter().filter_map(|k| k.def().html) {
        let section = (def.build)(&input);
        facts.extend(section.facts);
        parts.extend(section.parts);
    }
    parts.push(Part {
        order: FLAME_GRAPHS,
        html: flame_graphs(a, title, metric, filter)?,
    });
    facts.sort_by_key(|f| f.order);
    parts.sort_by_key(|p| p.order);

    let mut h = markup::page_head(title);
    let _ = write!(
        h,
        "<table class=facts><tr><td>duration</td><td>{:.2} s</td></tr><tr><td>events</td><td>{}</td></tr>\
<tr><td>events lost</td><td>{}</td></tr>",
        a.duration_ns as f64 / 1e9,
        a.events,
        a.dropped_events,
    );
    for f in &facts {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", f.label, f.value);
    }
    h.push_str("</table>");
    for p in &parts {
        h.push_str(&p.html);
    }
    h.push_str(&markup::page_end());
    out.write_all(h.as_bytes())
}

/// The flame graph of `metric`, top-down, and the same by leaf, each with its heading.
fn flame_graphs(
    a: &Analysis,
    title: &str,
    metric: Metric,
    filter: &StackFilter,
) -> io::Result<String> {
    let stacks = weighted_stacks(a, metric, filter);
    let label = |t: u64| thread_label(a, t);
    let what = match metric {
        Metric::Cpu => "CPU",
        Metric::Wait => "waiting time",
        Metric::Alloc => "allocated bytes",
    };
    let total: f64 = stacks.iter().map(|s| s.weight).sum();
    let root_label = Some(match metric {
        Metric::Cpu | Metric::Wait => format!("all threads: {what}, {total:.1} ms"),
        Metric::Alloc => format!("all allocations: {:.1} MB", total / 1048576.0),
    });
    // Top-down (the root and its label first) and by leaf (the hot methods as one bar each),
    // both scaled to the page's width ([`embed`]).
    let mut svg = Vec::new();
    let view = flamegraph::View {
        top_down: true,
        root_label: root_label.clone(),
        ..flamegraph::View::default()
    };
    flamegraph::write_view(
        &mut svg,
        &stacks,
        metric,
        &format!("{title} — {what}"),
        &label,
        &view,
    )?;
    let mut by_leaf = Vec::new();
    let view = flamegraph::View {
        by_leaf: true,
        ..view
    };
    flamegraph::write_view(
        &mut by_leaf,
        &stacks,
        metric,
        &format!("{title} — {what} by leaf"),
        &label,
        &view,
    )?;
    let mut h = String::new();
    let _ = write!(
        h,
        "<h2>Flame graph ({what}; root at the top; click to zoom, Ctrl+F to search)</h2>"
    );
    if stacks.is_empty() {
        let _ = write!(h, "<p class=note>no {what} stacks in this trace</p>");
    }
    embed(&mut h, "flamegraph", "flame graph", &svg);
    let _ = write!(
        h,
        "<h2>By leaf ({what}; inverted: identical leaf methods merged into one bar, their callers under it)</h2>"
    );
    embed(
        &mut h,
        "flamegraph-by-leaf",
        "flame graph by leaf",
        &by_leaf,
    );
    Ok(h)
}
