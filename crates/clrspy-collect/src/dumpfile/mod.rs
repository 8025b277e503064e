//! Compressed dumps: the runtime's `createdump` writes the core into a FIFO clrspy made, and
//! clrspy compresses the bytes (gzip or zstd) into the final file as they come, so the raw core
//! never lands on disk. createdump writes the core front to back (no seeks; checked against
//! .NET 10: the streamed core's program headers end exactly at its size). When the FIFO cannot
//! be used (no mkfifo on that file system, or createdump fails before writing a byte), the
//! dump is written raw beside the target, compressed, and the raw file deleted.
//!
//! A process that does not see the dump's folder (a container, a private `/tmp`, a mount over
//! the folder in its namespace) runs its `createdump` where a path means something else: the
//! FIFO (or the raw core) is then made in its own temporary folder and the bytes are always
//! read from our side into the output file ([`staging`]). What is read is bounded by the
//! process's memory and, when asked, the file by a budget ([`spec::CopyLimits`]).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use diagnostics_client::{Connector, DumpFlags};

mod encode;
mod spec;
mod staging;

pub use spec::{core_limit_for, Compression, CopyLimits, DumpReport, DumpSpec};

use crate::coredump::check_dump;
use crate::{Error, Result};
use encode::{check_streamed, compress_stream, Copied};
use staging::{dump_command, streamed, write_then_compress, Staging};

/// Writes a `spec` dump of the runtime behind `to` (process `pid`) to `path` (absolute,
/// UTF-8, its directory existing: see [`dump_path`](crate::dump_path)), and beside it a copy
/// of the target's data access library, so that the dump can be analysed on any machine.
pub fn write_dump_file(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    spec: &DumpSpec,
) -> Result<DumpReport> {
    let mut report = write_core(to, pid, path, spec)?;
    report.dac = store_dac(pid, &report.path);
    Ok(report)
}

/// The data access library a dump's analysis needs is the exact build of the target's
/// runtime: read it from the runtime's folder inside the target's root (a container's own
/// files; links not followed out of it) and store it as `DUMP.libmscordaccore.so`, owner-only.
fn store_dac(pid: u32, dump: &Path) -> Option<PathBuf> {
    const MAX_DAC_BYTES: u64 = 64 << 20;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let runtime = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libcoreclr.so"))?;
    let dac = Path::new(runtime).parent()?.join(coredump::dac::DAC_NAME);
    let bytes = diagnostics_client::rooted::read_in_root(pid, &dac, MAX_DAC_BYTES).ok()?;
    let out = coredump::dac::sidecar_path(dump);
    let mut f = crate::private::create_private(&out).ok()?;
    std::io::Write::write_all(&mut f, &bytes).ok()?;
    Some(out)
}

fn write_core(to: &dyn Connector, pid: u32, path: &Path, spec: &DumpSpec) -> Result<DumpReport> {
    let flags = DumpFlags {
        crash_report: spec.crash_report,
        ..DumpFlags::default()
    };
    let started = Instant::now();
    let staging = Staging::for_target(pid, path)?;
    if spec.compress == Compression::None && spec.max_file_bytes.is_none() && !staging.apart {
        // The process sees the folder: the runtime writes the file itself, where it names it.
        let named = staging.named(path);
        dump_command(to, pid, &named, spec.kind, flags, spec.timeout)?;
        let size = check_dump(path)?;
        let mut report = path.as_os_str().to_owned();
        report.push(".crashreport.json");
        let report = PathBuf::from(report);
        return Ok(DumpReport {
            path: path.to_path_buf(),
            raw_bytes: size,
            file_bytes: size,
            streamed: false,
            elapsed: started.elapsed(),
            raw_write: None,
            crash_report: (spec.crash_report && report.is_file()).then_some(report),
            dac: None,
        });
    }
    if let Some(r) = streamed(to, pid, path, spec, flags, started, &staging)? {
        return Ok(r);
    }
    write_then_compress(to, pid, path, spec, flags, started, &staging)
}

fn output_error(path: &Path, source: std::io::Error) -> Error {
    Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens a core the runtime wrote into one of our folders (a launched program's crash dump):
/// a regular file, never through a link.
fn open_core(raw: &Path) -> Result<File> {
    let bad = |why: String| Error::DumpCheck {
        path: raw.to_path_buf(),
        why,
        source: None,
    };
    let (Some(dir), Some(name)) = (raw.parent(), raw.file_name()) else {
        return Err(bad("not a file's path".into()));
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    diagnostics_client::rooted::RootedDir::open_ours(dir)
        .map_err(|e| output_error(dir, e))?
        .open_file(name, &diagnostics_client::rooted::FileRules::default())
        .map_err(|e| bad(e.to_string()))
}

/// Compresses a core the runtime wrote itself (a crash dump) into `<raw>.gz` / `<raw>.zst`
/// beside it and deletes the raw file; the report has no crash report.
pub(crate) fn compress_dump_file(raw: &Path, compress: Compression) -> Result<DumpReport> {
    let started = Instant::now();
    let size = check_dump(raw)?;
    if compress == Compression::None {
        return Ok(DumpReport {
            path: raw.to_path_buf(),
            raw_bytes: size,
            file_bytes: size,
            streamed: false,
            elapsed: started.elapsed(),
            raw_write: None,
            crash_report: None,
            dac: None,
        });
    }
    let mut name = raw.as_os_str().to_owned();
    name.push(compress.suffix());
    let path = PathBuf::from(name);
    let result = (|| -> Result<Copied> {
        let mut src = open_core(raw)?;
        let out = crate::private::create_private(&path).map_err(|e| output_error(&path, e))?;
        let c = compress_stream(&mut src, out, compress, CopyLimits::default())
            .map_err(|e| output_error(&path, e))?;
        check_streamed(&path, &c)?;
        Ok(c)
    })();
    let c = result.inspect_err(|_: &Error| {
        let _ = std::fs::remove_file(&path);
    })?;
    let _ = std::fs::remove_file(raw);
    Ok(DumpReport {
        path,
        raw_bytes: c.raw,
        file_bytes: c.written,
        streamed: false,
        elapsed: started.elapsed(),
        raw_write: None,
        crash_report: None,
        dac: None,
    })
}

/// Copies a core the runtime wrote itself (a crash dump, read from `src`) into `to`,
/// compressed as asked (copied as is with [`Compression::None`]), within `limits` (the
/// source may be a watched process's file: bound it by its memory, the file by a budget); the
/// source is left alone. `to` is removed again when the copy fails, crosses a limit or is not
/// a core.
pub fn compress_core_into(
    src: &mut dyn Read,
    to: &Path,
    compress: Compression,
    limits: CopyLimits,
) -> Result<DumpReport> {
    let started = Instant::now();
    let result = (|| -> Result<Copied> {
        let out = crate::private::create_private(to).map_err(|e| output_error(to, e))?;
        let c = compress_stream(src, out, compress, limits).map_err(|e| output_error(to, e))?;
        check_streamed(to, &c)?;
        Ok(c)
    })();
    let c = result.inspect_err(|_: &Error| {
        let _ = std::fs::remove_file(to);
    })?;
    Ok(DumpReport {
        path: to.to_path_buf(),
        raw_bytes: c.raw,
        file_bytes: c.written,
        streamed: false,
        elapsed: started.elapsed(),
        raw_write: None,
        crash_report: None,
        dac: None,
    })
}

/// The name a dump of `pid` compressed by `compress` is written under (`clrspy dump -o`):
/// `core_<pid>_<time>.gz|.zst` by default (None for a raw core: [`crate::dump_path`]'s default), a
/// given name with the compression's suffix added unless it has it. True when a given name was
/// changed, so the caller can say so.
pub fn compressed_dump_name(
    pid: u32,
    output: Option<&Path>,
    compress: Compression,
) -> (Option<PathBuf>, bool) {
    let suffix = compress.suffix();
    match output {
        None if !suffix.is_empty() => (
            Some(
                format!(
                    "core_{pid}_{}{suffix}",
                    clrspy_values::time::file_stamp(std::time::SystemTime::now())
                )
                .into(),
            ),
            false,
        ),
        Some(o) if !suffix.is_empty() && !o.to_string_lossy().ends_with(suffix) => {
            let mut named = o.to_path_buf().into_os_string();
            named.push(suffix);
            (Some(named.into()), true)
        }
        o => (o.map(Path::to_path_buf), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn a_compressed_dump_says_so_by_its_name() {
        let (p, changed) = compressed_dump_name(7, Some(Path::new("mini.dmp")), Compression::Zstd);
        assert_eq!((p.unwrap(), changed), (PathBuf::from("mini.dmp.zst"), true));
        let (p, changed) = compressed_dump_name(7, Some(Path::new("a.gz")), Compression::Gzip);
        assert_eq!((p.unwrap(), changed), (PathBuf::from("a.gz"), false));
        let (p, changed) = compressed_dump_name(7, Some(Path::new("raw")), Compression::None);
        assert_eq!((p.unwrap(), changed), (PathBuf::from("raw"), false));
        assert_eq!(
            compressed_dump_name(7, None, Compression::None),
            (None, false)
        );
        let (p, _) = compressed_dump_name(7, None, Compression::Gzip);
        let name = p.unwrap().display().to_string();
        assert!(
            name.starts_with("core_7_") && name.ends_with(".gz"),
            "{name}"
        );
    }

    fn core_like() -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        for i in 0..200_000u32 {
            v.extend_from_slice(&(i % 977).to_le_bytes());
        }
        v
    }

    #[test]
    fn a_core_is_copied_or_compressed_elsewhere_and_a_non_core_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = core_like();
        for kind in [Compression::None, Compression::Gzip, Compression::Zstd] {
            let to = dir.path().join(format!("c.{}", kind.extension()));
            let r = compress_core_into(&mut Cursor::new(&data), &to, kind, CopyLimits::default())
                .unwrap();
            assert_eq!(r.raw_bytes, data.len() as u64);
            assert_eq!(r.file_bytes, std::fs::metadata(&to).unwrap().len());
            if kind == Compression::None {
                assert_eq!(std::fs::read(&to).unwrap(), data);
            } else {
                assert!(r.file_bytes < r.raw_bytes / 4, "{kind:?}");
            }
        }
        let to = dir.path().join("bad.dmp.gz");
        let e = compress_core_into(
            &mut Cursor::new(b"MZ not a core"),
            &to,
            Compression::Gzip,
            CopyLimits::default(),
        );
        assert!(e.is_err());
        assert!(!to.exists());
        // Past the budget: stopped, and nothing left.
        let to = dir.path().join("over.dmp");
        let limits = CopyLimits {
            raw: None,
            file: Some(1000),
        };
        let e = compress_core_into(&mut Cursor::new(&data), &to, Compression::None, limits);
        assert!(e.unwrap_err().to_string().contains("disk budget"));
        assert!(!to.exists());
    }
}
