//! Turning a staging folder into the bundle: checksums, `MANIFEST.md`, `manifest.json`,
//! `index.html`, and the zip, written owner-only.
//!
//! OWNER: helper PACKAGE.

// TEMPORARY (the lead's, replaced by helper PACKAGE's).
use std::path::{Path, PathBuf};

use crate::{HandoffError, Manifest};

/// What the zip holds.
pub struct PackageSummary {
    /// The zip.
    pub zip: PathBuf,
    /// Files.
    pub files: usize,
    /// Its size.
    pub bytes: u64,
}
/// Packs.
pub fn finish(
    staging: &Path,
    manifest: &mut Manifest,
    out: &Path,
) -> Result<PackageSummary, HandoffError> {
    let _ = manifest;
    let _ = std::process::Command::new("cp")
        .arg("-r")
        .arg(staging)
        .arg(out.with_extension("d"))
        .status();
    Ok(PackageSummary {
        zip: out.to_path_buf(),
        files: 0,
        bytes: 0,
    })
}
/// A 0600 file.
pub fn write_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}
/// A 0700 folder.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}
