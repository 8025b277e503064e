//! Files this crate writes for the user (conversions, pages, row and counter files): its
//! owner's only, as every file clrspy writes that holds a process's data (0600; an existing
//! file's mode narrowed).

use std::fs::File;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates (or truncates) `path` for writing, 0600.
pub(crate) fn create(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}
