//! Tests on the real ReadyToRun images of the installed shared framework.

use super::*;

/// The directory of the newest installed Microsoft.NETCore.App, if any.
pub(crate) fn framework_dir() -> Option<std::path::PathBuf> {
    let root = std::path::Path::new("/usr/share/dotnet/shared/Microsoft.NETCore.App");
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn image(name: &str) -> Option<(Vec<u8>, Image)> {
    let path = framework_dir()?.join(name);
    let bytes = std::fs::read(&path).ok()?;
    let image = Image::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some((bytes, image))
}

#[test]
fn corelib_functions_have_names() {
    let Some((_, img)) = image("System.Private.CoreLib.dll") else {
        eprintln!("no shared framework installed: skipped");
        return;
    };
    let f = img.functions();
    assert!(f.len() > 10_000, "{} functions", f.len());
    let named = f.iter().filter(|f| f.name != u32::MAX).count();
    assert!(named * 100 / f.len() > 95, "{named} of {} named", f.len());
    assert!(img.mvid().is_some());
    let names: Vec<&str> = f.iter().map(|x| img.name(x)).collect();
    assert!(names.contains(&"System.String.Concat"), "no String.Concat");
    assert!(names
        .iter()
        .any(|n| n.starts_with("System.Threading.PortableThreadPool+WorkerThread.")));
    // Sorted, not overlapping.
    assert!(f.windows(2).all(|w| w[0].end <= w[1].start));
}

/// The functions named `name` (in function order).
fn named<'a>(img: &'a Image, name: &str) -> Vec<&'a Function> {
    img.functions()
        .iter()
        .filter(|f| img.name(f) == name)
        .collect()
}

#[test]
fn known_methods_resolve_inside_their_code() {
    let Some((_, img)) = image("System.Net.Sockets.dll") else {
        eprintln!("no shared framework installed: skipped");
        return;
    };
    let loops = named(&img, "System.Net.Sockets.SocketAsyncEngine.EventLoop");
    assert!(!loops.is_empty(), "EventLoop is precompiled");
    for f in loops {
        for rva in [f.start, (f.start + f.end) / 2, f.end - 1] {
            let g = img.function_at(rva).expect("a function");
            assert_eq!(
                img.name(g),
                "System.Net.Sockets.SocketAsyncEngine.EventLoop"
            );
        }
        // Just past the code is another function or none.
        assert!(img.function_at(f.end).is_none_or(|g| g.start >= f.end));
        // File offsets map back to the same RVAs (the image's sections map the file).
        let s = img
            .sections()
            .iter()
            .find(|s| f.start >= s.rva && f.start < s.rva + s.virtual_size)
            .expect("a section");
        let off = u64::from(f.start - s.rva + s.file_offset);
        assert_eq!(img.rva_of_file_offset(off), Some(f.start));
    }
    // A nested type's method: `Outer+Inner.Method`.
    assert!(img.functions().iter().any(|f| img
        .name(f)
        .starts_with("System.Net.Sockets.SocketAsyncContext+")));
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Any byte string gives an image or an error: truncations and byte flips of a real image,
/// aimed at the structures the reader follows (headers, metadata, ReadyToRun tables).
#[test]
fn damaged_images_give_errors_not_panics() {
    let Some((bytes, good)) = image("System.Net.Sockets.dll") else {
        eprintln!("no shared framework installed: skipped");
        return;
    };
    // Truncations, from nothing to almost the whole file.
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut errors = 0;
    for i in 0..120 {
        let len = if i < 40 {
            i * 13
        } else {
            rng.below(bytes.len())
        };
        if Image::parse(&bytes[..len]).is_err() {
            errors += 1;
        }
    }
    assert!(errors > 100, "most truncations are errors ({errors})");
    // Byte flips: anywhere, in the headers, in the metadata, in the ReadyToRun header's
    // sections (the tables it points at).
    let md = find(&bytes, b"BSJB").expect("metadata signature");
    let rtr = find(&bytes, b"RTR\0").expect("ReadyToRun signature");
    let zones = [(0, bytes.len()), (0, 1024), (md, 32 * 1024), (rtr, 512)];
    let mut changed = 0;
    for trial in 0..600 {
        let mut b = bytes.clone();
        let (start, len) = zones[trial % zones.len()];
        for _ in 0..1 + rng.below(4) {
            let at = (start + rng.below(len)).min(b.len() - 1);
            b[at] ^= 1 << rng.below(8);
        }
        match Image::parse(&b) {
            Ok(img) => {
                if img.functions() != good.functions() {
                    changed += 1;
                }
                // Lookups on whatever was read stay in bounds.
                for f in img.functions().iter().take(64) {
                    let _ = img.name(f);
                    let _ = img.function_at(f.start);
                }
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    assert!(changed > 0, "some flips must change what is read");
}

#[test]
fn non_images_are_errors() {
    assert!(matches!(Image::parse(b""), Err(Error::NotPe(_))));
    assert!(matches!(Image::parse(b"MZ\0\0"), Err(Error::NotPe(_))));
    // A native shared library is not a PE file.
    if let Ok(elf) = std::fs::read("/proc/self/exe") {
        assert!(Image::parse(&elf).is_err());
    }
    // A .NET image without precompiled code (the test apps' IL-only builds) says so.
    let Some(dir) = framework_dir() else { return };
    // The reference-only facades of the shared framework are R2R too; netstandard.dll has
    // no methods of its own but still parses.
    if let Ok(b) = std::fs::read(dir.join("netstandard.dll")) {
        let _ = Image::parse(&b);
    }
}

/// Every image of the installed shared frameworks reads: a ReadyToRun image with every
/// function named, or an error that says it is not one.
#[test]
fn every_framework_image_reads() {
    let Some(dir) = framework_dir() else {
        eprintln!("no shared framework installed: skipped");
        return;
    };
    let (mut images, mut functions) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "dll") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        match Image::parse(&bytes) {
            Ok(img) => {
                images += 1;
                functions += img.functions().len();
                let unnamed: Vec<_> = img
                    .functions()
                    .iter()
                    .filter(|f| f.name == u32::MAX || img.name(f) == "[generic instance]")
                    .collect();
                assert!(unnamed.is_empty(), "{}: {unnamed:?}", path.display());
            }
            Err(Error::NotReadyToRun | Error::NotManaged(_) | Error::NotPe(_)) => {}
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    assert!(images > 50, "{images} ReadyToRun images");
    eprintln!("{images} images, {functions} functions");
}

#[test]
fn names_read_later_are_the_names_parse_gives() {
    for name in ["System.Private.CoreLib.dll", "System.Net.Sockets.dll"] {
        let Some((bytes, img)) = image(name) else {
            eprintln!("no shared framework installed: skipped");
            return;
        };
        let unnamed = Image::parse_unnamed(&bytes).unwrap();
        assert_eq!(unnamed.functions(), img.functions());
        assert_eq!(unnamed.mvid(), img.mvid());
        assert!(unnamed
            .functions()
            .iter()
            .all(|f| unnamed.name(f) == "[unnamed]"));
        // Every 97th function, generic instantiations and funclets among them.
        let some: Vec<Function> = img.functions().iter().step_by(97).copied().collect();
        let names = unnamed.names_from(&bytes, &some).unwrap();
        let want: Vec<&str> = some.iter().map(|f| img.name(f)).collect();
        assert_eq!(names, want, "{name}");
    }
}
