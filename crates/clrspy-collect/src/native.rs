//! Record-time names for native code (the runtime, libc, native libraries) the samples hit:
//! the ELF symbols of the mapped file — its `.symtab`, else the debug file its build id names
//! under `/usr/lib/debug/.build-id` when one is installed, and its `.dynsym` — read once per
//! file through `/proc/<pid>/root` (a container's file is the one mapped). One `NativeSymbol`
//! event per function hit goes into the trace (its file offsets and name), so the trace names
//! its native frames on any machine. A stripped library (libcoreclr.so exports a few dozen
//! names) still describes where each of its functions starts, for unwinding: an address past
//! every symbol's end is given the function of `.eh_frame_hdr`'s table that holds it, named
//! after the nearest symbol before it (`GetCLRRuntimeHost+0x291720`), so each function is one
//! frame; without that table it is stored under the nearest symbol with no size (the analysis
//! shows `name+0x…` then).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::inject::Injected;

/// The largest file read for its symbols.
const MAX_FILE_BYTES: u64 = 1 << 30;
/// The most symbols stored per recording.
const MAX_SYMBOLS: usize = 200_000;

/// A file's functions, by virtual address, and how its file offsets map to them.
#[derive(Debug, Default)]
struct SymbolTable {
    /// (start, size, name), sorted by start; size 0 when the symbol gave none.
    functions: Vec<(u64, u64, String)>,
    /// Loadable segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
    /// Where every function starts (virtual addresses, sorted), from `.eh_frame_hdr`.
    starts: Vec<u64>,
}

impl SymbolTable {
    /// Reads `data` (an ELF file) and, when it has no `.symtab`, the debug file its build id
    /// names (`debug`: reads a path).
    fn read<'d, R: object::ReadRef<'d>>(
        data: R,
        debug: &dyn Fn(&str) -> Option<Vec<u8>>,
    ) -> Option<SymbolTable> {
        let file = object::File::parse(data).ok()?;
        let segments = file
            .segments()
            .filter_map(|s| {
                let (off, len) = s.file_range();
                (len > 0).then_some((off, len, s.address()))
            })
            .collect();
        let mut functions = text_symbols(&file, false);
        if functions.is_empty() {
            let debug_file = file
                .build_id()
                .ok()
                .flatten()
                .filter(|id| id.len() > 1)
                .and_then(|id| {
                    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                    debug(&format!(
                        "/usr/lib/debug/.build-id/{}/{}.debug",
                        &hex[..2],
                        &hex[2..]
                    ))
                });
            if let Some(d) = debug_file
                .as_deref()
                .and_then(|d| object::File::parse(d).ok())
            {
                functions = text_symbols(&d, false);
            }
        }
        functions.extend(text_symbols(&file, true));
        functions.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        functions.dedup_by_key(|f| f.0);
        let starts = file
            .section_by_name(".eh_frame_hdr")
            .and_then(|h| Some(function_starts(h.data().ok()?, h.address())))
            .unwrap_or_default();
        Some(SymbolTable {
            functions,
            segments,
            starts,
        })
    }

    /// The virtual address of a file offset (None outside every loadable segment).
    fn address_of(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(o, len, _)| offset >= *o && offset - o < *len)
            .map(|(o, _, va)| va + (offset - o))
    }

    /// The file offset of a virtual address.
    fn offset_of(&self, address: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(_, len, va)| address >= *va && address - va < *len)
            .map(|(o, _, va)| o + (address - va))
    }

    /// The function holding `address`: (start, size, name). A symbol's own range first; else
    /// the unwinding table's function, named after the nearest symbol before it; else that
    /// symbol with size 0 (`address` is past its end, or it has no size).
    fn function_at(&self, address: u64) -> Option<(u64, u64, Cow<'_, str>)> {
        let i = self.functions.partition_point(|f| f.0 <= address);
        let sym = i.checked_sub(1).and_then(|i| self.functions.get(i));
        if let Some((start, size, name)) = sym {
            if address - start < *size {
                return Some((*start, *size, Cow::Borrowed(name.as_str())));
            }
        }
        let k = self.starts.partition_point(|&s| s <= address);
        let from_table = k.checked_sub(1).and_then(|k| {
            let start = *self.starts.get(k)?;
            let end = *self.starts.get(k + 1)?;
            Some((start, end - start))
        });
        match (from_table, sym) {
            (Some((start, size)), Some((s, _, name))) if start >= *s => {
                let name = match start - s {
                    0 => Cow::Borrowed(name.as_str()),
                    d => Cow::Owned(format!("{name}+0x{d:x}")),
                };
                Some((start, size, name))
            }
            (Some((start, size)), None) => {
                let off = self.offset_of(start)?;
                Some((start, size, Cow::Owned(format!("+0x{off:x}"))))
            }
            (_, Some((start, _, name))) => Some((*start, 0, Cow::Borrowed(name.as_str()))),
            (None, None) => None,
        }
    }
}

/// The function starts of an `.eh_frame_hdr` section at virtual address `at`: its binary
/// search table, in the encoding every toolchain writes (a 4-byte count, then 4-byte signed
/// offsets from the section's start); empty for any other.
fn function_starts(hdr: &[u8], at: u64) -> Vec<u64> {
    const VERSION: u8 = 1;
    const COUNT_UDATA4: u8 = 0x03;
    const TABLE_DATAREL_SDATA4: u8 = 0x3b;
    let (Some(&[version, ptr_enc, count_enc, table_enc]), Some(count)) = (
        hdr.get(..4).and_then(|h| <&[u8; 4]>::try_from(h).ok()),
        hdr.get(8..12),
    ) else {
        return Vec::new();
    };
    // The eh_frame pointer before the count must be 4 bytes wide too.
    let ptr_is_4 = ptr_enc & 0x0f == 0x03 || ptr_enc & 0x0f == 0x0b;
    if version != VERSION
        || count_enc != COUNT_UDATA4
        || table_enc != TABLE_DATAREL_SDATA4
        || !ptr_is_4
    {
        return Vec::new();
    }
    let count = u32::from_le_bytes([count[0], count[1], count[2], count[3]]) as usize;
    let table = hdr.get(12..).unwrap_or_default();
    let mut starts: Vec<u64> = table
        .chunks_exact(8)
        .take(count)
        .map(|e| at.wrapping_add_signed(i64::from(i32::from_le_bytes([e[0], e[1], e[2], e[3]]))))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// The defined function symbols of `f` (its `.dynsym` when `dynamic`, else its `.symtab`):
/// (address, size, name).
fn text_symbols<'d, R: object::ReadRef<'d>>(
    f: &object::File<'d, R>,
    dynamic: bool,
) -> Vec<(u64, u64, String)> {
    let keep = |s: &object::Symbol<'d, '_, R>| {
        (s.kind() == SymbolKind::Text && s.address() != 0 && s.is_definition())
            .then(|| s.name().ok().filter(|n| !n.is_empty()))
            .flatten()
            .map(|n| (s.address(), s.size(), n.to_string()))
    };
    if dynamic {
        f.dynamic_symbols().filter_map(|s| keep(&s)).collect()
    } else {
        f.symbols().filter_map(|s| keep(&s)).collect()
    }
}

/// Names the native code addresses hit, one event per function.
#[derive(Debug, Default)]
pub(crate) struct NativeNames {
    /// Symbol tables by mapped path (None: not an ELF file, or unreadable).
    files: HashMap<String, Option<SymbolTable>>,
    /// (path, function start offset, size) already stored.
    stored: HashSet<(String, u64, u64)>,
}

/// True for a mapping that may be an ELF file with symbols (not a .NET image, not the JIT's
/// code heap or an anonymous or deleted mapping).
pub(crate) fn is_native_file(path: &str) -> bool {
    path == VDSO
        || path.starts_with('/')
            && !path.ends_with(".dll")
            && !path.ends_with(".exe")
            && !path.ends_with(" (deleted)")
            && !path.starts_with("/memfd:")
            && !path.contains("doublemapper")
}

impl NativeNames {
    /// Events naming the functions at these (path, file offset) pairs of process `pid`.
    pub(crate) fn resolve(&mut self, pid: u32, hits: &[(String, u64)], out: &mut Vec<Injected>) {
        for (path, offset) in hits {
            if self.stored.len() >= MAX_SYMBOLS {
                return;
            }
            let table = self
                .files
                .entry(path.clone())
                .or_insert_with(|| symbols_of(pid, path));
            let Some(table) = table.as_ref() else {
                continue;
            };
            let Some((start, size, name)) =
                table.address_of(*offset).and_then(|a| table.function_at(a))
            else {
                continue;
            };
            let Some(start_offset) = table.offset_of(start) else {
                continue;
            };
            if self.stored.insert((path.clone(), start_offset, size)) {
                out.push(Injected::NativeSymbol {
                    path: path.clone(),
                    offset: start_offset,
                    size,
                    name: name.into_owned(),
                });
            }
        }
    }
}

/// The functions holding these (mapped path, file offset) places of process `pid`, by
/// their ELF symbols (as the recordings name native frames: `name`, or `name+0x…` for a
/// stripped library's function past its nearest symbol); None where the file has none.
pub(crate) fn function_names(pid: u32, places: &[(String, u64)]) -> Vec<Option<String>> {
    let mut files: HashMap<&str, Option<SymbolTable>> = HashMap::new();
    places
        .iter()
        .map(|(path, offset)| {
            let table = files
                .entry(path.as_str())
                .or_insert_with(|| symbols_of(pid, path));
            let table = table.as_ref()?;
            let (_, _, name) = table
                .address_of(*offset)
                .and_then(|a| table.function_at(a))?;
            Some(name.into_owned())
        })
        .collect()
}

pub(crate) use diagnostics_client::procfs::VDSO;

/// The symbols of the file mapped from `path` in process `pid`, read in place (only the
/// parts of the file the symbols are in: a runtime library is megabytes).
fn symbols_of(pid: u32, path: &str) -> Option<SymbolTable> {
    let debug = |p: &str| read_file(pid, p);
    if path == VDSO {
        return SymbolTable::read(&*diagnostics_client::procfs::own_vdso_image()?, &debug);
    }
    let file =
        diagnostics_client::rooted::open_in_root(pid, std::path::Path::new(path), MAX_FILE_BYTES)
            .ok()?;
    SymbolTable::read(&object::ReadCache::new(file), &debug)
}

/// The file mapped from `path` in process `pid` (the target's own view; ours once it ended).
fn read_file(pid: u32, path: &str) -> Option<Vec<u8>> {
    if path == VDSO {
        return diagnostics_client::procfs::own_vdso_image();
    }
    // The process's own file (a container's), never through a link it planted.
    diagnostics_client::rooted::read_in_root(pid, std::path::Path::new(path), MAX_FILE_BYTES).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vDSO is named from this process's own image: `clock_gettime` is one of its
    /// functions on every Linux architecture .NET runs on.
    #[test]
    fn the_vdso_functions_are_named() {
        let Some(image) = diagnostics_client::procfs::own_vdso_image() else {
            return; // No vDSO (vdso=0 on the kernel's command line).
        };
        let table = SymbolTable::read(&*image, &|_| None).unwrap();
        assert!(
            table
                .functions
                .iter()
                .any(|f| f.2.ends_with("clock_gettime")),
            "{:?}",
            table.functions
        );
        assert!(is_native_file(VDSO));
    }

    /// This test's own executable: an ELF file with a `.symtab` (tests are not stripped), and
    /// one of its functions at a known address.
    #[test]
    fn a_function_of_a_real_elf_file_is_named_by_its_file_offset() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let table = SymbolTable::read(&*data, &|_| None).unwrap();
        assert!(table.functions.len() > 100, "{}", table.functions.len());
        let (start, size, name) = table
            .functions
            .iter()
            .find(|f| f.2.contains("a_function_of_a_real_elf_file_is_named") && f.1 > 0)
            .cloned()
            .unwrap();
        let off = table.offset_of(start).unwrap();
        assert_eq!(table.address_of(off + 3), Some(start + 3));
        assert_eq!(
            table.function_at(start + 3),
            Some((start, size, Cow::Borrowed(name.as_str())))
        );
        // Through the recorder: one event per function, whatever the address inside it.
        let path = exe.display().to_string();
        let mut n = NativeNames::default();
        let mut out = Vec::new();
        n.resolve(
            std::process::id(),
            &[(path.clone(), off + 1), (path.clone(), off + 2)],
            &mut out,
        );
        assert_eq!(
            out,
            vec![Injected::NativeSymbol {
                path: path.clone(),
                offset: off,
                size,
                name,
            }]
        );
        // Not an ELF file: nothing, and not read again.
        let mut out = Vec::new();
        n.resolve(
            std::process::id(),
            &[("/proc/self/status".into(), 4)],
            &mut out,
        );
        assert!(out.is_empty());
        assert!(n.files["/proc/self/status"].is_none());
    }

    #[test]
    fn past_a_function_s_end_is_the_unwinding_table_s_function_or_the_nearest_symbol() {
        let mut t = SymbolTable {
            functions: vec![(0x1000, 0x10, "a".into()), (0x2000, 0, "b".into())],
            segments: vec![(0, 0x3000, 0)],
            starts: Vec::new(),
        };
        let b = |s: &'static str| Cow::Borrowed(s);
        assert_eq!(t.function_at(0x1008), Some((0x1000, 0x10, b("a"))));
        assert_eq!(t.function_at(0x1800), Some((0x1000, 0, b("a"))));
        assert_eq!(t.function_at(0x2800), Some((0x2000, 0, b("b"))));
        assert_eq!(t.function_at(0x800), None);
        // With the unwinding table: the function holding the address, named from the symbol.
        t.starts = vec![0x400, 0x1000, 0x1700, 0x1900, 0x2000, 0x2900];
        assert_eq!(t.function_at(0x1008), Some((0x1000, 0x10, b("a"))));
        assert_eq!(
            t.function_at(0x1800),
            Some((0x1700, 0x200, Cow::Owned("a+0x700".into())))
        );
        assert_eq!(t.function_at(0x2800), Some((0x2000, 0x900, b("b"))));
        assert_eq!(
            t.function_at(0x800),
            Some((0x400, 0xc00, Cow::Owned("+0x400".into())))
        );
        // Past the table's last start: no end known, the nearest symbol.
        assert_eq!(t.function_at(0x2a00), Some((0x2000, 0, b("b"))));
        assert_eq!(t.address_of(0x3000), None);
        assert!(is_native_file("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(!is_native_file(
            "/usr/share/dotnet/shared/System.Private.CoreLib.dll"
        ));
        assert!(!is_native_file("/memfd:doublemapper (deleted)"));
    }

    /// A real stripped library: libcoreclr.so exports few names, but its unwinding table
    /// gives thousands of function starts.
    #[test]
    fn a_stripped_library_s_functions_come_from_its_unwinding_table() {
        let Some(lib) = std::fs::read_dir("/usr/share/dotnet/shared/Microsoft.NETCore.App")
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).max())
            .map(|d| d.join("libcoreclr.so"))
            .filter(|p| p.exists())
        else {
            eprintln!("no shared framework installed: skipped");
            return;
        };
        let t = SymbolTable::read(&*std::fs::read(lib).unwrap(), &|_| None).unwrap();
        assert!(t.starts.len() > 1000, "{}", t.starts.len());
        assert!(t.starts.len() > 10 * t.functions.len());
        assert!(function_starts(&[2, 0x1b, 3, 0x3b, 0, 0, 0, 0, 1, 0, 0, 0], 0).is_empty());
        assert!(function_starts(&[1, 0x1b], 0).is_empty());
    }
}
