//! The HTML pieces the reports' HTML sections and the page itself are written with: escaping
//! and the table of methods. It imports neither the page ([`super`]) nor any report (only
//! their row type), so every report can use it.

use std::fmt::Write as _;

use crate::report::rows::MethodWeight;

/// The page's start: its head and style (every page of the report has the same), and its
/// heading.
pub(crate) fn page_head(title: &str) -> String {
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
    h
}

/// The page's end.
pub(crate) fn page_end() -> String {
    format!(
        "<p class=note>clrspy {}</p></body></html>\n",
        env!("CARGO_PKG_VERSION")
    )
}

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
pub(crate) const MAX_FRAME_HEIGHT: u32 = 900;

/// Embeds an SVG in a document of its own (its script expects to be the page's only SVG), as
/// an iframe's srcdoc: no file, no network. The frame is as tall as the graph, up to
/// [`MAX_FRAME_HEIGHT`].
pub(crate) fn embed(h: &mut String, id: &str, title: &str, svg: &[u8]) {
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

/// A table of methods under a heading: `ms`, or samples when `unit` is another word.
pub(crate) fn table(title: &str, rows: &[MethodWeight], unit: &str) -> String {
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
