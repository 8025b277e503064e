//! The bundle's `index.html`: one page that opens offline (no script or style from outside)
//! and links every file, with the checklist on top and the metrics charts inline.

use std::io::{self, Write};
use std::path::Path;

use clrspy_export::html::escape;
use clrspy_values::human_bytes;

use crate::manifest::{checklist, is_dump, privacy_notice, redaction_lines, FileEntry, Manifest};

/// The groups files are listed in, in page order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// The trace.
    Trace,
    /// Reports (the HTML report first).
    Reports,
    /// The app's logs and log files.
    Logs,
    /// System and process metrics.
    Metrics,
    /// The runtime's counters.
    Counters,
    /// Heap snapshots, their diff, dumps.
    Heap,
    /// Anything else.
    Other,
}

impl Kind {
    /// The group's heading.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Kind::Trace => "Trace",
            Kind::Reports => "Reports",
            Kind::Logs => "Logs",
            Kind::Metrics => "Metrics",
            Kind::Counters => "Counters",
            Kind::Heap => "Heap and dump",
            Kind::Other => "Other",
        }
    }
}

/// The group a bundle path belongs to.
pub(crate) fn kind_of(path: &str) -> Kind {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.contains(".nettrace") {
        Kind::Trace
    } else if path.starts_with("reports/") || name.starts_with("report.") {
        Kind::Reports
    } else if path.starts_with("logs/") {
        Kind::Logs
    } else if path.starts_with("metrics/") {
        Kind::Metrics
    } else if path.starts_with("counters/") {
        Kind::Counters
    } else if path.starts_with("heap/") || name.contains(".gcdump") || is_dump(path) {
        Kind::Heap
    } else {
        Kind::Other
    }
}

/// What a file is, for people, from its path alone (for files `gather` did not describe).
pub(crate) fn describe(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    let format = match name.rsplit_once('.').map(|(_, e)| e) {
        Some("txt") => " (text)",
        Some("json") => " (JSON)",
        Some("jsonl") => " (JSON Lines)",
        Some("csv") => " (CSV)",
        Some("html") => " (HTML)",
        Some("gz") => " (gzip)",
        Some("zst") => " (zstd)",
        _ => "",
    };
    let base = match (kind_of(path), path) {
        (_, "environment.txt") => "the target's environment, redacted".to_string(),
        (_, "stacks.txt") => "the threads' stacks".to_string(),
        (_, "index.html") => "this bundle's index page".to_string(),
        (Kind::Trace, _) => "the EventPipe trace".to_string(),
        (Kind::Reports, "report.html") => return "the HTML report".to_string(),
        (Kind::Reports, _) => format!("{stem} report"),
        (Kind::Logs, p) if p.starts_with("logs/files/") => format!("log file {name}"),
        (Kind::Logs, _) => "the app's logs".to_string(),
        (Kind::Metrics, _) => "system and process metrics, every second".to_string(),
        (Kind::Counters, _) => "the runtime's counters".to_string(),
        (Kind::Heap, p) if is_dump(p) => "a dump of the process".to_string(),
        (Kind::Heap, _) if name.contains(".gcdump") => format!("heap snapshot {stem}"),
        (Kind::Heap, _) => format!("heap {stem}"),
        (Kind::Other, _) => format!("file {name}"),
    };
    format!("{base}{format}")
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;\
padding:0 16px;color:#1d2329}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;\
border-bottom:1px solid #d8dde3;padding-bottom:3px}.sub{color:#5b6770;margin:0 0 14px}\
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:3px 8px;\
border-bottom:1px solid #eceff2;vertical-align:top}th{background:#f4f6f8}td.n{text-align:right;\
white-space:nowrap}td.k{width:220px;color:#5b6770}code{font-size:12px;word-break:break-all}\
a{color:#0b5cad}iframe{width:100%;height:760px;border:1px solid #d8dde3}\
table.f{table-layout:fixed}.f th:nth-child(1){width:42%}.f th:nth-child(3){width:110px}\
.f td{overflow-wrap:anywhere}.notice{background:#fff7e6;border:1px solid #f0d59a;padding:8px 14px;border-radius:4px}";

/// Writes `index.html`: the title, the checklist, links to every file of `m.files` grouped by
/// kind with sizes, the metrics charts (when `staging` holds `metrics/metrics.html`), the
/// redactions, the notes and the privacy notice. Self-contained: inline CSS, no script, only
/// relative links.
pub(crate) fn write_index(m: &Manifest, staging: &Path, out: &mut dyn Write) -> io::Result<()> {
    let t = &m.target;
    let title = format!(
        "clrspy bundle: {} (pid {}), {} to {}",
        or_unknown(&t.name),
        t.pid,
        or_unknown(&m.started_utc),
        or_unknown(&m.ended_utc)
    );
    write!(
        out,
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>{}</title>\
         <style>{STYLE}</style></head><body><h1>{}</h1>",
        escape(&title),
        escape(&title)
    )?;
    writeln!(
        out,
        "<p class=sub>{} files; <a href=\"MANIFEST.md\">MANIFEST.md</a> and \
         <a href=\"manifest.json\">manifest.json</a> list them with their SHA-256; \
         <code>clrspy bundle verify</code> re-checks the zip.</p>",
        m.files.len()
    )?;
    writeln!(out, "<h2>Checklist</h2><table>")?;
    for (label, value) in checklist(m) {
        writeln!(
            out,
            "<tr><td class=k>{}</td><td>{}</td></tr>",
            escape(label),
            escape(&value)
        )?;
    }
    writeln!(out, "</table>")?;
    if !m.findings.is_empty() {
        writeln!(out, "<h2>Findings</h2><ul>")?;
        for f in &m.findings {
            writeln!(
                out,
                "<li><b>{}</b> <code>{}</code>: {}</li>",
                escape(&f.severity),
                escape(&f.id),
                escape(&f.said)
            )?;
        }
        writeln!(out, "</ul>")?;
        if m.files.iter().any(|f| f.path == "reports/findings.txt") {
            writeln!(
                out,
                "<p class=sub>The evidence and the fix of each: \
                 <a href=\"reports/findings.txt\">reports/findings.txt</a>.</p>"
            )?;
        }
    }
    write_files(m, out)?;
    if staging.join("metrics/metrics.html").is_file() {
        writeln!(
            out,
            "<h2>Metrics charts</h2><iframe src=\"metrics/metrics.html\" \
             title=\"system and process metrics\"></iframe>"
        )?;
    }
    writeln!(out, "<h2>Redacted</h2><ul>")?;
    for line in redaction_lines(m) {
        writeln!(out, "<li>{}</li>", escape(&line))?;
    }
    writeln!(out, "</ul><h2>Notes</h2><ul>")?;
    if m.notes.is_empty() {
        writeln!(out, "<li>none</li>")?;
    }
    for n in &m.notes {
        writeln!(out, "<li>{}</li>", escape(n))?;
    }
    writeln!(out, "</ul><h2>Privacy notice</h2><div class=notice>")?;
    for p in privacy_notice(m) {
        writeln!(out, "<p>{}</p>", escape(&p))?;
    }
    writeln!(out, "</div></body></html>")
}

/// The file tables, one per kind, the HTML report first among the reports.
fn write_files(m: &Manifest, out: &mut dyn Write) -> io::Result<()> {
    let mut files: Vec<&FileEntry> = m.files.iter().filter(|f| f.path != "index.html").collect();
    files.sort_by_key(|f| {
        let html_report = f.path.ends_with(".html") && kind_of(&f.path) == Kind::Reports;
        (kind_of(&f.path), !html_report, f.path.clone())
    });
    let mut current = None;
    for f in files {
        let kind = kind_of(&f.path);
        if current != Some(kind) {
            if current.is_some() {
                writeln!(out, "</table>")?;
            }
            writeln!(
                out,
                "<h2>{}</h2><table class=f><tr><th>File</th><th>What</th><th>Size</th></tr>",
                kind.title()
            )?;
            current = Some(kind);
        }
        writeln!(
            out,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td class=n>{}</td></tr>",
            escape(&href(&f.path)),
            escape(&f.path),
            escape(&f.what),
            human_bytes(f.bytes)
        )?;
    }
    if current.is_some() {
        writeln!(out, "</table>")?;
    }
    Ok(())
}

/// A relative href for a bundle path: each segment percent-encoded but for safe characters.
fn href(path: &str) -> String {
    let mut o = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            o.push(char::from(b));
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

fn or_unknown(s: &str) -> &str {
    if s.trim().is_empty() {
        "unknown"
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
