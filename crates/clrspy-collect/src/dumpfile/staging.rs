//! Where createdump writes what clrspy reads back — the FIFO a compressed dump streams
//! through, or the raw core of the fallback — and the crash report it writes beside them.
//!
//! The runtime runs createdump in the target's own file system, so a path given to it means
//! what the *target* resolves it to. Whether the target sees the dump's folder is decided by
//! the folder itself: walked under the target's root (`/proc/PID/root`, no link, no `..`), it
//! must be the very folder we hold (same device and inode). Then createdump writes there;
//! otherwise (a container, a private `/tmp`, a mount covering the folder in the target's
//! namespace) it writes into the target's own temporary folder, where its runtime put its
//! socket, and the bytes are read out from here. Every file there is reached through the
//! folder's descriptor ([`RootedDir`]): the target can neither swap our FIFO for a link nor
//! hand us a file that is not the one createdump made, and what we read is bounded by the
//! target's memory (see [`core_limit`](super::spec::core_limit)).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use diagnostics_client::rooted::{FileRules, RootedDir};
use diagnostics_client::{generate_core_dump, procfs, Connector, DumpFlags, DumpType};

use super::encode::{check_streamed, compress_stream, Copied};
use super::spec::{CopyLimits, DumpReport, DumpSpec};
use crate::{Error, Result};

/// The most a crash report may hold (createdump's reports of 300 threads are under 1 MB).
const MAX_REPORT_BYTES: u64 = 16 << 20;

/// The folder createdump writes into for one dump, held open.
pub(super) struct Staging {
    /// The folder: the dump's own, or the target's temporary folder below its root.
    dir: RootedDir,
    /// The same folder as the target's runtime names it.
    inside: PathBuf,
    /// True when the target does not see the dump's folder (files go through its own
    /// temporary folder).
    pub(super) apart: bool,
    /// The target's user and group: createdump's files are theirs.
    owner: Option<(u32, u32)>,
    /// The most a core of the target can hold.
    core_limit: Option<u64>,
}

impl Staging {
    /// The staging folder for a dump of `pid` to `path` (absolute).
    pub(super) fn for_target(pid: u32, path: &Path) -> Result<Staging> {
        let folder = path.parent().unwrap_or(Path::new("/"));
        let folder = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
        let owner = procfs::fs_uid(pid).zip(owner_group(pid));
        let core_limit = super::spec::core_limit(pid);
        if diagnostics_client::rooted::sees_folder(pid, &folder) {
            let dir = RootedDir::open_ours(&folder).map_err(|e| Error::output(&folder, e))?;
            return Ok(Staging {
                dir,
                inside: folder,
                apart: false,
                owner,
                core_limit,
            });
        }
        let inside = procfs::temp_dir(pid);
        let refused = |why: String| {
            Error::DumpPath {
            path: path.to_path_buf(),
            why: format!(
                "the process does not see {} (another file system: a container, a private /tmp) and its temporary folder {} cannot take the dump: {why}",
                folder.display(),
                inside.display()
            ),
        }
        };
        let root = RootedDir::root_of(pid).map_err(|e| refused(e.to_string()))?;
        let dir = root.open_dir(&inside).map_err(|e| refused(e.to_string()))?;
        Ok(Staging {
            dir,
            inside,
            apart: true,
            owner,
            core_limit,
        })
    }

    /// `path` (a file of the dump's folder) as the target names it.
    pub(super) fn named(&self, path: &Path) -> PathBuf {
        match path.file_name() {
            Some(n) => self.inside.join(n),
            None => path.to_path_buf(),
        }
    }

    /// The rules a file createdump wrote here follows: the target's, within `max`.
    fn rules(&self, max: Option<u64>, max_is: &'static str) -> FileRules {
        FileRules {
            owner: self.owner.map(|(u, _)| u),
            max_bytes: max,
            max_is,
        }
    }

    /// Bounds for a core read from here, the file within `file`.
    fn limits(&self, file: Option<u64>) -> CopyLimits {
        CopyLimits {
            raw: self.core_limit,
            file,
        }
    }
}

/// The group of `pid` (the owner of `/proc/PID`).
fn owner_group(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.gid())
}

fn output_error(path: &Path, source: std::io::Error) -> Error {
    Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// The name of a staging file (`fifo` or `raw`): hidden, after the dump, unique to this clrspy
/// and target.
fn staging_name(path: &Path, pid: u32, what: &str) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.{}-{pid}.{what}", std::process::id())
}

/// Asks the runtime for a dump to `path` (as it names it).
pub(super) fn dump_command(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    kind: DumpType,
    flags: DumpFlags,
    timeout: Duration,
) -> Result<()> {
    let text = path.to_str().ok_or_else(|| Error::DumpPath {
        path: path.to_path_buf(),
        why: "the path is not valid UTF-8".into(),
    })?;
    generate_core_dump(to, text, kind, flags, timeout).map_err(|source| Error::Dump { pid, source })
}

/// Gives the staging file `name` to the target's user when we are root and it is not: its
/// createdump runs as that user and must be able to open it.
fn hand_to_target(staging: &Staging, name: &OsStr) {
    // SAFETY: geteuid takes no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    if let Some((uid, gid)) = staging.owner.filter(|(u, _)| *u != 0) {
        let _ = staging.dir.give(name, uid, gid);
    }
}

/// Moves the crash report createdump wrote beside `written` (a name in the staging folder)
/// next to the final dump, named after it; only a regular file of the target's, bounded.
pub(super) fn move_report(
    staging: &Staging,
    written: &str,
    dump: &Path,
    asked: bool,
) -> Option<PathBuf> {
    if !asked {
        return None;
    }
    let from = format!("{written}.crashreport.json");
    let mut to = dump.as_os_str().to_owned();
    to.push(".crashreport.json");
    let to = PathBuf::from(to);
    let rules = staging.rules(Some(MAX_REPORT_BYTES), "the most a crash report holds");
    let mut bytes = Vec::new();
    staging
        .dir
        .open_file(OsStr::new(&from), &rules)
        .ok()?
        .take(MAX_REPORT_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    let written_ok = crate::private::create_private(&to)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
        .is_ok();
    staging.dir.remove(OsStr::new(&from));
    if !written_ok {
        let _ = std::fs::remove_file(&to);
        return None;
    }
    Some(to)
}

/// The streamed dump: Ok(None) when the FIFO cannot be used and nothing was written (the
/// caller falls back to write-then-compress).
pub(super) fn streamed(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    spec: &DumpSpec,
    flags: DumpFlags,
    started: Instant,
    staging: &Staging,
) -> Result<Option<DumpReport>> {
    let out = crate::private::create_private(path).map_err(|e| output_error(path, e))?;
    let fifo = staging_name(path, pid, "fifo");
    let fifo_os = OsStr::new(&fifo).to_owned();
    staging.dir.remove(&fifo_os);
    if staging.dir.make_fifo(&fifo_os).is_err() {
        drop(out);
        let _ = std::fs::remove_file(path);
        return Ok(None);
    }
    hand_to_target(staging, &fifo_os);
    let kind = spec.compress;
    let limits = staging.limits(spec.max_file_bytes);
    let held = staging
        .dir
        .open_dir(Path::new(""))
        .map_err(|e| output_error(path, std::io::Error::other(e)))?;
    let name = fifo_os.clone();
    let reader = std::thread::Builder::new()
        .name("clrspy-dump-gz".into())
        .spawn(move || -> std::io::Result<Copied> {
            let mut src = held.open_fifo(&name).map_err(std::io::Error::other)?;
            compress_stream(&mut src, out, kind, limits)
        })
        .map_err(|e| output_error(path, e))?;
    let command = dump_command(
        to,
        pid,
        &staging.inside.join(&fifo),
        spec.kind,
        flags,
        spec.timeout,
    );
    // createdump has exited (the command answers after it): its end of the FIFO is closed. If
    // it never opened it, the reader is still waiting in open: wake it (bounded; a createdump
    // still writing after a timed-out command keeps it busy, and it is left to end alone).
    for _ in 0..500 {
        if reader.is_finished() {
            break;
        }
        staging.dir.poke_fifo(&fifo_os);
        std::thread::sleep(Duration::from_millis(10));
    }
    let streamed = if reader.is_finished() {
        reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the compressing thread panicked")))
    } else {
        Err(std::io::Error::other("createdump is still writing"))
    };
    let report = move_report(staging, &fifo, path, spec.crash_report);
    staging.dir.remove(&fifo_os);
    let fail = |e: Error| {
        let _ = std::fs::remove_file(path);
        Err(e)
    };
    match (command, streamed) {
        (Err(_), Ok(Copied { raw: 0, .. })) => {
            // Nothing came through: try again without the FIFO.
            let _ = std::fs::remove_file(path);
            Ok(None)
        }
        (Err(e), _) => fail(e),
        (Ok(()), Err(e)) => fail(output_error(path, e)),
        (Ok(()), Ok(c)) => {
            if let Err(e) = check_streamed(path, &c) {
                return fail(e);
            }
            Ok(Some(DumpReport {
                path: path.to_path_buf(),
                raw_bytes: c.raw,
                file_bytes: c.written,
                streamed: true,
                elapsed: started.elapsed(),
                raw_write: None,
                crash_report: report,
                dac: None,
            }))
        }
    }
}

/// The fallback: the raw core beside the final file (or in the target's temporary folder),
/// compressed (or copied out), then deleted.
pub(super) fn write_then_compress(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    spec: &DumpSpec,
    flags: DumpFlags,
    started: Instant,
    staging: &Staging,
) -> Result<DumpReport> {
    let raw = if staging.apart {
        staging_name(path, pid, "raw")
    } else {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{name}.raw")
    };
    let raw_os = OsStr::new(&raw);
    let raw_shown = staging.inside.join(&raw);
    let command = dump_command(to, pid, &raw_shown, spec.kind, flags, spec.timeout);
    if let Err(e) = command {
        // A timed-out createdump may have left part of a core.
        staging.dir.remove(raw_os);
        return Err(e);
    }
    let raw_write = started.elapsed();
    let result = (|| -> Result<Copied> {
        let rules = staging.rules(staging.core_limit, "twice the process's readable memory");
        let mut src = staging
            .dir
            .open_file(raw_os, &rules)
            .map_err(|e| Error::DumpCheck {
                path: raw_shown.clone(),
                why: format!("createdump's file is not taken: {e}"),
                source: None,
            })?;
        let out = crate::private::create_private(path).map_err(|e| output_error(path, e))?;
        let c = compress_stream(
            &mut src,
            out,
            spec.compress,
            staging.limits(spec.max_file_bytes),
        )
        .map_err(|e| output_error(path, e))?;
        check_streamed(path, &c)?;
        Ok(c)
    })();
    let report = move_report(staging, &raw, path, spec.crash_report);
    staging.dir.remove(raw_os);
    let c = result.inspect_err(|_: &Error| {
        let _ = std::fs::remove_file(path);
    })?;
    Ok(DumpReport {
        path: path.to_path_buf(),
        raw_bytes: c.raw,
        file_bytes: c.written,
        streamed: false,
        elapsed: started.elapsed(),
        raw_write: Some(raw_write),
        crash_report: report,
        dac: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_nobody_writes_wakes_its_reader() {
        let dir = tempfile::tempdir().unwrap();
        let held = RootedDir::open_ours(dir.path()).unwrap();
        held.make_fifo(OsStr::new("f")).unwrap();
        let reader_dir = held.open_dir(Path::new("")).unwrap();
        let t = std::thread::spawn(move || {
            let mut s = reader_dir.open_fifo(OsStr::new("f")).unwrap();
            let mut v = Vec::new();
            s.read_to_end(&mut v).unwrap();
            v.len()
        });
        // The reader may not be in open() yet: wake until it is done (bounded).
        for _ in 0..500 {
            if t.is_finished() {
                break;
            }
            held.poke_fifo(OsStr::new("f"));
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(t.join().unwrap(), 0);
    }

    #[test]
    fn our_own_process_sees_its_folder_and_a_report_is_moved_only_when_it_is_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("d.dmp.zst");
        let s = Staging::for_target(std::process::id(), &dump).unwrap();
        assert!(!s.apart);
        std::fs::write(dir.path().join("w.crashreport.json"), b"{}").unwrap();
        let moved = move_report(&s, "w", &dump, true).unwrap();
        assert_eq!(moved, dir.path().join("d.dmp.zst.crashreport.json"));
        assert!(!dir.path().join("w.crashreport.json").exists());
        // A link in the report's place is neither followed nor moved.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"{}").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            dir.path().join("l.crashreport.json"),
        )
        .unwrap();
        let other = dir.path().join("e.dmp.zst");
        assert_eq!(move_report(&s, "l", &other, true), None);
        assert!(!dir.path().join("e.dmp.zst.crashreport.json").exists());
        assert!(outside.path().join("secret").exists());
    }
}
