//! The Linux sampler: a `cpu-clock` perf event per thread of the target, opened with
//! `perf_event_open`, each with its own ring buffer; new threads found by rescanning
//! `/proc/PID/task`.

use crate::ring::{Record, Ring};
use crate::unwind::Unwinder;
use crate::{Counts, Error, Refusal, Sample, Wait};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
const PERF_SAMPLE_REGS_USER: u64 = 1 << 12;
const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
/// The top of the stack copied into each context-switch sample: enough for the libc frames a
/// blocked thread stops in (see [`crate::unwind`]).
const WAIT_STACK_COPY: u32 = 4096;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_EXCLUDE_IDLE: u64 = 1 << 7;
const FLAG_FREQ: u64 = 1 << 10;
const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
const FLAG_EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
const FLAG_USE_CLOCKID: u64 = 1 << 25;
const FLAG_CONTEXT_SWITCH: u64 = 1 << 26;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// Data pages per thread's ring (32 KiB with 4 KiB pages: ~250 deep samples).
const DATA_PAGES: usize = 8;
/// Data pages of a thread's ring of waits (a stack and two switch records per wait): 1 MiB,
/// ~200 waits. With half that, a bursty web load (80 connections on a pool that blocks) lost
/// records in 2 runs of 3 once the CPU samples stopped slowing every switch (per-CPU
/// events); only the pages a thread's waits fill are ever touched.
const WAIT_PAGES: usize = 256;

/// `struct perf_event_attr` up to `sig_data` (PERF_ATTR_SIZE_VER8, 128 bytes).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_freq: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved2: u16,
    aux_sample_size: u32,
    reserved3: u32,
    sig_data: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 128);

/// One sampled thread: its CPU-sample event and ring where samples are taken per thread (the
/// ring is unmapped before the fd closes), and its waits' when they are sampled.
struct Thread {
    samples: Option<(Ring, OwnedFd)>,
    waits: Option<WaitEvent>,
}

/// One CPU's `cpu-clock` event, sampling whichever thread runs there (the target's samples
/// kept, the rest skipped), and its ring.
struct CpuEvent {
    ring: Ring,
    _fd: OwnedFd,
}

/// The data pages of all the per-CPU rings together, at most (each between
/// [`CPU_PAGES_MIN`] and [`CPU_PAGES_MAX`], a power of two): 999 samples a second of ~1 KB
/// fill 1 MiB in a second, and the rings are read every 20 ms. 256 KiB a CPU lost 131
/// records once (of about 5,000) under a bursty load of 80 connections, the debug build's
/// drain starved of CPU by the load it recorded; only the pages the samples fill are touched.
const CPU_PAGES_TOTAL: usize = 2048;
const CPU_PAGES_MIN: usize = 16;
const CPU_PAGES_MAX: usize = 256;

/// A thread's context-switch event: a sample (the user stack) each time it leaves its CPU,
/// and the switch records that say when it left and came back.
struct WaitEvent {
    ring: Ring,
    _fd: OwnedFd,
    /// The last switch-out sample, not yet matched with its switch record.
    sample: Option<Left>,
    /// The stack copy of the sample pending (in `sample` or `out`): one buffer, reused.
    copy: Vec<u8>,
    /// Left the CPU: when, preempted or blocked, with which stack.
    out: Option<(u64, bool, Left)>,
    /// A switch of the thread was seen since the event opened (else it may have been off
    /// its CPU all along).
    switched: bool,
    /// The thread was blocked when its event opened: then, and its stack then (until a
    /// switch shows when that wait ended).
    before: Option<(u64, Vec<u64>)>,
}

/// A stack as its thread left the CPU; unwound only once the wait is known to be long enough
/// to keep (or at the end of a drain, while the thread is still off its CPU and its stack
/// can still be read).
struct Left {
    time_ns: u64,
    /// The kernel's chain, or the unwound stack once `unwound`.
    frames: Vec<u64>,
    regs: Option<crate::unwind::Regs>,
    unwound: bool,
}

impl Left {
    /// The stack, unwound from `copy` if it was not yet.
    fn finish(mut self, copy: &[u8], unwinder: &mut Unwinder) -> Vec<u64> {
        match self.regs {
            Some(regs) if !self.unwound => unwinder.repair(self.frames, regs, copy),
            _ => std::mem::take(&mut self.frames),
        }
    }
}

/// Waits shorter than [`crate::MIN_WAIT_NS`]: counted, not kept.
#[derive(Default)]
struct ShortWaits {
    count: u64,
    ns: u64,
}

impl WaitEvent {
    /// Pairs the ring's records into waits of thread `tid` of process `pid` (those shorter
    /// than [`crate::MIN_WAIT_NS`] only counted in `short`); returns the records lost.
    fn drain(
        &mut self,
        (pid, tid): (u32, u32),
        waits: &mut Vec<Wait>,
        unwinder: &mut Unwinder,
        short: &mut ShortWaits,
    ) -> u64 {
        let (sample, out, copy) = (&mut self.sample, &mut self.out, &mut self.copy);
        let (switched, before) = (&mut self.switched, &mut self.before);
        let lost = self.ring.drain_records(|r| match r {
            Record::Sample(s) => {
                *sample = Some(Left {
                    time_ns: s.time_ns,
                    frames: s.frames,
                    regs: None,
                    unwound: true,
                })
            }
            Record::StackSample(s, u) => {
                // A wait still open has lost its switch-in record (a full ring): it ends here
                // unknown, and its copy is overwritten.
                *out = None;
                copy.clear();
                copy.extend_from_slice(u.copy);
                *sample = Some(Left {
                    time_ns: s.time_ns,
                    frames: s.frames,
                    regs: u.regs,
                    unwound: u.regs.is_none(),
                });
            }
            Record::Switch {
                out: true,
                preempted,
                time_ns,
            } => {
                *switched = true;
                // It ran since its event opened: it was not blocked then after all.
                *before = None;
                // The switch-out sample comes just before its record, at the same time.
                let left = match sample.take() {
                    Some(l) if l.time_ns <= time_ns => l,
                    _ => Left {
                        time_ns,
                        frames: Vec::new(),
                        regs: None,
                        unwound: true,
                    },
                };
                *out = Some((time_ns, preempted, left));
            }
            Record::Switch {
                out: false,
                time_ns,
                ..
            } => {
                *switched = true;
                // The first switch back of a thread blocked when its event opened.
                if let Some((start, frames)) = before.take() {
                    if out.is_none() && time_ns > start {
                        waits.push(Wait::blocked_before(tid, time_ns, frames));
                    }
                }
                if let Some((start, preempted, left)) = out.take() {
                    let end = time_ns.max(start);
                    if end - start < crate::MIN_WAIT_NS {
                        short.count += 1;
                        short.ns += end - start;
                        return;
                    }
                    waits.push(Wait {
                        tid,
                        start_ns: start,
                        end_ns: end,
                        preempted,
                        frames: left.finish(copy, unwinder),
                    });
                }
            }
        });
        // A thread off its CPU now: its stack is still the one it left with, and can be read
        // deeper than the copy.
        if let Some((_, _, left)) = self.out.as_mut() {
            if let (Some(regs), false) = (left.regs, left.unwound) {
                left.frames = unwinder.repair(std::mem::take(&mut left.frames), regs, &self.copy);
                left.unwound = true;
            } else if left.frames.is_empty() && left.regs.is_none() {
                // Its switch-out sample was lost (a full ring: two threads handing work back
                // and forth switch thousands of times a second, and each sample holds a
                // stack copy): while it is still blocked, the stack it left with is the one
                // the kernel shows now. (Should it have run and blocked again since the
                // ring's head was read, this is its new wait's stack: rare, and close.)
                if let Some(Some(regs)) = blocked_regs(pid, tid) {
                    left.frames = unwinder.stack_now(regs);
                }
            }
        }
        lost
    }
}

/// CPU samples of every thread of one process, taken by the kernel.
///
/// ```no_run
/// let mut sampler = clrspy_sampler::Sampler::open(1234, clrspy_sampler::DEFAULT_RATE_HZ)?;
/// let mut samples = Vec::new();
/// loop {
///     std::thread::sleep(std::time::Duration::from_millis(100));
///     sampler.follow_threads()?;
///     sampler.drain(&mut samples)?;
/// #   break;
/// }
/// # Ok::<(), clrspy_sampler::Error>(())
/// ```
pub struct Sampler {
    pid: u32,
    rate_hz: u32,
    threads: BTreeMap<u32, Thread>,
    /// One event per CPU the process may run on, where the kernel allows events on a whole
    /// CPU (root, CAP_PERFMON or `perf_event_paranoid` ≤ 0): then no thread has a sample
    /// event of its own. Empty otherwise.
    cpus: Vec<CpuEvent>,
    /// Threads the last [`Sampler::follow_threads`] did not list: ended.
    ended: Vec<u32>,
    counts: Counts,
    /// Samples are taken in user mode only: the kernel refused samples in kernel mode
    /// (`perf_event_paranoid` ≥ 2 without CAP_PERFMON), so CPU spent in system calls and
    /// page faults is not sampled.
    user_only: bool,
    /// Waits are sampled (asked for, and the kernel allowed them).
    with_waits: bool,
    /// Why waits asked for are not sampled.
    waits_refused: Option<String>,
    /// Waits drained, not yet taken.
    waits: Vec<Wait>,
    /// Repairs the waits' stacks the kernel's frame-pointer walk lost in libc.
    unwinder: Unwinder,
    /// Waits too short to keep.
    short: ShortWaits,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("pid", &self.pid)
            .field("rate_hz", &self.rate_hz)
            .field("threads", &self.threads.len())
            .field("counts", &self.counts)
            .finish()
    }
}

impl Sampler {
    /// Starts sampling every current thread of `pid` at `rate_hz` samples per second per
    /// thread on a CPU. Refusal by the kernel is [`Error::Refused`].
    pub fn open(pid: u32, rate_hz: u32) -> Result<Sampler, Error> {
        Sampler::open_with(pid, rate_hz, false)
    }

    /// [`Sampler::open`], and with `waits` each thread's waits too: every time it leaves its
    /// CPU, its user stack and how long until it comes back ([`Sampler::take_waits`]). Waits
    /// need samples in kernel mode (root or CAP_PERFMON where `perf_event_paranoid` is 2);
    /// when refused, CPU samples go on and [`Sampler::waits_refused`] says why.
    pub fn open_with(pid: u32, rate_hz: u32, waits: bool) -> Result<Sampler, Error> {
        Sampler::open_as(pid, rate_hz, waits, true)
    }

    /// [`Sampler::open_with`]; with `per_cpu` false, each thread has its own sample event
    /// even where events on a whole CPU are allowed.
    fn open_as(pid: u32, rate_hz: u32, waits: bool, per_cpu: bool) -> Result<Sampler, Error> {
        let mut sampler = Sampler {
            pid,
            rate_hz: rate_hz.max(1),
            threads: BTreeMap::new(),
            cpus: Vec::new(),
            ended: Vec::new(),
            counts: Counts::default(),
            user_only: false,
            with_waits: waits,
            waits_refused: None,
            waits: Vec::new(),
            unwinder: Unwinder::new(pid),
            short: ShortWaits::default(),
        };
        if per_cpu {
            sampler.cpus = open_cpus(pid, sampler.rate_hz);
        }
        sampler.follow_threads()?;
        if sampler.threads.is_empty() {
            return Err(Error::NoThreads { pid });
        }
        Ok(sampler)
    }

    /// Opens events for threads born since the last call (threads that ended are dropped
    /// after their last samples are drained). Returns how many threads were added.
    pub fn follow_threads(&mut self) -> Result<usize, Error> {
        let dir = format!("/proc/{}/task", self.pid);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(_) if !self.threads.is_empty() => return Ok(0),
            Err(_) => return Err(Error::NoThreads { pid: self.pid }),
        };
        let mut added = 0;
        let mut listed = std::collections::BTreeSet::new();
        for entry in entries.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            listed.insert(tid);
            if self.threads.contains_key(&tid) {
                continue;
            }
            match self.open_thread(tid) {
                Ok(mut t) => {
                    // Blocked already: its stack now, for the wait it is in.
                    if let Some(w) = t.waits.as_mut() {
                        w.before = blocked_regs(self.pid, tid).map(|regs| {
                            let frames = regs.map(|r| self.unwinder.stack_now(r));
                            (monotonic_ns(), frames.unwrap_or_default())
                        });
                    }
                    self.threads.insert(tid, t);
                    self.counts.threads += 1;
                    added += 1;
                }
                // The thread ended between the listing and the open.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => return Err(self.classify(e, tid)),
            }
        }
        // Threads no longer listed ended: closed at the next drain, after their last samples.
        self.ended = self
            .threads
            .keys()
            .filter(|t| !listed.contains(t))
            .copied()
            .collect();
        Ok(added)
    }

    /// Moves every sample now in the rings to `out` without blocking; returns how many.
    pub fn drain(&mut self, out: &mut Vec<Sample>) -> Result<usize, Error> {
        let before = out.len();
        for c in &mut self.cpus {
            self.counts.lost += c.ring.drain(out);
        }
        for (tid, t) in self.threads.iter_mut() {
            if let Some((ring, _)) = t.samples.as_mut() {
                self.counts.lost += ring.drain(out);
            }
            if let Some(w) = t.waits.as_mut() {
                self.counts.lost += w.drain(
                    (self.pid, *tid),
                    &mut self.waits,
                    &mut self.unwinder,
                    &mut self.short,
                );
            }
        }
        let n = out.len() - before;
        self.counts.samples += n as u64;
        self.counts.short_waits = self.short.count;
        self.counts.short_wait_ns = self.short.ns;
        // Threads that ended (the last listing missed them): their rings are drained, close
        // them. One that left its CPU and never came back (a thread blocked when its process
        // exited) waited until about now.
        let now_ns = monotonic_ns();
        for tid in std::mem::take(&mut self.ended) {
            let Some(mut t) = self.threads.remove(&tid) else {
                continue;
            };
            if let Some(w) = t.waits.as_mut() {
                if let Some((_, frames)) = w.before.take() {
                    self.waits.push(Wait::blocked_before(tid, now_ns, frames));
                }
                if let Some((start, preempted, left)) = w.out.take() {
                    let frames = left.finish(&w.copy, &mut self.unwinder);
                    self.waits.push(Wait {
                        tid,
                        start_ns: start,
                        end_ns: now_ns.max(start),
                        preempted,
                        frames,
                    });
                }
            }
        }
        Ok(n)
    }

    /// Mends the frames the kernel's frame-pointer walk gets wrong in on-stack-replaced
    /// (OSR) code: where frame `i` is OSR code and frame `i + 1` the pseudo return address
    /// into the same method's Tier0 code (`osr_pair(frames[i], frames[i + 1])` says so), the
    /// walk skipped the method's real caller. That frame is replaced by the return address
    /// into the caller, read from the thread's stack now (see `osr.rs`); where it
    /// cannot be read (the thread has left the method since, no stack pointer, memory not
    /// readable) the pseudo frame is dropped, so the method is shown once, its caller
    /// missing. Returns how many callers were found.
    pub fn repair_osr(
        &mut self,
        sample: &mut Sample,
        osr_pair: impl Fn(u64, u64) -> bool,
    ) -> usize {
        crate::osr::repair(&mut self.unwinder, sample, osr_pair)
    }

    /// The sampling rate asked for: samples per second per thread on a CPU.
    pub fn rate_hz(&self) -> u32 {
        self.rate_hz
    }

    /// How many CPUs are sampled by one event each (filtered to the process); 0 when each
    /// thread has its own event (the kernel refused events on a whole CPU).
    #[cfg(test)]
    pub(crate) fn per_cpu(&self) -> usize {
        self.cpus.len()
    }

    /// Moves the waits drained so far (by [`Sampler::drain`]) to `out`, in no order; returns
    /// how many. A wait still going on (a thread blocked now) is not among them, nor waits
    /// shorter than [`crate::MIN_WAIT_NS`] (only counted: [`Counts::short_waits`]).
    pub fn take_waits(&mut self, out: &mut Vec<Wait>) -> usize {
        let n = self.waits.len();
        out.append(&mut self.waits);
        n
    }

    /// The waits going on now, as if they ended at `now_ns` (for the end of a recording,
    /// after a last [`Sampler::drain`]): each thread off its CPU since it left while sampled
    /// (its stack as it left), and each thread blocked since before its event opened (no
    /// switch seen: a deadlock older than the recording), with the stack unwound when its
    /// event opened (else now) from the registers the kernel shows for it
    /// (`/proc/PID/task/TID/syscall`; no frames where that is refused), and `start_ns` 0
    /// (unknown). Returns how many.
    pub fn waits_going_on(&mut self, now_ns: u64, out: &mut Vec<Wait>) -> usize {
        let before = out.len();
        for (&tid, t) in self.threads.iter_mut() {
            let Some(w) = t.waits.as_mut() else {
                continue;
            };
            match w.out.take() {
                Some((start, preempted, left)) => {
                    let frames = left.finish(&w.copy, &mut self.unwinder);
                    out.push(Wait {
                        tid,
                        start_ns: start,
                        end_ns: now_ns.max(start),
                        preempted,
                        frames,
                    });
                }
                None if w.before.is_some() || !w.switched => {
                    // Its stack when its event opened, else now.
                    let frames = match w.before.take() {
                        Some((_, frames)) => frames,
                        None => match blocked_regs(self.pid, tid) {
                            Some(Some(regs)) => self.unwinder.stack_now(regs),
                            Some(None) => Vec::new(),
                            None => continue,
                        },
                    };
                    out.push(Wait::blocked_before(tid, now_ns, frames));
                }
                None => {}
            }
        }
        out.len() - before
    }

    /// The threads blocked now (off their CPU and not runnable): each wait going on as of the
    /// last [`Sampler::drain`], not ended, as (thread, when it left, the stack it left with);
    /// a thread blocked since before its event opened has 0 for when it left.
    pub fn blocked_now(&self, out: &mut Vec<(u32, u64, Vec<u64>)>) {
        for (&tid, t) in &self.threads {
            let Some(w) = t.waits.as_ref() else {
                continue;
            };
            match (&w.out, &w.before) {
                (Some((start, false, left)), _) => out.push((tid, *start, left.frames.clone())),
                (None, Some((_, frames))) => out.push((tid, 0, frames.clone())),
                _ => {}
            }
        }
    }

    /// True when waits are sampled.
    pub fn samples_waits(&self) -> bool {
        self.with_waits
    }

    /// Why waits were asked for and are not sampled (the kernel refused kernel-mode samples),
    /// with how to allow them.
    pub fn waits_refused(&self) -> Option<&str> {
        self.waits_refused.as_deref()
    }

    /// Samples handed out, samples lost and threads opened so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// True when the samples are taken in user mode only (the kernel refused kernel-mode
    /// samples: `perf_event_paranoid` ≥ 2 without CAP_PERFMON): a thread's CPU in system
    /// calls and page faults then has no samples. Otherwise a sample taken in the kernel
    /// carries the user stack that entered it (its kernel frames are never collected).
    pub fn user_mode_only(&self) -> bool {
        self.user_only
    }

    /// Opens `tid`'s event: with samples in kernel mode too, unless the kernel refused them
    /// once (then user mode only from there on).
    fn open_thread(&mut self, tid: u32) -> std::io::Result<Thread> {
        let mut thread = None;
        if !self.cpus.is_empty() {
            // Sampled by the CPUs' events; kernel mode is allowed (events on a CPU need more).
            thread = Some(Thread {
                samples: None,
                waits: None,
            });
        } else if !self.user_only {
            match self.open_thread_as(tid, false) {
                Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
                    self.user_only = true;
                }
                r => thread = Some(r?),
            }
        }
        let mut thread = match thread {
            Some(t) => t,
            None => self.open_thread_as(tid, true)?,
        };
        if self.with_waits && self.user_only {
            self.with_waits = false;
            self.waits_refused = Some(
                "waits need samples in kernel mode, which kernel.perf_event_paranoid refuses \
                 without CAP_PERFMON: run clrspy as root or give it CAP_PERFMON, or set \
                 `sysctl kernel.perf_event_paranoid=1`"
                    .into(),
            );
        }
        if self.with_waits {
            match self.open_waits(tid) {
                Ok(w) => thread.waits = Some(w),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Err(e),
                Err(e) => {
                    self.with_waits = false;
                    self.waits_refused =
                        Some(format!("the kernel refused context-switch samples: {e}"));
                }
            }
        }
        Ok(thread)
    }

    /// Opens `tid`'s context-switch event: a sample with the user stack at every switch (the
    /// period is one), and switch records for when it left and came back.
    fn open_waits(&self, tid: u32) -> std::io::Result<WaitEvent> {
        let mut attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CONTEXT_SWITCHES,
            sample_freq: 1,
            sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
            flags: FLAG_EXCLUDE_HV
                | FLAG_EXCLUDE_CALLCHAIN_KERNEL
                | FLAG_USE_CLOCKID
                | FLAG_SAMPLE_ID_ALL
                | FLAG_CONTEXT_SWITCH,
            clockid: libc::CLOCK_MONOTONIC,
            ..PerfEventAttr::default()
        };
        // On x86-64 the registers and the top of the stack come too, for the unwinder.
        let user_stack = cfg!(target_arch = "x86_64");
        if user_stack {
            attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
            attr.sample_regs_user = crate::unwind::REGS_MASK;
            attr.sample_stack_user = WAIT_STACK_COPY;
        }
        let fd = perf_event_open(&attr, tid)?;
        let ring = Ring::map(fd.as_raw_fd(), WAIT_PAGES)?;
        let ring = if user_stack {
            ring.with_user_stack()
        } else {
            ring
        };
        Ok(WaitEvent {
            ring,
            _fd: fd,
            sample: None,
            copy: Vec::new(),
            out: None,
            switched: false,
            before: None,
        })
    }

    fn open_thread_as(&self, tid: u32, user_only: bool) -> std::io::Result<Thread> {
        // Kernel callchains are never asked for: only the user stack names code.
        let mut flags =
            FLAG_EXCLUDE_HV | FLAG_FREQ | FLAG_EXCLUDE_CALLCHAIN_KERNEL | FLAG_USE_CLOCKID;
        if user_only {
            flags |= FLAG_EXCLUDE_KERNEL;
        }
        let mut attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_freq: u64::from(self.rate_hz),
            sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
            flags,
            clockid: libc::CLOCK_MONOTONIC,
            ..PerfEventAttr::default()
        };
        // On x86-64 the registers come too (24 bytes): the stack pointer, for the frames of
        // on-stack-replaced methods the frame-pointer walk skips (`Sampler::repair_osr`).
        let regs = cfg!(target_arch = "x86_64");
        if regs {
            attr.sample_type |= PERF_SAMPLE_REGS_USER;
            attr.sample_regs_user = crate::unwind::REGS_MASK;
        }
        let fd = perf_event_open(&attr, tid)?;
        let ring = Ring::map(fd.as_raw_fd(), DATA_PAGES)?;
        let ring = if regs { ring.with_user_regs() } else { ring };
        Ok(Thread {
            samples: Some((ring, fd)),
            waits: None,
        })
    }

    fn classify(&self, e: std::io::Error, tid: u32) -> Error {
        let reason = match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => match paranoid() {
                Some(level) if level > 2 => Refusal::Paranoid(level),
                _ => Refusal::Permission,
            },
            Some(libc::ENOSYS) => Refusal::NoSyscall,
            _ => {
                return Error::Os {
                    what: format!("perf_event_open for thread {tid} of process {}", self.pid),
                    source: e,
                }
            }
        };
        Error::Refused {
            pid: self.pid,
            reason,
        }
    }
}

/// For a thread of `pid` blocked now (state S or D): Some, with its user registers where the
/// kernel shows them (`/proc/PID/task/TID/syscall`: the stack and instruction pointers; the
/// frame pointer is not shown, and left 0); None for a thread running, runnable or gone.
fn blocked_regs(pid: u32, tid: u32) -> Option<Option<crate::unwind::Regs>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    if !matches!(
        diagnostics_client::procfs::parse_stat(&stat)?.state,
        'S' | 'D'
    ) {
        return None;
    }
    let regs = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall"))
        .ok()
        .and_then(|line| syscall_regs(&line));
    Some(regs)
}

/// The stack and instruction pointers of a `/proc/PID/task/TID/syscall` line ("NR ARGS… SP
/// PC", or "-1 SP PC" outside a system call); None for "running" or anything else.
fn syscall_regs(line: &str) -> Option<crate::unwind::Regs> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 3 || words[0] == "running" {
        return None;
    }
    let hex = |w: &str| u64::from_str_radix(w.strip_prefix("0x")?, 16).ok();
    let sp = hex(words[words.len() - 2])?;
    let ip = hex(words[words.len() - 1])?;
    (sp != 0 && ip != 0).then_some(crate::unwind::Regs { bp: 0, sp, ip })
}

/// `CLOCK_MONOTONIC` now, in ns (the samples' clock); 0 if it cannot be read.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// One `cpu-clock` event per CPU `pid` may run on, each with its ring, keeping only `pid`'s
/// samples: a timer that runs on whatever the CPU does, so a thread's samples come at the
/// rate asked however often it is scheduled, and a context switch costs the kernel nothing
/// (a thread's own timer event is stopped and started at each one: on a virtual machine that
/// reprograms the timer, ~8 µs per switch measured, more than the switch). Empty where the
/// kernel refuses events on a whole CPU (root, CAP_PERFMON or `perf_event_paranoid` ≤ 0
/// allow them) or any CPU's cannot be had: then each thread gets its own event.
fn open_cpus(pid: u32, rate_hz: u32) -> Vec<CpuEvent> {
    let cpus = allowed_cpus(pid);
    if cpus.is_empty() {
        return Vec::new();
    }
    let pages = (CPU_PAGES_TOTAL / cpus.len())
        .clamp(CPU_PAGES_MIN, CPU_PAGES_MAX)
        .next_power_of_two()
        .min(CPU_PAGES_MAX);
    let mut attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_freq: u64::from(rate_hz.max(1)),
        sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
        flags: FLAG_EXCLUDE_HV
            | FLAG_EXCLUDE_IDLE
            | FLAG_FREQ
            | FLAG_EXCLUDE_CALLCHAIN_KERNEL
            | FLAG_USE_CLOCKID,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    let regs = cfg!(target_arch = "x86_64");
    if regs {
        attr.sample_type |= PERF_SAMPLE_REGS_USER;
        attr.sample_regs_user = crate::unwind::REGS_MASK;
    }
    let mut out = Vec::with_capacity(cpus.len());
    for cpu in cpus {
        let Ok(fd) = perf_event_open_on(&attr, -1, cpu) else {
            return Vec::new();
        };
        let Ok(ring) = Ring::map(fd.as_raw_fd(), pages) else {
            return Vec::new();
        };
        let ring = if regs { ring.with_user_regs() } else { ring };
        out.push(CpuEvent {
            ring: ring.only_of(pid),
            _fd: fd,
        });
    }
    out
}

/// The CPUs `pid` may run on (`Cpus_allowed_list` of its main thread: a container's cpuset,
/// `taskset`), else every CPU online; empty when neither can be read.
fn allowed_cpus(pid: u32) -> Vec<i32> {
    let allowed = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| l.trim().to_string())
        });
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    let parsed = |list: Option<String>| list.map(|l| cpu_list(&l)).unwrap_or_default();
    let online = parsed(online);
    let allowed = parsed(allowed);
    if allowed.is_empty() {
        return online;
    }
    if online.is_empty() {
        return allowed;
    }
    allowed.into_iter().filter(|c| online.contains(c)).collect()
}

/// A kernel CPU list ("0-3,8,10-11"); empty when malformed.
fn cpu_list(list: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.trim().parse::<i32>(), b.trim().parse::<i32>()) else {
            return Vec::new();
        };
        if a < 0 || b < a || b - a > 65_536 {
            return Vec::new();
        }
        out.extend(a..=b);
    }
    out
}

/// Opens the perf event `attr` on thread `tid` (any CPU, no group, close-on-exec).
fn perf_event_open(attr: &PerfEventAttr, tid: u32) -> std::io::Result<OwnedFd> {
    let tid =
        libc::pid_t::try_from(tid).map_err(|_| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    perf_event_open_on(attr, tid, -1)
}

/// Opens the perf event `attr` on thread `tid` (-1: every thread) and CPU `cpu` (-1: any),
/// no group, close-on-exec.
fn perf_event_open_on(
    attr: &PerfEventAttr,
    tid: libc::pid_t,
    cpu: libc::c_int,
) -> std::io::Result<OwnedFd> {
    // SAFETY: attr is a valid perf_event_attr of the size it declares; the other arguments
    // are plain values (a thread or all, a CPU or any, no group).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            tid,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| std::io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned this fd to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `kernel.perf_event_paranoid`, when readable.
fn paranoid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
#[path = "linux_tests.rs"]
mod tests;
