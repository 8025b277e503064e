//! Where a crash dump lands and how a watcher finds it after the process is gone: createdump's
//! name patterns (`DbgMiniDumpName`), the folders of the process held open from the match
//! (its root, working directory and the dump's folder, so a container's files stay
//! reachable), and the search for the newest dump and report written since the process
//! started.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The dump name createdump uses when `DbgMiniDumpName` is not set (measured, .NET 10).
pub const DEFAULT_NAME: &str = "/tmp/coredump.%p";

/// One piece of a dump file name pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    /// These characters.
    Text(String),
    /// Something only known at the crash (`%e`, `%h`, `%t`): one character or more.
    Any,
}

/// Where the runtime puts the dump of one process: a folder (with `%p` filled in) relative to
/// the process's root or working directory, and the file name's pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpName {
    /// True for an absolute pattern (from the root), false for one relative to the working
    /// directory.
    absolute: bool,
    /// The folder, relative to the root or working directory ("" for itself).
    folder: String,
    file: Vec<Piece>,
}

impl DumpName {
    /// Reads `pattern` as createdump does (`%p`/`%d` the pid in the process's own namespace,
    /// `%e` the executable's name, `%h` the host name, `%t` the time, `%%` a `%`); an error in
    /// words when createdump would refuse it or the folder is only known at the crash.
    pub fn parse(pattern: &str, ns_pid: u32) -> Result<DumpName, String> {
        if pattern.starts_with('|') {
            return Err("DbgMiniDumpName starts with '|': createdump refuses pipes".into());
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                text.push(c);
                continue;
            }
            match chars.next() {
                None => break,
                Some('%') => text.push('%'),
                Some('p' | 'd') => text.push_str(&ns_pid.to_string()),
                Some('e' | 'h' | 't') => {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                    pieces.push(Piece::Any);
                }
                Some(other) => {
                    return Err(format!(
                        "DbgMiniDumpName has %{other}, which createdump refuses (it knows %p, %d, %e, %h, %t, %%)"
                    ))
                }
            }
        }
        pieces.push(Piece::Text(text));
        pieces.retain(|p| *p != Piece::Text(String::new()));
        // The folder is the text up to the last '/', which must come before any wildcard.
        let mut folder = String::new();
        let first_any = pieces.iter().position(|p| *p == Piece::Any);
        let slash_in_tail = pieces.iter().enumerate().any(|(i, p)| {
            first_any.is_some_and(|a| i > a) && matches!(p, Piece::Text(t) if t.contains('/'))
        });
        if slash_in_tail {
            return Err(format!(
                "the folder of DbgMiniDumpName \"{pattern}\" holds %e, %h or %t: it is only known at the crash"
            ));
        }
        if let Some(Piece::Text(head)) = pieces.first_mut() {
            if let Some(at) = head.rfind('/') {
                folder = head[..=at].to_string();
                *head = head[at + 1..].to_string();
            }
        }
        pieces.retain(|p| *p != Piece::Text(String::new()));
        if pieces.is_empty() {
            return Err(format!(
                "DbgMiniDumpName \"{pattern}\" names a folder, not a file"
            ));
        }
        let absolute = folder.starts_with('/');
        Ok(DumpName {
            absolute,
            folder: folder.trim_start_matches('/').to_string(),
            file: pieces,
        })
    }

    /// True when the file name `name` is one this pattern gives.
    fn matches(&self, name: &str) -> bool {
        fn go(pieces: &[Piece], s: &str) -> bool {
            match pieces.split_first() {
                None => s.is_empty(),
                Some((Piece::Text(t), rest)) => {
                    s.strip_prefix(t.as_str()).is_some_and(|r| go(rest, r))
                }
                Some((Piece::Any, rest)) => s
                    .char_indices()
                    .skip(1)
                    .map(|(i, _)| i)
                    .chain(std::iter::once(s.len()))
                    .filter(|&i| i > 0)
                    .any(|i| go(rest, &s[i..])),
            }
        }
        go(&self.file, name)
    }
}

/// The folders the process's paths start from, held open so they stay reachable after it
/// exits (a container's file system included). The dump's folder itself is opened too when it
/// exists: a file system mounted only in the container's mount namespace (a tmpfs) is cut off
/// from its root when the namespace ends (measured), but an open folder on it stays readable.
pub struct Places {
    root: File,
    cwd: Option<File>,
    folder: Option<File>,
}

impl Places {
    /// Opens `/proc/PID/root`, `cwd` and the dump's folder while the process lives.
    pub fn open(pid: u32, name: &DumpName) -> std::io::Result<Places> {
        let root = File::open(format!("/proc/{pid}/root"))?;
        let cwd = File::open(format!("/proc/{pid}/cwd")).ok();
        let base = if name.absolute {
            Some(&root)
        } else {
            cwd.as_ref()
        };
        let folder = base.and_then(|b| File::open(under(b, &name.folder)).ok());
        Ok(Places { root, cwd, folder })
    }

    /// The folder of `name`, reached through the open folders.
    pub fn folder(&self, name: &DumpName) -> Option<PathBuf> {
        if let Some(f) = &self.folder {
            return Some(under(f, ""));
        }
        let base = if name.absolute {
            &self.root
        } else {
            self.cwd.as_ref()?
        };
        Some(under(base, &name.folder))
    }
}

/// `rel` under the open folder `dir`.
fn under(dir: &File, rel: &str) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(rel)
}

/// What the runtime left at a crash: its dump and its report (either may be missing).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Left {
    /// The dump, reached through a held folder.
    pub dump: Option<PathBuf>,
    /// The crash report, reached the same way.
    pub report: Option<PathBuf>,
    /// The name the process gave it (its own view).
    pub shown: String,
}

/// The suffix createdump gives the crash report beside a dump (`<dump>.crashreport.json`).
pub const REPORT_SUFFIX: &str = ".crashreport.json";

/// The newest dump (or report alone) in `folder` that `name` gives and that was written since
/// `since`.
pub fn find_left(folder: &Path, name: &DumpName, since: SystemTime) -> Option<Left> {
    let mut best: Option<(SystemTime, String)> = None;
    for e in std::fs::read_dir(folder).ok()?.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let stem = file.strip_suffix(REPORT_SUFFIX).unwrap_or(&file);
        if !name.matches(stem) {
            continue;
        }
        let Ok(when) = e.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if when + Duration::from_secs(2) < since {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| when > *b) {
            best = Some((when, stem.to_string()));
        }
    }
    let (_, stem) = best?;
    let at = |f: String| Some(folder.join(f)).filter(|p| p.is_file());
    Some(Left {
        dump: at(stem.clone()),
        report: at(format!("{stem}{REPORT_SUFFIX}")),
        shown: format!(
            "{}{}{stem}",
            if name.absolute { "/" } else { "" },
            name.folder
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_createdumps_patterns() {
        let n = DumpName::parse("/tmp/crm/core_%p_%e_%h_%t", 77).unwrap();
        assert!(n.absolute);
        assert_eq!(n.folder, "tmp/crm/");
        assert!(n.matches("core_77_dotnet_vm_1795452470"));
        assert!(!n.matches("core_78_dotnet_vm_1795452470"));
        assert!(!n.matches("core_77___"));
        let d = DumpName::parse(DEFAULT_NAME, 5).unwrap();
        assert!(d.matches("coredump.5") && !d.matches("coredump.55"));
        let rel = DumpName::parse("rel_%d", 9).unwrap();
        assert!(!rel.absolute && rel.folder.is_empty() && rel.matches("rel_9"));
        let pct = DumpName::parse("/x/%%p%p", 3).unwrap();
        assert!(pct.matches("%p3"));
        assert!(DumpName::parse("/x/core_%s", 1).unwrap_err().contains("%s"));
        assert!(DumpName::parse("|/bin/x", 1).is_err());
        assert!(DumpName::parse("/x/%h/core", 1)
            .unwrap_err()
            .contains("folder"));
        assert!(DumpName::parse("/x/", 1).is_err());
        assert_eq!(DumpName::parse("/x/%p/core", 4).unwrap().folder, "x/4/");
    }

    #[test]
    fn the_newest_dump_since_the_start_and_its_report_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let n = DumpName::parse(&format!("{}/core_%p_%t", dir.path().display()), 12).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        assert_eq!(find_left(dir.path(), &n, since), None);
        std::fs::write(dir.path().join("core_13_1"), b"x").unwrap();
        std::fs::write(dir.path().join("other"), b"x").unwrap();
        assert_eq!(find_left(dir.path(), &n, since), None);
        std::fs::write(dir.path().join("core_12_1700000000"), b"\x7fELF").unwrap();
        std::fs::write(
            dir.path().join("core_12_1700000000.crashreport.json"),
            b"{}",
        )
        .unwrap();
        let left = find_left(dir.path(), &n, since).unwrap();
        assert_eq!(left.dump, Some(dir.path().join("core_12_1700000000")));
        assert_eq!(
            left.report,
            Some(dir.path().join("core_12_1700000000.crashreport.json"))
        );
        assert!(
            left.shown.ends_with("/core_12_1700000000"),
            "{}",
            left.shown
        );
        // A report alone (EnableCrashReportOnly).
        let only = tempfile::tempdir().unwrap();
        std::fs::write(only.path().join("core_12_5.crashreport.json"), b"{}").unwrap();
        let n = DumpName::parse(&format!("{}/core_%p_%t", only.path().display()), 12).unwrap();
        let left = find_left(only.path(), &n, since).unwrap();
        assert_eq!(left.dump, None);
        assert!(left.report.is_some());
        // Written before the process started: not its dump.
        assert_eq!(
            find_left(dir.path(), &n, SystemTime::now() + Duration::from_secs(60)),
            None
        );
    }
}
