//! Files only their owner reads: dumps, heap snapshots and bundles hold exception messages,
//! URLs, command lines and heap contents, so clrspy creates them mode 0600 (folders 0700)
//! whatever the umask says.

use std::fs::File;
use std::path::Path;

/// Creates (or truncates) `path` for writing, readable and writable by its owner only. An
/// existing file keeps its mode (it is the user's); a new one is 0600.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// Creates `path` and its missing parents as folders only their owner may enter (0700).
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_files_and_folders_are_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("a/b");
        create_private_dir(&dir).unwrap();
        let f = dir.join("x.dmp");
        create_private(&f).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&d.path().join("a")), 0o700);
        assert_eq!(mode(&f), 0o600);
    }
}
