//! Compressed dumps: the runtime's `createdump` writes the core into a FIFO clrspy made, and
//! clrspy compresses the bytes (gzip or zstd) into the final file as they come, so the raw core
//! never lands on disk. createdump writes the core front to back (no seeks; checked against
//! .NET 10: the streamed core's program headers end exactly at its size). When the FIFO cannot
//! be used (no mkfifo on that file system, or createdump fails before writing a byte), the
//! dump is written raw beside the target, compressed, and the raw file deleted.
//!
//! A process in a container sees other files than clrspy, and its `createdump` runs there: a
//! path given to the runtime means something else inside. For such a process the FIFO (or the
//! raw core) is made in its own temporary folder — where its runtime put its socket — reached
//! from here through `/proc/<pid>/root`, and the bytes are always read from our side into the
//! output file (copied as they come when no compression is asked), so nothing stays inside.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use diagnostics_client::{generate_core_dump, Connector, DumpFlags, DumpType};

use crate::coredump::check_dump;
use crate::{Error, Result};

/// How a dump is compressed as it is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Not at all: the runtime writes the file itself.
    #[default]
    None,
    /// gzip (deflate, level 6 like `gzip -6`): `.dmp.gz`, readable by `gunzip`.
    Gzip,
    /// zstd (level 3): `.dmp.zst`, readable by `zstd -d`.
    Zstd,
}

impl Compression {
    /// Parses `none`, `gzip` (`gz`) or `zstd` (`zst`).
    pub fn parse(s: &str) -> Option<Compression> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "raw" | "" => Some(Compression::None),
            "gzip" | "gz" => Some(Compression::Gzip),
            "zstd" | "zst" => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The dump file's extension: `dmp`, `dmp.gz` or `dmp.zst`.
    pub fn extension(self) -> &'static str {
        match self {
            Compression::None => "dmp",
            Compression::Gzip => "dmp.gz",
            Compression::Zstd => "dmp.zst",
        }
    }

    /// What a file compressed so ends in: `.gz`, `.zst`, nothing for none.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zstd => ".zst",
        }
    }

    /// The command that turns a file compressed so back into the raw core (`gunzip`,
    /// `zstd -d`; None for none).
    pub fn unpack_command(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Gzip => Some("gunzip"),
            Compression::Zstd => Some("zstd -d"),
        }
    }

    /// The name in words (`none`, `gzip`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// What dump to write and how.
#[derive(Clone, Copy, Debug)]
pub struct DumpSpec {
    /// What the dump holds.
    pub kind: DumpType,
    /// How it is compressed.
    pub compress: Compression,
    /// Also have createdump write `<dump>.crashreport.json` (threads, stacks, exception).
    pub crash_report: bool,
    /// How long the runtime may take.
    pub timeout: Duration,
}

impl Default for DumpSpec {
    fn default() -> DumpSpec {
        DumpSpec {
            kind: DumpType::Normal,
            compress: Compression::None,
            crash_report: false,
            timeout: Duration::from_secs(120),
        }
    }
}

/// What writing one dump gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpReport {
    /// The dump file (compressed when asked).
    pub path: PathBuf,
    /// The core's size as createdump wrote it.
    pub raw_bytes: u64,
    /// The file's size on disk (equal to `raw_bytes` without compression).
    pub file_bytes: u64,
    /// True when the core was compressed as it streamed (never on disk raw).
    pub streamed: bool,
    /// From the dump command to the finished file.
    pub elapsed: Duration,
    /// Without streaming: how long the raw write took (the rest of `elapsed` is compression).
    pub raw_write: Option<Duration>,
    /// The crash report createdump wrote, when asked and present.
    pub crash_report: Option<PathBuf>,
}

/// Writes a `spec` dump of the runtime behind `to` (process `pid`) to `path` (absolute,
/// UTF-8, its directory existing: see [`dump_path`](crate::dump_path)).
pub fn write_dump_file(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    spec: &DumpSpec,
) -> Result<DumpReport> {
    let flags = DumpFlags {
        crash_report: spec.crash_report,
        ..DumpFlags::default()
    };
    let started = Instant::now();
    let staging = Staging::for_target(pid, path);
    if spec.compress == Compression::None && !staging.container {
        dump_command(to, pid, path, spec.kind, flags, spec.timeout)?;
        let size = check_dump(path)?;
        return Ok(DumpReport {
            path: path.to_path_buf(),
            raw_bytes: size,
            file_bytes: size,
            streamed: false,
            elapsed: started.elapsed(),
            raw_write: None,
            crash_report: crash_report_of(path, path, spec.crash_report),
        });
    }
    #[cfg(unix)]
    match streamed(to, pid, path, spec, flags, started, &staging) {
        Ok(Some(r)) => return Ok(r),
        Ok(None) => {}
        Err(e) => return Err(e),
    }
    write_then_compress(to, pid, path, spec, flags, started, &staging)
}

/// The folder where createdump writes what clrspy reads (the FIFO, or the raw core): the
/// dump's own folder for a process that sees our files; for a container's, its temporary
/// folder, named differently on each side.
#[derive(Debug)]
struct Staging {
    /// The folder from here.
    here: PathBuf,
    /// The same folder as the target's runtime names it.
    inside: PathBuf,
    /// True for a process in a container.
    container: bool,
}

impl Staging {
    fn for_target(pid: u32, path: &Path) -> Staging {
        if let Some(c) = diagnostics_client::container_folder(pid) {
            return Staging {
                here: c.here,
                inside: c.inside,
                container: true,
            };
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Staging {
            here: dir.clone(),
            inside: dir,
            container: false,
        }
    }

    /// A file of the folder, named from here and from inside.
    fn file(&self, name: &str) -> (PathBuf, PathBuf) {
        (self.here.join(name), self.inside.join(name))
    }
}

fn dump_command(
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

/// createdump names its report after the path it was given (`written`); it is moved next to
/// the final dump (`dump`), named after it.
fn crash_report_of(written: &Path, dump: &Path, asked: bool) -> Option<PathBuf> {
    if !asked {
        return None;
    }
    let mut from = written.as_os_str().to_owned();
    from.push(".crashreport.json");
    let from = PathBuf::from(from);
    let mut to = dump.as_os_str().to_owned();
    to.push(".crashreport.json");
    let to = PathBuf::from(to);
    if from != to && std::fs::rename(&from, &to).is_err() {
        // Another file system (a container's folder): copied, then removed; only a plain file
        // (a link there would be followed from here).
        let plain = std::fs::symlink_metadata(&from).is_ok_and(|m| m.file_type().is_file());
        if plain && std::fs::copy(&from, &to).is_ok() {
            let _ = std::fs::remove_file(&from);
        } else {
            let _ = std::fs::remove_file(&to);
            return from.exists().then_some(from);
        }
    }
    to.exists().then_some(to)
}

/// Counts the bytes written through it.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A compressor writing into the output file (or a plain copy, for [`Compression::None`]).
enum Encoder {
    Plain(Counting<BufWriter<File>>),
    Gzip(flate2::write::GzEncoder<Counting<BufWriter<File>>>),
    Zstd(zstd::stream::write::Encoder<'static, Counting<BufWriter<File>>>),
}

impl Encoder {
    fn new(kind: Compression, file: File) -> std::io::Result<Encoder> {
        let out = Counting {
            inner: BufWriter::with_capacity(1 << 20, file),
            bytes: 0,
        };
        Ok(match kind {
            Compression::None => Encoder::Plain(out),
            Compression::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(out, 3)?),
            _ => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::new(6),
            )),
        })
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Plain(e) => e.write_all(buf),
            Encoder::Gzip(e) => e.write_all(buf),
            Encoder::Zstd(e) => e.write_all(buf),
        }
    }

    /// Ends the stream, flushes and syncs the file; returns its size.
    fn finish(self) -> std::io::Result<u64> {
        let mut out = match self {
            Encoder::Plain(e) => e,
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Zstd(e) => e.finish()?,
        };
        out.flush()?;
        let bytes = out.bytes;
        let file = out.inner.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(bytes)
    }
}

/// Compresses everything `src` gives into `out`; returns (raw bytes, compressed bytes, the
/// first four bytes).
fn compress_stream(
    src: &mut dyn Read,
    out: File,
    kind: Compression,
) -> std::io::Result<(u64, u64, Vec<u8>)> {
    let mut enc = Encoder::new(kind, out)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut raw = 0u64;
    let mut magic = Vec::with_capacity(4);
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if magic.len() < 4 {
            let take = (4 - magic.len()).min(n);
            magic.extend_from_slice(&buf[..take]);
        }
        raw += n as u64;
        enc.write_all(&buf[..n])?;
    }
    let written = enc.finish()?;
    Ok((raw, written, magic))
}

fn output_error(path: &Path, source: std::io::Error) -> Error {
    Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks what streamed through looks like a core (on Linux).
fn check_streamed(path: &Path, raw: u64, magic: &[u8]) -> Result<()> {
    let bad = |why: String| Error::DumpCheck {
        path: path.to_path_buf(),
        why,
        source: None,
    };
    if raw < 4 {
        return Err(bad(format!(
            "createdump wrote {raw} bytes: not a core file"
        )));
    }
    if cfg!(target_os = "linux") && magic != b"\x7fELF" {
        return Err(bad("createdump did not write an ELF core file".into()));
    }
    Ok(())
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

/// Gives `file` to the owner of process `pid` when we are root and it is not: its createdump
/// runs as that user and must be able to open the FIFO. Never through a link (the folder may
/// be a container's, whose processes could swap the FIFO for one).
#[cfg(unix)]
fn hand_to_target(file: &Path, pid: u32) {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid takes no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    if let Ok(m) = std::fs::metadata(format!("/proc/{pid}")) {
        if m.uid() != 0 {
            let _ = std::os::unix::fs::lchown(file, Some(m.uid()), Some(m.gid()));
        }
    }
}

/// Opens `path` for reading, refusing a link in its last part (a container's folder is its
/// processes' to change).
#[cfg(unix)]
fn open_no_link(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_link(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// Makes a FIFO only the user can open.
#[cfg(unix)]
fn mkfifo(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: mkfifo(3) with a NUL-terminated path we own.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Wakes a reader blocked opening `fifo` (createdump never opened it): an open for writing
/// that is closed at once gives it the end of the stream.
#[cfg(unix)]
fn wake_reader(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

/// The streamed dump: Ok(None) when the FIFO cannot be used and nothing was written (the
/// caller falls back to write-then-compress).
#[cfg(unix)]
fn streamed(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    spec: &DumpSpec,
    flags: DumpFlags,
    started: Instant,
    staging: &Staging,
) -> Result<Option<DumpReport>> {
    let out = crate::private::create_private(path).map_err(|e| output_error(path, e))?;
    let (fifo, fifo_inside) = staging.file(&staging_name(path, pid, "fifo"));
    let _ = std::fs::remove_file(&fifo);
    if mkfifo(&fifo).is_err() {
        drop(out);
        let _ = std::fs::remove_file(path);
        return Ok(None);
    }
    hand_to_target(&fifo, pid);
    let kind = spec.compress;
    let reader_fifo = fifo.clone();
    let reader = std::thread::Builder::new()
        .name("clrspy-dump-gz".into())
        .spawn(move || -> std::io::Result<(u64, u64, Vec<u8>)> {
            let mut src = open_no_link(&reader_fifo)?;
            compress_stream(&mut src, out, kind)
        })
        .map_err(|e| output_error(path, e))?;
    let command = dump_command(to, pid, &fifo_inside, spec.kind, flags, spec.timeout);
    // createdump has exited (the command answers after it): its end of the FIFO is closed. If
    // it never opened it, the reader is still waiting in open: wake it (bounded; a createdump
    // still writing after a timed-out command keeps it busy, and it is left to end alone).
    for _ in 0..500 {
        if reader.is_finished() {
            break;
        }
        wake_reader(&fifo);
        std::thread::sleep(Duration::from_millis(10));
    }
    let streamed = if reader.is_finished() {
        reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the compressing thread panicked")))
    } else {
        Err(std::io::Error::other("createdump is still writing"))
    };
    let report = crash_report_of(&fifo, path, spec.crash_report);
    let _ = std::fs::remove_file(&fifo);
    let fail = |e: Error| {
        let _ = std::fs::remove_file(path);
        Err(e)
    };
    match (command, streamed) {
        (Err(_), Ok((0, _, _))) => {
            // Nothing came through: try again without the FIFO.
            let _ = std::fs::remove_file(path);
            Ok(None)
        }
        (Err(e), _) => fail(e),
        (Ok(()), Err(e)) => fail(output_error(path, e)),
        (Ok(()), Ok((raw, file_bytes, magic))) => {
            if let Err(e) = check_streamed(path, raw, &magic) {
                return fail(e);
            }
            Ok(Some(DumpReport {
                path: path.to_path_buf(),
                raw_bytes: raw,
                file_bytes,
                streamed: true,
                elapsed: started.elapsed(),
                raw_write: None,
                crash_report: report,
            }))
        }
    }
}

/// The fallback: the raw core beside the final file (a container's: in its temporary folder),
/// compressed (or copied out), then deleted.
fn write_then_compress(
    to: &dyn Connector,
    pid: u32,
    path: &Path,
    spec: &DumpSpec,
    flags: DumpFlags,
    started: Instant,
    staging: &Staging,
) -> Result<DumpReport> {
    let (raw_path, raw_inside) = if staging.container {
        staging.file(&staging_name(path, pid, "raw"))
    } else {
        let mut raw_name = path.as_os_str().to_owned();
        raw_name.push(".raw");
        (PathBuf::from(&raw_name), PathBuf::from(raw_name))
    };
    let command = dump_command(to, pid, &raw_inside, spec.kind, flags, spec.timeout);
    if let Err(e) = command {
        // A timed-out createdump may have left part of a core.
        let _ = std::fs::remove_file(&raw_path);
        return Err(e);
    }
    let raw_write = started.elapsed();
    let result = (|| -> Result<(u64, u64)> {
        check_dump(&raw_path)?;
        let mut src = open_no_link(&raw_path).map_err(|e| output_error(&raw_path, e))?;
        let out = crate::private::create_private(path).map_err(|e| output_error(path, e))?;
        let (raw, file_bytes, magic) =
            compress_stream(&mut src, out, spec.compress).map_err(|e| output_error(path, e))?;
        check_streamed(path, raw, &magic)?;
        Ok((raw, file_bytes))
    })();
    let _ = std::fs::remove_file(&raw_path);
    let (raw_bytes, file_bytes) = result.inspect_err(|_: &Error| {
        let _ = std::fs::remove_file(path);
    })?;
    Ok(DumpReport {
        path: path.to_path_buf(),
        raw_bytes,
        file_bytes,
        streamed: false,
        elapsed: started.elapsed(),
        raw_write: Some(raw_write),
        crash_report: crash_report_of(&raw_path, path, spec.crash_report),
    })
}

/// Compresses a core the runtime wrote itself (a crash dump) into `<raw>.gz` / `<raw>.zst`
/// beside it and deletes the raw file; the report has no crash report.
pub fn compress_dump_file(raw: &Path, compress: Compression) -> Result<DumpReport> {
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
        });
    }
    let ext = match compress {
        Compression::Zstd => ".zst",
        _ => ".gz",
    };
    let mut name = raw.as_os_str().to_owned();
    name.push(ext);
    let path = PathBuf::from(name);
    let result = (|| -> Result<(u64, u64)> {
        let mut src = File::open(raw).map_err(|e| output_error(raw, e))?;
        let out = crate::private::create_private(&path).map_err(|e| output_error(&path, e))?;
        let (r, f, magic) =
            compress_stream(&mut src, out, compress).map_err(|e| output_error(&path, e))?;
        check_streamed(&path, r, &magic)?;
        Ok((r, f))
    })();
    let (raw_bytes, file_bytes) = result.inspect_err(|_: &Error| {
        let _ = std::fs::remove_file(&path);
    })?;
    let _ = std::fs::remove_file(raw);
    Ok(DumpReport {
        path,
        raw_bytes,
        file_bytes,
        streamed: false,
        elapsed: started.elapsed(),
        raw_write: None,
        crash_report: None,
    })
}

/// Copies a core the runtime wrote itself (a crash dump, read from `src`) into `to`,
/// compressed as asked (copied as is with [`Compression::None`]); the source is left alone.
/// `to` is removed again when the copy fails or is not a core.
pub fn compress_core_into(
    src: &mut dyn Read,
    to: &Path,
    compress: Compression,
) -> Result<DumpReport> {
    let started = Instant::now();
    let result = (|| -> Result<(u64, u64)> {
        let mut out = crate::private::create_private(to).map_err(|e| output_error(to, e))?;
        let (r, f, magic) = if compress == Compression::None {
            let mut magic = [0u8; 4];
            let n = crate::coredump::read_up_to(&mut &mut *src, &mut magic)
                .map_err(|e| output_error(to, e))?;
            out.write_all(&magic[..n])
                .map_err(|e| output_error(to, e))?;
            let rest = std::io::copy(src, &mut out).map_err(|e| output_error(to, e))?;
            out.sync_all().map_err(|e| output_error(to, e))?;
            let r = n as u64 + rest;
            (r, r, magic[..n].to_vec())
        } else {
            compress_stream(src, out, compress).map_err(|e| output_error(to, e))?
        };
        check_streamed(to, r, &magic)?;
        Ok((r, f))
    })();
    let (raw_bytes, file_bytes) = result.inspect_err(|_: &Error| {
        let _ = std::fs::remove_file(to);
    })?;
    Ok(DumpReport {
        path: to.to_path_buf(),
        raw_bytes,
        file_bytes,
        streamed: false,
        elapsed: started.elapsed(),
        raw_write: None,
        crash_report: None,
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
            Some(format!("core_{pid}_{}{suffix}", crate::utc_stamp()).into()),
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

    #[test]
    fn compression_names() {
        assert_eq!(Compression::parse("GZIP"), Some(Compression::Gzip));
        assert_eq!(Compression::parse("zst"), Some(Compression::Zstd));
        assert_eq!(Compression::parse("none"), Some(Compression::None));
        assert_eq!(Compression::parse("lz4"), None);
        assert_eq!(Compression::Gzip.extension(), "dmp.gz");
        assert_eq!(Compression::Zstd.extension(), "dmp.zst");
    }

    fn core_like() -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        for i in 0..200_000u32 {
            v.extend_from_slice(&(i % 977).to_le_bytes());
        }
        v
    }

    #[test]
    fn both_compressors_round_trip_and_count() {
        let dir = tempfile::tempdir().unwrap();
        let data = core_like();
        for kind in [Compression::Gzip, Compression::Zstd] {
            let p = dir.path().join(kind.extension());
            let f = File::create(&p).unwrap();
            let (raw, written, magic) = compress_stream(&mut Cursor::new(&data), f, kind).unwrap();
            assert_eq!(raw, data.len() as u64);
            assert_eq!(magic, b"\x7fELF");
            assert_eq!(written, std::fs::metadata(&p).unwrap().len());
            assert!(written < raw / 4, "{kind:?}: {written} of {raw}");
            let mut back = Vec::new();
            let f = File::open(&p).unwrap();
            match kind {
                Compression::Gzip => {
                    flate2::read::GzDecoder::new(f)
                        .read_to_end(&mut back)
                        .unwrap();
                }
                _ => {
                    zstd::stream::read::Decoder::new(f)
                        .unwrap()
                        .read_to_end(&mut back)
                        .unwrap();
                }
            }
            assert_eq!(back, data);
        }
    }

    #[test]
    fn a_stream_that_is_not_a_core_is_refused() {
        let p = Path::new("/x.dmp.gz");
        assert!(check_streamed(p, 0, b"").is_err());
        if cfg!(target_os = "linux") {
            let e = check_streamed(p, 100, b"MZ\0\0").unwrap_err();
            assert!(e.to_string().contains("not write an ELF core"), "{e}");
        }
        assert!(check_streamed(p, 100, b"\x7fELF").is_ok());
    }

    #[test]
    fn a_core_is_copied_or_compressed_elsewhere_and_a_non_core_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = core_like();
        for kind in [Compression::None, Compression::Gzip, Compression::Zstd] {
            let to = dir.path().join(format!("c.{}", kind.extension()));
            let r = compress_core_into(&mut Cursor::new(&data), &to, kind).unwrap();
            assert_eq!(r.raw_bytes, data.len() as u64);
            assert_eq!(r.file_bytes, std::fs::metadata(&to).unwrap().len());
            if kind == Compression::None {
                assert_eq!(std::fs::read(&to).unwrap(), data);
            } else {
                assert!(r.file_bytes < r.raw_bytes / 4, "{kind:?}");
            }
        }
        let to = dir.path().join("bad.dmp.gz");
        let e = compress_core_into(&mut Cursor::new(b"MZ not a core"), &to, Compression::Gzip);
        assert!(e.is_err());
        assert!(!to.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_nobody_writes_wakes_its_reader() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        mkfifo(&fifo).unwrap();
        let f2 = fifo.clone();
        let t = std::thread::spawn(move || {
            let mut s = File::open(&f2).unwrap();
            let mut v = Vec::new();
            s.read_to_end(&mut v).unwrap();
            v.len()
        });
        // The reader may not be in open() yet: wake until it is done (bounded).
        for _ in 0..500 {
            if t.is_finished() {
                break;
            }
            wake_reader(&fifo);
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(t.join().unwrap(), 0);
    }
}
