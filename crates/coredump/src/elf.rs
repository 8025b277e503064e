//! The ELF core file of a Linux process: its memory (the `PT_LOAD` segments), its threads and
//! their registers (`NT_PRSTATUS`), the files it had mapped (`NT_FILE`) and its name
//! (`NT_PRPSINFO`). Every offset and count is checked against the file: a damaged core is an
//! error that says where, never a panic.
//!
//! Memory a core does not hold (the code and metadata of a mapped image, left out of most
//! dumps) is read from the image on this machine when the core names it, it is still there and
//! its first page, where the core has it, is the same.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use crate::source::{CoreBytes, Packing};
use crate::Error;

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
const NT_FILE: u32 = 0x4649_4c45;
/// More than this many program headers is not a core (createdump writes tens of thousands).
const MAX_SEGMENTS: u64 = 4_000_000;
/// Notes larger than this are not a process's.
const MAX_NOTES: u64 = 256 << 20;

/// The processor a core is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// x86-64.
    X64,
    /// AArch64.
    Arm64,
}

/// One thread of the core: its id and its general registers as the kernel lists them
/// (`user_regs_struct`: 27 on x86-64, 34 on arm64).
#[derive(Clone, Debug)]
pub struct CoreThread {
    /// The thread's id (its OS id).
    pub tid: u32,
    /// The registers, in the kernel's order.
    pub regs: Vec<u64>,
}

/// A file the process had mapped.
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Offset in the file, in bytes.
    pub(crate) offset: u64,
    pub(crate) path: String,
}

#[derive(Clone, Copy, Debug)]
struct Load {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

/// A core file, open.
pub struct Core {
    bytes: CoreBytes,
    /// Its processor.
    pub machine: Machine,
    /// The process id (from the first thread's status).
    pub pid: u32,
    /// The process's name as the kernel kept it (16 bytes at most).
    pub command: String,
    /// Every thread, the one that was current first.
    pub threads: Vec<CoreThread>,
    loads: Vec<Load>,
    /// The size the headers give the file (the end of its last segment).
    described: u64,
    pub(crate) files: Vec<Mapping>,
    /// Images on this machine opened to stand in for memory the core lacks (None: refused).
    images: Mutex<HashMap<String, Option<File>>>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_le_bytes(a)
    })
}

impl Core {
    /// Opens the core at `path` (raw, seekable zstd, zstd or gzip).
    pub fn open(path: &Path) -> Result<Core, Error> {
        let bytes = CoreBytes::open(path).map_err(|e| Error::Io(path.display().to_string(), e))?;
        Core::parse(bytes)
    }

    /// A raw core already in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Core, Error> {
        Core::parse(CoreBytes::from_vec(bytes))
    }

    fn parse(bytes: CoreBytes) -> Result<Core, Error> {
        let bad = |why: String| Error::NotACore(why);
        let mut head = [0u8; 64];
        let n = bytes.read_at(0, &mut head).map_err(Error::read)?;
        if n < 64 || head[0..4] != [0x7f, b'E', b'L', b'F'] {
            return Err(bad("it does not start with an ELF header".into()));
        }
        if head[4] != 2 || head[5] != 1 {
            return Err(bad(
                "it is not a 64-bit little-endian ELF file (only x64 and arm64 cores are read)"
                    .into(),
            ));
        }
        if u16_at(&head, 16) != 4 {
            return Err(bad(format!(
                "it is an ELF file of type {}, not a core (type 4)",
                u16_at(&head, 16)
            )));
        }
        let machine = match u16_at(&head, 18) {
            62 => Machine::X64,
            183 => Machine::Arm64,
            m => {
                return Err(bad(format!(
                    "its machine is {m}, not x64 (62) or arm64 (183)"
                )))
            }
        };
        let phoff = u64_at(&head, 32);
        let shoff = u64_at(&head, 40);
        let phentsize = u64::from(u16_at(&head, 54));
        let mut phnum = u64::from(u16_at(&head, 56));
        if phentsize != 56 {
            return Err(bad(format!(
                "its program headers are {phentsize} bytes, not 56"
            )));
        }
        if phnum == 0xffff {
            // PN_XNUM: the count is in the first section header's sh_info.
            let mut sh = [0u8; 64];
            if bytes.read_at(shoff, &mut sh).map_err(Error::read)? < 64 {
                return Err(bad(format!(
                    "it has over 65,534 segments but no section header at offset {shoff}"
                )));
            }
            phnum = u64::from(u32_at(&sh, 44));
        }
        if phnum > MAX_SEGMENTS || phoff.saturating_add(phnum * 56) > bytes.len() {
            return Err(bad(format!(
                "its {phnum} program headers at offset {phoff} run past its end ({} bytes): truncated?",
                bytes.len()
            )));
        }
        let mut table = vec![0u8; (phnum * 56) as usize];
        bytes.read_at(phoff, &mut table).map_err(Error::read)?;
        let mut loads = Vec::new();
        let mut notes = Vec::new();
        let mut described = 0u64;
        for ph in table.chunks_exact(56) {
            let (kind, offset, vaddr, filesz, memsz) = (
                u32_at(ph, 0),
                u64_at(ph, 8),
                u64_at(ph, 16),
                u64_at(ph, 32),
                u64_at(ph, 40),
            );
            if kind == PT_LOAD || kind == PT_NOTE {
                described = described.max(offset.saturating_add(filesz));
            }
            match kind {
                PT_LOAD if memsz > 0 => loads.push(Load {
                    vaddr,
                    offset,
                    // What the file does not hold of a segment (a truncated core) is not there.
                    filesz: filesz.min(bytes.len().saturating_sub(offset)),
                }),
                PT_NOTE => {
                    if filesz > MAX_NOTES || offset.saturating_add(filesz) > bytes.len() {
                        return Err(bad(format!(
                            "its notes ({filesz} bytes at offset {offset}) run past its end: truncated?"
                        )));
                    }
                    let mut n = vec![0u8; filesz as usize];
                    bytes.read_at(offset, &mut n).map_err(Error::read)?;
                    notes.push(n);
                }
                _ => {}
            }
        }
        loads.sort_by_key(|l| l.vaddr);
        let mut core = Core {
            bytes,
            machine,
            pid: 0,
            command: String::new(),
            threads: Vec::new(),
            loads,
            described,
            files: Vec::new(),
            images: Mutex::new(HashMap::new()),
        };
        for n in &notes {
            core.read_notes(n);
        }
        if core.threads.is_empty() {
            return Err(bad("it lists no thread (no NT_PRSTATUS note)".into()));
        }
        Ok(core)
    }

    fn read_notes(&mut self, mut b: &[u8]) {
        let pad = |n: usize| (n + 3) & !3;
        while b.len() >= 12 {
            let namesz = u32_at(b, 0) as usize;
            let descsz = u32_at(b, 4) as usize;
            let kind = u32_at(b, 8);
            let desc_at = 12 + pad(namesz);
            let Some(desc) = desc_at
                .checked_add(descsz)
                .and_then(|end| b.get(desc_at..end))
            else {
                return;
            };
            let name = b.get(12..12 + namesz.saturating_sub(1)).unwrap_or(&[]);
            if name == b"CORE" {
                match kind {
                    NT_PRSTATUS => self.thread_status(desc),
                    NT_PRPSINFO => {
                        let fname = desc.get(40..56).unwrap_or(&[]);
                        let end = fname.iter().position(|&c| c == 0).unwrap_or(fname.len());
                        self.command = String::from_utf8_lossy(&fname[..end]).into_owned();
                    }
                    NT_FILE => self.mapped_files(desc),
                    _ => {}
                }
            }
            let next = desc_at + pad(descsz);
            b = b.get(next..).unwrap_or(&[]);
        }
    }

    fn thread_status(&mut self, d: &[u8]) {
        let tid = u32_at(d, 32);
        let count = match self.machine {
            Machine::X64 => 27,
            Machine::Arm64 => 34,
        };
        let regs: Vec<u64> = (0..count).map(|i| u64_at(d, 112 + 8 * i)).collect();
        if self.pid == 0 {
            self.pid = tid;
        }
        self.threads.push(CoreThread { tid, regs });
    }

    fn mapped_files(&mut self, d: &[u8]) {
        let count = u64_at(d, 0) as usize;
        let page = u64_at(d, 8);
        let Some(names_at) = count.checked_mul(24).and_then(|n| n.checked_add(16)) else {
            return;
        };
        let mut names = d.get(names_at..).unwrap_or(&[]).split(|&c| c == 0);
        for i in 0..count {
            let e = 16 + 24 * i;
            let Some(name) = names.next() else { break };
            self.files.push(Mapping {
                start: u64_at(d, e),
                end: u64_at(d, e + 8),
                offset: u64_at(d, e + 16).saturating_mul(page),
                path: String::from_utf8_lossy(name).into_owned(),
            });
        }
    }

    /// When the file is shorter than its headers say (a copy or a write cut short): the bytes
    /// it holds and the bytes it should.
    pub fn cut_short(&self) -> Option<(u64, u64)> {
        (self.bytes.len() < self.described).then_some((self.bytes.len(), self.described))
    }

    /// How the file was packed.
    pub fn packing(&self) -> Packing {
        self.bytes.packing()
    }

    /// Bytes of the process's memory the core holds.
    pub fn memory_bytes(&self) -> u64 {
        self.loads.iter().map(|l| l.filesz).sum()
    }

    /// Reads the process's memory at `addr` into `buf`; the bytes read (from the start of
    /// `buf`, stopping at the first byte the core does not hold, nor an image on this machine).
    pub fn read_virtual(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        while done < buf.len() {
            let at = addr.wrapping_add(done as u64);
            let n = self.read_segment(at, &mut buf[done..]);
            let n = if n == 0 {
                self.read_image(at, &mut buf[done..])
            } else {
                n
            };
            if n == 0 {
                break;
            }
            done += n;
        }
        done
    }

    /// Like [`Core::read_virtual`], from the core alone (no image on this machine stands in).
    pub fn read_held(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_segment(addr.wrapping_add(done as u64), &mut buf[done..]);
            if n == 0 {
                break;
            }
            done += n;
        }
        done
    }

    fn read_segment(&self, at: u64, buf: &mut [u8]) -> usize {
        let i = self.loads.partition_point(|l| l.vaddr <= at);
        let Some(l) = i.checked_sub(1).and_then(|i| self.loads.get(i)) else {
            return 0;
        };
        let into = at - l.vaddr;
        if into >= l.filesz {
            return 0;
        }
        let n = (buf.len() as u64).min(l.filesz - into) as usize;
        self.bytes
            .read_at(l.offset + into, &mut buf[..n])
            .unwrap_or(0)
    }

    fn read_image(&self, at: u64, buf: &mut [u8]) -> usize {
        let Some(m) = self.files.iter().find(|m| m.start <= at && at < m.end) else {
            return 0;
        };
        let mut images = self.images.lock().unwrap_or_else(|p| p.into_inner());
        let file = images
            .entry(m.path.clone())
            .or_insert_with(|| self.same_image(&m.path));
        let Some(file) = file else { return 0 };
        let n = (buf.len() as u64).min(m.end - at) as usize;
        file.read_at(&mut buf[..n], m.offset + (at - m.start))
            .unwrap_or(0)
    }

    /// The image at `path` on this machine, when it is a regular file and its first page
    /// matches the core's copy (where the core holds one).
    fn same_image(&self, path: &str) -> Option<File> {
        let lower = path.to_ascii_lowercase();
        if !(lower.ends_with(".dll") || lower.ends_with(".so") || lower.ends_with(".exe")) {
            return None;
        }
        let file = File::open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let first = self
            .files
            .iter()
            .find(|m| m.path == path && m.offset == 0)?;
        let mut ours = [0u8; 512];
        let mut theirs = [0u8; 512];
        let held = self.read_segment(first.start, &mut ours);
        if held > 0 {
            let got = file.read_at(&mut theirs[..held], 0).ok()?;
            if got != held || ours[..held] != theirs[..held] {
                return None;
            }
        }
        Some(file)
    }

    /// Where the first image whose file name is `name` (case-insensitive) was mapped.
    pub fn image_base(&self, name: &str) -> Option<u64> {
        let want = name.rsplit('/').next().unwrap_or(name);
        self.files
            .iter()
            .filter(|m| m.offset == 0)
            .find(|m| {
                m.path
                    .rsplit('/')
                    .next()
                    .is_some_and(|f| f.eq_ignore_ascii_case(want))
            })
            .map(|m| m.start)
    }

    /// The path of the first mapped file whose name is `name`.
    pub fn image_path(&self, name: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|m| m.path.rsplit('/').next() == Some(name))
            .map(|m| m.path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal x64 core: one thread, one load of 16 bytes, one mapped file.
    pub(crate) fn tiny_core() -> Vec<u8> {
        let mut notes = Vec::new();
        let mut note = |kind: u32, desc: &[u8]| {
            notes.extend(5u32.to_le_bytes());
            notes.extend((desc.len() as u32).to_le_bytes());
            notes.extend(kind.to_le_bytes());
            notes.extend(b"CORE\0\0\0\0");
            notes.extend(desc);
            while notes.len() % 4 != 0 {
                notes.push(0);
            }
        };
        let mut status = vec![0u8; 112 + 27 * 8];
        status[32..36].copy_from_slice(&4242u32.to_le_bytes());
        status[112 + 16 * 8..112 + 17 * 8].copy_from_slice(&0x1234u64.to_le_bytes());
        note(NT_PRSTATUS, &status);
        let mut files = Vec::new();
        files.extend(1u64.to_le_bytes());
        files.extend(4096u64.to_le_bytes());
        files.extend(0x10000u64.to_le_bytes());
        files.extend(0x20000u64.to_le_bytes());
        files.extend(0u64.to_le_bytes());
        files.extend(b"/nonexistent/libcoreclr.so\0");
        note(NT_FILE, &files);
        let phoff = 64u64;
        let notes_at = phoff + 2 * 56;
        let load_at = notes_at + notes.len() as u64;
        let mut f = vec![0u8; 64];
        f[0..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[16..18].copy_from_slice(&4u16.to_le_bytes());
        f[18..20].copy_from_slice(&62u16.to_le_bytes());
        f[32..40].copy_from_slice(&phoff.to_le_bytes());
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&2u16.to_le_bytes());
        let ph = |kind: u32, offset: u64, vaddr: u64, size: u64| {
            let mut p = vec![0u8; 56];
            p[0..4].copy_from_slice(&kind.to_le_bytes());
            p[8..16].copy_from_slice(&offset.to_le_bytes());
            p[16..24].copy_from_slice(&vaddr.to_le_bytes());
            p[32..40].copy_from_slice(&size.to_le_bytes());
            p[40..48].copy_from_slice(&size.to_le_bytes());
            p
        };
        f.extend(ph(PT_NOTE, notes_at, 0, notes.len() as u64));
        f.extend(ph(PT_LOAD, load_at, 0x10000, 16));
        f.extend(&notes);
        f.extend(0..16u8);
        f
    }

    #[test]
    fn a_core_gives_its_threads_memory_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("core");
        std::fs::write(&p, tiny_core()).unwrap();
        let c = Core::open(&p).unwrap();
        assert_eq!(c.machine, Machine::X64);
        assert_eq!((c.pid, c.threads.len()), (4242, 1));
        assert_eq!(c.threads[0].regs[16], 0x1234);
        let mut b = [0u8; 8];
        assert_eq!(c.read_virtual(0x10004, &mut b), 8);
        assert_eq!(b, [4, 5, 6, 7, 8, 9, 10, 11]);
        // Past the segment: the file named is not on this machine.
        assert_eq!(c.read_virtual(0x1000c, &mut b), 4);
        assert_eq!(c.read_virtual(0x9000, &mut b), 0);
        assert_eq!(c.image_base("LIBCORECLR.so"), Some(0x10000));
    }

    #[test]
    fn every_truncation_and_bit_flip_is_an_error_or_a_core_never_a_panic() {
        let good = tiny_core();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("core");
        for cut in 0..good.len() {
            std::fs::write(&p, &good[..cut]).unwrap();
            if let Ok(c) = Core::open(&p) {
                let mut b = [0u8; 32];
                c.read_virtual(0x10000, &mut b);
            }
        }
        for i in 0..good.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= bit;
                std::fs::write(&p, &bad).unwrap();
                if let Ok(c) = Core::open(&p) {
                    let mut b = [0u8; 32];
                    c.read_virtual(0x10000, &mut b);
                }
            }
        }
        std::fs::write(&p, b"not a core at all, just text").unwrap();
        let e = Core::open(&p).err().unwrap().to_string();
        assert!(e.contains("ELF header"), "{e}");
    }
}
