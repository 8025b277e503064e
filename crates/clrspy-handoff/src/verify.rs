//! `clrspy bundle verify FILE.zip`: every file's size and SHA-256 against the manifest.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use zip::ZipArchive;

use crate::package::hash_reader;
use crate::HandoffError;

/// What [`verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VerifyReport {
    /// How many files the manifest lists (each was looked for).
    pub(crate) checked: usize,
    /// One line per problem: a missing, damaged, resized or changed file, or one the manifest
    /// does not list.
    pub(crate) problems: Vec<String>,
}

impl VerifyReport {
    /// Whether every file matched and nothing extra was found.
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// `N files checked, all match`, or one line per problem and a count.
    pub(crate) fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let files = plural(self.checked, "file");
        if self.ok() {
            return writeln!(out, "{files} checked, all match");
        }
        for p in &self.problems {
            writeln!(out, "{p}")?;
        }
        writeln!(
            out,
            "{files} checked, {}",
            plural(self.problems.len(), "problem")
        )
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The manifest's names for itself, not listed in its `files`.
const OWN: &[&str] = &["manifest.json", "MANIFEST.md"];

/// Checks a bundle: every file `manifest.json` lists is present with its size and SHA-256
/// (reading an entry also checks the zip's CRC), and no other file is in the zip. An error
/// when `zip` cannot be read, is not a zip, or has no readable `manifest.json`.
pub(crate) fn verify(zip: &Path) -> Result<VerifyReport, HandoffError> {
    let file = File::open(zip).map_err(|e| HandoffError::io(zip, e))?;
    let mut archive = ZipArchive::new(BufReader::new(file)).map_err(|e| {
        HandoffError::Other(format!("{}: not a readable zip file ({e})", zip.display()))
    })?;
    let listed = read_listing(&mut archive, zip)?;
    let mut report = VerifyReport {
        checked: listed.len(),
        problems: Vec::new(),
    };
    for (path, bytes, sha256) in &listed {
        if let Some(problem) = check_entry(&mut archive, path, *bytes, sha256) {
            report.problems.push(problem);
        }
    }
    let names: HashSet<&str> = listed.iter().map(|(p, _, _)| p.as_str()).collect();
    let mut extra = Vec::new();
    for raw in archive.file_names_raw() {
        let name = String::from_utf8_lossy(raw);
        if !name.ends_with('/') && !names.contains(name.as_ref()) && !OWN.contains(&name.as_ref()) {
            extra.push(format!("{name}: in the zip but not in the manifest"));
        }
    }
    extra.sort();
    report.problems.extend(extra);
    Ok(report)
}

/// `manifest.json`'s files: path, size, SHA-256.
fn read_listing<R: io::Read + io::Seek>(
    archive: &mut ZipArchive<R>,
    zip: &Path,
) -> Result<Vec<(String, u64, String)>, HandoffError> {
    let bad = |why: String| HandoffError::Other(format!("{}: {why}", zip.display()));
    let mut text = Vec::new();
    archive
        .by_name("manifest.json")
        .map_err(|_| bad("no manifest.json: not a clrspy bundle".into()))?
        .read_to_end(&mut text)
        .map_err(|e| bad(format!("manifest.json is damaged ({e})")))?;
    let value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| bad(format!("manifest.json is not valid JSON ({e})")))?;
    let Some(files) = value.get("files").and_then(|f| f.as_array()) else {
        return Err(bad("manifest.json has no `files` list".into()));
    };
    let mut listed = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        let path = f.get("path").and_then(|v| v.as_str());
        let bytes = f.get("bytes").and_then(|v| v.as_u64());
        let sha = f.get("sha256").and_then(|v| v.as_str());
        match (path, bytes, sha) {
            (Some(p), Some(b), Some(s)) => listed.push((p.to_string(), b, s.to_ascii_lowercase())),
            _ => {
                return Err(bad(format!(
                    "manifest.json: file {} lacks its path, bytes or sha256",
                    i + 1
                )))
            }
        }
    }
    Ok(listed)
}

/// One listed file against its entry: `None` when it matches, else the problem.
fn check_entry<R: io::Read + io::Seek>(
    archive: &mut ZipArchive<R>,
    path: &str,
    bytes: u64,
    sha256: &str,
) -> Option<String> {
    let mut entry = match archive.by_name(path) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => return Some(format!("{path}: missing")),
        Err(e) => return Some(format!("{path}: unreadable ({e})")),
    };
    let (got_bytes, got_sha) = match hash_reader(&mut entry) {
        Ok(r) => r,
        Err(e) => return Some(format!("{path}: damaged in the zip ({e})")),
    };
    if got_bytes != bytes {
        Some(format!(
            "{path}: {got_bytes} bytes, the manifest says {bytes}"
        ))
    } else if got_sha != sha256 {
        Some(format!(
            "{path}: SHA-256 {got_sha}, the manifest says {sha256}"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
