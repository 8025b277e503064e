//! Names for ReadyToRun (precompiled) code that no method event of the trace covers: an
//! address inside a mapped .NET image is named from what the recording stored in the trace
//! (clrspy's `R2RMethod` events), else from the image file itself — at its recorded path, or
//! by file name in the `--symbols` directories — read with the [`readytorun`] crate.
//!
//! Images are read lazily (only those frames fall into), once per process per file identity
//! (path, size, modification time), and kept in a small bounded cache; an image whose
//! identity the trace recorded (`R2RImage`: size and MVID) is used only when it matches.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;

/// Where images may be read from when the trace does not hold the names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSources {
    /// Directories holding copies of the images, matched by file name.
    pub dirs: Vec<PathBuf>,
    /// Read images at the path the trace recorded (the recording machine's files).
    pub original_paths: bool,
}

impl Default for ImageSources {
    fn default() -> ImageSources {
        ImageSources {
            dirs: Vec::new(),
            original_paths: true,
        }
    }
}

/// A recorded image identity: its size and MVID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ImageIdentity {
    /// The file's size in bytes.
    pub(crate) size: u64,
    /// Its metadata's MVID.
    pub(crate) mvid: [u8; 16],
}

/// A precompiled function's name stored in the trace (file offsets of its code).
#[derive(Clone, Debug)]
struct Stored {
    start: u32,
    end: u32,
    name: Arc<str>,
}

/// ReadyToRun names for one analysis.
#[derive(Clone, Debug, Default)]
pub(crate) struct R2rNames {
    sources: ImageSources,
    /// Names from the trace, per image path, sorted by start at first use.
    stored: FxHashMap<String, Vec<Stored>>,
    sorted: bool,
    identities: FxHashMap<String, ImageIdentity>,
    /// Images read for this analysis, by recorded path (None: none usable).
    images: FxHashMap<String, Option<Arc<readytorun::Image>>>,
}

/// The most images kept by the process-wide cache.
const CACHE_IMAGES: usize = 64;
/// The largest image file read.
const MAX_IMAGE_BYTES: u64 = 512 << 20;

type Cache = Mutex<
    Vec<(
        (PathBuf, u64, Option<std::time::SystemTime>),
        Arc<readytorun::Image>,
    )>,
>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

/// Reads (or finds in the cache) the image at `path`; None when it is not a readable
/// ReadyToRun image.
pub(crate) fn load_image(path: &Path) -> Option<Arc<readytorun::Image>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_IMAGE_BYTES {
        return None;
    }
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    if let Ok(c) = cache().lock() {
        if let Some((_, img)) = c.iter().find(|(k, _)| *k == key) {
            return Some(img.clone());
        }
    }
    let bytes = std::fs::read(path).ok()?;
    let image = Arc::new(readytorun::Image::parse(&bytes).ok()?);
    if let Ok(mut c) = cache().lock() {
        if c.len() >= CACHE_IMAGES {
            c.remove(0);
        }
        c.push((key, image.clone()));
    }
    Some(image)
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl R2rNames {
    /// Names read from `sources` (and from the trace).
    pub(crate) fn new(sources: ImageSources) -> R2rNames {
        R2rNames {
            sources,
            ..R2rNames::default()
        }
    }

    /// Records a function name stored in the trace: its code at file offsets
    /// `[start, start + size)` of the image at `path`.
    pub(crate) fn add_stored(&mut self, path: &str, start: u32, size: u32, name: &str) {
        let v = self.stored.entry(path.to_string()).or_default();
        v.push(Stored {
            start,
            end: start.saturating_add(size.max(1)),
            name: Arc::from(name),
        });
        self.sorted = false;
    }

    /// Records an image identity stored in the trace.
    pub(crate) fn add_identity(&mut self, path: &str, id: ImageIdentity) {
        self.identities.insert(path.to_string(), id);
    }

    fn sort(&mut self) {
        if !self.sorted {
            for v in self.stored.values_mut() {
                v.sort_by_key(|s| s.start);
            }
            self.sorted = true;
        }
    }

    /// The image for a recorded path: the copy in a symbols directory, else the file at
    /// the path itself; one whose identity differs from the recorded one is not used.
    fn image(&mut self, path: &str) -> Option<Arc<readytorun::Image>> {
        if let Some(i) = self.images.get(path) {
            return i.clone();
        }
        let want = self.identities.get(path).copied();
        let mut candidates: Vec<PathBuf> = self
            .sources
            .dirs
            .iter()
            .map(|d| d.join(file_name(path)))
            .collect();
        if self.sources.original_paths {
            candidates.push(PathBuf::from(path));
        }
        let found = candidates.iter().find_map(|c| {
            let img = load_image(c)?;
            let size = std::fs::metadata(c).ok()?.len();
            match want {
                Some(w) if w.size != size || img.mvid() != Some(w.mvid) => None,
                _ => Some(img),
            }
        });
        self.images.insert(path.to_string(), found.clone());
        found
    }

    /// The name of the function at `file_offset` of the image mapped from `path`.
    pub(crate) fn name(&mut self, path: &str, file_offset: u64) -> Option<Arc<str>> {
        if !(path.ends_with(".dll") || path.ends_with(".exe") || path.ends_with(".DLL")) {
            return None;
        }
        self.sort();
        if let Some(v) = self.stored.get(path) {
            let i = v.partition_point(|s| u64::from(s.start) <= file_offset);
            if let Some(s) = i.checked_sub(1).and_then(|i| v.get(i)) {
                if file_offset < u64::from(s.end) {
                    return Some(s.name.clone());
                }
            }
        }
        let img = self.image(path)?;
        let f = img.function_at(img.rva_of_file_offset(file_offset)?)?;
        Some(Arc::from(img.name(f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--symbols DIR`: a copy matched by file name names code of an image whose recorded
    /// path does not exist here; a copy whose identity differs from the recorded one does not.
    #[test]
    fn copies_in_symbol_dirs_are_matched_by_name_and_identity() {
        let Some(dir) = std::fs::read_dir("/usr/share/dotnet/shared/Microsoft.NETCore.App")
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).max())
        else {
            eprintln!("no shared framework installed: skipped");
            return;
        };
        let bytes = std::fs::read(dir.join("System.Net.Sockets.dll")).unwrap();
        let img = readytorun::Image::parse(&bytes).unwrap();
        let f = *img
            .functions()
            .iter()
            .find(|f| img.name(f) == "System.Net.Sockets.SocketAsyncEngine.EventLoop")
            .unwrap();
        let off = u64::from(img.file_offset_of_rva(f.start).unwrap()) + 1;
        let copies = std::env::temp_dir().join(format!("clrspy-r2r-{}", std::process::id()));
        std::fs::create_dir_all(&copies).unwrap();
        std::fs::write(copies.join("System.Net.Sockets.dll"), &bytes).unwrap();
        let recorded = "/elsewhere/shared/System.Net.Sockets.dll";
        let sources = ImageSources {
            dirs: vec![copies.clone()],
            original_paths: false,
        };
        let mut names = R2rNames::new(sources.clone());
        assert_eq!(
            names.name(recorded, off).as_deref(),
            Some("System.Net.Sockets.SocketAsyncEngine.EventLoop")
        );
        // The recorded identity matches: still named.
        let mut same = R2rNames::new(sources.clone());
        same.add_identity(
            recorded,
            ImageIdentity {
                size: bytes.len() as u64,
                mvid: img.mvid().unwrap(),
            },
        );
        assert!(same.name(recorded, off).is_some());
        // Another build of the image (another MVID): not used.
        let mut other = R2rNames::new(sources);
        other.add_identity(
            recorded,
            ImageIdentity {
                size: bytes.len() as u64,
                mvid: [7; 16],
            },
        );
        assert_eq!(other.name(recorded, off), None);
        // No directory, no file at the recorded path: nothing.
        let mut none = R2rNames::new(ImageSources::default());
        assert_eq!(none.name(recorded, off), None);
        let _ = std::fs::remove_dir_all(&copies);
    }
}
