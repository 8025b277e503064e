//! Unwinding a stack the kernel's frame-pointer walk gave up on (x86-64). A thread blocked in
//! a system call is stopped inside libc, whose functions are built without frame pointers and
//! use `rbp` for data: the kernel's walk from there ends at once or wanders off, so waits had
//! no callers. With the registers and the top of the stack the kernel copies into each
//! context-switch sample, the libc frames (any module with `.eh_frame`) are stepped through
//! by their call frame information (gimli); code without it (JIT'd methods) by its frame
//! pointers. Deeper than the copy, the stack is read from the target (`process_vm_readv`)
//! when the copy still matches it (the thread has not moved since) and the kernel lets us.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gimli::{
    BaseAddresses, CfaRule, EhFrame, EhFrameHdr, LittleEndian, RegisterRule, UnwindContext,
    UnwindSection, X86_64,
};

/// The registers a context-switch sample carries (x86-64 perf register numbers 6, 7, 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Regs {
    /// `rbp`.
    pub bp: u64,
    /// `rsp`.
    pub sp: u64,
    /// `rip`.
    pub ip: u64,
}

/// `sample_regs_user` for [`Regs`]: BP, SP, IP.
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// The most of the target's stack read past the sample's copy.
const READ_MAX: usize = 64 * 1024;
/// The most frames one stack gets.
const MAX_FRAMES: usize = 256;
/// How often the target's mappings may be read again for an address not in them.
const MAPS_EVERY: Duration = Duration::from_millis(200);

/// One module's call frame information: `.eh_frame` and `.eh_frame_hdr` with their addresses,
/// and its loadable segments (file offset, address, size) to place it in the target.
#[derive(Debug)]
struct Cfi {
    eh_frame: Vec<u8>,
    eh_frame_addr: u64,
    hdr: Vec<u8>,
    hdr_addr: u64,
    text_addr: u64,
    segments: Vec<(u64, u64, u64)>,
}

/// One executable mapping of the target.
#[derive(Debug)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    path: Option<PathBuf>,
}

/// Where the stack's bytes come from: `base` is the address of `bytes[0]`.
struct Stack<'a> {
    base: u64,
    bytes: &'a [u8],
}

impl Stack<'_> {
    fn u64_at(&self, addr: u64) -> Option<u64> {
        let at = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        let b = self.bytes.get(at..at.checked_add(8)?)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }
}

/// Unwinds the stacks of one process, keeping what it learnt of its modules.
pub(crate) struct Unwinder {
    pid: u32,
    maps: Vec<Mapping>,
    maps_read: Option<Instant>,
    files: HashMap<PathBuf, Option<Arc<Cfi>>>,
    ctx: Box<UnwindContext<usize>>,
    /// False once the kernel refused to let us read the target's memory.
    can_read: bool,
    buf: Vec<u8>,
}

impl Unwinder {
    /// An unwinder for process `pid` (its mappings are read when first needed).
    pub(crate) fn new(pid: u32) -> Unwinder {
        Unwinder {
            pid,
            maps: Vec::new(),
            maps_read: None,
            files: HashMap::new(),
            ctx: Box::new(UnwindContext::new()),
            can_read: true,
            buf: Vec::new(),
        }
    }

    /// The stack at a context switch: `kernel` is the kernel's frame-pointer callchain,
    /// `regs` and `copy` (the stack from `regs.sp` up) what the sample carried. Returns the
    /// kernel's chain when it agrees with a first step by the call frame information (it is
    /// then right), else the stack unwound here — or the kernel's when that is no longer.
    pub(crate) fn repair(&mut self, kernel: Vec<u64>, regs: Regs, copy: &[u8]) -> Vec<u64> {
        let top = Stack {
            base: regs.sp,
            bytes: copy,
        };
        let first = self.walk(regs, &top, 2);
        if first.len() < 2 || kernel.get(1) == first.get(1) {
            return kernel;
        }
        let mut buf = std::mem::take(&mut self.buf);
        let whole = self.read_stack(regs.sp, copy, &mut buf);
        let stack = Stack {
            base: regs.sp,
            bytes: if whole { &buf } else { copy },
        };
        let frames = self.walk(regs, &stack, MAX_FRAMES);
        self.buf = buf;
        if frames.len() > kernel.len() {
            frames
        } else {
            kernel
        }
    }

    /// Reads the target's stack from `sp` into `buf` when its start still equals `copy`
    /// (the thread has not run on since the sample); false when it cannot be had.
    fn read_stack(&mut self, sp: u64, copy: &[u8], buf: &mut Vec<u8>) -> bool {
        if !self.can_read || copy.is_empty() {
            return false;
        }
        buf.resize(READ_MAX, 0);
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: sp as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: `local` describes `buf`, which lives across the call; the remote range is
        // only read by the kernel, which checks it.
        let n =
            unsafe { libc::process_vm_readv(self.pid as libc::pid_t, &local, 1, &remote, 1, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if matches!(e, Some(libc::EPERM) | Some(libc::ENOSYS)) {
                self.can_read = false;
            }
            return false;
        }
        buf.truncate(n as usize);
        buf.len() >= copy.len() && buf[..copy.len()] == *copy
    }

    /// Steps from `regs` through at most `max` frames.
    fn walk(&mut self, regs: Regs, stack: &Stack<'_>, max: usize) -> Vec<u64> {
        let mut frames = vec![regs.ip];
        let mut r = regs;
        while frames.len() < max {
            let leaf = frames.len() == 1;
            let Some(next) = self.step(r, stack, leaf) else {
                break;
            };
            // Not code (a frame pointer that was data): the stack ends here.
            if next.ip < 0x1000 || next.sp <= r.sp || !self.is_code(next.ip) {
                break;
            }
            frames.push(next.ip);
            r = next;
        }
        frames
    }

    /// The caller's registers: by the module's call frame information when it has some for
    /// the address, else by the frame pointer.
    fn step(&mut self, r: Regs, stack: &Stack<'_>, leaf: bool) -> Option<Regs> {
        // A return address points after its call: look up the call itself.
        let pc = if leaf { r.ip } else { r.ip.wrapping_sub(1) };
        if let Some((cfi, bias)) = self.cfi_for(pc) {
            if let Some(next) = self.step_cfi(&cfi, pc.wrapping_sub(bias), r, stack) {
                return Some(next);
            }
        }
        // Frame pointers: [bp] is the caller's bp, [bp + 8] the return address.
        if r.bp < r.sp {
            return None;
        }
        Some(Regs {
            bp: stack.u64_at(r.bp)?,
            ip: stack.u64_at(r.bp.checked_add(8)?)?,
            sp: r.bp.checked_add(16)?,
        })
    }

    fn step_cfi(&mut self, cfi: &Cfi, svma: u64, r: Regs, stack: &Stack<'_>) -> Option<Regs> {
        let bases = BaseAddresses::default()
            .set_eh_frame_hdr(cfi.hdr_addr)
            .set_eh_frame(cfi.eh_frame_addr)
            .set_text(cfi.text_addr);
        let hdr = EhFrameHdr::new(&cfi.hdr, LittleEndian)
            .parse(&bases, 8)
            .ok()?;
        let table = hdr.table()?;
        let eh = EhFrame::new(&cfi.eh_frame, LittleEndian);
        let row = table
            .unwind_info_for_address(&eh, &bases, &mut self.ctx, svma, EhFrame::cie_from_offset)
            .ok()?;
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => {
                let base = match *register {
                    X86_64::RSP => r.sp,
                    X86_64::RBP => r.bp,
                    _ => return None,
                };
                base.checked_add_signed(*offset)?
            }
            CfaRule::Expression(_) => return None,
        };
        let ip = match row.register(X86_64::RA) {
            Some(RegisterRule::Offset(n)) => stack.u64_at(cfa.checked_add_signed(n)?)?,
            _ => return None,
        };
        let bp = match row.register(X86_64::RBP) {
            Some(RegisterRule::Offset(n)) => stack.u64_at(cfa.checked_add_signed(n)?)?,
            Some(RegisterRule::ValOffset(n)) => cfa.checked_add_signed(n)?,
            None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => r.bp,
            Some(_) => return None,
        };
        Some(Regs { bp, sp: cfa, ip })
    }

    /// The call frame information of the module mapped at `pc` and the module's load bias
    /// (its address in the file is `pc - bias`); None for code without a file (JIT'd).
    fn cfi_for(&mut self, pc: u64) -> Option<(Arc<Cfi>, u64)> {
        if !self.is_code(pc) {
            return None;
        }
        let m = self.mapping(pc)?;
        let (start, offset, path) = (m.start, m.offset, m.path.clone()?);
        let cfi = match self.files.get(&path) {
            Some(c) => c.clone()?,
            None => {
                let c = load_cfi(self.pid, &path).map(Arc::new);
                self.files.insert(path, c.clone());
                c?
            }
        };
        let &(seg_off, seg_addr, _) = cfi
            .segments
            .iter()
            .find(|(o, _, size)| (*o..o.saturating_add(*size)).contains(&offset))?;
        // pc - start + offset is the file offset; a segment maps file offset o at address a.
        let bias = start
            .wrapping_sub(offset)
            .wrapping_add(seg_off)
            .wrapping_sub(seg_addr);
        Some((cfi, bias))
    }

    /// True when `pc` is in an executable mapping of the target (read again, at most every
    /// [`MAPS_EVERY`], when it is in none known: code may have been mapped since).
    fn is_code(&mut self, pc: u64) -> bool {
        if self.mapping(pc).is_none() && self.maps_read.is_none_or(|t| t.elapsed() >= MAPS_EVERY) {
            self.read_maps();
        }
        self.mapping(pc).is_some()
    }

    fn mapping(&self, pc: u64) -> Option<&Mapping> {
        let i = self.maps.partition_point(|m| m.start <= pc);
        self.maps.get(i.checked_sub(1)?).filter(|m| pc < m.end)
    }

    fn read_maps(&mut self) {
        self.maps_read = Some(Instant::now());
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)) else {
            return;
        };
        self.maps = text.lines().filter_map(parse_map_line).collect();
        self.maps.sort_by_key(|m| m.start);
    }
}

/// One executable line of `/proc/PID/maps`: `start-end perms offset dev inode path`; the path
/// only for a file still there (not a memfd, nor deleted).
fn parse_map_line(line: &str) -> Option<Mapping> {
    let mut f = line.split_whitespace();
    let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
    if !perms.contains('x') {
        return None;
    }
    let (s, e) = range.split_once('-')?;
    let path = f
        .nth(2)
        .filter(|p| p.starts_with('/') && !line.ends_with("(deleted)"));
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        path: path.map(PathBuf::from),
    })
}

/// Reads a module's `.eh_frame`, `.eh_frame_hdr` and segments (through the target's root
/// first, so a container's files are its own); None when it has none or cannot be read.
fn load_cfi(pid: u32, path: &std::path::Path) -> Option<Cfi> {
    use object::{Object, ObjectSection, ObjectSegment};
    let rooted = PathBuf::from(format!("/proc/{pid}/root")).join(path.strip_prefix("/").ok()?);
    let data = std::fs::read(&rooted)
        .or_else(|_| std::fs::read(path))
        .ok()?;
    let file = object::File::parse(&*data).ok()?;
    let section = |name: &str| {
        let s = file.section_by_name(name)?;
        Some((s.data().ok()?.to_vec(), s.address()))
    };
    let (eh_frame, eh_frame_addr) = section(".eh_frame")?;
    let (hdr, hdr_addr) = section(".eh_frame_hdr")?;
    let text_addr = file.section_by_name(".text").map_or(0, |s| s.address());
    let segments = file
        .segments()
        .map(|s| {
            let (off, size) = s.file_range();
            (off, s.address(), size)
        })
        .collect();
    Some(Cfi {
        eh_frame,
        eh_frame_addr,
        hdr,
        hdr_addr,
        text_addr,
        segments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_lines() {
        let m = parse_map_line(
            "7f0a1c028000-7f0a1c17d000 r-xp 00028000 fe:01 1049 /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.offset),
            (0x7f0a1c028000, 0x7f0a1c17d000, 0x28000)
        );
        assert_eq!(
            m.path.as_deref(),
            Some(std::path::Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"))
        );
        let jit = parse_map_line(
            "7f0a00000000-7f0a00010000 r-xs 00000000 00:01 5 /memfd:doublemapper (deleted)",
        )
        .unwrap();
        assert!(jit.path.is_none());
        assert!(parse_map_line("7f0a00000000-7f0a00010000 rw-p 00000000 00:00 0").is_none());
        assert!(parse_map_line("garbage").is_none());
    }
}
