//! Core dumps of running .NET processes, written by their own runtime (it runs `createdump`
//! next to itself, so no debugger or SDK is needed): the path checks before and the check of
//! the file after (`dumpfile` sends the command).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The absolute path to write the dump of `pid` to: `output`, or `core_<pid>_<time>` in the
/// current directory. The runtime writes from the target's working directory, hence absolute;
/// the directory must exist and the path must be UTF-8 (the protocol's string).
pub fn dump_path(pid: u32, output: Option<&Path>) -> Result<PathBuf> {
    let out = match output {
        Some(p) => p.to_path_buf(),
        None => PathBuf::from(format!(
            "core_{pid}_{}",
            clrspy_values::time::file_stamp(std::time::SystemTime::now())
        )),
    };
    let out = if out.is_absolute() {
        out
    } else {
        std::env::current_dir()
            .map_err(|e| Error::DumpPath {
                path: out.clone(),
                why: format!("the current directory is unreadable: {e}"),
            })?
            .join(out)
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(Error::DumpPath {
                why: format!("{} is not a directory", dir.display()),
                path: out,
            });
        }
    }
    if out.to_str().is_none() {
        return Err(Error::DumpPath {
            path: out,
            why: "the path is not valid UTF-8".into(),
        });
    }
    Ok(out)
}

/// Checks the runtime's dump is here and, on Linux, is an ELF core file; returns its size.
pub(crate) fn check_dump(path: &Path) -> Result<u64> {
    let check = |why: String, source: Option<std::io::Error>| Error::DumpCheck {
        path: path.to_path_buf(),
        why,
        source,
    };
    let size = std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| check(format!("the file is not readable here: {e}"), Some(e)))?;
    if cfg!(target_os = "linux") {
        let mut magic = [0u8; 4];
        let mut f = std::fs::File::open(path)
            .map_err(|e| check(format!("the file is not readable here: {e}"), Some(e)))?;
        let n = read_up_to(&mut f, &mut magic)
            .map_err(|e| check(format!("reading the file failed: {e}"), Some(e)))?;
        if n < magic.len() {
            return Err(check(
                format!("the file is {size} bytes long: not a core file"),
                None,
            ));
        }
        if &magic != b"\x7fELF" {
            return Err(check("the file is not an ELF core file".into(), None));
        }
    }
    Ok(size)
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
pub(crate) fn read_up_to(f: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_short_or_foreign_dump_is_named_as_such() {
        let dir = std::env::temp_dir().join(format!("clrspy-dump-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, b"\x7fE").unwrap();
        let e = check_dump(&short).unwrap_err();
        assert!(
            e.to_string().contains("2 bytes long: not a core file"),
            "{e}"
        );
        assert!(!e.to_string().contains("fill whole buffer"), "{e}");
        let text = dir.join("text");
        std::fs::write(&text, b"hello world").unwrap();
        let e = check_dump(&text).unwrap_err();
        assert!(e.to_string().contains("not an ELF core file"), "{e}");
        let core = dir.join("core");
        std::fs::write(&core, b"\x7fELF and more").unwrap();
        assert_eq!(check_dump(&core).unwrap(), 13);
        let e = check_dump(&dir.join("missing")).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Dump);
        assert!(dump_path(1, Some(&dir.join("no/such/dir/core"))).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
