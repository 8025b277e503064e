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

/// How far down [`folder_bytes`] walks.
const MAX_DEPTH: usize = 4;

/// What the files under `dir` take, its folders' too (a ring's chunks, a bundle's staging, the
/// agent's operations): each file's length, or its blocks on the disk when fewer (a stream's
/// spool that gave its sent bytes back is sparse). Symbolic links are not followed and the
/// walk stops four folders down. A missing folder holds nothing.
pub fn folder_bytes(dir: &Path) -> u64 {
    fn walk(dir: &Path, depth: usize) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut sum = 0u64;
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_file() {
                #[cfg(unix)]
                let on_disk = std::os::unix::fs::MetadataExt::blocks(&m).saturating_mul(512);
                #[cfg(not(unix))]
                let on_disk = m.len();
                sum = sum.saturating_add(m.len().min(on_disk));
            } else if m.is_dir() && depth < MAX_DEPTH {
                sum = sum.saturating_add(walk(&e.path(), depth + 1));
            }
        }
        sum
    }
    walk(dir, 0)
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

    #[test]
    fn a_folder_counts_its_folders_and_no_link() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        std::fs::write(d.join("a"), vec![1u8; 1000]).unwrap();
        std::fs::create_dir_all(d.join("x/y")).unwrap();
        std::fs::write(d.join("x/y/b"), vec![2u8; 24]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("link")).unwrap();
        assert_eq!(folder_bytes(d), 1024);
        assert_eq!(folder_bytes(&d.join("missing")), 0);
        // Five folders down is past the walk.
        std::fs::create_dir_all(d.join("1/2/3/4/5")).unwrap();
        std::fs::write(d.join("1/2/3/4/5/deep"), vec![3u8; 10]).unwrap();
        std::fs::write(d.join("1/2/3/4/near"), vec![3u8; 10]).unwrap();
        assert_eq!(folder_bytes(d), 1034);
    }
}
