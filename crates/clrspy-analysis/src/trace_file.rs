//! Opening a trace file for a pass: `.nettrace` and `.netperf` files are read incrementally
//! through a buffer (faster than a memory map here, and memory stays at a few MB whatever the
//! size); a `.zip` holding one trace is extracted to a temporary file first.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The reader a pass over an opened trace uses.
pub type FileReader = nettrace::StreamReader<io::BufReader<File>>;

/// Why a trace could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file could not be opened or read.
    #[error("cannot open {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The path is a directory.
    #[error("{} is a directory, not a trace file", path.display())]
    Directory {
        /// The path.
        path: PathBuf,
    },
    /// A zip file that does not hold exactly one trace, or cannot be read as a zip.
    #[error("{}: {what}", path.display())]
    Zip {
        /// The zip file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The zip's trace could not be extracted (often: the temporary folder is full).
    #[error("{}: cannot unzip {entry}: {source}", path.display())]
    Unzip {
        /// The zip file.
        path: PathBuf,
        /// The entry.
        entry: String,
        /// The error.
        source: io::Error,
    },
    /// The bytes are not a trace, or its header is damaged.
    #[error("{shown}: {source}")]
    Trace {
        /// The trace as it is named in messages.
        shown: String,
        /// The reader's error.
        source: nettrace::Error,
    },
}

/// An opened trace: where it is and what to call it in messages.
pub struct OpenTrace {
    file: PathBuf,
    len: u64,
    /// The path the user gave.
    pub path: PathBuf,
    /// The name of the trace inside a zip, if it came from one.
    pub(crate) zip_entry: Option<String>,
    _temp: Option<tempfile::NamedTempFile>,
}

impl OpenTrace {
    /// Opens a trace file (or a zip holding one).
    pub fn open(path: &Path) -> Result<OpenTrace, OpenError> {
        let io_err = |source| OpenError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.is_dir() {
            return Err(OpenError::Directory {
                path: path.to_path_buf(),
            });
        }
        if is_zip(path).map_err(io_err)? {
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

    /// Size of the trace in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A reader over the trace.
    pub fn reader(&self) -> Result<FileReader, OpenError> {
        let f = self.raw()?;
        nettrace::StreamReader::from_read(io::BufReader::with_capacity(1 << 20, f)).map_err(
            |source| OpenError::Trace {
                shown: self.display(),
                source,
            },
        )
    }

    /// The trace's raw bytes (for a zip, the extracted entry's), from the start.
    pub fn raw(&self) -> Result<File, OpenError> {
        File::open(&self.file).map_err(|source| OpenError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// The name to show in messages.
    pub fn display(&self) -> String {
        match &self.zip_entry {
            Some(e) => format!("{} ({e})", self.path.display()),
            None => self.path.display().to_string(),
        }
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

fn open_zip(path: &Path) -> Result<OpenTrace, OpenError> {
    let zip_err = |what: String| OpenError::Zip {
        path: path.to_path_buf(),
        what,
    };
    let f = File::open(path).map_err(|source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut zip =
        zip::ZipArchive::new(f).map_err(|e| zip_err(format!("not a readable zip file: {e}")))?;
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
            return Err(zip_err(
                "the zip holds no .nettrace or .netperf file".into(),
            ))
        }
        (n, _) => {
            return Err(zip_err(format!(
                "the zip holds {n} traces; extract the one you want"
            )))
        }
    };
    let unzip = |source| OpenError::Unzip {
        path: path.to_path_buf(),
        entry: chosen.1.clone(),
        source,
    };
    let mut entry = zip
        .by_index(chosen.0)
        .map_err(|e| zip_err(format!("cannot read {}: {e}", chosen.1)))?;
    let mut temp = tempfile::NamedTempFile::new().map_err(unzip)?;
    io::copy(&mut entry, temp.as_file_mut()).map_err(unzip)?;
    let len = temp.as_file().metadata().map(|m| m.len()).unwrap_or(0);
    Ok(OpenTrace {
        file: temp.path().to_path_buf(),
        len,
        path: path.to_path_buf(),
        zip_entry: Some(chosen.1),
        _temp: Some(temp),
    })
}
