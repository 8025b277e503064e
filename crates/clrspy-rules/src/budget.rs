//! A rule's limits at work: how many actions it took and when (what `max_actions` and
//! `cooldown` are judged on; the judging is the watcher's admission), and its output
//! folder's disk budget, kept by removing the oldest files first.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

/// What a rule has done so far.
#[derive(Clone, Debug, Default)]
pub struct RuleState {
    /// Actions taken.
    pub actions: u32,
    /// When the last one was taken.
    pub last: Option<Instant>,
}

/// Keeps the files directly in `dir` within `budget` bytes (with `reserve` more bytes about to
/// be written): removes the oldest first (by modification time, then name), never one of
/// `open`. Returns the files removed with their sizes; what is left may still be over when
/// the open files alone are.
pub fn enforce_budget(
    dir: &Path,
    budget: u64,
    reserve: u64,
    open: &[PathBuf],
) -> std::io::Result<Vec<(PathBuf, u64)>> {
    let mut files: Vec<(SystemTime, PathBuf, u64)> = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    for e in entries.flatten() {
        let Ok(m) = e.metadata() else { continue };
        if !m.is_file() {
            continue;
        }
        let t = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        files.push((t, e.path(), m.len()));
    }
    let mut total: u64 = files
        .iter()
        .map(|f| f.2)
        .sum::<u64>()
        .saturating_add(reserve);
    files.sort();
    let mut removed = Vec::new();
    for (_, path, len) in files {
        if total <= budget {
            break;
        }
        if open.contains(&path) {
            continue;
        }
        std::fs::remove_file(&path)?;
        total = total.saturating_sub(len);
        removed.push((path, len));
    }
    Ok(removed)
}

/// Bytes held by the files directly in `dir`.
pub fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|es| {
            es.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_oldest_files_go_first_and_open_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let base = SystemTime::now() - Duration::from_secs(1000);
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            std::fs::write(p(name), vec![0u8; 100]).unwrap();
            let f = std::fs::File::options().write(true).open(p(name)).unwrap();
            // "b" is the oldest, then "a", "c", "d".
            let age = match *name {
                "b" => 0,
                _ => 10 * (i as u64 + 1),
            };
            f.set_modified(base + Duration::from_secs(age)).unwrap();
        }
        // 400 bytes, budget 250: b and a go (the oldest), c and d stay.
        let removed = enforce_budget(dir.path(), 250, 0, &[]).unwrap();
        let names: Vec<_> = removed
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(folder_bytes(dir.path()), 200);
        // With 100 bytes to come and c open: d goes, c stays though still over.
        let removed = enforce_budget(dir.path(), 150, 100, &[p("c")]).unwrap();
        assert_eq!(removed.len(), 1);
        assert!(p("c").exists() && !p("d").exists());
        assert!(enforce_budget(&p("missing"), 1, 0, &[]).unwrap().is_empty());
    }
}
