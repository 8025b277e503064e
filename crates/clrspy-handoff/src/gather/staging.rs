//! The staging folder of a bundle: owner-only, beside the zip, removed at the end; every
//! file put in it recorded with what it is, for the manifest.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::manifest::FileEntry;
use crate::HandoffError;

/// The staging folder (owner-only, beside the zip, removed at the end) and the files put in
/// it, each with what it is.
pub(crate) struct Staging {
    root: PathBuf,
    pub(crate) files: Vec<FileEntry>,
}

impl Staging {
    /// A new folder beside `zip`.
    pub(crate) fn new(zip: &Path) -> Result<Staging, HandoffError> {
        let dir = zip
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let root = dir.join(format!(
            ".clrspy-bundle-{}-{}",
            std::process::id(),
            unix_ms()
        ));
        clrspy_collect::private::create_private_dir(&root)
            .map_err(|e| HandoffError::io(&root, e))?;
        Ok(Staging {
            root,
            files: Vec::new(),
        })
    }

    /// The folder.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `rel` (its folders made, owner-only), recorded as `what`.
    pub(crate) fn create(&mut self, rel: &str, what: &str) -> Result<PathBuf, HandoffError> {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            clrspy_collect::private::create_private_dir(parent)
                .map_err(|e| HandoffError::io(parent, e))?;
        }
        self.files.retain(|f| f.path != rel);
        self.files.push(FileEntry {
            path: rel.to_string(),
            what: what.to_string(),
            ..FileEntry::default()
        });
        Ok(path)
    }

    /// Writes `rel` (owner-only) with `body`, recorded as `what`.
    pub(crate) fn write(
        &mut self,
        rel: &str,
        what: &str,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), HandoffError> {
        let path = self.create(rel, what)?;
        let file = clrspy_collect::private::create_private(&path)
            .map_err(|e| HandoffError::io(&path, e))?;
        let mut w = BufWriter::new(file);
        body(&mut w)
            .and_then(|()| w.flush())
            .map_err(|e| HandoffError::io(&path, e))
    }

    /// Forgets `rel` (a file that was not made after all) and removes it.
    pub(crate) fn drop_file(&mut self, rel: &str) {
        self.files.retain(|f| f.path != rel);
        let _ = std::fs::remove_file(self.root.join(rel));
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Now, ms since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
