//! CPU and waiting time: measured by thread CPU readings where the trace has them, spread
//! over stacks by the sample profiler's samples.
//!
//! 1. **Thread CPU readings** that `clrspy record` stores (clrspy's `ThreadCpu`, read from
//!    /proc at every tick, about every 20 ms): each thread's CPU over a tick interval is the
//!    difference of its readings, shared equally among its samples in that interval; the rest
//!    of the interval's wall time is their waiting time, of which the thread's run-queue time
//!    over the interval (schedstat's second field, where the readings have it) is waiting for
//!    a CPU. Every thread's lifetime is split the same way into CPU, run queue and blocked
//!    ([`crate::runqueue`]). A thread's CPU total is therefore its
//!    readings over the window, whatever the sampler's real period. CPU in an interval where
//!    the thread has no sample goes to its last sampled stack (unsampled when that stack is
//!    in a blocking call: the thread had left it, as a main thread whose `Join` returned); a thread never sampled, or
//!    named as one of the runtime's native workers (JIT, GC, EventPipe: the sampler may catch
//!    them in managed code now and then), keeps it as unsampled CPU, which the
//!    profile shows under a frame group named by the thread's role (`[runtime: tiered JIT]`).
//!    An interval waits `CLOSE_LAG_NS` for samples the runtime flushes late.
//! 2. Otherwise an **estimate** ([`crate::estimate`]): each sample stands for the sampler's
//!    real period, measured from the trace's own sampling rounds (under load a round takes two
//!    to nine times the nominal interval); a sample whose stack is in a known blocking call
//!    (`blocking_call`: waits, sleeps, joins, socket and file
//!    reads, `Monitor.Enter`) is waiting; an "external" sample with no managed frame at all is
//!    an idle runtime thread (waiting); the rest ran, but no round counts more threads on a
//!    CPU than the trace has CPUs (the others were ready, waiting for a CPU).
//!
//! Samples are aggregated per (thread, stack) as they stream; names and the heuristic are
//! applied at the end, when the rundown has named every method.

use std::collections::VecDeque;

use clr_events::{clrspy, KnownProvider, ThreadSampleType, ViewError};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::estimate::Estimate;
use crate::event::{Model, ModelEvent, Provider, Wanted};
use crate::runqueue::{CgroupReadings, ThreadReadings, ThreadTime, Throttling, WallTimes};
use crate::stacks::StackId;
use crate::threads::ThreadRole;

/// How CPU was told from waiting: one word per kind of evidence ([`CpuSource::word`]), the
/// same for every trace of the same kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuSource {
    /// Thread CPU readings over the whole recording (`clrspy record`): each thread's CPU is
    /// measured. The few samples no reading interval holds (before the first reading, after
    /// the last) are estimated, and counted apart.
    ThreadCpuTimes,
    /// Readings that stopped while the samples went on (a trace cut and spliced, a recorder
    /// that stopped reading): measured up to there, estimated after.
    Mixed,
    /// No readings (dotnet-trace, dotnet-monitor, Visual Studio, the runtime's environment
    /// settings): estimated from the samples ([`crate::estimate`]).
    Estimate,
    /// The trace has no samples.
    None,
}

impl CpuSource {
    /// Its word, as reports print it and `--json` spells it.
    pub fn word(self) -> &'static str {
        match self {
            CpuSource::ThreadCpuTimes => "thread-cpu-times",
            CpuSource::Mixed => "mixed",
            CpuSource::Estimate => "estimate",
            CpuSource::None => "none",
        }
    }
}

/// The weights of one (thread, stack).
#[derive(Clone, Copy, Debug, Default)]
pub struct Weights {
    /// Samples.
    pub samples: u64,
    /// Samples of managed code (heuristic pending).
    pub managed: u64,
    /// Samples outside managed code (heuristic pending).
    pub external: u64,
    /// Measured CPU, in units of the nominal interval ([`CpuModel::interval_ns`]).
    pub cpu: f64,
    /// Measured waiting (wall time minus CPU), same unit.
    pub wait: f64,
    /// The part of `wait` measured as runnable, waiting for a CPU (run-queue time), same unit.
    pub runq: f64,
    /// The part of `cpu` the thread used in reading intervals where none of its samples fell,
    /// given to this, its last sampled, stack. When the stack is in a blocking call the thread
    /// had left it (a blocked call burns no CPU): the profile shows it as unsampled.
    pub carried: f64,
}

/// Known blocking calls: a sample with one of these on its stack is waiting, not running.
pub(crate) const BLOCKING_FRAMES: &[&str] = &[
    "System.Threading.Monitor.Enter",
    "System.Threading.Monitor.ReliableEnter",
    "System.Threading.Monitor.Wait",
    "System.Threading.Monitor.ObjWait",
    "System.Threading.Monitor.TryEnter",
    "System.Threading.Lock.Enter",
    "System.Threading.Lock.EnterAndGetCurrentThreadId",
    "System.Threading.Lock.EnterScope",
    "System.Threading.Lock.TryEnterSlow",
    "System.Threading.Thread.Sleep",
    "System.Threading.Thread.SleepInternal",
    "System.Threading.Thread.Join",
    "System.Threading.WaitHandle.Wait",
    "System.Threading.WaitHandle.WaitOne",
    "System.Threading.WaitHandle.WaitOneNoCheck",
    "System.Threading.WaitHandle.WaitAny",
    "System.Threading.WaitHandle.WaitAll",
    "System.Threading.WaitHandle.WaitMultiple",
    "System.Threading.ManualResetEventSlim.Wait",
    "System.Threading.SemaphoreSlim.Wait",
    "System.Threading.CountdownEvent.Wait",
    "System.Threading.Barrier.SignalAndWait",
    "System.Threading.ReaderWriterLockSlim.WaitOnEvent",
    "System.Threading.Tasks.Task.Wait",
    "System.Threading.Tasks.Task.InternalWait",
    "System.Threading.Tasks.Task.SpinThenBlockingWait",
    "System.Threading.LowLevelLifoSemaphore.Wait",
    "System.Threading.LowLevelLifoSemaphore.WaitForSignal",
    "System.Threading.LowLevelMonitor.Wait",
    "System.Threading.LowLevelSemaphore.Wait",
    "System.Threading.PortableThreadPool+GateThread.GateThreadStart",
    "System.Threading.WaitSubsystem",
    "Interop+Sys.LowLevelMonitor_Wait",
    "Interop+Sys.LowLevelMonitor_TimedWait",
    "Interop+Sys.WaitForSocketEvents",
    "Interop+Sys.Poll",
    "Interop+Sys.Read",
    "Interop+Sys.ReadStdin",
    "Interop+Sys.WaitPidExitedNoHang",
    "Interop+Sys.WaitIdAnyExitedNoHangNoWait",
    "System.Net.Sockets.Socket.Receive",
    "System.Net.Sockets.Socket.Accept",
    "System.Net.Sockets.Socket.Poll",
    "System.Net.Sockets.Socket.Select",
    "System.IO.RandomAccess.ReadAtOffset",
    "System.IO.FileStream.Read",
    "System.IO.FileSystemWatcher+RunningInstance.TryReadEvent",
    "System.ConsolePal.Read",
    "System.Console.ReadLine",
    "System.Console.ReadKey",
    "System.GC.WaitForPendingFinalizers",
    "System.GC._WaitForPendingFinalizers",
    "System.Diagnostics.Process.WaitForExit",
];

/// Methods that block in a platform call of their own, inlined (no `Interop` frame shows
/// under them): a stack whose innermost managed frame is one of these, with only native code
/// below it, is waiting in that call.
pub(crate) const BLOCKING_CALLERS: &[&str] = &["System.Net.Sockets.SocketAsyncEngine.EventLoop"];

/// True when a managed frame directly above native code blocks in that native code.
pub(crate) fn is_blocking_caller(name: &str) -> bool {
    BLOCKING_CALLERS.iter().any(|b| {
        name.strip_prefix(b)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('('))
    })
}

/// True when a frame name acquires a lock (`Monitor.Enter`/`TryEnter`, `Lock.Enter`): a
/// thread waiting there waits for another thread, never by design.
pub fn is_lock_acquisition(name: &str) -> bool {
    [
        "System.Threading.Monitor.Enter",
        "System.Threading.Monitor.ReliableEnter",
        "System.Threading.Monitor.TryEnter",
        "System.Threading.Lock.Enter",
        "System.Threading.Lock.TryEnter",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// True when a frame name is a known blocking call.
pub fn is_blocking_frame(name: &str) -> bool {
    BLOCKING_FRAMES.iter().any(|b| {
        name.strip_prefix(b).is_some_and(|rest| {
            rest.is_empty()
                || rest.starts_with(['(', '.', '+', '<', '_'])
                || b.ends_with("Subsystem")
        }) || (b.ends_with("Subsystem") && name.starts_with(b))
    })
}

/// The samples of one tick interval (start, end], waiting for the interval's measured CPU.
#[derive(Clone, Debug)]
struct Interval {
    start: i64,
    end: i64,
    /// Per thread: (stack, managed, samples).
    samples: FxHashMap<u64, Vec<(Option<StackId>, bool, u64)>>,
}

impl Interval {
    fn new(start: i64, end: i64) -> Interval {
        Interval {
            start,
            end,
            samples: FxHashMap::default(),
        }
    }

    fn add(&mut self, thread: u64, stack: Option<StackId>, managed: bool) {
        let v = self.samples.entry(thread).or_default();
        match v.iter_mut().find(|e| e.0 == stack && e.1 == managed) {
            Some(e) => e.2 += 1,
            None => v.push((stack, managed, 1)),
        }
    }
}

/// The samples model.
#[derive(Clone, Debug)]
pub struct CpuModel {
    /// Wall time one sample stands for when nothing measured it (the trace's nominal sampling
    /// interval); also the unit of every weight (a weight of 1.0 is this much time).
    pub interval_ns: u64,
    agg: FxHashMap<(u64, Option<StackId>), Weights>,
    /// Measured CPU in intervals where the thread had no sample and no earlier stack
    /// (weight units).
    unsampled: FxHashMap<u64, f64>,
    /// The samples are the kernel's, taken only on a CPU: no waiting goes to their stacks.
    on_cpu_samples: bool,
    /// The kernel sampler's waits (`KernelWait`): where threads left their CPUs, how long.
    kernel_waits: bool,
    /// Measured CPU per thread over the window, ns.
    measured: FxHashMap<u64, f64>,
    sampled: FxHashSet<u64>,
    last_stack: FxHashMap<u64, Option<StackId>>,
    /// Threads named as the runtime's native workers (JIT, GC, EventPipe): their CPU in an
    /// interval without a sample stays theirs, never carried to a managed stack the sampler
    /// once caught them in.
    native_work: FxHashSet<u64>,
    /// Per thread: CPU read beyond an interval's wall time (readings are coarser than the
    /// ticks), taken from the waiting time of its next intervals.
    excess: FxHashMap<u64, f64>,
    readings: FxHashMap<u64, ThreadReadings>,
    first_tick: Option<i64>,
    last_tick: Option<i64>,
    ticks_seen: u64,
    /// Tick intervals whose samples may still arrive.
    open: VecDeque<Interval>,
    /// Samples later than the last tick: placed when the next tick arrives.
    pending: VecDeque<(i64, u64, Option<StackId>, bool)>,
    window: (Option<i64>, Option<i64>),
    exact_samples: u64,
    heuristic_samples: u64,
    /// Samples estimated because no tick followed them in time (the readings stopped).
    stale_samples: u64,
    /// Samples outside the measured intervals (before the first tick, or later than their
    /// interval was weighed): counted, carrying no time.
    unmeasured_samples: u64,
    has_readings: bool,
    first_ns: Option<i64>,
    last_ns: i64,
    /// Every sample by sampling round, for the estimate of samples nothing measured.
    estimate: Estimate,
    /// The trace's CPU count (the most threads a round counts on a CPU).
    cpus: Option<u32>,
    /// The recorder's own CPU readings in the window: the first and the last, ns.
    recorder: Option<(u64, u64)>,
    /// The same of the session's own threads, where the readings have them.
    recorder_session: Option<(u64, u64)>,
    /// Every thread's wall time split into CPU, run queue and blocked.
    wall: WallTimes,
    /// The target cgroup's throttling counters, every reading.
    cgroup: CgroupReadings,
}

/// How long an interval waits for its samples (the runtime flushes its buffers late) before
/// its measured CPU is shared among them.
const CLOSE_LAG_NS: i64 = 5_000_000_000;

/// How long a sample waits for the tick after it: when the readings stop (the recorder
/// stopped reading, the trace was cut and spliced), samples further than this past the last
/// tick are weighed by the heuristic at once, so the queue stays bounded.
const PENDING_WINDOW_NS: i64 = 10_000_000_000;

/// How long samples wait for the first tick: `clrspy record` ticks from the session's start,
/// so a trace with no tick by then has no readings (other recorders' traces).
const FIRST_TICK_WINDOW_NS: i64 = 2_000_000_000;

/// At most this many samples wait for a tick (the oldest get the heuristic first).
const MAX_PENDING: usize = 1 << 20;

impl Model for CpuModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted {
            provider: Provider::Known(KnownProvider::SampleProfiler),
            id: 0,
            stack: true,
            windowed: true,
            event: None,
        },
        Wanted {
            provider: Provider::Known(KnownProvider::SampleProfiler),
            id: 1,
            stack: true,
            windowed: true,
            event: None,
        },
        Wanted {
            provider: Provider::Clrspy,
            id: clrspy::ids::KERNEL_SAMPLE,
            stack: true,
            windowed: true,
            event: None,
        },
        Wanted::clrspy(clrspy::ids::KERNEL_WAIT).with_stack(),
        Wanted::clrspy(clrspy::ids::THREAD_CPU),
        Wanted::clrspy(clrspy::ids::TICK),
        Wanted::clrspy(clrspy::ids::RECORDER_CPU),
        Wanted::clrspy(clrspy::ids::THREAD_NAME),
        Wanted::clrspy(clrspy::ids::CGROUP_CPU),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        match (ev.provider, ev.id) {
            (Provider::Clrspy, clrspy::ids::THREAD_CPU) => {
                let r = clrspy::ThreadCpu::parse(ev.payload)?;
                let gone = r.state == clrspy::STATE_GONE;
                self.thread_reading(
                    ev.ts_ns,
                    u64::from(r.thread_id),
                    r.cpu_ns,
                    r.runqueue_ns,
                    gone,
                );
            }
            (Provider::Clrspy, clrspy::ids::CGROUP_CPU) => {
                let c = clrspy::CgroupCpu::parse(ev.payload)?;
                self.cgroup_cpu(ev.ts_ns, c.bandwidth, c.path.to_string_lossy());
            }
            (Provider::Clrspy, clrspy::ids::TICK) => self.tick(ev.ts_ns),
            (Provider::Clrspy, clrspy::ids::THREAD_NAME) => {
                let n = clrspy::ThreadName::parse(ev.payload)?;
                self.thread_named(u64::from(n.thread_id), &n.name.to_string_lossy());
            }
            (Provider::Clrspy, clrspy::ids::RECORDER_CPU) => {
                let r = clrspy::RecorderCpu::parse(ev.payload)?;
                self.recorder_cpu(ev.ts_ns, r.cpu_ns, r.session_cpu_ns);
            }
            (Provider::Clrspy, clrspy::ids::KERNEL_SAMPLE) => {
                // The kernel samples a thread only while it is on a CPU (the mark of a thread
                // that blocked is for other readers: its wait comes as a `KernelWait`).
                if clrspy::KernelSample::is_blocked_mark(ev.payload) {
                    return Ok(());
                }
                let thread = clrspy::KernelSample::thread_of(ev.payload, ev.thread_id)?;
                self.on_cpu_samples = true;
                self.sample(ev.ts_ns, u64::from(thread), ev.stack, true);
            }
            (Provider::Clrspy, clrspy::ids::KERNEL_WAIT) => {
                let k = clrspy::KernelWait::parse(ev.payload)?;
                let thread = u64::from(k.sample.thread_id);
                self.kernel_wait(ev.ts_ns, thread, ev.stack, k.duration_ns, k.preempted);
            }
            (Provider::Known(KnownProvider::SampleProfiler), _) => {
                // The sample's kind: anything but "managed" counts as external.
                let managed =
                    ThreadSampleType::from_payload(ev.payload) == Some(ThreadSampleType::Managed);
                self.sample(ev.ts_ns, ev.thread_id, ev.stack, managed);
            }
            _ => {}
        }
        Ok(())
    }
}

impl CpuModel {
    /// An empty model; `interval_ns` is the trace's sampling interval.
    pub fn new(interval_ns: u64) -> CpuModel {
        CpuModel {
            interval_ns: interval_ns.max(1),
            agg: FxHashMap::default(),
            unsampled: FxHashMap::default(),
            on_cpu_samples: false,
            kernel_waits: false,
            measured: FxHashMap::default(),
            sampled: FxHashSet::default(),
            last_stack: FxHashMap::default(),
            native_work: FxHashSet::default(),
            excess: FxHashMap::default(),
            readings: FxHashMap::default(),
            first_tick: None,
            last_tick: None,
            ticks_seen: 0,
            open: VecDeque::new(),
            pending: VecDeque::new(),
            window: (None, None),
            exact_samples: 0,
            heuristic_samples: 0,
            stale_samples: 0,
            unmeasured_samples: 0,
            has_readings: false,
            first_ns: None,
            last_ns: 0,
            estimate: Estimate::new(interval_ns),
            cpus: None,
            recorder: None,
            recorder_session: None,
            wall: WallTimes::default(),
            cgroup: CgroupReadings::default(),
        }
    }

    /// Only the tick intervals whose middle falls in `[from, to)` count (ns since the trace
    /// start): the readings themselves are read over the whole trace, so each thread's CPU
    /// is the difference of its readings across the window.
    pub(crate) fn with_window(mut self, from: Option<i64>, to: Option<i64>) -> CpuModel {
        self.window = (from, to);
        self
    }

    /// A `Thread/Sample`: `managed` is its kind (managed code vs external).
    pub fn sample(&mut self, ts: i64, thread: u64, stack: Option<StackId>, managed: bool) {
        self.first_ns.get_or_insert(ts);
        self.last_ns = self.last_ns.max(ts);
        self.sampled.insert(thread);
        self.estimate.sample(ts, thread, (stack, managed));
        match self.last_tick {
            Some(last) if ts <= last => self.place(ts, thread, stack, managed),
            _ => {
                self.pending.push_back((ts, thread, stack, managed));
                self.drop_stale(ts);
            }
        }
    }

    /// Puts a sample at or before the last tick into its interval.
    fn place(&mut self, ts: i64, thread: u64, stack: Option<StackId>, managed: bool) {
        let i = self.open.partition_point(|iv| iv.end < ts);
        match self.open.get_mut(i) {
            Some(iv) if ts > iv.start => iv.add(thread, stack, managed),
            _ => {
                self.unmeasured_samples += 1;
                self.agg.entry((thread, stack)).or_default().samples += 1;
            }
        }
    }

    /// Weighs samples that waited too long for a tick by the heuristic.
    fn drop_stale(&mut self, now: i64) {
        // Before any tick, a short wait: a trace without readings keeps little pending.
        let window = if self.last_tick.is_some() || self.has_readings {
            PENDING_WINDOW_NS
        } else {
            FIRST_TICK_WINDOW_NS
        };
        let horizon = now.saturating_sub(window);
        while let Some(&(t, thread, stack, managed)) = self.pending.front() {
            if t >= horizon && self.pending.len() <= MAX_PENDING {
                break;
            }
            self.pending.pop_front();
            self.weigh_heuristic(thread, stack, managed, 1);
            if self.has_readings {
                self.stale_samples += 1;
            }
        }
    }

    fn weigh_heuristic(&mut self, thread: u64, stack: Option<StackId>, managed: bool, n: u64) {
        let w = self.agg.entry((thread, stack)).or_default();
        w.samples += n;
        if managed {
            w.managed += n;
        } else {
            w.external += n;
        }
        self.heuristic_samples += n;
    }

    /// A reading of the recorder's own CPU time (clrspy's `RecorderCpu`) at `ts`: its whole
    /// process's, and this session's threads' where the trace has it.
    pub(crate) fn recorder_cpu(&mut self, ts: i64, cpu_ns: u64, session_cpu_ns: Option<u64>) {
        let inside = self.window.0.is_none_or(|f| ts >= f) && self.window.1.is_none_or(|t| ts < t);
        if inside {
            let r = self.recorder.get_or_insert((cpu_ns, cpu_ns));
            r.1 = r.1.max(cpu_ns);
            if let Some(ns) = session_cpu_ns {
                let r = self.recorder_session.get_or_insert((ns, ns));
                r.1 = r.1.max(ns);
            }
        }
    }

    /// The recorder's own CPU over the window (its first to last reading), ns; `None` when
    /// the trace has no such readings.
    pub fn recorder_cpu_ns(&self) -> Option<u64> {
        self.recorder.map(|(a, b)| b.saturating_sub(a))
    }

    /// The CPU of the recording session's own threads over the window, ns: the recorder's
    /// cost for this target when it recorded several at once; `None` in traces without it.
    pub fn recorder_session_cpu_ns(&self) -> Option<u64> {
        self.recorder_session.map(|(a, b)| b.saturating_sub(a))
    }

    /// Samples waiting for the tick after them.
    #[cfg(test)]
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Samples weighed by the heuristic because the readings stopped before them.
    #[cfg(test)]
    pub(crate) fn stale_samples(&self) -> u64 {
        self.stale_samples
    }

    /// Samples that carry no time: before the first reading, or flushed by the runtime later
    /// than their interval was weighed.
    #[cfg(test)]
    pub(crate) fn unmeasured_samples(&self) -> u64 {
        self.unmeasured_samples
    }

    /// True when some thread CPU reading was seen.
    pub fn has_readings(&self) -> bool {
        self.has_readings
    }

    /// A clrspy `ThreadCpu` reading: the thread's total CPU time at sampler tick `ts`.
    pub fn thread_cpu(&mut self, ts: i64, thread: u64, cpu_ns: u64) {
        self.thread_reading(ts, thread, cpu_ns, None, false);
    }

    /// A clrspy `ThreadCpu` reading with the thread's total run-queue time (when read) and
    /// whether the thread is gone.
    pub(crate) fn thread_reading(
        &mut self,
        ts: i64,
        thread: u64,
        cpu_ns: u64,
        runqueue_ns: Option<u64>,
        gone: bool,
    ) {
        self.has_readings = true;
        self.wall.has_runqueue |= runqueue_ns.is_some();
        self.readings
            .entry(thread)
            .or_default()
            .push(ts, cpu_ns, runqueue_ns, gone);
    }

    /// A clrspy `CgroupCpu` reading of the target's cgroup at `ts`.
    pub(crate) fn cgroup_cpu(&mut self, ts: i64, bandwidth: clrspy::CpuBandwidth, path: String) {
        self.cgroup.push(ts, bandwidth, path);
    }

    /// The CPU throttling of the target's cgroup over the window; `None` when the trace has
    /// no cgroup readings there.
    pub fn throttling(&self) -> Option<Throttling> {
        self.cgroup.throttling(self.window.0, self.window.1)
    }

    /// True when the readings have run-queue time (schedstat's second field): the split of
    /// waiting into run queue and blocked is measured, not estimated.
    pub fn has_runqueue(&self) -> bool {
        self.wall.has_runqueue
    }

    /// Each thread's wall time in the window split into CPU, run queue and blocked, from its
    /// readings (threads without readings are not in it).
    pub fn thread_times(&self) -> impl Iterator<Item = (u64, ThreadTime)> + '_ {
        self.wall.per.iter().map(|(&t, &w)| (t, w))
    }

    /// A clrspy sampler tick: every thread's CPU time was read at `ts` (threads without a
    /// reading at this tick did not run since their last one).
    pub fn tick(&mut self, ts: i64) {
        if self.last_tick.is_some_and(|b| ts <= b) {
            return;
        }
        match self.last_tick {
            Some(a) => self.open.push_back(Interval::new(a, ts)),
            None => self.first_tick = Some(ts),
        }
        self.last_tick = Some(ts);
        self.ticks_seen += 1;
        while let Some(&(t, thread, stack, managed)) = self.pending.front() {
            if t > ts {
                break;
            }
            self.pending.pop_front();
            self.place(t, thread, stack, managed);
        }
        let horizon = ts - CLOSE_LAG_NS;
        while self.open.front().is_some_and(|iv| iv.end < horizon) {
            if let Some(iv) = self.open.pop_front() {
                self.close(iv);
            }
        }
        if self.ticks_seen.is_multiple_of(256) {
            let keep = self.open.front().map_or(ts, |iv| iv.start);
            for r in self.readings.values_mut() {
                r.trim(keep);
            }
        }
    }

    fn in_window(&self, iv: &Interval) -> bool {
        let mid = iv.start + (iv.end - iv.start) / 2;
        self.window.0.is_none_or(|f| mid >= f) && self.window.1.is_none_or(|t| mid < t)
    }

    /// Thread `thread` is named `name`: the runtime's native workers keep their CPU.
    fn thread_named(&mut self, thread: u64, name: &str) {
        if ThreadRole::of(Some(name), false).is_native_work() {
            self.native_work.insert(thread);
        }
    }

    /// Shares an interval's measured CPU among its samples, thread by thread: each sample
    /// gets the thread's CPU over the interval divided by its samples there, and the rest of
    /// the interval's wall time as waiting. A thread that used CPU in an interval where none
    /// of its samples fell gives it to its last sampled stack, else to its unsampled time.
    fn close(&mut self, mut iv: Interval) {
        let counted = self.in_window(&iv);
        if counted {
            self.wall.interval(iv.start, iv.end, &self.readings);
        }
        let dt = (iv.end - iv.start) as f64;
        let unit = self.interval_ns as f64;
        let mut threads: Vec<u64> = iv.samples.keys().copied().collect();
        threads.extend(
            self.readings
                .iter()
                .filter(|(t, r)| {
                    // Only threads read after the interval began can have changed in it.
                    r.read_after(iv.start)
                        && !iv.samples.contains_key(t)
                        && r.used(iv.start, iv.end) > 0
                })
                .map(|(&t, _)| t),
        );
        threads.sort_unstable();
        for t in threads {
            let samples = iv.samples.remove(&t).unwrap_or_default();
            let n: u64 = samples.iter().map(|s| s.2).sum();
            let Some(r) = self.readings.get(&t) else {
                for (stack, managed, c) in samples {
                    self.weigh_heuristic(t, stack, managed, c);
                }
                continue;
            };
            let used = r.used(iv.start, iv.end) as f64;
            let queued = r.queued(iv.start, iv.end) as f64;
            if let Some(top) = samples.iter().max_by_key(|s| s.2) {
                self.last_stack.insert(t, top.0);
            }
            if !counted {
                // Outside the window: counted as samples, carrying no time.
                for (stack, _, c) in samples {
                    self.agg.entry((t, stack)).or_default().samples += c;
                }
                continue;
            }
            *self.measured.entry(t).or_default() += used;
            let carry = self.excess.entry(t).or_default();
            let free = dt - used;
            let wait = if free < 0.0 {
                *carry -= free;
                0.0
            } else {
                let take = free.min(*carry);
                *carry -= take;
                free - take
            };
            // Waiting for a CPU is part of the waiting (readings a little apart can say more).
            let runq = queued.min(wait);
            // On-CPU samples (the kernel's) say nothing of where the thread waited.
            let (wait, runq) = if self.on_cpu_samples {
                (0.0, 0.0)
            } else {
                (wait, runq)
            };
            if n > 0 {
                for (stack, _, c) in samples {
                    let f = c as f64 / n as f64;
                    let w = self.agg.entry((t, stack)).or_default();
                    w.samples += c;
                    w.cpu += used * f / unit;
                    w.wait += wait * f / unit;
                    w.runq += runq * f / unit;
                }
                self.exact_samples += n;
            } else if used > 0.0 {
                match self.last_stack.get(&t) {
                    Some(&s) if !self.native_work.contains(&t) => {
                        let w = self.agg.entry((t, s)).or_default();
                        w.cpu += used / unit;
                        w.carried += used / unit;
                    }
                    _ => *self.unsampled.entry(t).or_default() += used / unit,
                }
            }
        }
    }

    /// Ends the stream: every interval is weighed; samples still waiting for a tick get the
    /// heuristic.
    pub fn finish(&mut self) {
        while let Some(iv) = self.open.pop_front() {
            self.close(iv);
        }
        while let Some((_, thread, stack, managed)) = self.pending.pop_front() {
            self.weigh_heuristic(thread, stack, managed, 1);
        }
    }

    /// How CPU was told from waiting.
    pub fn source(&self) -> CpuSource {
        // The kind of evidence decides, not how many samples fell outside it: a recording
        // with readings throughout is measured even when its last samples follow the last
        // reading.
        let measured = self.exact_samples > 0 || !self.measured.is_empty();
        match (measured, self.heuristic_samples) {
            (false, 0) => CpuSource::None,
            (false, _) => CpuSource::Estimate,
            (true, _) if self.stale_samples > 0 => CpuSource::Mixed,
            (true, _) => CpuSource::ThreadCpuTimes,
        }
    }

    /// The aggregated weights per (thread, stack).
    pub fn weights(&self) -> impl Iterator<Item = (u64, Option<StackId>, &Weights)> {
        self.agg.iter().map(|(&(t, s), w)| (t, s, w))
    }

    /// Measured CPU no sample placed, per thread (weight units): threads the sampler never
    /// saw (the runtime's native threads) or intervals before a thread's first sample.
    pub fn unsampled(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.unsampled.iter().map(|(&t, &w)| (t, w))
    }

    /// True when the samples are the kernel's (`record --sampler kernel`): taken only while
    /// a thread is on a CPU, so its waiting has no stacks.
    pub fn kernel_sampled(&self) -> bool {
        self.on_cpu_samples
    }

    /// True when the trace has the kernel sampler's waits: where threads waited has stacks
    /// though the samples are taken only on a CPU.
    pub fn kernel_waits(&self) -> bool {
        self.kernel_waits
    }

    /// A thread off its CPU from `end - duration_ns` to `end` (the kernel sampler's
    /// `KernelWait`) with its stack when it left: waiting time on that stack, run-queue time
    /// too when it was `preempted`; the part inside the window counts.
    pub(crate) fn kernel_wait(
        &mut self,
        end: i64,
        thread: u64,
        stack: Option<StackId>,
        duration_ns: u64,
        preempted: bool,
    ) {
        self.kernel_waits = true;
        let start = end.saturating_sub(i64::try_from(duration_ns).unwrap_or(i64::MAX));
        let from = self.window.0.map_or(start, |f| start.max(f));
        let to = self.window.1.map_or(end, |t| end.min(t));
        if to <= from {
            return;
        }
        let units = (to - from) as f64 / self.interval_ns as f64;
        let w = self.agg.entry((thread, stack)).or_default();
        w.wait += units;
        if preempted {
            w.runq += units;
        }
    }

    /// True when the sampler saw `thread` (it runs managed code).
    pub(crate) fn was_sampled(&self, thread: u64) -> bool {
        self.sampled.contains(&thread)
    }

    /// Each thread's CPU time over the window from its readings, ns.
    pub fn measured_cpu_ns(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.measured.iter().map(|(&t, &ns)| (t, ns))
    }

    /// The sampler's real period: the mean time between the starts of its rounds (pauses
    /// over 200 ms left out), ns; `None` before two rounds.
    pub fn measured_period_ns(&self) -> Option<u64> {
        self.estimate.period_ns()
    }

    /// The samples by sampling round, for the estimate of what nothing measured.
    pub fn estimate(&self) -> &Estimate {
        &self.estimate
    }

    /// The trace's CPU count: no sampling round counts more threads on a CPU.
    pub(crate) fn with_cpus(mut self, cpus: Option<u32>) -> CpuModel {
        self.cpus = cpus.filter(|&n| n > 0);
        self
    }

    /// The trace's CPU count, when known.
    pub fn cpus(&self) -> Option<u32> {
        self.cpus
    }

    /// Time of the first and last sample (ns since the trace start).
    pub fn span_ns(&self) -> Option<(i64, i64)> {
        self.first_ns.map(|f| (f, self.last_ns))
    }
}

#[cfg(test)]
#[path = "cpu_tests.rs"]
mod tests;
