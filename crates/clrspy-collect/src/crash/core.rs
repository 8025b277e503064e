//! The fatal exception's message read from the crash dump itself: the crash report gives the
//! exception object's address (`managed_exception_object`), and the dump holds the object —
//! a mini dump too (the runtime's list of a mini dump's memory includes each thread's
//! exception object and its message; measured on .NET 10.0.12). Its `_message` is the reference after the
//! method table and `_exceptionMethod` (offset 16 on 64-bit; measured on .NET 10.0.12 x64,
//! and the runtime's own binder pins the field order), a string object is
//! `[method table][int length][UTF-16 chars]`. Every read is checked: an address outside the
//! dump's segments, a length out of range or text that is not UTF-16 gives no message.

use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

use object::elf::{FileHeader64, ET_CORE, PT_LOAD};
use object::read::elf::{FileHeader, ProgramHeader};
use object::{LittleEndian, ReadCache, ReadRef};

/// Offset of `System.Exception._message` in the object (64-bit).
const MESSAGE_OFFSET: u64 = 16;
/// Longest message read, in UTF-16 units.
const MAX_CHARS: u32 = 64 * 1024;
/// The most program headers read: a core has one per mapping of the process (tens of
/// thousands in a big one); a count above this is a damaged header, not a table to allocate.
const MAX_SEGMENTS: u32 = 1 << 20;

/// The crashed thread's exception object address from a crash report's JSON.
fn exception_object(report: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(report).ok()?;
    let threads = v.get("payload")?.get("threads")?.as_array()?;
    let t = threads
        .iter()
        .find(|t| t.get("crashed").and_then(|c| c.as_str()) == Some("true"))?;
    let s = t.get("managed_exception_object")?.as_str()?;
    u64::from_str_radix(s.strip_prefix("0x")?, 16)
        .ok()
        .filter(|&a| a != 0)
}

/// One loaded segment of a core: its address, its size in the file and its file offset.
#[derive(Debug)]
struct Segment {
    addr: u64,
    size: u64,
    offset: u64,
}

/// A 64-bit little-endian ELF core's loaded segments, read through `object` from a file that
/// is never loaded whole (a core can be tens of GB): only the header, the program headers and
/// the few bytes asked for are read, each checked against the file's real size first.
#[derive(Debug)]
struct Core<F: Read + Seek> {
    data: ReadCache<F>,
    segments: Vec<Segment>,
}

impl<F: Read + Seek> Core<F> {
    /// Reads `file`'s ELF header and program headers; an error says what is wrong with them.
    fn read_from(file: F) -> Result<Core<F>, String> {
        let mut data = ReadCache::new(file);
        let segments = loaded_segments(&data)?;
        // The header bytes read are not needed again.
        data.clear();
        Ok(Core { data, segments })
    }

    /// `len` bytes at address `addr`, when one segment holds them all and the file does too
    /// (a core cut short by a full disk or a killed createdump holds less than it says).
    fn read(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let end = addr.checked_add(len)?;
        let s = self
            .segments
            .iter()
            .find(|s| addr >= s.addr && s.addr.checked_add(s.size).is_some_and(|e| end <= e))?;
        let offset = s.offset.checked_add(addr - s.addr)?;
        (&self.data).read_bytes_at(offset, len).ok()
    }

    /// A little-endian `u64` at `addr`.
    fn u64(&self, addr: u64) -> Option<u64> {
        Some(u64::from_le_bytes(self.read(addr, 8)?.try_into().ok()?))
    }

    /// A little-endian `u32` at `addr`.
    fn u32(&self, addr: u64) -> Option<u32> {
        Some(u32::from_le_bytes(self.read(addr, 4)?.try_into().ok()?))
    }
}

impl Core<File> {
    fn open(path: &Path) -> Result<Core<File>, String> {
        let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Core::read_from(file)
    }
}

/// The loaded segments (`PT_LOAD`) of the 64-bit little-endian ELF core in `data`. The
/// program header count (`e_phnum`, or section 0's `sh_info` past 0xffff) is checked against
/// [`MAX_SEGMENTS`], and the table against the file's size before it is read.
fn loaded_segments<'a, R: ReadRef<'a>>(data: R) -> Result<Vec<Segment>, String> {
    let header =
        FileHeader64::<LittleEndian>::parse(data).map_err(|e| format!("not a 64-bit ELF: {e}"))?;
    let endian = header
        .endian()
        .map_err(|_| "a big-endian ELF, not a little-endian core".to_string())?;
    let kind = header.e_type(endian);
    if kind != ET_CORE {
        return Err(format!("an ELF file of type {}, not a core (4)", kind.0));
    }
    let count = header
        .phnum(endian, data)
        .map_err(|e| format!("the program header count: {e}"))?;
    if count > MAX_SEGMENTS {
        return Err(format!(
            "{count} program headers, more than the {MAX_SEGMENTS} read"
        ));
    }
    let headers = header
        .program_headers(endian, data)
        .map_err(|e| format!("the program headers: {e}"))?;
    Ok(headers
        .iter()
        .filter(|h| h.p_type(endian) == PT_LOAD)
        .map(|h| Segment {
            addr: h.p_vaddr(endian),
            size: h.p_filesz(endian),
            offset: h.p_offset(endian),
        })
        .collect())
}

/// The fatal exception's message in the dump at `dump`, from the object the crash report
/// (its bytes, `report`) names.
pub fn message_in_dump(report: &[u8], dump: &Path) -> Option<String> {
    exception_message(dump, exception_object(report)?)
}

/// The message of the exception object at `object` in the core at `path`.
fn exception_message(path: &Path, object: u64) -> Option<String> {
    message_of(&Core::open(path).ok()?, object)
}

/// The message of the exception object at `object` in `core`.
fn message_of<F: Read + Seek>(core: &Core<F>, object: u64) -> Option<String> {
    let string = core.u64(object.checked_add(MESSAGE_OFFSET)?)?;
    if string == 0 {
        return None;
    }
    let len = core.u32(string.checked_add(8)?)?;
    if len == 0 || len > MAX_CHARS {
        return None;
    }
    let bytes = core.read(string.checked_add(12)?, u64::from(len) * 2)?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core with one segment at `base` holding `mem`.
    fn core(base: u64, mem: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        f[16] = 4;
        f[0x14] = 1;
        f[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        f[0x36] = 56;
        f[0x38] = 1;
        let mut ph = vec![0u8; 56];
        ph[..4].copy_from_slice(&1u32.to_le_bytes());
        ph[8..16].copy_from_slice(&120u64.to_le_bytes());
        ph[16..24].copy_from_slice(&base.to_le_bytes());
        ph[32..40].copy_from_slice(&(mem.len() as u64).to_le_bytes());
        f.extend_from_slice(&ph);
        f.extend_from_slice(mem);
        f
    }

    #[test]
    fn the_message_is_read_through_the_object_and_checked() {
        let base = 0x7000_0000u64;
        let mut mem = vec![0u8; 256];
        // The exception at base: _message at +16 points at the string at base + 64.
        mem[16..24].copy_from_slice(&(base + 64).to_le_bytes());
        mem[72..76].copy_from_slice(&5u32.to_le_bytes());
        for (i, c) in "boom!".encode_utf16().enumerate() {
            mem[76 + 2 * i..78 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("core");
        std::fs::write(&p, core(base, &mem)).unwrap();
        assert_eq!(exception_message(&p, base).as_deref(), Some("boom!"));
        // Outside the dump, a null message, a length out of range: nothing.
        assert_eq!(exception_message(&p, base + 4096), None);
        assert_eq!(exception_message(&p, base + 8), None);
        mem[72..76].copy_from_slice(&1_000_000u32.to_le_bytes());
        std::fs::write(&p, core(base, &mem)).unwrap();
        assert_eq!(exception_message(&p, base), None);
        std::fs::write(&p, b"not a core").unwrap();
        assert_eq!(exception_message(&p, base), None);
    }

    #[test]
    fn the_report_names_the_object_the_dump_holds() {
        let base = 0x7000_0000u64;
        let mut mem = vec![0u8; 128];
        mem[16..24].copy_from_slice(&(base + 64).to_le_bytes());
        mem[72..76].copy_from_slice(&2u32.to_le_bytes());
        mem[76..80].copy_from_slice(&[b'o', 0, b'k', 0]);
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("core");
        std::fs::write(&dump, core(base, &mem)).unwrap();
        let report = format!(
            r#"{{"payload":{{"threads":[{{"crashed":"true","managed_exception_object":"{base:#x}"}}]}}}}"#
        );
        assert_eq!(
            message_in_dump(report.as_bytes(), &dump).as_deref(),
            Some("ok")
        );
        // No dump (a report-only capture), a report that names no object: nothing.
        assert_eq!(
            message_in_dump(report.as_bytes(), &dir.path().join("none")),
            None
        );
        assert_eq!(message_in_dump(b"{}", &dump), None);
    }

    /// The exception at `base` with the message "boom!" in the core's one segment.
    fn boom(base: u64) -> Vec<u8> {
        let mut mem = vec![0u8; 96];
        mem[16..24].copy_from_slice(&(base + 64).to_le_bytes());
        mem[72..76].copy_from_slice(&5u32.to_le_bytes());
        for (i, c) in "boom!".encode_utf16().enumerate() {
            mem[76 + 2 * i..78 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        core(base, &mem)
    }

    fn open(bytes: &[u8]) -> Result<Core<std::io::Cursor<&[u8]>>, String> {
        Core::read_from(std::io::Cursor::new(bytes))
    }

    #[test]
    fn a_cut_core_is_an_error_or_holds_less_never_a_panic() {
        let base = 0x7000_0000u64;
        let whole = boom(base);
        let c = open(&whole).unwrap();
        assert_eq!(message_of(&c, base).as_deref(), Some("boom!"));
        // The headers end at 120, the message's last byte at 120 + 86.
        for n in 0..whole.len() {
            match open(&whole[..n]) {
                Err(e) => assert!(n < 120, "cut at {n}: {e}"),
                Ok(c) => {
                    assert!(n >= 120, "cut at {n} read");
                    let m = message_of(&c, base);
                    assert_eq!(m.is_some(), n >= 120 + 86, "cut at {n}: {m:?}");
                }
            }
        }
        assert!(open(&whole[..63]).unwrap_err().contains("not a 64-bit ELF"));
        assert!(open(&whole[..100])
            .unwrap_err()
            .contains("the program headers"));
    }

    #[test]
    fn a_bit_flipped_header_is_an_error_or_a_core_never_a_panic() {
        let base = 0x7000_0000u64;
        let whole = boom(base);
        // Every bit of the ELF header and the program header, one at a time.
        for byte in 0..120 {
            for bit in 0..8 {
                let mut b = whole.clone();
                b[byte] ^= 1 << bit;
                let r = open(&b);
                // The magic, class, byte order, version, type and entry size are checked.
                let checked = matches!(byte, 0..=6 | 16..=17 | 0x36..=0x37);
                if checked {
                    assert!(r.is_err(), "byte {byte} bit {bit} read as a core");
                }
                if let Ok(c) = r {
                    // Whatever the flip, a read stays inside the file and the segments.
                    let _ = message_of(&c, base);
                }
            }
        }
    }

    #[test]
    fn counts_are_checked_before_anything_is_allocated() {
        let base = 0x7000_0000u64;
        // e_phnum 0xfffe: 3.6 MB of program headers in a 206-byte file.
        let mut b = boom(base);
        b[0x38..0x3a].copy_from_slice(&0xfffeu16.to_le_bytes());
        let e = open(&b).unwrap_err();
        assert!(e.contains("the program headers"), "{e}");
        // e_phnum 0xffff (PN_XNUM): the count is section 0's sh_info; 4G - 1 is refused.
        let mut b = boom(base);
        b[0x38..0x3a].copy_from_slice(&0xffffu16.to_le_bytes());
        let shoff = b.len() as u64;
        b[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        let mut section0 = vec![0u8; 64];
        section0[44..48].copy_from_slice(&u32::MAX.to_le_bytes());
        b.extend_from_slice(&section0);
        let e = open(&b).unwrap_err();
        assert!(e.contains("4294967295 program headers"), "{e}");
        // ... and a count that fits is read from there.
        let n = b.len() - 64 + 44;
        b[n..n + 4].copy_from_slice(&1u32.to_le_bytes());
        let c = open(&b).unwrap();
        assert_eq!(message_of(&c, base).as_deref(), Some("boom!"));
        // A segment that says it holds more than the file: what lies past the end is not read.
        let mut b = boom(base);
        b[96..104].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let c = open(&b).unwrap();
        assert_eq!(message_of(&c, base).as_deref(), Some("boom!"));
        assert_eq!(c.read(base + 4096, 8), None);
        assert_eq!(c.read(base + (1 << 39), 8), None);
    }

    #[test]
    fn not_a_little_endian_64_bit_core() {
        let mut b = boom(0x1000);
        b[16] = 3; // ET_DYN: a shared library
        assert!(open(&b).unwrap_err().contains("type 3"));
        let mut b = boom(0x1000);
        b[5] = 2; // big-endian
        assert!(open(&b).unwrap_err().contains("big-endian"));
        assert!(
            matches!(Core::open(Path::new("/nonexistent/core")), Err(e) if e.contains("cannot open"))
        );
    }

    #[test]
    fn the_object_comes_from_the_crashed_thread() {
        let r = br#"{"payload":{"threads":[{"crashed":"false","managed_exception_object":"0x10"},
            {"crashed":"true","managed_exception_object":"0x7f9e6d80c288"}]}}"#;
        assert_eq!(exception_object(r), Some(0x7f9e6d80c288));
        assert_eq!(exception_object(b"{}"), None);
        assert_eq!(
            exception_object(br#"{"payload":{"threads":[{"crashed":"true"}]}}"#),
            None
        );
    }
}
