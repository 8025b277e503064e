//! The thread CPU readings of a recording and the kernel sampler's drains, on one schedule:
//! each tick queues what is due (threads' CPU, new mappings, ReadyToRun and native names of the
//! stacks' addresses, the cgroup's counters, the recorder's own CPU) and the kernel's samples
//! and waits at their own times, spliced into the sinks that store a trace.

use std::time::{Duration, Instant};

use crate::inject::Injected;
use crate::procstat::{monotonic_ns, own_cpu_ns, thread_cpu_ns, ProcSampler};
use crate::r2r::{R2rRecorder, SharedIps};
use crate::sink::ByteSink;

/// How often the addresses of new samples are named (ReadyToRun code).
const R2R_EVERY: Duration = Duration::from_millis(250);
/// How often the kernel sampler's rings are drained, whatever the readings' interval: a
/// thread's ring holds ~90 ms of deep CPU samples, and ~120 waits (a thread of a busy web
/// app leaves its CPU thousands of times a second, and the recorder itself waits for a CPU).
pub(crate) const KERNEL_DRAIN: Duration = Duration::from_millis(5);
/// How often new threads of the target are looked for (`/proc/PID/task`).
const FOLLOW_EVERY: Duration = Duration::from_millis(20);
/// How long a kernel sample is held before it is stored: long enough for the runtime's events
/// of the same time (the code it ran, compiled just before) to reach the tap.
const SAMPLE_HOLD_NS: u64 = 300_000_000;
/// The shortest interval of the threads' CPU readings beside the kernel sampler: its on-CPU
/// samples already measure CPU; the readings only check them and give states and run-queue
/// time (reading every thread every 20 ms was ~14 % of the recorder's CPU on a web app).
pub(crate) const KERNEL_READINGS: Duration = Duration::from_millis(100);

/// The thread CPU readings, taken on a schedule and spliced into the sinks that store a trace.
pub(crate) struct CpuReadings {
    sampler: ProcSampler,
    /// How often the threads' CPU is read.
    interval: Duration,
    next_readings: Instant,
    /// How often the tick runs: the readings' interval, or the kernel sampler's drain when
    /// that is shorter.
    tick_every: Duration,
    next_tick: Instant,
    next_maps: Instant,
    first: bool,
    /// When the threads' CPU was last read (`CLOCK_MONOTONIC` ns).
    last_read_ns: Option<u64>,
    /// Names of the precompiled code the samples hit.
    r2r: R2rRecorder,
    next_r2r: Instant,
    /// The JIT's inlining of the app's code, when followed ([`CpuReadings::follow_inlines`]).
    inlines: Option<crate::inlines::InlineWatch>,
    /// The cgroup that limits the target's CPU, when found.
    cgroup: Option<crate::cgroup::CpuCgroup>,
    next_cgroup: Instant,
    /// Its last counters stored.
    last_cgroup: Option<crate::cgroup::CpuBandwidth>,
    /// The kernel's CPU samples of the target, when sampled that way.
    kernel: Option<KernelSamples>,
    /// Rounds taken, not yet stored (held [`SAMPLE_HOLD_NS`] beside the kernel sampler).
    pending: std::collections::VecDeque<Round>,
    hold_ns: u64,
    /// The code addresses of the stacks, to be named (shared with `r2r`).
    ips: SharedIps,
}

/// The kernel sampler of a recording and what it drains.
struct KernelSamples {
    sampler: clrspy_sampler::Sampler,
    /// Tells each frame's code native or managed (the stacks' projection for other readers).
    kinds: crate::code_kinds::CodeKinds,
    /// Threads seen in managed code: their blocked time is told to other readers too (as the
    /// runtime's sampler samples a blocked managed thread), so that their thread-time views,
    /// which weigh each sample by the time to the thread's next, do not count it as CPU.
    managed_threads: rustc_hash::FxHashSet<u32>,
    /// The wait of each thread already told as blocked: when it began.
    announced: rustc_hash::FxHashMap<u32, u64>,
    drained: Vec<clrspy_sampler::Sample>,
    /// When new threads are looked for next.
    next_follow: Instant,
    waits: Vec<clrspy_sampler::Wait>,
    /// The sampler failed (the target ended, an error): nothing more is drained.
    failed: bool,
    /// When its counts are stored next (once a second).
    next_counts_ns: u64,
    /// Samples taken before this (before the session started) are left out.
    since_ns: u64,
    /// The OSR code the tap has seen, and the pump's copy of it (to mend the stacks in it).
    osr_shared: crate::osr::SharedOsr,
    osr: crate::osr::OsrCode,
}

impl KernelSamples {
    /// Follows new threads and moves every sample taken since the last call to `samples`,
    /// oldest first (to be stored by [`KernelSamples::store`]); queues the waits and the
    /// sampler's counts so far.
    fn take(
        &mut self,
        events: &mut Vec<(u64, Injected)>,
        samples: &mut Vec<clrspy_sampler::Sample>,
        now_ns: u64,
    ) {
        if !self.failed {
            // New threads are looked for less often than the rings are drained (a listing of
            // the process's threads costs more than a drain).
            let mut ok = true;
            if Instant::now() >= self.next_follow {
                self.next_follow = Instant::now() + FOLLOW_EVERY;
                ok = self.sampler.follow_threads().is_ok();
            }
            self.failed = !ok || self.sampler.drain(&mut self.drained).is_err();
        }
        self.drained.sort_by_key(|s| s.time_ns);
        let since = self.since_ns;
        // Mended now, while the threads are likely still in the frames (those in OSR code the
        // tap has not told yet are mended when stored).
        self.osr_shared.update(&mut self.osr);
        for mut s in self.drained.drain(..).filter(|s| s.time_ns >= since) {
            mend_osr(&mut self.sampler, &self.osr, &mut s);
            // Known as managed now, not once stored: its blocks are told as they begin.
            if !self.managed_threads.contains(&s.tid) && self.kinds.any_managed(&s.frames) {
                self.managed_threads.insert(s.tid);
            }
            samples.push(s);
        }
        self.sampler.take_waits(&mut self.waits);
        self.queue_waits(events);
        // The threads blocked now: told once per wait, when it began (since the last drain).
        let mut blocked = Vec::new();
        self.sampler.blocked_now(&mut blocked);
        for (tid, start, frames) in blocked {
            if self.announced.get(&tid) == Some(&start) {
                continue;
            }
            self.announced.insert(tid, start);
            self.block(events, tid, start, &frames);
        }
        events.sort_by_key(|e| e.0);
        self.counts(events, now_ns);
    }

    /// Tells other readers thread `tid` (one seen in managed code) blocked at `start` with
    /// `frames`.
    fn block(&mut self, events: &mut Vec<(u64, Injected)>, tid: u32, start: u64, frames: &[u64]) {
        if !self.managed_threads.contains(&tid) {
            return;
        }
        let (stack, managed) = self.kinds.split(frames);
        events.push((
            start.max(self.since_ns),
            Injected::KernelBlocked {
                tid,
                stack,
                managed,
            },
        ));
    }

    /// The samples of a round, as events: their stacks mended where the frame-pointer walk
    /// went wrong in on-stack-replaced code (the OSR code the tap has seen by now), then told
    /// apart into native and managed frames.
    fn store(&mut self, samples: Vec<clrspy_sampler::Sample>, events: &mut Vec<(u64, Injected)>) {
        self.osr_shared.update(&mut self.osr);
        for mut s in samples {
            mend_osr(&mut self.sampler, &self.osr, &mut s);
            let (stack, managed) = self.kinds.split(&s.frames);
            if !managed.is_empty() {
                self.managed_threads.insert(s.tid);
            }
            events.push((
                s.time_ns,
                Injected::KernelSample {
                    tid: s.tid,
                    stack,
                    managed,
                },
            ));
        }
    }

    /// The last [`KernelSamples::take`] of a recording, then the waits still going on as
    /// ending at `end_ns` (a thread blocked all along, a deadlock, has no other).
    fn take_last(
        &mut self,
        events: &mut Vec<(u64, Injected)>,
        samples: &mut Vec<clrspy_sampler::Sample>,
        now_ns: u64,
        end_ns: u64,
    ) {
        // The last counts are the sampler's totals, whenever the one before was stored.
        self.next_counts_ns = 0;
        self.take(events, samples, now_ns);
        if self.failed {
            return;
        }
        self.sampler.waits_going_on(end_ns, &mut self.waits);
        self.queue_waits(events);
    }

    /// The waits taken, at their ends; the part before the session started is left out.
    fn queue_waits(&mut self, events: &mut Vec<(u64, Injected)>) {
        let since = self.since_ns;
        for w in std::mem::take(&mut self.waits) {
            // A blocked wait is told to other readers where it began, once.
            if !w.preempted {
                if self.announced.get(&w.tid) == Some(&w.start_ns) {
                    self.announced.remove(&w.tid);
                } else if w.start_ns >= since {
                    self.block(events, w.tid, w.start_ns, &w.frames);
                }
            }
            let start = w.start_ns.max(since);
            if w.end_ns <= start {
                continue;
            }
            let (stack, managed) = self.kinds.split(&w.frames);
            events.push((
                w.end_ns,
                Injected::KernelWait {
                    tid: w.tid,
                    stack,
                    managed,
                    duration_ns: w.end_ns - start,
                    preempted: w.preempted,
                },
            ));
        }
    }

    /// The sampler's counts so far, once a second.
    fn counts(&mut self, events: &mut Vec<(u64, Injected)>, now_ns: u64) {
        if now_ns < self.next_counts_ns {
            return;
        }
        self.next_counts_ns = now_ns.saturating_add(1_000_000_000);
        let c = self.sampler.counts();
        events.push((
            now_ns,
            Injected::KernelSampler(clr_events::clrspy::KernelSampler {
                rate_hz: self.sampler.rate_hz(),
                samples: c.samples,
                lost: c.lost,
                threads: c.threads.min(u64::from(u32::MAX)) as u32,
                short_waits: c.short_waits,
                short_wait_ns: c.short_wait_ns,
            }),
        ));
    }
}

/// Moves a due time `next` on by `every`, or to `every` from now when it fell behind (no
/// burst of catching up after a stall).
fn reschedule(next: &mut Instant, every: Duration) {
    *next += every;
    if *next < Instant::now() {
        *next = Instant::now() + every;
    }
}

/// How often the cgroup's throttling counters are read (they are stored when they changed).
const CGROUP_EVERY: Duration = Duration::from_millis(100);

impl CpuReadings {
    pub(crate) fn new(
        pid: u32,
        interval: Duration,
        ips: SharedIps,
        kernel: Option<(clrspy_sampler::Sampler, crate::osr::SharedOsr)>,
    ) -> CpuReadings {
        let (interval, tick_every) = match kernel {
            Some(_) => {
                let interval = interval.max(KERNEL_READINGS);
                (interval, interval.min(KERNEL_DRAIN))
            }
            None => (interval, interval),
        };
        CpuReadings {
            hold_ns: if kernel.is_some() { SAMPLE_HOLD_NS } else { 0 },
            pending: std::collections::VecDeque::new(),
            kernel: kernel.map(|(sampler, osr_shared)| KernelSamples {
                sampler,
                osr_shared,
                osr: crate::osr::OsrCode::default(),
                kinds: crate::code_kinds::CodeKinds::new(pid),
                managed_threads: Default::default(),
                announced: Default::default(),
                drained: Vec::new(),
                next_follow: Instant::now(),
                waits: Vec::new(),
                failed: false,
                next_counts_ns: 0,
                since_ns: monotonic_ns(),
            }),
            sampler: ProcSampler::new(pid),
            interval,
            next_readings: Instant::now(),
            tick_every,
            next_tick: Instant::now(),
            next_maps: Instant::now(),
            first: true,
            last_read_ns: None,
            r2r: R2rRecorder::new(pid, ips.clone()),
            ips,
            next_r2r: Instant::now(),
            inlines: None,
            cgroup: crate::cgroup::find(pid).map(|g| g.limiting()),
            next_cgroup: Instant::now(),
            last_cgroup: None,
        }
    }

    /// Splices what `watch` finds of the JIT's inlining with the readings.
    pub(crate) fn follow_inlines(&mut self, watch: crate::inlines::InlineWatch) {
        self.inlines = Some(watch);
    }

    /// The kernel's samples up to `now_ns`, each at its own time; their addresses are
    /// queued to be named like the runtime's stacks'.
    fn drain_kernel(
        &mut self,
        now_ns: u64,
        going_on_to: Option<u64>,
    ) -> (Vec<(u64, Injected)>, Vec<clrspy_sampler::Sample>) {
        let mut timed = Vec::new();
        let mut samples = Vec::new();
        if let Some(k) = self.kernel.as_mut() {
            match going_on_to {
                Some(end_ns) => k.take_last(&mut timed, &mut samples, now_ns, end_ns),
                None => k.take(&mut timed, &mut samples, now_ns),
            }
        }
        (timed, samples)
    }

    /// The code mappings new since the last read of the maps, as events.
    fn new_maps(&mut self, events: &mut Vec<Injected>) {
        for m in self.sampler.new_mappings() {
            events.push(Injected::ModuleMap {
                start: m.start,
                end: m.end,
                offset: m.offset,
                path: m.path,
            });
        }
    }

    /// Once the stream has ended: the kernel's last samples and the waits going on, and the
    /// mappings and names of the code hit since the last round (else the frames of a
    /// recording's last moments would stay unnamed), queued to go in before the trace's end.
    pub(crate) fn last(&mut self, sinks: &mut [&mut dyn ByteSink]) {
        // Beside the kernel sampler the readings are 100 ms apart while its samples run to
        // the end: one last reading, so that the samples since the one before are measured,
        // not estimated on top of the readings (a busy program's last 100 ms).
        let readings = match self.kernel {
            Some(_) => self.sampler.threads(),
            None => Vec::new(),
        };
        let ts = monotonic_ns();
        let read = !readings.is_empty();
        if read {
            self.last_read_ns = Some(ts);
        }
        // Waits still going on end where the readings did: the recording's window.
        let (timed, samples) = self.drain_kernel(ts, Some(self.last_read_ns.unwrap_or(ts)));
        let mut events = Vec::new();
        push_readings(readings, &mut events);
        if read {
            events.push(Injected::Tick);
        }
        self.pending.push_back(Round {
            ts,
            samples,
            timed,
            events,
        });
        // The stream has ended: a trace holds its end marker back for these.
        self.release(sinks, ts, true);
        let mut names = Vec::new();
        self.new_maps(&mut names);
        names.extend(self.r2r.resolve(&self.sampler.mappings()));
        if let Some(w) = self.inlines.as_mut() {
            w.stop();
            names.extend(w.take());
        }
        for s in sinks.iter_mut() {
            for e in &names {
                s.splice_at_end(ts, e);
            }
        }
    }

    /// Takes the readings when they are due and queues them in `sinks`; `tap_cpu_ns` is the
    /// tap thread's CPU so far (the session's own cost is it and this, the pump's, thread's).
    pub(crate) fn tick(&mut self, sinks: &mut [&mut dyn ByteSink], tap_cpu_ns: u64) {
        if Instant::now() < self.next_tick || !sinks.iter().any(|s| s.wants_splices()) {
            return;
        }
        reschedule(&mut self.next_tick, self.tick_every);
        let mut events = Vec::new();
        // The readings (and the Tick that closes their interval) when due; the kernel's
        // samples at every tick.
        let readings = (Instant::now() >= self.next_readings).then(|| {
            reschedule(&mut self.next_readings, self.interval);
            self.sampler.threads()
        });
        let ts = monotonic_ns();
        // The kernel's samples so far go first, each at its own time (all before `ts`).
        let (timed, mut samples) = self.drain_kernel(ts, None);
        if self.first {
            self.first = false;
            events.push(Injected::SamplerInfo {
                interval_ms: self.interval.as_millis().min(u128::from(u32::MAX)) as u32,
                source: self.sampler.source.into(),
            });
        }
        if Instant::now() >= self.next_maps {
            self.next_maps = Instant::now() + Duration::from_secs(2);
            self.new_maps(&mut events);
        }
        if Instant::now() >= self.next_r2r {
            self.next_r2r = Instant::now() + R2R_EVERY;
            events.extend(self.r2r.resolve(&self.sampler.mappings()));
            // New code in no mapping read yet (a program starting loads images fast): read
            // the maps at the next round, so its frames are named within ~250 ms.
            if self.r2r.met_unmapped() {
                self.next_maps = self.next_maps.min(Instant::now() + R2R_EVERY);
            }
        }
        let read = readings.is_some();
        if self.last_read_ns.is_none() {
            // CPU samples before the first readings fall outside every measured interval and
            // would be estimated on top of them: the measured window starts at the first.
            samples.retain(|s| read && s.time_ns >= ts);
        }
        if read {
            self.last_read_ns = Some(ts);
        }
        push_readings(readings.unwrap_or_default(), &mut events);
        if let Some(w) = &self.inlines {
            events.extend(w.take());
        }
        if Instant::now() >= self.next_cgroup {
            self.next_cgroup = Instant::now() + CGROUP_EVERY;
            if let Some(g) = &self.cgroup {
                let read = g.read().filter(|b| self.last_cgroup != Some(*b));
                if let Some(bandwidth) = read {
                    self.last_cgroup = Some(bandwidth);
                    events.push(Injected::CgroupCpu {
                        bandwidth,
                        path: g.dir.to_string_lossy().into_owned(),
                    });
                }
            }
        }
        if let Some(cpu_ns) = own_cpu_ns().filter(|_| read) {
            events.push(Injected::RecorderCpu {
                pid: std::process::id(),
                cpu_ns,
                session_cpu_ns: thread_cpu_ns().map(|ns| ns.saturating_add(tap_cpu_ns)),
            });
        }
        if read {
            events.push(Injected::Tick);
        }
        self.pending.push_back(Round {
            ts,
            samples,
            timed,
            events,
        });
        self.release(sinks, ts, false);
    }

    /// Stores the rounds held long enough (all of them when `last`: the stream has ended, and
    /// the trace holds its end marker back for them): the kernel's samples, waits and blocks
    /// each at its own time, then the round's readings at its time.
    fn release(&mut self, sinks: &mut [&mut dyn ByteSink], now_ns: u64, last: bool) {
        while self
            .pending
            .front()
            .is_some_and(|r| last || r.ts.saturating_add(self.hold_ns) <= now_ns)
        {
            let Some(r) = self.pending.pop_front() else {
                break;
            };
            let mut timed = r.timed;
            if let Some(k) = self.kernel.as_mut() {
                k.store(r.samples, &mut timed);
            }
            timed.sort_by_key(|e| e.0);
            for (_, e) in &timed {
                if let Injected::KernelSample { stack, .. } | Injected::KernelWait { stack, .. } = e
                {
                    self.ips.add(stack.iter().copied());
                }
            }
            for s in sinks.iter_mut().filter(|s| last || s.wants_splices()) {
                for (at, e) in &timed {
                    match last {
                        true => s.splice_at_end(*at, e),
                        false => s.splice(*at, e),
                    }
                }
                for e in &r.events {
                    match last {
                        true => s.splice_at_end(r.ts, e),
                        false => s.splice(r.ts, e),
                    }
                }
            }
        }
    }
}

/// Mends the frames of `s` in on-stack-replaced code `osr` knows of (see
/// [`clrspy_sampler::Sampler::repair_osr`]).
fn mend_osr(
    sampler: &mut clrspy_sampler::Sampler,
    osr: &crate::osr::OsrCode,
    s: &mut clrspy_sampler::Sample,
) {
    if !osr.is_empty() {
        sampler.repair_osr(s, |ip, next| osr.pair(ip, next));
    }
}

/// One round of a recording's readings, held until the method events of its time have come
/// through the tap ([`SAMPLE_HOLD_NS`]).
struct Round {
    /// When its readings were taken.
    ts: u64,
    /// The kernel's samples drained in it, not yet stored.
    samples: Vec<clrspy_sampler::Sample>,
    /// The kernel's waits and blocks, each at its own time.
    timed: Vec<(u64, Injected)>,
    /// The readings and the rest, at `ts`.
    events: Vec<Injected>,
}

/// The events of one round of thread readings: each thread's name (when read) and CPU.
fn push_readings(readings: Vec<crate::procstat::ThreadReading>, events: &mut Vec<Injected>) {
    for r in readings {
        if let Some(name) = r.name {
            events.push(Injected::ThreadName { tid: r.tid, name });
        }
        events.push(Injected::ThreadCpu {
            tid: r.tid,
            cpu_ns: r.cpu_ns,
            runqueue_ns: r.runqueue_ns,
            state: r.state,
        });
    }
}
