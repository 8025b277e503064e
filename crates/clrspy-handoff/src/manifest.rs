//! The bundle's manifest: `manifest.json` (data) and `MANIFEST.md` (the same for people: the
//! support checklist filled in, every file with its size and SHA-256, what was redacted where,
//! and the privacy notice).
//!
//! The types' field names are `manifest.json`'s keys (`docs/bundle.md`): fields are added,
//! never renamed.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::facts::{SystemFacts, TargetFacts};

/// Everything `manifest.json` holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest's format version (1).
    pub format: u32,
    /// The process the bundle is about.
    pub target: TargetFacts,
    /// The machine it ran on.
    pub system: SystemFacts,
    /// When the window began (UTC, RFC 3339).
    pub started_utc: String,
    /// When the window ended (UTC, RFC 3339).
    pub ended_utc: String,
    /// clrspy's own command line (redacted).
    pub command: String,
    /// clrspy's version.
    pub clrspy_version: String,
    /// The symptom the bundle was gathered for, if one was named.
    pub symptom: Option<String>,
    /// The trace profile or providers recorded.
    pub profile: String,
    /// Every file in the bundle but the manifest itself.
    pub files: Vec<FileEntry>,
    /// What was redacted, and where (never the values).
    pub redacted: Vec<Redaction>,
    /// Things the reader should know: what is missing and why, what was taken after the window.
    pub notes: Vec<String>,
    /// The known mistakes the trace shows (`reports/findings.*` has their evidence), most
    /// severe first; empty when it shows none or the bundle has no trace.
    #[serde(default)]
    pub findings: Vec<FindingBrief>,
}

/// A finding as the manifest lists it: what it is and what it said.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FindingBrief {
    /// The rule's stable id (`sync-over-async`).
    pub id: String,
    /// `info`, `warning` or `critical`.
    pub severity: String,
    /// The rule's title.
    pub title: String,
    /// What was seen, with its figures.
    pub said: String,
}

/// One file of the bundle.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileEntry {
    /// Its path in the zip (`/`-separated).
    pub(crate) path: String,
    /// Its size.
    pub(crate) bytes: u64,
    /// SHA-256 of its bytes, lower-case hex.
    pub(crate) sha256: String,
    /// What it is, for people ("the trace", "CPU report (text)").
    pub(crate) what: String,
}

/// One redaction: where it was and what kind of secret — never the value.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Redaction {
    /// Where: `environment: API_KEY`, `command line (argument 3)`, `trace (log message)`,
    /// `logs/app.log line 12`.
    #[serde(rename = "where")]
    pub where_: String,
    /// What kind: `secret name`, `connection string password`, `bearer token`, ...
    pub what: String,
}

/// The support checklist, in order: a label and its value ("unknown" when the fact is missing).
pub(crate) fn checklist(m: &Manifest) -> Vec<(&'static str, String)> {
    let t = &m.target;
    let s = &m.system;
    let or_unknown = |v: Option<&String>| known(v.map(String::as_str));
    let container = match &s.container {
        None => "not in a container".to_string(),
        Some(c) => format!(
            "{}, id {}, image {}",
            known(Some(c.runtime.as_str())),
            or_unknown(c.id.as_ref()),
            or_unknown(c.image.as_ref())
        ),
    };
    let os = match (s.os.is_empty(), s.kernel.is_empty()) {
        (true, true) => "unknown".to_string(),
        _ => format!(
            "{} {} ({})",
            known(Some(&s.os)),
            known(Some(&s.kernel)),
            known(Some(&s.arch))
        ),
    };
    vec![
        (
            "Process",
            format!("{} (pid {})", known(Some(&t.name)), t.pid),
        ),
        ("Runtime version", or_unknown(t.runtime_version.as_ref())),
        ("Entry assembly", or_unknown(t.entry_assembly.as_ref())),
        ("Assembly version", or_unknown(t.assembly_version.as_ref())),
        (
            "Informational version",
            or_unknown(t.informational_version.as_ref()),
        ),
        ("Process started (UTC)", or_unknown(t.started_utc.as_ref())),
        ("Window start (UTC)", known(Some(&m.started_utc))),
        ("Window end (UTC)", known(Some(&m.ended_utc))),
        ("Target command line", known(Some(&t.command_line))),
        ("clrspy command", known(Some(&m.command))),
        ("clrspy version", known(Some(&m.clrspy_version))),
        (
            "Symptom",
            m.symptom.clone().unwrap_or_else(|| "none named".into()),
        ),
        ("Profile", known(Some(&m.profile))),
        ("OS / kernel", os),
        ("Distribution", or_unknown(s.distro.as_ref())),
        ("Host name", known(Some(&s.hostname))),
        ("Container", container),
        (
            "CPUs / memory",
            format!(
                "{} / {}",
                if s.cpus == 0 {
                    "unknown".to_string()
                } else {
                    s.cpus.to_string()
                },
                s.memory_bytes
                    .map_or("unknown".to_string(), clrspy_values::human_bytes)
            ),
        ),
    ]
}

fn known(v: Option<&str>) -> String {
    match v.map(str::trim) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "unknown".to_string(),
    }
}

/// The redactions as lines (`where: what`), or one line saying there were none or that
/// redaction was turned off (when a note mentions `--no-redact`).
pub(crate) fn redaction_lines(m: &Manifest) -> Vec<String> {
    if !m.redacted.is_empty() {
        return m
            .redacted
            .iter()
            .map(|r| format!("{}: {}", r.where_, r.what))
            .collect();
    }
    if m.notes.iter().any(|n| n.contains("--no-redact")) {
        vec!["redaction was turned off with --no-redact".into()]
    } else {
        vec!["none".into()]
    }
}

/// The privacy notice, one paragraph a line: what the bundle holds and what it may reveal.
pub(crate) fn privacy_notice(m: &Manifest) -> Vec<String> {
    let has = |pred: &dyn Fn(&str) -> bool| m.files.iter().any(|f| pred(&f.path));
    let mut p = vec![
        "This bundle holds a diagnostic recording of the process and what was derived from it: \
         the trace, reports, the application's logs, system and process metrics, the runtime's \
         counters, and the facts listed above."
            .to_string(),
        "It may reveal exception messages, URLs, request paths and file paths from logs and \
         traces, type and method names of the application and its libraries, command lines, \
         host names, and the machine's configuration."
            .to_string(),
        "Secrets that look like secrets (names with KEY, SECRET, TOKEN, PASSWORD, connection \
         strings, bearer tokens, credentials in URLs) are replaced unless redaction was turned \
         off; other sensitive text in messages can remain."
            .to_string(),
    ];
    if has(&|p| is_dump(p)) {
        p.push(
            "This bundle includes a dump: it holds all of the process's memory, unredacted \
             (secrets, personal data and keys in memory included)."
                .into(),
        );
    } else {
        p.push(
            "No dump is included; a dump, when one is added, holds all of the process's memory, \
             unredacted."
                .into(),
        );
    }
    if has(&|p| p.contains(".gcdump")) {
        p.push(
            "The heap snapshots hold type names, object counts and sizes, not the objects' values."
                .into(),
        );
    }
    p.push(
        "Share it privately (a support ticket's private upload, not a public issue), and delete \
         it when it is no longer needed."
            .into(),
    );
    p
}

/// Whether a bundle path is a process dump (`dump/...`, `*.dmp`, `core.*`).
pub(crate) fn is_dump(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.starts_with("dump/") || name.contains(".dmp") || name.starts_with("core.")
}

/// Writes `MANIFEST.md`: the checklist, every file with its size and SHA-256, the redactions,
/// the notes and the privacy notice.
pub(crate) fn write_markdown(m: &Manifest, out: &mut dyn Write) -> io::Result<()> {
    let t = &m.target;
    writeln!(
        out,
        "# clrspy support bundle: {} (pid {})\n",
        md(&known(Some(&t.name))),
        t.pid
    )?;
    writeln!(out, "## Checklist\n")?;
    for (label, value) in checklist(m) {
        writeln!(out, "- **{label}:** {}", md(&value))?;
    }
    if !m.findings.is_empty() {
        writeln!(out, "\n## Findings\n")?;
        for f in &m.findings {
            writeln!(out, "- **{}** `{}`: {}", f.severity, f.id, md(&f.said))?;
        }
        writeln!(
            out,
            "\nThe evidence and the fix of each: `reports/findings.txt`."
        )?;
    }
    writeln!(out, "\n## Files\n")?;
    writeln!(out, "| File | Size | Bytes | SHA-256 | What |")?;
    writeln!(out, "|---|---:|---:|---|---|")?;
    for f in &m.files {
        writeln!(
            out,
            "| `{}` | {} | {} | `{}` | {} |",
            f.path.replace('`', "'").replace('|', "\\|"),
            clrspy_values::human_bytes(f.bytes),
            f.bytes,
            f.sha256,
            md(&f.what)
        )?;
    }
    writeln!(
        out,
        "\n`manifest.json` holds the same as data; `clrspy bundle verify FILE.zip` re-checks \
         every size and checksum.\n"
    )?;
    writeln!(out, "## Redacted\n")?;
    for line in redaction_lines(m) {
        writeln!(out, "- {}", md(&line))?;
    }
    writeln!(out, "\n## Notes\n")?;
    if m.notes.is_empty() {
        writeln!(out, "- none")?;
    }
    for n in &m.notes {
        writeln!(out, "- {}", md(n))?;
    }
    writeln!(out, "\n## Privacy notice\n")?;
    for p in privacy_notice(m) {
        writeln!(out, "{p}\n")?;
    }
    Ok(())
}

/// Text from the target made safe for a Markdown line: no line breaks, table bars escaped,
/// no raw HTML.
fn md(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => o.push(' '),
            '|' => o.push_str("\\|"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            c if c.is_control() => o.push('?'),
            c => o.push(c),
        }
    }
    o
}
