//! The HTML pieces the reports' HTML sections and the page itself are written with: escaping
//! and the table of methods. It imports neither the page ([`super`]) nor any report (only
//! their row type), so every report can use it.

use std::fmt::Write as _;

use crate::report::rows::MethodWeight;

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
