//! Unwinding a stack the kernel's frame-pointer walk gave up on (x86-64). A thread blocked in
//! a system call is stopped inside libc, whose functions are built without frame pointers and
//! use `rbp` for data: the kernel's walk from there ends at once or wanders off, so waits had
//! no callers. With the registers and the top of the stack the kernel copies into each
//! context-switch sample, the libc frames (any module with `.eh_frame`) are stepped through
//! by their call frame information (gimli); code without it (JIT'd methods) by its frame
//! pointers. Where a frame found so meets the kernel's chain (whose frame-pointer walk is
//! right again past libc), the rest of that chain is taken as it is; only when none does is
//! the stack deeper than the copy read from the target (`process_vm_readv`), if the copy
//! still matches it (the thread has not moved since) and the kernel lets us. Each module
//! address's unwinding rule is kept once found: a blocked thread waits in a few places.

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
    pub(crate) bp: u64,
    /// `rsp`.
    pub(crate) sp: u64,
    /// `rip`.
    pub(crate) ip: u64,
}

/// `sample_regs_user` for [`Regs`]: BP, SP, IP.
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// The most of the target's stack read past the sample's copy.
const READ_MAX: usize = 64 * 1024;
/// The most frames one stack gets.
const MAX_FRAMES: usize = 256;
/// How often the target's mappings may be read again for an address not in them (a frame
/// pointer that was data asks too, so not every time: reading a .NET process's maps costs
/// 0.1 ms for 265 lines; the runtime maps ReadyToRun images and JIT'd code as it starts, so
/// not seldom either: a stack walked with mappings a second old ended at the first frame in
/// an image loaded since).
const MAPS_EVERY: Duration = Duration::from_millis(100);
/// How old the mappings may be for a stack read now ([`Unwinder::stack_now`], for a thread
/// as its event opens or at the end: rare, and often a thread just born).
const MAPS_FRESH: Duration = Duration::from_millis(5);
/// The most unwinding rules kept (then they are forgotten and found again).
const RULES_MAX: usize = 1 << 16;

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
    /// Its module's call frame information and load bias, once looked up (None inside: it
    /// has none).
    cfi: Option<Option<(Arc<Cfi>, u64)>>,
}

/// How to find the caller's registers at one address, from its call frame information.
#[derive(Debug, Clone, Copy)]
struct Rule {
    /// The CFA is `rbp + cfa_offset` (else `rsp + cfa_offset`).
    cfa_from_bp: bool,
    cfa_offset: i64,
    /// The return address is saved at `CFA + ra_offset`.
    ra_offset: i64,
    bp: BpRule,
}

/// Where the caller's `rbp` is.
#[derive(Debug, Clone, Copy)]
enum BpRule {
    /// Unchanged.
    Same,
    /// Saved at `CFA + n`.
    SavedAt(i64),
    /// Is `CFA + n`.
    Is(i64),
}

/// Where the stack's bytes come from: `base` is the address of `bytes[0]`.
struct Stack<'a> {
    base: u64,
    bytes: &'a [u8],
}

impl Stack<'_> {
    /// True when `addr` lies past the bytes held (a deeper read may have it).
    fn past_end(&self, addr: u64) -> bool {
        addr.checked_sub(self.base)
            .and_then(|at| usize::try_from(at).ok())
            .is_some_and(|at| at.saturating_add(8) > self.bytes.len())
    }

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
    /// Addresses in no mapping even after a read of the maps.
    unmapped: diagnostics_client::procfs::Unmapped,
    files: HashMap<PathBuf, Option<Arc<Cfi>>>,
    /// (module's information, address in the file) → its rule (None: none usable).
    rules: HashMap<(usize, u64), Option<Rule>>,
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
            unmapped: Default::default(),
            files: HashMap::new(),
            rules: HashMap::new(),
            ctx: Box::new(UnwindContext::new()),
            can_read: true,
            buf: Vec::new(),
        }
    }

    /// The stack at a context switch: `kernel` is the kernel's frame-pointer callchain,
    /// `regs` and `copy` (the stack from `regs.sp` up) what the sample carried. Returns the
    /// kernel's chain when it agrees with a first step by the call frame information (it is
    /// then right); else the frames stepped here up to where they meet the kernel's chain,
    /// then the rest of it (on the copy, or on the stack read deeper when the copy ran out
    /// first); else the longer of the stack unwound here and the kernel's.
    pub(crate) fn repair(&mut self, kernel: Vec<u64>, regs: Regs, copy: &[u8]) -> Vec<u64> {
        let top = Stack {
            base: regs.sp,
            bytes: copy,
        };
        let first = self.walk(regs, &top, 2, &[]).frames;
        if first.len() < 2 || kernel.get(1) == first.get(1) {
            return kernel;
        }
        let on_copy = self.walk(regs, &top, MAX_FRAMES, &kernel);
        if !on_copy.short {
            return choose(on_copy, kernel);
        }
        let mut buf = std::mem::take(&mut self.buf);
        let whole = self.read_stack(regs.sp, copy, &mut buf);
        let walk = if whole {
            let stack = Stack {
                base: regs.sp,
                bytes: &buf,
            };
            self.walk(regs, &stack, MAX_FRAMES, &kernel)
        } else {
            on_copy
        };
        self.buf = buf;
        choose(walk, kernel)
    }

    /// The stack of a thread stopped now at `regs` (blocked, so its stack holds still while
    /// it is read): read from the target and unwound; just `regs.ip` when it cannot be read.
    pub(crate) fn stack_now(&mut self, regs: Regs) -> Vec<u64> {
        if self.maps_read.is_none_or(|t| t.elapsed() >= MAPS_FRESH) {
            self.read_maps();
        }
        let mut buf = std::mem::take(&mut self.buf);
        let frames = if self.read_at(regs.sp, &mut buf) {
            let stack = Stack {
                base: regs.sp,
                bytes: &buf,
            };
            self.walk(regs, &stack, MAX_FRAMES, &[]).frames
        } else {
            vec![regs.ip]
        };
        self.buf = buf;
        frames
    }

    /// Reads the target's stack from `sp` into `buf` (at most [`READ_MAX`] bytes, fewer at
    /// the stack's top); false when it cannot be read.
    fn read_at(&mut self, sp: u64, buf: &mut Vec<u8>) -> bool {
        self.read_len(sp, READ_MAX, buf)
    }

    /// Reads at most `len` bytes of the target's memory at `addr` into `buf`; false when
    /// nothing can be read.
    pub(crate) fn read_len(&mut self, addr: u64, len: usize, buf: &mut Vec<u8>) -> bool {
        if !self.can_read || addr == 0 {
            return false;
        }
        buf.resize(len, 0);
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
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
            buf.clear();
            return false;
        }
        buf.truncate(n as usize);
        true
    }

    /// Reads the target's stack from `sp` into `buf` when its start still equals `copy`
    /// (the thread has not run on since the sample); false when it cannot be had.
    fn read_stack(&mut self, sp: u64, copy: &[u8], buf: &mut Vec<u8>) -> bool {
        if copy.is_empty() || !self.read_at(sp, buf) {
            return false;
        }
        buf.len() >= copy.len() && buf[..copy.len()] == *copy
    }

    /// Steps from `regs` through at most `max` frames; where a frame is one of `join`'s
    /// (past its first), the rest of `join` follows it.
    fn walk(&mut self, regs: Regs, stack: &Stack<'_>, max: usize, join: &[u64]) -> Walk {
        let mut w = Walk {
            frames: vec![regs.ip],
            joined: false,
            short: false,
        };
        let mut r = regs;
        while w.frames.len() < max {
            let leaf = w.frames.len() == 1;
            let Some(next) = self.step(r, stack, leaf, &mut w.short) else {
                break;
            };
            // Not code (a frame pointer that was data): the stack ends here.
            if next.ip < 0x1000 || next.sp <= r.sp || !self.is_code(next.ip) {
                break;
            }
            w.frames.push(next.ip);
            if let Some(k) = join.iter().skip(1).position(|&ip| ip == next.ip) {
                let room = max.saturating_sub(w.frames.len());
                w.frames.extend(join.iter().skip(k + 2).take(room));
                w.joined = true;
                break;
            }
            r = next;
        }
        w
    }

    /// The caller's registers: by the module's call frame information when it has some for
    /// the address, else by the frame pointer. `short` is set when a read fell past the
    /// stack's bytes.
    fn step(&mut self, r: Regs, stack: &Stack<'_>, leaf: bool, short: &mut bool) -> Option<Regs> {
        // A return address points after its call: look up the call itself.
        let pc = if leaf { r.ip } else { r.ip.wrapping_sub(1) };
        let read = |addr: u64, short: &mut bool| {
            let v = stack.u64_at(addr);
            if v.is_none() && stack.past_end(addr) {
                *short = true;
            }
            v
        };
        if let Some(rule) = self.rule_for(pc) {
            let cfa_base = if rule.cfa_from_bp { r.bp } else { r.sp };
            let cfa = cfa_base.checked_add_signed(rule.cfa_offset)?;
            let ip = read(cfa.checked_add_signed(rule.ra_offset)?, short)?;
            let bp = match rule.bp {
                BpRule::Same => r.bp,
                BpRule::SavedAt(n) => read(cfa.checked_add_signed(n)?, short)?,
                BpRule::Is(n) => cfa.checked_add_signed(n)?,
            };
            return Some(Regs { bp, sp: cfa, ip });
        }
        // Frame pointers: [bp] is the caller's bp, [bp + 8] the return address.
        if r.bp < r.sp {
            return None;
        }
        Some(Regs {
            bp: read(r.bp, short)?,
            ip: read(r.bp.checked_add(8)?, short)?,
            sp: r.bp.checked_add(16)?,
        })
    }

    /// The unwinding rule at `pc` by its module's call frame information, found once.
    fn rule_for(&mut self, pc: u64) -> Option<Rule> {
        let (cfi, bias) = self.cfi_for(pc)?;
        let key = (Arc::as_ptr(&cfi) as usize, pc.wrapping_sub(bias));
        if let Some(r) = self.rules.get(&key) {
            return *r;
        }
        let rule = self.find_rule(&cfi, key.1);
        if self.rules.len() >= RULES_MAX {
            self.rules.clear();
        }
        self.rules.insert(key, rule);
        rule
    }

    /// The rule for address `svma` of the module's file, from its `.eh_frame`.
    fn find_rule(&mut self, cfi: &Cfi, svma: u64) -> Option<Rule> {
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
        let (cfa_from_bp, cfa_offset) = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => match *register {
                X86_64::RSP => (false, *offset),
                X86_64::RBP => (true, *offset),
                _ => return None,
            },
            CfaRule::Expression(_) => return None,
        };
        let ra_offset = match row.register(X86_64::RA) {
            Some(RegisterRule::Offset(n)) => n,
            _ => return None,
        };
        let bp = match row.register(X86_64::RBP) {
            Some(RegisterRule::Offset(n)) => BpRule::SavedAt(n),
            Some(RegisterRule::ValOffset(n)) => BpRule::Is(n),
            None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => BpRule::Same,
            Some(_) => return None,
        };
        Some(Rule {
            cfa_from_bp,
            cfa_offset,
            ra_offset,
            bp,
        })
    }

    /// The call frame information of the module mapped at `pc` and the module's load bias
    /// (its address in the file is `pc - bias`); None for code without a file (JIT'd).
    fn cfi_for(&mut self, pc: u64) -> Option<(Arc<Cfi>, u64)> {
        if !self.is_code(pc) {
            return None;
        }
        let i = self.mapping_index(pc)?;
        if let Some(known) = &self.maps[i].cfi {
            return known.clone();
        }
        let found = self.module_cfi(i);
        self.maps[i].cfi = Some(found.clone());
        found
    }

    /// Looks up the call frame information of mapping `i`'s module (read once per file).
    fn module_cfi(&mut self, i: usize) -> Option<(Arc<Cfi>, u64)> {
        let m = &self.maps[i];
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
    pub(crate) fn is_code(&mut self, pc: u64) -> bool {
        if self.mapping_index(pc).is_some() {
            return true;
        }
        if self.unmapped.contains(pc) || self.maps_read.is_some_and(|t| t.elapsed() < MAPS_EVERY) {
            return false;
        }
        self.read_maps();
        let found = self.mapping_index(pc).is_some();
        if !found {
            self.unmapped.insert(pc);
        }
        found
    }

    fn mapping_index(&self, pc: u64) -> Option<usize> {
        let i = self
            .maps
            .partition_point(|m| m.start <= pc)
            .checked_sub(1)?;
        (pc < self.maps.get(i)?.end).then_some(i)
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

/// One walk's frames; `joined` when it met the chain it was given, `short` when it stopped
/// for want of the stack's bytes.
struct Walk {
    frames: Vec<u64>,
    joined: bool,
    short: bool,
}

/// The stack unwound here when it met the kernel's chain (it then has the kernel's right
/// frames and not its wrong ones) or is the longer; else the kernel's.
fn choose(ours: Walk, kernel: Vec<u64>) -> Vec<u64> {
    if ours.joined || ours.frames.len() > kernel.len() {
        ours.frames
    } else {
        kernel
    }
}

/// One executable line of `/proc/PID/maps`; the path only for a file still there (not a
/// memfd, nor deleted).
fn parse_map_line(line: &str) -> Option<Mapping> {
    let m = diagnostics_client::procfs::parse_maps_line(line)?;
    // The vDSO's tables are read from clrspy's own image (the same as the target's).
    let path = match m.path {
        diagnostics_client::procfs::VDSO => Some(PathBuf::from(m.path)),
        _ => m.file().map(PathBuf::from),
    };
    m.executable().then_some(Mapping {
        start: m.start,
        end: m.end,
        offset: m.offset,
        path,
        cfi: None,
    })
}

/// The largest module whose unwinding tables are read.
const MAX_MODULE_BYTES: u64 = 1 << 30;

/// Reads a module's `.eh_frame`, `.eh_frame_hdr` and segments (through the target's root, so
/// a container's files are its own); None when it has none or cannot be read.
fn load_cfi(pid: u32, path: &std::path::Path) -> Option<Cfi> {
    if path == std::path::Path::new(diagnostics_client::procfs::VDSO) {
        return cfi_of(&*diagnostics_client::procfs::own_vdso_image()?);
    }
    // The process's own file (a container's), never through a link it planted; only the
    // parts the call frame information is in are read (a runtime library is megabytes).
    let file = diagnostics_client::rooted::open_in_root(pid, path, MAX_MODULE_BYTES).ok()?;
    cfi_of(&object::ReadCache::new(file))
}

/// The call frame information of an ELF file.
fn cfi_of<'d, R: object::ReadRef<'d>>(data: R) -> Option<Cfi> {
    use object::{Object, ObjectSection, ObjectSegment};
    let file = object::File::parse(data).ok()?;
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
pub(crate) mod tests {
    use super::*;

    /// A page of executable memory in this process with no file (as JIT'd code is): its
    /// addresses are code the unwinder steps through by frame pointers.
    pub(crate) fn anonymous_code() -> u64 {
        // SAFETY: a fresh private mapping, never unmapped (the test's process ends soon).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as u64
    }

    /// A stack of frame records at `base`: record i at `base + 16 + 32 i` holds the next
    /// record's address and return address `ips[i]`.
    fn frames_stack(base: u64, ips: &[u64]) -> Vec<u8> {
        let mut b = vec![0u8; 16 + 32 * ips.len() + 16];
        for (i, ip) in ips.iter().enumerate() {
            let at = 16 + 32 * i;
            let next = base + 16 + 32 * (i as u64 + 1);
            b[at..at + 8].copy_from_slice(&next.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&ip.to_le_bytes());
        }
        b
    }

    #[test]
    fn frames_meet_the_kernels_chain_and_take_its_rest() {
        let code = anonymous_code();
        let x: Vec<u64> = (0..6).map(|i| code + 0x100 * (i + 1)).collect();
        let base = 0x7000_0000u64;
        let bytes = frames_stack(base, &x[1..4]);
        let regs = Regs {
            ip: x[0],
            sp: base,
            bp: base + 16,
        };
        let mut u = Unwinder::new(std::process::id());
        // The kernel's chain went wrong after the leaf (garbage), then right again at x[2].
        let kernel = vec![x[0], 0xdead_0000, x[2], x[3], x[5]];
        let stack = Stack {
            base,
            bytes: &bytes,
        };
        let w = u.walk(regs, &stack, MAX_FRAMES, &kernel);
        assert!(w.joined);
        assert_eq!(w.frames, vec![x[0], x[1], x[2], x[3], x[5]]);
        assert_eq!(choose(w, kernel), vec![x[0], x[1], x[2], x[3], x[5]]);
        // A chain it never meets: it walks the records, and says when the bytes ran out.
        let w = u.walk(regs, &stack, MAX_FRAMES, &[x[0], 0xdead_0000]);
        assert!(!w.joined);
        assert_eq!(w.frames, x[..4].to_vec());
        let cut = Stack {
            base,
            bytes: &bytes[..40],
        };
        let w = u.walk(regs, &cut, MAX_FRAMES, &[]);
        assert!(w.short && !w.joined);
        assert_eq!(w.frames, x[..2].to_vec());
    }

    #[test]
    fn a_stack_read_now_sees_code_mapped_since_the_maps_were_read() {
        let mut u = Unwinder::new(std::process::id());
        u.read_maps();
        // Code mapped after the last read (an image the runtime loaded since): the walk of a
        // switch-out copy waits up to MAPS_EVERY to look again, a stack read now does not.
        let code = anonymous_code();
        let x: Vec<u64> = (0..4).map(|i| code + 0x100 * (i + 1)).collect();
        let mut mem = vec![0u8; READ_MAX + 4096];
        let base = mem.as_ptr() as u64;
        let records = frames_stack(base, &x[1..]);
        mem[..records.len()].copy_from_slice(&records);
        let regs = Regs {
            ip: x[0],
            sp: base,
            bp: base + 16,
        };
        let stale = Stack { base, bytes: &mem };
        // As if just read (the walk must not look again yet).
        u.maps_read = Some(Instant::now());
        assert_eq!(u.walk(regs, &stale, MAX_FRAMES, &[]).frames, vec![x[0]]);
        std::thread::sleep(MAPS_FRESH * 2);
        assert_eq!(u.stack_now(regs), x);
    }

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
