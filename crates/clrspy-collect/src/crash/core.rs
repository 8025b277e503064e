//! The fatal exception's message read from the crash dump itself: the crash report gives the
//! exception object's address (`managed_exception_object`), and the dump holds the object —
//! a mini dump too (the runtime's list of a mini dump's memory includes each thread's
//! exception object and its message; measured on .NET 10.0.12). Its `_message` is the reference after the
//! method table and `_exceptionMethod` (offset 16 on 64-bit; measured on .NET 10.0.12 x64,
//! and the runtime's own binder pins the field order), a string object is
//! `[method table][int length][UTF-16 chars]`. Every read is checked: an address outside the
//! dump's segments, a length out of range or text that is not UTF-16 gives no message.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use nettrace::{Cursor, CursorError};

/// Offset of `System.Exception._message` in the object (64-bit).
const MESSAGE_OFFSET: u64 = 16;
/// Longest message read, in UTF-16 units.
const MAX_CHARS: u32 = 64 * 1024;

/// The crashed thread's exception object address from a crash report's JSON.
pub fn exception_object(report: &[u8]) -> Option<u64> {
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
struct Segment {
    addr: u64,
    size: u64,
    offset: u64,
}

/// A 64-bit little-endian ELF core's loaded segments.
struct Core {
    file: File,
    segments: Vec<Segment>,
}

impl Core {
    fn open(path: &Path) -> Option<Core> {
        let mut file = File::open(path).ok()?;
        let mut head = [0u8; 64];
        file.read_exact(&mut head).ok()?;
        let mut c = Cursor::new(&head, 0);
        // ELF, 64-bit, little-endian, a core file.
        let ident: [u8; 16] = c.array().ok()?;
        let kind = c.u16().ok()?;
        if &ident[..4] != b"\x7fELF" || ident[4] != 2 || ident[5] != 1 || kind != 4 {
            return None;
        }
        c.skip(0x20 - 18).ok()?;
        let phoff = c.u64().ok()?;
        c.skip(0x36 - 0x28).ok()?;
        let (entsize, count) = (c.u16().ok()?, c.u16().ok()?);
        if entsize < 56 || count == 0 {
            return None;
        }
        let mut table = vec![0u8; usize::from(entsize) * usize::from(count)];
        file.seek(SeekFrom::Start(phoff)).ok()?;
        file.read_exact(&mut table).ok()?;
        let segments = table
            .chunks_exact(usize::from(entsize))
            .filter_map(|h| program_header(h).ok().flatten())
            .collect();
        Some(Core { file, segments })
    }

    /// `len` bytes at address `addr`, when one segment holds them all.
    fn read(&mut self, addr: u64, len: u64) -> Option<Vec<u8>> {
        let end = addr.checked_add(len)?;
        let s = self
            .segments
            .iter()
            .find(|s| addr >= s.addr && s.addr.checked_add(s.size).is_some_and(|e| end <= e))?;
        let mut buf = vec![0u8; usize::try_from(len).ok()?];
        self.file
            .seek(SeekFrom::Start(s.offset.checked_add(addr - s.addr)?))
            .ok()?;
        self.file.read_exact(&mut buf).ok()?;
        Some(buf)
    }

    /// A little-endian `u64` at `addr`.
    fn u64(&mut self, addr: u64) -> Option<u64> {
        Cursor::new(&self.read(addr, 8)?, 0).u64().ok()
    }

    /// A little-endian `u32` at `addr`.
    fn u32(&mut self, addr: u64) -> Option<u32> {
        Cursor::new(&self.read(addr, 4)?, 0).u32().ok()
    }
}

/// A program header's loaded segment (`PT_LOAD`), None for any other kind.
fn program_header(h: &[u8]) -> Result<Option<Segment>, CursorError> {
    let mut c = Cursor::new(h, 0);
    if c.u32()? != 1 {
        return Ok(None);
    }
    c.skip(4)?; // p_flags
    let offset = c.u64()?;
    let addr = c.u64()?;
    c.skip(8)?; // p_paddr
    let size = c.u64()?;
    Ok(Some(Segment { addr, size, offset }))
}

/// The fatal exception's message in the dump at `dump`, from the object the crash report at
/// `report` names.
pub fn message_in_dump(report: &Path, dump: &Path) -> Option<String> {
    let object = exception_object(&std::fs::read(report).ok()?)?;
    exception_message(dump, object)
}

/// The message of the exception object at `object` in the core at `path`.
pub fn exception_message(path: &Path, object: u64) -> Option<String> {
    let mut core = Core::open(path)?;
    let string = core.u64(object.checked_add(MESSAGE_OFFSET)?)?;
    if string == 0 {
        return None;
    }
    let len = core.u32(string.checked_add(8)?)?;
    if len == 0 || len > MAX_CHARS {
        return None;
    }
    let bytes = core.read(string.checked_add(12)?, u64::from(len) * 2)?;
    let mut c = Cursor::new(&bytes, 0);
    let units: Vec<u16> = (0..len).map(|_| c.u16()).collect::<Result<_, _>>().ok()?;
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
        f[16] = 4;
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
        let (dump, report) = (dir.path().join("core"), dir.path().join("r.json"));
        std::fs::write(&dump, core(base, &mem)).unwrap();
        let json = format!(
            r#"{{"payload":{{"threads":[{{"crashed":"true","managed_exception_object":"{base:#x}"}}]}}}}"#
        );
        std::fs::write(&report, json).unwrap();
        assert_eq!(message_in_dump(&report, &dump).as_deref(), Some("ok"));
        // No dump (a report-only capture), no report: nothing.
        assert_eq!(message_in_dump(&report, &dir.path().join("none")), None);
        assert_eq!(message_in_dump(&dir.path().join("none"), &dump), None);
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
