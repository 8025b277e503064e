//! Opening trace files: `.nettrace`/`.netperf` are read incrementally through a buffer (faster
//! than a memory map here, and memory stays at a few MB whatever the size); a `.zip` holding one
//! trace is extracted to a temporary file first.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::output::CliError;

/// The reader the commands use.
pub type Reader = nettrace::StreamReader<io::BufReader<File>>;

/// An opened trace: where it is and what to call it in messages.
pub struct OpenTrace {
    file: PathBuf,
    len: u64,
    /// The path the user gave.
    pub path: PathBuf,
    /// The name of the trace inside a zip, if it came from one.
    pub zip_entry: Option<String>,
    _temp: Option<tempfile::NamedTempFile>,
}

impl OpenTrace {
    /// Size of the trace in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// A reader over the trace, with the error naming the file.
    pub fn reader(&self) -> Result<Reader, CliError> {
        let f = File::open(&self.file).map_err(|e| open_error(&self.path, e))?;
        nettrace::StreamReader::from_read(io::BufReader::with_capacity(1 << 20, f)).map_err(|e| {
            let mut err = CliError::new(format!("{}: {e}", self.display()));
            if matches!(e.kind, nettrace::ErrorKind::NotATrace) {
                err = err.hint("clrspy reads .nettrace and .netperf files written by EventPipe (dotnet-trace, clrspy record, DOTNET_EnableEventPipe)");
            }
            err
        })
    }

    /// The trace's raw bytes (for a zip, the extracted entry's), from the start.
    pub fn raw(&self) -> Result<File, CliError> {
        File::open(&self.file).map_err(|e| open_error(&self.path, e))
    }

    /// The name to show in messages.
    pub fn display(&self) -> String {
        match &self.zip_entry {
            Some(e) => format!("{} ({e})", self.path.display()),
            None => self.path.display().to_string(),
        }
    }
}

fn open_error(path: &Path, e: io::Error) -> CliError {
    let err = CliError::new(format!("cannot open {}: {e}", path.display()));
    match e.kind() {
        io::ErrorKind::NotFound => err.hint("check the path; traces usually end in .nettrace"),
        io::ErrorKind::PermissionDenied => {
            err.hint("the file is not readable by this user: try sudo or fix its permissions")
        }
        _ => err,
    }
}

fn is_zip(path: &Path) -> io::Result<bool> {
    let mut f = File::open(path)?;
    let mut magic = [0u8; 4];
    let n = f.read(&mut magic)?;
    Ok(n == 4 && magic == *b"PK\x03\x04")
}

/// A trace's file name without its extensions (`.zip`, `.nettrace`, `.netperf`), to name the
/// files made from it.
pub fn trace_stem(trace: &Path) -> String {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    name.strip_suffix(".zip")
        .unwrap_or(&name)
        .trim_end_matches(".nettrace")
        .trim_end_matches(".netperf")
        .to_string()
}

/// Opens a trace file (or a zip holding one).
pub fn open(path: &Path) -> Result<OpenTrace, CliError> {
    let meta = std::fs::metadata(path).map_err(|e| open_error(path, e))?;
    if meta.is_dir() {
        return Err(CliError::new(format!(
            "{} is a directory, not a trace file",
            path.display()
        )));
    }
    if is_zip(path).map_err(|e| open_error(path, e))? {
        return open_zip(path);
    }
    Ok(OpenTrace {
        file: path.to_path_buf(),
        len: meta.len(),
        path: path.to_path_buf(),
        zip_entry: None,
        _temp: None,
    })
}

fn open_zip(path: &Path) -> Result<OpenTrace, CliError> {
    let f = File::open(path).map_err(|e| open_error(path, e))?;
    let mut zip = zip::ZipArchive::new(f)
        .map_err(|e| CliError::new(format!("{}: not a readable zip file: {e}", path.display())))?;
    let mut candidates = Vec::new();
    for i in 0..zip.len() {
        if let Ok(entry) = zip.by_index(i) {
            let Ok(name) = entry.name().map(|n| n.to_string()) else {
                continue;
            };
            if entry.is_file() {
                candidates.push((i, name));
            }
        }
    }
    let traces: Vec<&(usize, String)> = candidates
        .iter()
        .filter(|(_, n)| {
            let l = n.to_ascii_lowercase();
            l.ends_with(".nettrace") || l.ends_with(".netperf")
        })
        .collect();
    let chosen = match (traces.len(), candidates.len()) {
        (1, _) => traces[0].clone(),
        (0, 1) => candidates[0].clone(),
        (0, _) => {
            return Err(CliError::new(format!(
                "{}: the zip holds no .nettrace or .netperf file",
                path.display()
            )))
        }
        _ => {
            return Err(CliError::new(format!(
                "{}: the zip holds {} traces; extract the one you want",
                path.display(),
                traces.len()
            )))
        }
    };
    let mut entry = zip
        .by_index(chosen.0)
        .map_err(|e| CliError::new(format!("{}: cannot read {}: {e}", path.display(), chosen.1)))?;
    let mut temp = tempfile::NamedTempFile::new()
        .map_err(|e| CliError::new(format!("cannot create a temporary file to unzip into: {e}")))?;
    io::copy(&mut entry, temp.as_file_mut()).map_err(|e| {
        CliError::new(format!(
            "{}: cannot unzip {}: {e}",
            path.display(),
            chosen.1
        ))
        .hint("the temporary directory may be full: set TMPDIR to a larger disk")
    })?;
    let len = temp.as_file().metadata().map(|m| m.len()).unwrap_or(0);
    Ok(OpenTrace {
        file: temp.path().to_path_buf(),
        len,
        path: path.to_path_buf(),
        zip_entry: Some(chosen.1),
        _temp: Some(temp),
    })
}
