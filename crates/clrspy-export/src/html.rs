//! One self-contained HTML report that opens offline (no network, no external files): the
//! trace's facts, CPU and waiting time by method, an interactive flame graph (inferno's SVG with
//! its search and zoom, in an iframe's srcdoc so its script runs in a document of its own), a GC
//! pause timeline drawn as inline SVG, the callers and callees of the hottest methods, and the
//! allocation and exception tables.

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};

use crate::report::{alloc, exceptions, gc, stack, MethodWeight, ReportOptions};
use crate::{flamegraph, thread_label, weighted_stacks};

mod links;

/// The `height` attribute of an SVG's root element, in pixels.
fn svg_height(svg: &str) -> Option<u32> {
    let tag_end = svg.find('>')?;
    let tag = &svg[..tag_end];
    let at = tag.find(" height=\"")? + " height=\"".len();
    let rest = &tag[at..];
    let end = rest.find('"')?;
    rest[..end]
        .trim_end_matches("px")
        .parse::<f64>()
        .ok()
        .map(|v| v.ceil() as u32)
}

/// The tallest a graph's frame gets; a taller graph scrolls inside it.
const MAX_FRAME_HEIGHT: u32 = 900;

/// Embeds an SVG in a document of its own (its script expects to be the page's only SVG), as
/// an iframe's srcdoc: no file, no network. The frame is as tall as the graph, up to
/// [`MAX_FRAME_HEIGHT`].
fn embed(h: &mut String, id: &str, title: &str, svg: &[u8]) {
    let svg = String::from_utf8_lossy(svg);
    let svg = svg.find("<svg").map_or(&*svg, |i| &svg[i..]);
    // Scaled to the frame's width (the SVG has a view box; inferno's fluid layout
    // miscomputes its width inside a frame).
    let doc = format!(
        "<!doctype html><html><head><style>svg{{width:100%;height:auto}}</style></head><body style=\"margin:0\">{svg}</body></html>"
    );
    let height = svg_height(svg).map_or(560, |h| (h + 8).min(MAX_FRAME_HEIGHT));
    let _ = write!(
        h,
        "<iframe id={id} title=\"{title}\" style=\"height:{height}px\" srcdoc=\"{}\"></iframe>",
        escape(&doc)
    );
}

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn table(title: &str, rows: &[MethodWeight], unit: &str) -> String {
    let mut h = format!(
        "<h2>{}</h2><table><tr><th class=n>{unit}</th><th class=n>%</th><th>Method</th></tr>",
        escape(title)
    );
    if rows.is_empty() {
        h.push_str("<tr><td colspan=3>none in this trace</td></tr>");
    }
    for r in rows {
        let v = if unit == "ms" {
            format!("{:.1}", r.ms)
        } else {
            format!("{:.0}", r.samples)
        };
        let _ = write!(
            h,
            "<tr><td class=n>{v}</td><td class=n>{:.1}</td><td>{}</td></tr>",
            r.percent,
            escape(&r.method)
        );
    }
    h.push_str("</table>");
    h
}

/// Writes the report; its flame graph weighs `metric` (CPU, waiting time or allocated bytes).
pub fn write(a: &Analysis, title: &str, metric: Metric, out: &mut dyn Write) -> io::Result<()> {
    write_with(a, title, metric, &StackFilter::default(), out)
}

/// [`write`] with a stack filter (a thread, `--just-my-code`) for its tables and graph.
pub fn write_with(
    a: &Analysis,
    title: &str,
    metric: Metric,
    filter: &StackFilter,
    out: &mut dyn Write,
) -> io::Result<()> {
    let top = |top| ReportOptions {
        top,
        filter: filter.clone(),
        ..ReportOptions::default()
    };
    let cpu = stack::build(a, Metric::Cpu, &top(25));
    let waits = stack::build(a, Metric::Wait, &top(15));
    let gc = gc::build(a, &top(usize::MAX));
    let alloc = alloc::build(a, &top(20));
    let exc = exceptions::build(a, &top(20));
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
    let allocated = if alloc.ticks == 0 {
        "not recorded (record with --profile alloc)".to_string()
    } else {
        format!("{:.1} MB", alloc.total_bytes as f64 / 1048576.0)
    };

    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>{t}</title><style>\
body{{font:14px system-ui,sans-serif;margin:24px;color:#222}}h1{{font-size:20px}}h2{{font-size:16px;margin-top:28px}}\
table{{border-collapse:collapse;margin:8px 0}}td,th{{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}}\
.n{{text-align:right;font-variant-numeric:tabular-nums}}.facts td:first-child{{color:#666}}\
iframe{{width:100%;height:560px;border:1px solid #ddd}}.links ul{{padding-left:14px;margin:0}}.links summary{{cursor:pointer}}.note{{color:#666}}</style></head><body>\
<h1>{t}</h1>",
        t = escape(title)
    );
    let _ = write!(
        h,
        "<table class=facts><tr><td>duration</td><td>{:.2} s</td></tr><tr><td>events</td><td>{}</td></tr>\
<tr><td>events lost</td><td>{}</td></tr><tr><td>CPU time</td><td>{:.1} ms</td></tr><tr><td>waiting time</td><td>{:.1} ms</td></tr>\
<tr><td>how CPU was told from waiting</td><td>{}</td></tr><tr><td>GCs</td><td>{} (paused {:.1} ms, {:.2}% of the time)</td></tr>\
<tr><td>allocated (estimate)</td><td>{}</td></tr><tr><td>exceptions</td><td>{}</td></tr></table>",
        a.duration_ns as f64 / 1e9,
        a.events,
        a.dropped_events,
        cpu.total_ms,
        waits.total_ms,
        escape(&cpu.method_note),
        gc.totals.count,
        gc.totals.total_pause_ms,
        gc.totals.paused_percent,
        escape(&allocated),
        exc.total,
    );
    h.push_str(&table(
        "Hot methods: CPU, exclusive",
        &cpu.top_exclusive,
        "ms",
    ));
    h.push_str(&table(
        "Hot methods: CPU, inclusive",
        &cpu.top_inclusive,
        "ms",
    ));
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
    h.push_str(&links::section(a, &cpu.top_exclusive, filter, 5));
    h.push_str(&table(
        "Where threads waited (by blocking call)",
        &waits.by_blocking_call,
        "ms",
    ));

    // GC pause timeline.
    h.push_str("<h2>GC pauses over time</h2>");
    if gc.gcs.is_empty() {
        h.push_str("<p class=note>no GC events in this trace</p>");
    } else {
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
    }

    h.push_str("<h2>Allocations by type</h2><table><tr><th class=n>MB</th><th class=n>%</th><th class=n>ticks</th><th>heap</th><th>Type</th></tr>");
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
    h.push_str("</table><h2>Exceptions</h2><table><tr><th class=n>count</th><th>Type</th><th>Most frequent message</th></tr>");
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
    let _ = writeln!(
        h,
        "</table><p class=note>clrspy {}</p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out.write_all(h.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            escape("List<int> & \"x\""),
            "List&lt;int&gt; &amp; &quot;x&quot;"
        );
    }
}
