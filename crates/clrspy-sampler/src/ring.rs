//! One thread's perf ring buffer: the mapped pages, reading records without blocking, and
//! parsing `PERF_RECORD_SAMPLE` (tid, time, callchain), `PERF_RECORD_SWITCH` (a thread leaving
//! or coming back to a CPU) and `PERF_RECORD_LOST`.

use crate::Sample;
use std::sync::atomic::{fence, Ordering};

/// Offsets in `struct perf_event_mmap_page` (the first mapped page).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_SWITCH: u32 = 14;
/// `misc` of a switch record: the thread left the CPU (else it came back).
const MISC_SWITCH_OUT: u16 = 1 << 13;
/// `misc` of a switch-out record: it was preempted (still runnable), not blocked.
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;

/// One record of a ring, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record<'a> {
    /// A sample.
    Sample(Sample),
    /// A sample with the user registers and the top of the user stack (context switches).
    StackSample(Sample, UserStack<'a>),
    /// The thread left its CPU (`preempted`: still runnable) or came back, at `time_ns`.
    Switch {
        /// True when it left.
        out: bool,
        /// True when it left preempted (runnable), not blocked.
        preempted: bool,
        /// When, `CLOCK_MONOTONIC` ns.
        time_ns: u64,
    },
}
/// The registers and the copied top of the stack of a sample taken with
/// `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserStack<'a> {
    /// The registers (absent when the sample was taken in a kernel thread's context).
    pub(crate) regs: Option<crate::unwind::Regs>,
    /// The stack from `regs.sp` up, as much as the kernel copied (borrowed from the ring's
    /// scratch buffer: no copy per sample).
    pub(crate) copy: &'a [u8],
}

/// Callchain entries at or above this value are context markers (`PERF_CONTEXT_*`).
const PERF_CONTEXT_MAX: u64 = u64::MAX - 4095 + 1;

/// A mapped ring: one metadata page followed by `data_len` bytes (a power of two).
pub(crate) struct Ring {
    base: *mut u8,
    map_len: usize,
    page: usize,
    data_len: usize,
    tail: u64,
    scratch: Vec<u8>,
    /// Samples carry user registers and stack ([`UserStack`]).
    user_stack: bool,
    /// Samples carry user registers only (their stack pointer goes to [`Sample::sp`]).
    user_regs: bool,
    /// Only this process's samples are kept (a ring of a whole CPU's event).
    only_pid: Option<u32>,
}

// SAFETY: the mapping is owned by this value alone; moving it to another thread is sound.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring of perf event `fd` with `data_pages` (a power of two) data pages.
    pub(crate) fn map(fd: i32, data_pages: usize) -> std::io::Result<Ring> {
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page = usize::try_from(page).unwrap_or(4096).max(4096);
        let map_len = page * (1 + data_pages);
        // SAFETY: a fresh shared mapping of the event's fd; the kernel checks the length.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Ring {
            base: base.cast(),
            map_len,
            page,
            data_len: page * data_pages,
            tail: 0,
            scratch: Vec::new(),
            user_stack: false,
            user_regs: false,
            only_pid: None,
        })
    }

    /// Marks the ring's samples as carrying user registers and stack (see
    /// [`parse_sample_with_stack`]).
    pub(crate) fn with_user_stack(mut self) -> Ring {
        self.user_stack = true;
        self
    }

    /// Keeps only process `pid`'s samples (a whole CPU's ring holds every process's).
    pub(crate) fn only_of(mut self, pid: u32) -> Ring {
        self.only_pid = Some(pid);
        self
    }

    /// Marks the ring's samples as carrying user registers, no stack (see
    /// [`parse_sample_with_regs`]).
    pub(crate) fn with_user_regs(mut self) -> Ring {
        self.user_regs = true;
        self
    }

    /// Reads every complete record now in the ring; samples go to `out`. Returns the number
    /// of samples the kernel reported lost.
    pub(crate) fn drain(&mut self, out: &mut Vec<Sample>) -> u64 {
        self.drain_records(|r| {
            if let Record::Sample(s) = r {
                out.push(s);
            }
        })
    }

    /// Reads every complete record now in the ring, in order, handing each to `each`.
    /// Returns the number of records the kernel reported lost.
    pub(crate) fn drain_records(&mut self, mut each: impl FnMut(Record<'_>)) -> u64 {
        // SAFETY: DATA_HEAD lies in the metadata page, 8-aligned; the kernel writes it.
        let head = unsafe { std::ptr::read_volatile(self.base.add(DATA_HEAD).cast::<u64>()) };
        fence(Ordering::Acquire);
        let mut lost = 0u64;
        while self.tail + 8 <= head {
            let mut header = [0u8; 8];
            self.copy_out(self.tail, &mut header);
            let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
            let misc = u16::from_ne_bytes([header[4], header[5]]);
            let size = u64::from(u16::from_ne_bytes([header[6], header[7]]));
            if size < 8 || self.tail + size > head {
                // A malformed or partial record: skip to the head rather than loop.
                self.tail = head;
                break;
            }
            if kind == PERF_RECORD_SAMPLE {
                if let Some(pid) = self.only_pid {
                    // The sample's pid leads its body: another process's is skipped unread.
                    let mut who = [0u8; 4];
                    self.copy_out(self.tail + 8, &mut who);
                    if size < 12 || u32::from_ne_bytes(who) != pid {
                        self.tail += size;
                        continue;
                    }
                }
            }
            let mut body = std::mem::take(&mut self.scratch);
            body.resize(usize::try_from(size - 8).unwrap_or(0), 0);
            self.copy_out(self.tail + 8, &mut body);
            match kind {
                PERF_RECORD_SAMPLE if self.user_stack => {
                    if let Some((s, u)) = parse_sample_with_stack(&body) {
                        each(Record::StackSample(s, u));
                    }
                }
                PERF_RECORD_SAMPLE if self.user_regs => {
                    if let Some(s) = parse_sample_with_regs(&body) {
                        each(Record::Sample(s));
                    }
                }
                PERF_RECORD_SAMPLE => {
                    if let Some(s) = parse_sample(&body) {
                        each(Record::Sample(s));
                    }
                }
                PERF_RECORD_SWITCH => {
                    if let Some(r) = parse_switch(misc, &body) {
                        each(r);
                    }
                }
                PERF_RECORD_LOST => lost += read_u64(&body, 8).unwrap_or(0),
                _ => {}
            }
            self.scratch = body;
            self.tail += size;
        }
        fence(Ordering::Release);
        // SAFETY: DATA_TAIL lies in the metadata page, 8-aligned; the kernel reads it.
        unsafe { std::ptr::write_volatile(self.base.add(DATA_TAIL).cast::<u64>(), self.tail) };
        lost
    }

    /// Copies `dst.len()` bytes from ring position `pos` (wrapping).
    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let mask = self.data_len - 1;
        let start = usize::try_from(pos).unwrap_or(0) & mask;
        let first = dst.len().min(self.data_len - start);
        // SAFETY: both ranges lie inside the data area of the mapping (start < data_len,
        // first <= data_len - start, and the rest wraps to the area's beginning).
        unsafe {
            let data = self.base.add(self.page);
            std::ptr::copy_nonoverlapping(data.add(start), dst.as_mut_ptr(), first);
            let rest = dst.len() - first;
            if rest > 0 {
                std::ptr::copy_nonoverlapping(
                    data,
                    dst.as_mut_ptr().add(first),
                    rest.min(self.data_len),
                );
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `map` with this length and is unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

/// Parses the body of a sample taken with `PERF_SAMPLE_TID | TIME | CALLCHAIN`:
/// `pid u32, tid u32, time u64, nr u64, ips[nr]`.
pub(crate) fn parse_sample(body: &[u8]) -> Option<Sample> {
    let tid = read_u32(body, 4)?;
    let time_ns = read_u64(body, 8)?;
    let nr = read_u64(body, 16)?;
    let nr = usize::try_from(nr).ok()?;
    if nr > (body.len().saturating_sub(24)) / 8 {
        return None;
    }
    let frames = (0..nr)
        .filter_map(|i| read_u64(body, 24 + 8 * i))
        .filter(|&ip| ip < PERF_CONTEXT_MAX && ip != 0)
        .collect();
    Some(Sample {
        tid,
        time_ns,
        frames,
        sp: 0,
    })
}

/// Parses a sample taken with `PERF_SAMPLE_TID | TIME | CALLCHAIN | REGS_USER` (registers
/// [`crate::unwind::REGS_MASK`]): after the callchain, `abi u64` and, when it is not 0, the
/// three registers, of which the stack pointer is kept.
pub(crate) fn parse_sample_with_regs(body: &[u8]) -> Option<Sample> {
    let mut sample = parse_sample(body)?;
    let nr = usize::try_from(read_u64(body, 16)?).ok()?;
    let at = 24 + 8 * nr;
    if read_u64(body, at)? != 0 {
        sample.sp = read_u64(body, at + 16)?;
    }
    Some(sample)
}

/// Parses a sample taken with `PERF_SAMPLE_TID | TIME | CALLCHAIN | REGS_USER | STACK_USER`
/// (registers [`crate::unwind::REGS_MASK`]): after the callchain, `abi u64` and the three
/// registers when `abi` is not 0, then `size u64, data[size], dyn_size u64`.
pub(crate) fn parse_sample_with_stack(body: &[u8]) -> Option<(Sample, UserStack<'_>)> {
    let sample = parse_sample(body)?;
    let nr = usize::try_from(read_u64(body, 16)?).ok()?;
    let mut at = 24 + 8 * nr;
    let abi = read_u64(body, at)?;
    at += 8;
    let regs = if abi != 0 {
        let r = crate::unwind::Regs {
            bp: read_u64(body, at)?,
            sp: read_u64(body, at + 8)?,
            ip: read_u64(body, at + 16)?,
        };
        at += 24;
        Some(r)
    } else {
        None
    };
    let size = usize::try_from(read_u64(body, at)?).ok()?;
    at += 8;
    let copy = if size == 0 {
        &[][..]
    } else {
        let dyn_size = usize::try_from(read_u64(body, at.checked_add(size)?)?).ok()?;
        body.get(at..at + dyn_size.min(size))?
    };
    Some((sample, UserStack { regs, copy }))
}

/// Parses a switch record's body: with `sample_id_all` and `PERF_SAMPLE_TID | TIME`, its
/// sample id is `pid u32, tid u32, time u64`.
pub(crate) fn parse_switch(misc: u16, body: &[u8]) -> Option<Record<'static>> {
    let time_ns = read_u64(body, 8)?;
    let out = misc & MISC_SWITCH_OUT != 0;
    Some(Record::Switch {
        out,
        preempted: out && misc & MISC_SWITCH_OUT_PREEMPT != 0,
        time_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_switch_records() {
        let mut b = Vec::new();
        b.extend_from_slice(&7u32.to_ne_bytes());
        b.extend_from_slice(&8u32.to_ne_bytes());
        b.extend_from_slice(&99u64.to_ne_bytes());
        let r = parse_switch(MISC_SWITCH_OUT | MISC_SWITCH_OUT_PREEMPT, &b);
        assert_eq!(
            r,
            Some(Record::Switch {
                out: true,
                preempted: true,
                time_ns: 99
            })
        );
        let back = parse_switch(MISC_SWITCH_OUT_PREEMPT, &b);
        assert!(matches!(
            back,
            Some(Record::Switch {
                out: false,
                preempted: false,
                ..
            })
        ));
        assert!(parse_switch(0, &b[..12]).is_none());
    }

    fn body(tid: u32, time: u64, ips: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&7u32.to_ne_bytes());
        b.extend_from_slice(&tid.to_ne_bytes());
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&(ips.len() as u64).to_ne_bytes());
        for ip in ips {
            b.extend_from_slice(&ip.to_ne_bytes());
        }
        b
    }

    #[test]
    fn parses_a_sample_and_drops_context_markers() {
        let user_marker = u64::MAX - 511; // PERF_CONTEXT_USER
        let s = parse_sample(&body(42, 1234, &[user_marker, 0x1000, 0x2000])).unwrap();
        assert_eq!(
            s,
            Sample {
                tid: 42,
                time_ns: 1234,
                frames: vec![0x1000, 0x2000],
                sp: 0,
            }
        );
    }

    #[test]
    fn refuses_a_callchain_longer_than_its_record() {
        let mut b = body(1, 2, &[0x10]);
        b[16..24].copy_from_slice(&1000u64.to_ne_bytes());
        assert!(parse_sample(&b).is_none());
        assert!(parse_sample(&b[..10]).is_none());
    }

    #[test]
    fn parses_registers_and_the_stack_copy_and_refuses_short_ones() {
        let mut b = body(5, 9, &[0x1000, 0x2000]);
        b.extend_from_slice(&2u64.to_ne_bytes()); // abi: 64-bit
        for r in [0x7ff0u64, 0x7f00, 0x1000] {
            b.extend_from_slice(&r.to_ne_bytes());
        }
        b.extend_from_slice(&16u64.to_ne_bytes());
        b.extend_from_slice(&[0xAB; 16]);
        b.extend_from_slice(&12u64.to_ne_bytes()); // dyn_size: 12 of the 16 copied
        let (s, u) = parse_sample_with_stack(&b).unwrap();
        assert_eq!((s.tid, s.frames.len()), (5, 2));
        let r = u.regs.unwrap();
        assert_eq!((r.bp, r.sp, r.ip), (0x7ff0, 0x7f00, 0x1000));
        assert_eq!(u.copy, &[0xAB; 12][..]);
        // Cut anywhere: None, never a panic.
        for cut in 0..b.len() {
            let _ = parse_sample_with_stack(&b[..cut]);
        }
        assert!(parse_sample_with_stack(&b[..b.len() - 8]).is_none());
        // A kernel thread's sample: abi 0, no registers; no stack asked for.
        let mut k = body(5, 9, &[]);
        k.extend_from_slice(&0u64.to_ne_bytes());
        k.extend_from_slice(&0u64.to_ne_bytes());
        let (_, u) = parse_sample_with_stack(&k).unwrap();
        assert!(u.regs.is_none() && u.copy.is_empty());
    }
}
