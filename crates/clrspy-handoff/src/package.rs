//! Turning a staging folder into the bundle: checksums, `MANIFEST.md`, `manifest.json`,
//! `index.html`, and the zip, written owner-only.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use clrspy_values::time::UtcTime;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::index::{describe, write_index};
use crate::manifest::{write_markdown, FileEntry, Manifest};
use crate::HandoffError;

/// The files `finish` writes itself; a staging folder's own copies are replaced.
const INDEX: &str = "index.html";
const JSON: &str = "manifest.json";
const MARKDOWN: &str = "MANIFEST.md";

/// Extensions of data already compressed: stored in the zip as they are.
const COMPRESSED: &[&str] = &[
    "gz", "tgz", "zst", "zip", "png", "jpg", "jpeg", "xz", "bz2", "br", "7z", "nupkg",
];

/// Entries this large are deflated at [`BIG_LEVEL`] rather than the default (6): on a 166 MB
/// trace, level 3 packed in 6.7 s instead of 10.5 s for a zip 10 % larger (debug build).
const BIG: u64 = 32 << 20;
/// The deflate level of entries of [`BIG`] bytes or more.
const BIG_LEVEL: i64 = 3;

/// Entries this large get zip64 sizes (deflate can grow data a little past its size).
const LARGE: u64 = 0xF000_0000;

use clrspy_collect::private::{create_private, create_private_dir};

/// Turns `staging` into the bundle at `out`: lists every regular file (a file `manifest` does
/// not name gets an entry described from its path; an entry whose file is missing is an
/// error), zips each one while taking its size and SHA-256 (one read), then writes
/// `index.html` (listed with its checksum), `manifest.json` and `MANIFEST.md` into `staging`
/// and the zip. The zip goes to `out` (0600) through a temporary file beside it, so no partial
/// zip is left on failure.
pub(crate) fn finish(
    staging: &Path,
    manifest: &mut Manifest,
    out: &Path,
) -> Result<(), HandoffError> {
    let found = list_files(staging)?;
    reconcile(manifest, &found)?;
    manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    let tmp = temp_beside(out)?;
    let sink =
        clrspy_collect::private::create_new_private(&tmp).map_err(|e| HandoffError::io(&tmp, e))?;
    pack(staging, manifest, sink, &tmp, out)
}

/// Every regular file under `staging` as a sorted `/`-separated relative path, without the
/// files [`finish`] writes itself.
fn list_files(staging: &Path) -> Result<Vec<String>, HandoffError> {
    let mut found = Vec::new();
    let mut pending = vec![(staging.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| HandoffError::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| HandoffError::io(&dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                return Err(HandoffError::Other(format!(
                    "{}: a file name that is not UTF-8 cannot go in the bundle",
                    entry.path().display()
                )));
            };
            let rel = format!("{prefix}{name}");
            let kind = entry
                .file_type()
                .map_err(|e| HandoffError::io(&entry.path(), e))?;
            if kind.is_dir() {
                pending.push((entry.path(), format!("{rel}/")));
            } else if kind.is_file() && ![INDEX, JSON, MARKDOWN].contains(&rel.as_str()) {
                found.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Adds an entry for each found file the manifest lacks and drops repeated ones; an entry
/// without its file is an error.
fn reconcile(manifest: &mut Manifest, found: &[String]) -> Result<(), HandoffError> {
    let mut seen = std::collections::HashSet::new();
    // Listed twice: the first description stands (a zip cannot hold a name twice).
    manifest
        .files
        .retain(|f| f.path != INDEX && seen.insert(f.path.clone()));
    if let Some(missing) = manifest
        .files
        .iter()
        .find(|f| found.binary_search(&f.path).is_err())
    {
        return Err(HandoffError::Other(format!(
            "bundle: the manifest lists {} ({}) but the staging folder has no such file",
            missing.path, missing.what
        )));
    }
    for path in found {
        if !manifest.files.iter().any(|f| &f.path == path) {
            manifest.files.push(FileEntry {
                path: path.clone(),
                what: describe(path),
                ..FileEntry::default()
            });
        }
    }
    Ok(())
}

/// The byte count and SHA-256 (lower-case hex) of everything `r` gives.
pub(crate) fn hash_reader(r: &mut dyn Read) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total, hex(hasher)))
}

/// A digest as lower-case hex.
fn hex(hasher: Sha256) -> String {
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes a private file through `body`, flushed; an error comes with the file's path.
fn write_with(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), (PathBuf, io::Error)> {
    let run = || -> io::Result<()> {
        let mut w = BufWriter::new(create_private(path)?);
        body(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    };
    run().map_err(|e| (path.to_path_buf(), e))
}

/// A temporary name in `out`'s folder (created 0700 when missing).
fn temp_beside(out: &Path) -> Result<PathBuf, HandoffError> {
    let Some(name) = out.file_name().and_then(|n| n.to_str()) else {
        return Err(HandoffError::Other(format!(
            "{}: not a file name for the bundle",
            out.display()
        )));
    };
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        create_private_dir(&dir).map_err(|e| HandoffError::io(&dir, e))?;
    }
    Ok(dir.join(format!(".{name}.{}.partial", std::process::id())))
}

/// Zips the files of `manifest` (relative to `staging`) into `sink`, the open file at `tmp`,
/// filling in their sizes and sums, then the index and the manifests; renames `tmp` to `out`.
/// On any failure `tmp` is removed and the error names the file concerned (`out` for the
/// zip's own writes).
fn pack(
    staging: &Path,
    manifest: &mut Manifest,
    sink: File,
    tmp: &Path,
    out: &Path,
) -> Result<(), HandoffError> {
    let written = write_zip(staging, manifest, sink)
        .and_then(|()| fs::rename(tmp, out).map_err(|e| (PathBuf::new(), e)));
    written.map_err(|(path, e)| {
        let _ = fs::remove_file(tmp);
        let what = if path.as_os_str().is_empty() {
            out
        } else {
            path.as_path()
        };
        HandoffError::io(what, e)
    })
}

/// Writes the zip; an error says which file it concerns (`sink`'s errors: the zip's temp file).
fn write_zip(
    staging: &Path,
    manifest: &mut Manifest,
    sink: File,
) -> Result<(), (PathBuf, io::Error)> {
    let abandoned = Rc::new(Cell::new(false));
    let mut zip = ZipWriter::new(Sink {
        out: BufWriter::with_capacity(1 << 20, sink),
        abandoned: Rc::clone(&abandoned),
    });
    let written = fill(staging, manifest, &mut zip);
    if written.is_err() {
        // The writer finishes the archive when dropped; a failed one is thrown away instead.
        abandoned.set(true);
        return written;
    }
    let sink_err = |e: io::Error| (PathBuf::new(), e);
    let sink = zip.finish().map_err(|e| sink_err(zip_io(e)))?;
    let file = sink
        .out
        .into_inner()
        .map_err(|e| sink_err(e.into_error()))?;
    file.sync_all().map_err(sink_err)
}

/// Adds each file of `manifest` to `zip` (setting its size and SHA-256), then `index.html`,
/// `manifest.json` and `MANIFEST.md`, written into `staging` first.
fn fill(
    staging: &Path,
    manifest: &mut Manifest,
    zip: &mut ZipWriter<Sink>,
) -> Result<(), (PathBuf, io::Error)> {
    let mut folders = BTreeSet::new();
    for entry in &mut manifest.files {
        (entry.bytes, entry.sha256) = add_file(zip, staging, &entry.path, &mut folders)?;
    }
    // The index shows every file's size, then is listed itself.
    write_with(&staging.join(INDEX), |w| write_index(manifest, staging, w))?;
    let (bytes, sha256) = add_file(zip, staging, INDEX, &mut folders)?;
    manifest.files.push(FileEntry {
        path: INDEX.into(),
        bytes,
        sha256,
        what: "this bundle's index page: open it in a browser".into(),
    });
    manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    write_with(&staging.join(JSON), |w| {
        serde_json::to_writer_pretty(&mut *w, &*manifest).map_err(io::Error::other)?;
        writeln!(w)
    })?;
    add_file(zip, staging, JSON, &mut folders)?;
    write_with(&staging.join(MARKDOWN), |w| write_markdown(manifest, w))?;
    add_file(zip, staging, MARKDOWN, &mut folders)?;
    Ok(())
}

/// Adds `staging/name` to `zip` (and its folders not added yet, owner-only, so that unpacking
/// makes them 0700 too); its size and SHA-256, taken from the bytes as they are zipped.
fn add_file(
    zip: &mut ZipWriter<Sink>,
    staging: &Path,
    name: &str,
    folders: &mut BTreeSet<String>,
) -> Result<(u64, String), (PathBuf, io::Error)> {
    let sink_err = |e: io::Error| (PathBuf::new(), e);
    let mut end = 0;
    while let Some(i) = name[end..].find('/') {
        end += i + 1;
        if folders.insert(name[..end].to_string()) {
            let when = fs::metadata(staging.join(&name[..end]))
                .map_or(DateTime::default(), |m| zip_time(&m));
            let options = SimpleFileOptions::default()
                .unix_permissions(0o700)
                .last_modified_time(when);
            zip.add_directory(&name[..end], options)
                .map_err(|e| sink_err(zip_io(e)))?;
        }
    }
    let path = staging.join(name);
    let mut src = File::open(&path).map_err(|e| (path.clone(), e))?;
    let meta = src.metadata().map_err(|e| (path.clone(), e))?;
    let options = entry_options(name, meta.len()).last_modified_time(zip_time(&meta));
    zip.start_file(name, options)
        .map_err(|e| sink_err(zip_io(e)))?;
    copy_hashed(&mut src, zip).map_err(|(from_src, e)| {
        if from_src {
            (path.clone(), e)
        } else {
            sink_err(e)
        }
    })
}

/// The zip's file; once abandoned it swallows what the dropped writer still sends.
struct Sink {
    out: BufWriter<File>,
    abandoned: Rc<Cell<bool>>,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.abandoned.get() {
            return Ok(buf.len());
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.abandoned.get() {
            return Ok(());
        }
        self.out.flush()
    }
}

impl Seek for Sink {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        if self.abandoned.get() {
            return Ok(0);
        }
        self.out.seek(pos)
    }
}

/// How an entry is stored: as it is when already compressed, else deflated; zip64 when large.
fn entry_options(name: &str, size: u64) -> SimpleFileOptions {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let stored = ext.is_some_and(|e| COMPRESSED.contains(&e.as_str()));
    SimpleFileOptions::default()
        .compression_method(if stored {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        })
        .unix_permissions(0o600)
        .compression_level((!stored && size >= BIG).then_some(BIG_LEVEL))
        .large_file(size >= LARGE)
}

/// A file's modification time as a zip time (UTC; 1980-01-01 when unknown or out of range).
fn zip_time(meta: &fs::Metadata) -> DateTime {
    let Ok(modified) = meta.modified() else {
        return DateTime::default();
    };
    let t = UtcTime::from_unix_ns(clrspy_values::time::unix_ns(modified));
    let narrow = |v: u32| u8::try_from(v).unwrap_or(0);
    u16::try_from(t.year)
        .ok()
        .and_then(|y| {
            DateTime::from_date_and_time(
                y,
                narrow(t.month),
                narrow(t.day),
                narrow(t.hour),
                narrow(t.minute),
                narrow(t.second),
            )
            .ok()
        })
        .unwrap_or_default()
}

/// Copies `src` into `dst`: the byte count and SHA-256 of what went through; the error's flag
/// says whether it came from reading `src`.
fn copy_hashed(
    src: &mut dyn Read,
    dst: &mut dyn Write,
) -> Result<(u64, String), (bool, io::Error)> {
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok((total, hex(hasher))),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((true, e)),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
        dst.write_all(&buf[..n]).map_err(|e| (false, e))?;
    }
}

fn zip_io(e: zip::result::ZipError) -> io::Error {
    match e {
        zip::result::ZipError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
pub(crate) mod tests;
