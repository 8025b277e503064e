//! Source lines of code addresses: the trace's IL-to-native maps ([`LineMaps`]) give the IL
//! offset an address runs; the module's portable PDB gives the file and line of that IL
//! offset in its method.
//!
//! A module's PDB is looked for, in order: in each `--symbols` directory (by the PDB's file
//! name, the image's stem with `.pdb`, or the image itself for a PDB embedded in it); then,
//! unless `--no-local-images`, beside the image at the path the trace recorded, at the path
//! the PDB was built to, and inside that image. A PDB whose GUID is not the one the trace
//! recorded for the module (another build) is not used. Only regular files of at most
//! 512 MiB are read. Each module's PDB is read once, when a first address asks for it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use readytorun::pdb::{debug_info, LineTable};
use rustc_hash::FxHashMap;

use crate::r2r::ImageSources;
use crate::sources::lines::{LineMaps, ModuleFiles};

/// The largest file read as a PDB or an image holding one.
const MAX_FILE: u64 = 512 << 20;

/// A place in the source.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLine {
    /// The document's path as the compiler wrote it.
    pub file: Arc<str>,
    /// Line (1-based).
    pub line: u32,
}

impl std::fmt::Display for SourceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A module's PDB, read or not found.
#[derive(Clone)]
struct Loaded {
    table: Option<Arc<LineTable>>,
    /// The documents' names, shared by every line of the module.
    files: Vec<Arc<str>>,
}

/// Source lines for one analysis' addresses.
pub struct SourceLines<'a> {
    maps: Option<&'a LineMaps>,
    sources: &'a ImageSources,
    loaded: Mutex<FxHashMap<u64, Loaded>>,
    /// Assemblies an address fell in whose PDB was not found.
    missing: Mutex<BTreeSet<String>>,
}

impl<'a> SourceLines<'a> {
    /// Lines from `maps` (none when the model did not run) and the PDBs `sources` lead to.
    pub(crate) fn new(maps: Option<&'a LineMaps>, sources: &'a ImageSources) -> SourceLines<'a> {
        SourceLines {
            maps,
            sources,
            loaded: Mutex::new(FxHashMap::default()),
            missing: Mutex::new(BTreeSet::new()),
        }
    }

    /// True when the trace has IL-to-native maps to map addresses with.
    pub fn has_maps(&self) -> bool {
        self.maps.is_some_and(|m| m.maps() > 0)
    }

    /// The source line of a code address (`leaf`: the running frame, else a return
    /// address); `None` when the address is not in a method with a map, or its module's PDB
    /// was not found (the module is then listed by [`SourceLines::missing`]).
    pub fn line(&self, ip: u64, leaf: bool) -> Option<SourceLine> {
        let maps = self.maps?;
        let place = maps.il_place(ip, leaf)?;
        let loaded = {
            let mut all = self.loaded.lock().ok()?;
            all.entry(place.module_id)
                .or_insert_with(|| {
                    let files = maps.modules().get(&place.module_id);
                    load(files, self.sources)
                })
                .clone()
        };
        let Some(table) = loaded.table else {
            if let Some(f) = maps.modules().get(&place.module_id) {
                let name = file_name(&f.il_path).to_string();
                if !name.is_empty() {
                    if let Ok(mut m) = self.missing.lock() {
                        m.insert(name);
                    }
                }
            }
            return None;
        };
        let at = table.line_at(place.method_row, place.il_offset)?;
        Some(SourceLine {
            file: loaded.files.get(at.document as usize)?.clone(),
            line: at.line,
        })
    }

    /// The assemblies (file names) some address fell in whose PDB was not found, sorted.
    pub fn missing(&self) -> Vec<String> {
        self.missing
            .lock()
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Reads `path` when it is a regular file of at most [`MAX_FILE`] bytes.
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    std::fs::read(path).ok()
}

/// The PDB of a module, found as the module doc says; a PDB of another build (its GUID not
/// the recorded one) is passed over.
fn load(files: Option<&ModuleFiles>, sources: &ImageSources) -> Loaded {
    let none = Loaded {
        table: None,
        files: Vec::new(),
    };
    let Some(m) = files.filter(|m| !m.il_path.is_empty()) else {
        return none;
    };
    let image = file_name(&m.il_path);
    let stem = image
        .strip_suffix(".dll")
        .or_else(|| image.strip_suffix(".exe"))
        .unwrap_or(image);
    let pdb_name = if m.pdb_path.is_empty() {
        format!("{stem}.pdb")
    } else {
        file_name(&m.pdb_path).to_string()
    };
    let mut pdbs: Vec<PathBuf> = Vec::new();
    let mut images: Vec<PathBuf> = Vec::new();
    for d in &sources.dirs {
        pdbs.push(d.join(&pdb_name));
        pdbs.push(d.join(format!("{stem}.pdb")));
        images.push(d.join(image));
    }
    if sources.original_paths {
        let il = Path::new(&m.il_path);
        if let Some(dir) = il.parent() {
            pdbs.push(dir.join(&pdb_name));
            pdbs.push(dir.join(format!("{stem}.pdb")));
        }
        if !m.pdb_path.is_empty() {
            pdbs.push(PathBuf::from(&m.pdb_path));
        }
        images.push(il.to_path_buf());
    }
    let matches = |t: &LineTable| m.pdb_guid.is_none_or(|g| g == t.guid());
    let mut seen = BTreeSet::new();
    for p in pdbs {
        if !seen.insert(p.clone()) {
            continue;
        }
        if let Some(t) = read_bounded(&p).and_then(|b| LineTable::parse(&b).ok()) {
            if matches(&t) {
                return loaded(t);
            }
        }
    }
    for p in images {
        let embedded = read_bounded(&p)
            .and_then(|b| debug_info(&b).ok())
            .and_then(|d| d.embedded)
            .and_then(|pdb| LineTable::parse(&pdb).ok());
        if let Some(t) = embedded.filter(|t| matches(t)) {
            return loaded(t);
        }
    }
    none
}

fn loaded(t: LineTable) -> Loaded {
    let files = t
        .documents()
        .iter()
        .map(|d| Arc::from(d.as_str()))
        .collect();
    Loaded {
        table: Some(Arc::new(t)),
        files,
    }
}
