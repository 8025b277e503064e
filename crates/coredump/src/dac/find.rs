//! Finding the data access library of the dump's own runtime build: a library of another build
//! misreads the runtime's structures. The runtime in the dump is known by its `libcoreclr.so`'s
//! GNU build id (read from the core's copy of its first page); a library is taken from, in
//! order: the path given, the copy `clrspy dump` stored beside the dump, the runtime's own
//! folder on this machine, and every runtime installed here — the last two only where the
//! `libcoreclr.so` beside the library has the same build id.

use std::path::{Path, PathBuf};

use crate::elf::Core;
use crate::Error;

/// The library's file name.
pub const DAC_NAME: &str = "libmscordaccore.so";
const RUNTIME_NAME: &str = "libcoreclr.so";

/// The library chosen, and why.
#[derive(Clone, Debug)]
pub(crate) struct DacChoice {
    /// Its path.
    pub(crate) path: PathBuf,
    /// How it was found ("given", "stored beside the dump", ...).
    pub(crate) how: &'static str,
    /// Where the runtime was mapped in the process.
    pub(crate) runtime_base: u64,
    /// The runtime's path in the dumped process.
    pub(crate) runtime_path: String,
}

/// The sidecar name `clrspy dump` gives its copy of the library: `DUMP.libmscordaccore.so`.
pub fn sidecar_path(dump: &Path) -> PathBuf {
    let mut name = dump.as_os_str().to_owned();
    name.push(".");
    name.push(DAC_NAME);
    PathBuf::from(name)
}

/// The GNU build id of the ELF image whose first bytes are `page`.
pub(crate) fn build_id(page: &[u8]) -> Option<Vec<u8>> {
    let u16_at = |at: usize| {
        page.get(at..at + 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]))
    };
    let u32_at = |at: usize| {
        page.get(at..at + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    };
    let u64_at = |at: usize| {
        page.get(at..at + 8).map(|s| {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        })
    };
    if page.get(0..4)? != b"\x7fELF" || *page.get(4)? != 2 {
        return None;
    }
    let phoff = usize::try_from(u64_at(32)?).ok()?;
    let phnum = usize::from(u16_at(56)?);
    for i in 0..phnum.min(64) {
        let ph = phoff.checked_add(i * 56)?;
        if u32_at(ph)? != 4 {
            continue;
        }
        let off = usize::try_from(u64_at(ph + 8)?).ok()?;
        let size = usize::try_from(u64_at(ph + 32)?).ok()?;
        let mut notes = page.get(off..off.checked_add(size)?)?;
        while notes.len() >= 12 {
            let namesz = u32::from_le_bytes(notes[0..4].try_into().ok()?) as usize;
            let descsz = u32::from_le_bytes(notes[4..8].try_into().ok()?) as usize;
            let kind = u32::from_le_bytes(notes[8..12].try_into().ok()?);
            let desc_at = 12 + ((namesz + 3) & !3);
            let desc = notes.get(desc_at..desc_at.checked_add(descsz)?)?;
            if kind == 3 && notes.get(12..15) == Some(b"GNU") {
                return Some(desc.to_vec());
            }
            notes = notes.get(desc_at + ((descsz + 3) & !3)..)?;
        }
    }
    None
}

fn file_build_id(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut page = vec![0u8; 8192];
    let mut f = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < page.len() {
        match f.read(&mut page[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    build_id(&page[..n])
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Folders where runtimes are installed on this machine.
fn installed_runtimes() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = [
        "/usr/share/dotnet",
        "/usr/lib/dotnet",
        "/usr/local/share/dotnet",
        "/opt/dotnet",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(r) = std::env::var_os("DOTNET_ROOT") {
        roots.insert(0, PathBuf::from(r));
    }
    if let Some(h) = std::env::var_os("HOME") {
        roots.push(Path::new(&h).join(".dotnet"));
    }
    let mut out = Vec::new();
    for root in roots {
        let Ok(rd) = std::fs::read_dir(root.join("shared/Microsoft.NETCore.App")) else {
            continue;
        };
        for e in rd.flatten() {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// Finds the library for `core` (dumped to `dump`), or says exactly which build is needed.
pub(crate) fn find_dac(core: &Core, dump: &Path, given: Option<&Path>) -> Result<DacChoice, Error> {
    let runtime_path = core.image_path(RUNTIME_NAME).map(str::to_owned).ok_or_else(|| {
        Error::Runtime(format!(
            "the dumped process (pid {}, {}) has no {RUNTIME_NAME} mapped: not a .NET (Core) process",
            core.pid, core.command
        ))
    })?;
    let runtime_base = core.image_base(RUNTIME_NAME).ok_or_else(|| {
        Error::Runtime(format!("{RUNTIME_NAME} is mapped but not from its start"))
    })?;
    let mut page = vec![0u8; 8192];
    let held = core.read_held(runtime_base, &mut page);
    let wanted = build_id(&page[..held]);
    // dlopen searches the library path for a name without a slash: always give it a path.
    let choice = |path: PathBuf, how| DacChoice {
        path: std::path::absolute(&path).unwrap_or(path),
        how,
        runtime_base,
        runtime_path: runtime_path.clone(),
    };
    if let Some(p) = given {
        return Ok(choice(p.to_path_buf(), "given"));
    }
    let side = sidecar_path(dump);
    if side.is_file() {
        return Ok(choice(side, "stored beside the dump"));
    }
    let runtime_dir = Path::new(&runtime_path).parent().map(Path::to_path_buf);
    let same = |dir: &Path| match &wanted {
        Some(id) => file_build_id(&dir.join(RUNTIME_NAME)).as_ref() == Some(id),
        None => false,
    };
    if let Some(dir) = &runtime_dir {
        if dir.join(DAC_NAME).is_file()
            && (same(dir) || wanted.is_none() && dir.join(RUNTIME_NAME).is_file())
        {
            return Ok(choice(dir.join(DAC_NAME), "the runtime's own folder"));
        }
    }
    if wanted.is_some() {
        for dir in installed_runtimes() {
            if dir.join(DAC_NAME).is_file() && same(&dir) {
                return Ok(choice(
                    dir.join(DAC_NAME),
                    "an installed runtime of the same build",
                ));
            }
        }
    }
    let version = runtime_dir
        .as_ref()
        .and_then(|d| d.file_name())
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_else(|| "?".into());
    Err(Error::NoDac(format!(
        "no data access library ({DAC_NAME}) of the dump's runtime build was found: the process ran {runtime_path} (version folder {version}, build id {}). Copy {DAC_NAME} from that folder of the machine the dump came from beside the dump as {}, or install that runtime here, or pass --dac PATH",
        wanted.as_deref().map_or_else(|| "unknown: the dump holds no copy of its first page".into(), hex),
        sidecar_path(dump).display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_id_of_a_real_library_is_read_from_its_first_page() {
        // This test process's own libc is an ELF image with a build id on every distribution
        // that builds with one; compare with what the file says at its notes.
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let id = build_id(&exe[..exe.len().min(8192)]);
        if let Some(id) = id {
            assert!(id.len() >= 8, "{}", hex(&id));
        }
        assert_eq!(build_id(b"\x7fELF short"), None);
        assert_eq!(build_id(&[]), None);
    }

    #[test]
    fn the_sidecar_sits_beside_the_dump() {
        assert_eq!(
            sidecar_path(Path::new("/x/core_1.zst")),
            PathBuf::from("/x/core_1.zst.libmscordaccore.so")
        );
    }
}
