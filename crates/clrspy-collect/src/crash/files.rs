//! Where a crash dump lands and how a watcher finds it after the process is gone: createdump's
//! name patterns (`DbgMiniDumpName`), the folders of the process held open from the match
//! (its root or working directory, and the dump's folder, so a container's files stay
//! reachable), and the search for the newest dump and report written since the process
//! started.
//!
//! The pattern is the process's own choice (its environment), so nothing in it may steer the
//! watcher: the folder is walked under the process's root with no link and no `..`
//! ([`diagnostics_client::rooted`]), and a dump or report is taken only when it is a regular
//! file, owned by the process's user, and no larger than [`FileRules`] allow; every refusal
//! says why.

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub use diagnostics_client::rooted::{FileRules, Refused, RootedDir};

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
        if pattern.split('/').any(|part| part == "..") {
            return Err(format!(
                "DbgMiniDumpName \"{pattern}\" holds '..': a watched process's dump folder is never looked for above its own root"
            ));
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
    base: RootedDir,
    folder: Option<RootedDir>,
}

impl Places {
    /// Opens `/proc/PID/root` (or its working folder, for a relative name) and the dump's
    /// folder below it while the process lives; refuses a folder reached through a link.
    pub fn open(pid: u32, name: &DumpName) -> Result<Places, Refused> {
        let base = if name.absolute {
            RootedDir::root_of(pid)
        } else {
            RootedDir::cwd_of(pid)
        }
        .map_err(|source| Refused::Io {
            path: format!("/proc/{pid}/root").into(),
            source,
        })?;
        let folder = match base.open_dir(Path::new(&name.folder)) {
            Ok(f) => Some(f),
            Err(e) if e.not_found() => None,
            Err(e) => return Err(e),
        };
        Ok(Places { base, folder })
    }

    /// The folder of `name`: the one held, else walked now (it may have been made since).
    pub fn folder(&self, name: &DumpName) -> Result<RootedDir, Refused> {
        match &self.folder {
            Some(f) => f.open_dir(Path::new("")),
            None => self.base.open_dir(Path::new(&name.folder)),
        }
    }
}

/// What the runtime left at a crash: its dump and its report (either may be missing), each
/// opened, or refused with the reason.
#[derive(Debug)]
pub struct Left {
    /// The dump, opened when it follows the rules.
    pub dump: Option<Result<File, Refused>>,
    /// The crash report, likewise.
    pub report: Option<Result<File, Refused>>,
    /// The name the process gave it (its own view).
    pub shown: String,
}

/// The suffix createdump gives the crash report beside a dump (`<dump>.crashreport.json`).
pub const REPORT_SUFFIX: &str = ".crashreport.json";

/// The most a crash report may hold (createdump's reports of 300 threads are under 1 MB).
pub const MAX_REPORT_BYTES: u64 = 16 << 20;

/// The newest dump (or report alone) in `folder` that `name` gives and that was written since
/// `since`, opened under `rules` (a report under the same owner rule, at most
/// [`MAX_REPORT_BYTES`]). Nothing is followed: a link in a dump's place is refused, not read.
pub fn find_left(
    folder: &RootedDir,
    name: &DumpName,
    since: SystemTime,
    rules: &FileRules,
) -> Option<Left> {
    let entries = folder.entries().ok()?;
    let mut best: Option<(SystemTime, String)> = None;
    for (file, when) in &entries {
        let file = file.to_string_lossy();
        let stem = file.strip_suffix(REPORT_SUFFIX).unwrap_or(&file);
        if !name.matches(stem) {
            continue;
        }
        let Some(when) = *when else {
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
    let present = |f: &str| entries.iter().any(|(n, _)| n.as_os_str() == OsStr::new(f));
    let report_rules = FileRules {
        owner: rules.owner,
        max_bytes: Some(MAX_REPORT_BYTES),
        max_is: "the most a crash report holds",
    };
    let report_name = format!("{stem}{REPORT_SUFFIX}");
    Some(Left {
        dump: present(&stem).then(|| folder.open_file(OsStr::new(&stem), rules)),
        report: present(&report_name)
            .then(|| folder.open_file(OsStr::new(&report_name), &report_rules)),
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

    fn rules(owner: u32) -> FileRules {
        FileRules {
            owner: Some(owner),
            max_bytes: Some(1 << 20),
            max_is: "the process's memory",
        }
    }

    fn me() -> u32 {
        // SAFETY: geteuid takes no arguments and cannot fail.
        unsafe { libc::geteuid() }
    }

    fn opened(r: &Option<Result<File, Refused>>) -> bool {
        matches!(r, Some(Ok(_)))
    }

    #[test]
    fn the_newest_dump_since_the_start_and_its_report_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let held = RootedDir::open_ours(dir.path()).unwrap();
        let n = DumpName::parse(&format!("{}/core_%p_%t", dir.path().display()), 12).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        assert!(find_left(&held, &n, since, &rules(me())).is_none());
        std::fs::write(dir.path().join("core_13_1"), b"x").unwrap();
        std::fs::write(dir.path().join("other"), b"x").unwrap();
        assert!(find_left(&held, &n, since, &rules(me())).is_none());
        std::fs::write(dir.path().join("core_12_1700000000"), b"\x7fELF").unwrap();
        std::fs::write(
            dir.path().join("core_12_1700000000.crashreport.json"),
            b"{}",
        )
        .unwrap();
        let left = find_left(&held, &n, since, &rules(me())).unwrap();
        assert!(opened(&left.dump) && opened(&left.report), "{left:?}");
        assert!(
            left.shown.ends_with("/core_12_1700000000"),
            "{}",
            left.shown
        );
        // A report alone (EnableCrashReportOnly).
        let only = tempfile::tempdir().unwrap();
        std::fs::write(only.path().join("core_12_5.crashreport.json"), b"{}").unwrap();
        let n = DumpName::parse(&format!("{}/core_%p_%t", only.path().display()), 12).unwrap();
        let held_only = RootedDir::open_ours(only.path()).unwrap();
        let left = find_left(&held_only, &n, since, &rules(me())).unwrap();
        assert!(left.dump.is_none());
        assert!(opened(&left.report));
        // Written before the process started: not its dump.
        assert!(find_left(
            &held,
            &n,
            SystemTime::now() + Duration::from_secs(60),
            &rules(me())
        )
        .is_none());
    }

    /// Every way a watched process could make the watcher read what is not its dump: each is
    /// refused, with the reason.
    #[test]
    fn what_a_process_plants_in_its_dump_folder_is_refused_with_the_reason() {
        let host = tempfile::tempdir().unwrap();
        std::fs::write(host.path().join("shadow"), b"root:secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        let dumps = root.path().join("dumps");
        std::fs::create_dir(&dumps).unwrap();
        let base = RootedDir::open_ours(root.path()).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        let refusal = |file: &str| -> String {
            let n = DumpName::parse(&format!("/dumps/{file}"), 7).unwrap();
            let folder = base.open_dir(Path::new(&n.folder)).unwrap();
            let left = find_left(&folder, &n, since, &rules(me())).unwrap();
            match left.dump {
                Some(Err(e)) => e.to_string(),
                other => panic!("{file}: not refused: {other:?}"),
            }
        };
        // A link to a host file, in the dump's place.
        std::os::unix::fs::symlink(host.path().join("shadow"), dumps.join("a_7")).unwrap();
        assert!(refusal("a_%p").contains("symbolic link"));
        // A link to /dev/zero (an endless file).
        std::os::unix::fs::symlink("/dev/zero", dumps.join("z_7")).unwrap();
        assert!(refusal("z_%p").contains("symbolic link"));
        // A FIFO (a read would wait, or never end).
        RootedDir::open_ours(&dumps)
            .unwrap()
            .make_fifo(OsStr::new("f_7"))
            .unwrap();
        assert!(refusal("f_%p").contains("is a FIFO, not a regular file"));
        // A file larger than the process's memory.
        std::fs::File::create(dumps.join("big_7"))
            .unwrap()
            .set_len(2 << 20)
            .unwrap();
        assert!(refusal("big_%p").contains("allowed (the process's memory)"));
        // A file of another user's: as root, one really owned by another uid; else the rule
        // asks for another owner than the file's.
        std::fs::write(dumps.join("o_7"), b"\x7fELF").unwrap();
        let n = DumpName::parse("/dumps/o_%p", 7).unwrap();
        let folder = base.open_dir(Path::new(&n.folder)).unwrap();
        let owner = if me() == 0 {
            std::os::unix::fs::chown(dumps.join("o_7"), Some(4242), None).unwrap();
            0
        } else {
            me() + 1
        };
        let left = find_left(&folder, &n, since, &rules(owner)).unwrap();
        let e = left.dump.unwrap().unwrap_err().to_string();
        assert!(e.contains("belongs to uid"), "{e}");
        // '..' in the pattern, and a folder that is a link out of the root.
        let e = DumpName::parse("/dumps/../../etc/core_%p", 7).unwrap_err();
        assert!(e.contains("'..'"), "{e}");
        std::os::unix::fs::symlink(host.path(), root.path().join("out")).unwrap();
        let n = DumpName::parse("/out/shadow", 7).unwrap();
        let e = base.open_dir(Path::new(&n.folder)).unwrap_err();
        assert!(matches!(e, Refused::Link { .. }), "{e}");
        assert!(e.to_string().contains("never followed"), "{e}");
    }
}
