//! The snapshots `heap` and `heap diff` read: a file, or one inside a zip — a bundle's
//! `heap/before.gcdump` and `heap/after.gcdump`, named as `BUNDLE.zip:heap/after.gcdump`, or
//! chosen by which one is wanted. A snapshot in a zip is extracted to a temporary file (the
//! snapshot reader needs to seek; its zip entry is compressed), removed when done.

use std::io;
use std::path::{Path, PathBuf};

use crate::output::{CliError, CliResult};

/// Which snapshot of a zip that holds several is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    /// The one named `before.gcdump` (the older of a bundle's two).
    Before,
    /// The one named `after.gcdump` (the newer; also what `heap BUNDLE.zip` reads).
    After,
}

/// A snapshot to read: its path on disk (a temporary copy for one inside a zip).
pub(crate) struct Snapshot {
    path: PathBuf,
    /// How the user named it (`bundle.zip:heap/after.gcdump`).
    pub(crate) label: String,
    _temp: Option<tempfile::NamedTempFile>,
}

impl Snapshot {
    /// The file to read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// True when it came out of a zip.
    pub(crate) fn in_zip(&self) -> bool {
        self._temp.is_some()
    }
}

/// The snapshot `arg` names: a file as it is, a zip's only snapshot (else the one `which`
/// wants: `heap/after.gcdump`, `heap/before.gcdump`), or `ZIP:ENTRY`.
pub(crate) fn open(arg: &Path, which: Which) -> CliResult<Snapshot> {
    let (zip_path, entry) = match split_entry(arg) {
        Some((zip, entry)) => (zip, Some(entry)),
        None => (arg.to_path_buf(), None),
    };
    if entry.is_none() && !is_zip(&zip_path) {
        return Ok(Snapshot {
            path: arg.to_path_buf(),
            label: arg.display().to_string(),
            _temp: None,
        });
    }
    let shown = zip_path.display().to_string();
    let file = std::fs::File::open(&zip_path)
        .map_err(|e| CliError::new(format!("{shown}: cannot open: {e}")).code(2))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| CliError::new(format!("{shown}: not a readable zip file: {e}")).code(2))?;
    let names: Vec<String> = zip
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .filter(|n| n.ends_with(".gcdump"))
        .collect();
    let chosen = match entry {
        Some(e) => {
            if zip.index_for_name(&e).is_none() {
                return Err(CliError::new(format!(
                    "{shown} holds no {e}; its snapshots: {}",
                    listed(&names)
                ))
                .code(2));
            }
            e
        }
        None => choose(&names, which).ok_or_else(|| {
            CliError::new(if names.is_empty() {
                format!("{shown} holds no heap snapshot (.gcdump)")
            } else {
                format!(
                    "{shown} holds {} snapshots ({}): name one as {shown}:ENTRY",
                    names.len(),
                    listed(&names)
                )
            })
            .code(2)
        })?,
    };
    let mut temp = tempfile::Builder::new()
        .prefix("clrspy-snapshot-")
        .suffix(".gcdump")
        .tempfile()
        .map_err(|e| extract_error(&shown, &chosen, e))?;
    let mut member = zip
        .by_name(&chosen)
        .map_err(|e| CliError::new(format!("{shown}: cannot read {chosen}: {e}")).code(2))?;
    io::copy(&mut member, temp.as_file_mut()).map_err(|e| extract_error(&shown, &chosen, e))?;
    Ok(Snapshot {
        path: temp.path().to_path_buf(),
        label: format!("{shown}:{chosen}"),
        _temp: Some(temp),
    })
}

/// `ZIP:ENTRY` when `arg` is no file and its part before the last `.zip:` is one.
fn split_entry(arg: &Path) -> Option<(PathBuf, String)> {
    if arg.exists() {
        return None;
    }
    let s = arg.to_str()?;
    let at = s.rfind(".zip:")?;
    let (zip, entry) = (&s[..at + 4], &s[at + 5..]);
    (!entry.is_empty() && Path::new(zip).is_file()).then(|| (PathBuf::from(zip), entry.into()))
}

/// True when the file starts as a zip does.
fn is_zip(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"PK\x03\x04")
}

/// The only snapshot, else the one `which` names.
fn choose(names: &[String], which: Which) -> Option<String> {
    if let [only] = names {
        return Some(only.clone());
    }
    let file = match which {
        Which::Before => "before.gcdump",
        Which::After => "after.gcdump",
    };
    let mut hits = names.iter().filter(|n| n.rsplit('/').next() == Some(file));
    match (hits.next(), hits.next()) {
        (Some(n), None) => Some(n.clone()),
        _ => None,
    }
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn extract_error(zip: &str, entry: &str, e: io::Error) -> CliError {
    CliError::new(format!(
        "{zip}: cannot extract {entry} to a temporary file ({e}); is the temporary folder ({}) full? Set TMPDIR to another, or unzip it yourself",
        std::env::temp_dir().display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn bundle(dir: &Path, entries: &[(&str, &[u8])]) -> PathBuf {
        let p = dir.join("b.zip");
        let mut w = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
        for (name, data) in entries {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap();
        p
    }

    #[test]
    fn a_bundles_snapshots_are_found_by_name_or_by_which() {
        let dir = tempfile::tempdir().unwrap();
        let zip = bundle(
            dir.path(),
            &[
                ("heap/before.gcdump", b"old"),
                ("heap/after.gcdump", b"new"),
                ("trace.nettrace", b"x"),
            ],
        );
        let read = |s: &Snapshot| std::fs::read(s.path()).unwrap();
        let before = open(&zip, Which::Before).unwrap();
        assert_eq!(read(&before), b"old");
        assert!(before.label.ends_with("b.zip:heap/before.gcdump"));
        assert_eq!(read(&open(&zip, Which::After).unwrap()), b"new");
        let named = PathBuf::from(format!("{}:heap/before.gcdump", zip.display()));
        assert_eq!(read(&open(&named, Which::After).unwrap()), b"old");
        // A name the zip lacks is refused with what it holds.
        let wrong = PathBuf::from(format!("{}:heap/x.gcdump", zip.display()));
        let e = open(&wrong, Which::After).err().unwrap().to_string();
        assert!(e.contains("heap/before.gcdump, heap/after.gcdump"), "{e}");
        // A plain file is read as it is.
        let plain = dir.path().join("p.gcdump");
        std::fs::write(&plain, b"plain").unwrap();
        assert_eq!(open(&plain, Which::After).unwrap().path(), plain);
    }

    #[test]
    fn a_zip_with_one_snapshot_gives_it_and_one_with_none_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let zip = bundle(dir.path(), &[("x/only.gcdump", b"1")]);
        let s = open(&zip, Which::Before).unwrap();
        assert_eq!(std::fs::read(s.path()).unwrap(), b"1");
        let none = bundle(dir.path(), &[("trace.nettrace", b"x")]);
        let e = open(&none, Which::After).err().unwrap().to_string();
        assert!(e.contains("holds no heap snapshot"), "{e}");
        let many = bundle(dir.path(), &[("a.gcdump", b"1"), ("b.gcdump", b"2")]);
        let e = open(&many, Which::After).err().unwrap().to_string();
        assert!(e.contains("holds 2 snapshots (a.gcdump, b.gcdump)"), "{e}");
    }
}
