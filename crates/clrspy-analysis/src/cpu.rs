//! CPU and waiting time from the sample profiler's samples.
//!
//! Each `Thread/Sample` stands for one sampling interval of wall-clock time on its thread. How
//! much of it was CPU is decided, in order of trust:
//! 1. **Thread CPU times** that `clrspy record` stores (clrspy's `ThreadCpu` readings, taken
//!    from /proc at every sampler tick): a sample between two ticks gets the thread's CPU share
//!    of that interval (exact to the tick);
//! 2. otherwise the **sample kind and blocking frames**: a sample whose stack holds a known
//!    blocking call (waits, sleeps, joins, socket and file reads, `Monitor.Enter`) is waiting;
//!    an "external" sample with no managed frame at all is an idle runtime thread (waiting);
//!    the rest is CPU.
//!
//! Samples are aggregated per (thread, stack) as they stream; names and the heuristic are
//! applied at the end, when the rundown has named every method.

use std::collections::VecDeque;

use clr_events::{clrspy, KnownProvider, ThreadSampleType, ViewError};
use rustc_hash::FxHashMap;

use crate::event::{Model, ModelEvent, Provider, Wanted};
use crate::stacks::StackId;

/// How CPU was told from waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuSource {
    /// Every sample was weighed with the thread's measured CPU time.
    ThreadCpuTimes,
    /// Some samples with measured CPU time, the rest by the heuristic.
    Mixed,
    /// Sample kind and blocking frames.
    Heuristic,
    /// The trace has no samples.
    None,
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
    /// Samples' CPU share, where measured.
    pub cpu: f64,
    /// Samples' waiting share, where measured.
    pub wait: f64,
}

/// Known blocking calls: a sample with one of these on its stack is waiting, not running.
pub const BLOCKING_FRAMES: &[&str] = &[
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
    "System.Net.Sockets.SocketAsyncEngine.EventLoop",
    "System.IO.RandomAccess.ReadAtOffset",
    "System.IO.FileStream.Read",
    "System.ConsolePal.Read",
    "System.Console.ReadLine",
    "System.Console.ReadKey",
    "System.GC.WaitForPendingFinalizers",
    "System.GC._WaitForPendingFinalizers",
    "System.Diagnostics.Process.WaitForExit",
];

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

#[derive(Clone, Debug, Default)]
struct ThreadReadings {
    /// (tick time, CPU ns) at the ticks where the thread's CPU time was read.
    readings: VecDeque<(i64, u64)>,
}

impl ThreadReadings {
    /// CPU time at `t`: the last reading at or before it (0 before the first).
    fn cpu_at(&self, t: i64) -> u64 {
        let i = self.readings.partition_point(|r| r.0 <= t);
        i.checked_sub(1)
            .and_then(|k| self.readings.get(k))
            .map_or(0, |r| r.1)
    }
}

/// The samples model.
#[derive(Clone, Debug)]
pub struct CpuModel {
    /// Wall time one sample stands for.
    pub interval_ns: u64,
    agg: FxHashMap<(u64, Option<StackId>), Weights>,
    readings: FxHashMap<u64, ThreadReadings>,
    ticks: VecDeque<i64>,
    /// Samples later than the last tick: weighed when the next tick arrives.
    pending: VecDeque<(i64, u64, Option<StackId>, bool)>,
    exact_samples: u64,
    heuristic_samples: u64,
    /// Samples weighed by the heuristic because no tick followed them in time.
    stale_samples: u64,
    has_readings: bool,
    first_ns: Option<i64>,
    last_ns: i64,
}

/// How long tick and reading history is kept for samples that arrive late in the file.
const WINDOW_NS: i64 = 60_000_000_000;

/// How long a sample waits for the tick after it: when the readings stop (the recorder
/// stopped reading, the trace was cut and spliced), samples further than this past the last
/// tick are weighed by the heuristic at once, so the queue stays bounded.
const PENDING_WINDOW_NS: i64 = 10_000_000_000;

/// At most this many samples wait for a tick (the oldest get the heuristic first).
const MAX_PENDING: usize = 1 << 20;

impl Model for CpuModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted {
            provider: Provider::Known(KnownProvider::SampleProfiler),
            id: 0,
            stack: true,
            windowed: true,
        },
        Wanted {
            provider: Provider::Known(KnownProvider::SampleProfiler),
            id: 1,
            stack: true,
            windowed: true,
        },
        Wanted::clrspy(clrspy::ids::THREAD_CPU),
        Wanted::clrspy(clrspy::ids::TICK),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        match (ev.provider, ev.id) {
            (Provider::Clrspy, clrspy::ids::THREAD_CPU) => {
                let r = clrspy::ThreadCpu::parse(ev.payload)?;
                self.thread_cpu(ev.ts_ns, u64::from(r.thread_id), r.cpu_ns);
            }
            (Provider::Clrspy, clrspy::ids::TICK) => self.tick(ev.ts_ns),
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
            readings: FxHashMap::default(),
            ticks: VecDeque::new(),
            pending: VecDeque::new(),
            exact_samples: 0,
            heuristic_samples: 0,
            stale_samples: 0,
            has_readings: false,
            first_ns: None,
            last_ns: 0,
        }
    }

    /// A `Thread/Sample`: `managed` is its kind (managed code vs external).
    pub fn sample(&mut self, ts: i64, thread: u64, stack: Option<StackId>, managed: bool) {
        self.first_ns.get_or_insert(ts);
        self.last_ns = self.last_ns.max(ts);
        match self.ticks.back() {
            Some(&last) if ts > last => {
                self.pending.push_back((ts, thread, stack, managed));
                self.drop_stale(ts);
            }
            _ => self.weigh(ts, thread, stack, managed),
        }
    }

    /// Weighs samples that waited too long for a tick by the heuristic.
    fn drop_stale(&mut self, now: i64) {
        let horizon = now.saturating_sub(PENDING_WINDOW_NS);
        while let Some(&(t, thread, stack, managed)) = self.pending.front() {
            if t >= horizon && self.pending.len() <= MAX_PENDING {
                break;
            }
            self.pending.pop_front();
            self.weigh_heuristic(thread, stack, managed);
            self.stale_samples += 1;
        }
    }

    fn weigh_heuristic(&mut self, thread: u64, stack: Option<StackId>, managed: bool) {
        let w = self.agg.entry((thread, stack)).or_default();
        w.samples += 1;
        if managed {
            w.managed += 1;
        } else {
            w.external += 1;
        }
        self.heuristic_samples += 1;
    }

    /// Samples waiting for the tick after them.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Samples weighed by the heuristic because the readings stopped before them.
    pub fn stale_samples(&self) -> u64 {
        self.stale_samples
    }

    /// True when some thread CPU reading was seen.
    pub fn has_readings(&self) -> bool {
        self.has_readings
    }

    /// A clrspy `ThreadCpu` reading: the thread's total CPU time at sampler tick `ts`.
    pub fn thread_cpu(&mut self, ts: i64, thread: u64, cpu_ns: u64) {
        self.has_readings = true;
        let r = &mut self.readings.entry(thread).or_default().readings;
        if r.back().is_none_or(|b| b.0 <= ts) {
            r.push_back((ts, cpu_ns));
        }
    }

    /// A clrspy sampler tick: every thread's CPU time was read at `ts` (threads without a
    /// reading at this tick did not run since their last one).
    pub fn tick(&mut self, ts: i64) {
        if self.ticks.back().is_some_and(|&b| ts <= b) {
            return;
        }
        self.ticks.push_back(ts);
        while let Some(&(t, thread, stack, managed)) = self.pending.front() {
            if t > ts {
                break;
            }
            self.pending.pop_front();
            self.weigh(t, thread, stack, managed);
        }
        // Keep a window of history for samples the runtime flushes late.
        let horizon = ts - WINDOW_NS;
        while self.ticks.len() > 2 && self.ticks.get(1).is_some_and(|&t| t < horizon) {
            self.ticks.pop_front();
        }
        if self.ticks.len().is_multiple_of(1024) {
            for r in self.readings.values_mut() {
                while r.readings.len() > 1 && r.readings.get(1).is_some_and(|x| x.0 < horizon) {
                    r.readings.pop_front();
                }
            }
        }
    }

    fn weigh(&mut self, ts: i64, thread: u64, stack: Option<StackId>, managed: bool) {
        let share = self.share(ts, thread);
        let w = self.agg.entry((thread, stack)).or_default();
        w.samples += 1;
        match share {
            Some(s) => {
                w.cpu += s;
                w.wait += 1.0 - s;
                self.exact_samples += 1;
            }
            None => {
                if managed {
                    w.managed += 1;
                } else {
                    w.external += 1;
                }
                self.heuristic_samples += 1;
            }
        }
    }

    /// The thread's CPU share over the tick interval holding `ts`, when measured.
    fn share(&self, ts: i64, thread: u64) -> Option<f64> {
        let i = self.ticks.partition_point(|&t| t < ts);
        let b = *self.ticks.get(i)?;
        let a = *self.ticks.get(i.checked_sub(1)?)?;
        let r = self.readings.get(&thread)?;
        let dt = (b - a) as f64;
        if dt <= 0.0 {
            return None;
        }
        let used = r.cpu_at(b).saturating_sub(r.cpu_at(a)) as f64;
        Some((used / dt).clamp(0.0, 1.0))
    }

    /// Ends the stream: samples still waiting for a tick get the heuristic.
    pub fn finish(&mut self) {
        while let Some((_, thread, stack, managed)) = self.pending.pop_front() {
            self.weigh_heuristic(thread, stack, managed);
        }
    }

    /// How CPU was told from waiting.
    pub fn source(&self) -> CpuSource {
        match (self.exact_samples, self.heuristic_samples) {
            (0, 0) => CpuSource::None,
            (_, 0) => CpuSource::ThreadCpuTimes,
            (0, _) => CpuSource::Heuristic,
            _ => CpuSource::Mixed,
        }
    }

    /// The aggregated weights per (thread, stack).
    pub fn weights(&self) -> impl Iterator<Item = (u64, Option<StackId>, &Weights)> {
        self.agg.iter().map(|(&(t, s), w)| (t, s, w))
    }

    /// Time of the first and last sample (ns since the trace start).
    pub fn span_ns(&self) -> Option<(i64, i64)> {
        self.first_ns.map(|f| (f, self.last_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocking_frames() {
        assert!(is_blocking_frame("System.Threading.Thread.Join"));
        assert!(is_blocking_frame("System.Threading.Thread.Join(int32)"));
        assert!(is_blocking_frame("System.Threading.Monitor.Enter"));
        assert!(is_blocking_frame("System.Threading.Monitor.Enter_Slowpath"));
        assert!(is_blocking_frame(
            "System.Threading.WaitSubsystem+ThreadWaitInfo.Wait"
        ));
        assert!(!is_blocking_frame("System.Threading.Thread.JoinMe"));
        assert!(!is_blocking_frame("App.Cpu.Burn"));
    }

    #[test]
    fn measured_cpu_splits_samples_exactly() {
        let mut m = CpuModel::new(1_000_000);
        let s = Some(StackId(0));
        m.thread_cpu(0, 1, 1_000);
        m.thread_cpu(0, 2, 5_000);
        m.tick(0);
        // Thread 1 burns the whole 20 ms; thread 2 only a quarter of it.
        for k in 1..=20 {
            m.sample(k * 1_000_000, 1, s, true);
            m.sample(k * 1_000_000, 2, s, false);
        }
        m.thread_cpu(20_000_000, 1, 1_000 + 20_000_000);
        m.thread_cpu(20_000_000, 2, 5_000 + 5_000_000);
        m.tick(20_000_000);
        // A sample after the last tick with no tick to follow: heuristic.
        m.sample(25_000_000, 1, s, true);
        m.finish();
        let w1 = m.agg[&(1, s)];
        let w2 = m.agg[&(2, s)];
        assert_eq!(w1.samples, 21);
        assert!((w1.cpu - 20.0).abs() < 1e-9 && w1.wait.abs() < 1e-9);
        assert_eq!(w1.managed, 1);
        assert!((w2.cpu - 5.0).abs() < 1e-9 && (w2.wait - 15.0).abs() < 1e-9);
        assert_eq!(m.source(), CpuSource::Mixed);
    }

    #[test]
    fn samples_after_the_last_tick_do_not_pile_up() {
        let mut m = CpuModel::new(1_000_000);
        let s = Some(StackId(0));
        for k in 0..10 {
            m.thread_cpu(k * 20_000_000, 1, k as u64 * 10_000_000);
            m.tick(k * 20_000_000);
        }
        // The readings stop; a million samples follow, 1 ms apart.
        let last_tick = 9 * 20_000_000;
        let mut max_pending = 0;
        for k in 1..=1_000_000i64 {
            m.sample(last_tick + k * 1_000_000, 1, s, true);
            max_pending = max_pending.max(m.pending_len());
        }
        // At most the pending window's worth (10 s of 1 ms samples) waits.
        assert!(max_pending <= 10_001, "{max_pending} samples pending");
        m.finish();
        let w = m.agg[&(1, s)];
        assert_eq!(w.samples, 1_000_000);
        assert_eq!(w.managed, 1_000_000);
        assert!(m.stale_samples() >= 1_000_000 - 10_001);
        assert_eq!(m.pending_len(), 0);
    }

    #[test]
    fn a_burst_of_samples_at_one_time_is_bounded_too() {
        let mut m = CpuModel::new(1_000_000);
        m.tick(0);
        for _ in 0..(MAX_PENDING + 10) {
            m.sample(5, 1, None, false);
        }
        assert!(m.pending_len() <= MAX_PENDING);
        m.finish();
        assert_eq!(m.agg[&(1, None)].external as usize, MAX_PENDING + 10);
    }

    #[test]
    fn a_thread_without_readings_in_an_interval_did_not_run() {
        let mut m = CpuModel::new(1_000_000);
        m.thread_cpu(0, 7, 100);
        m.tick(0);
        m.tick(10_000_000);
        m.sample(5_000_000, 7, None, false);
        m.finish();
        let w = m.agg[&(7, None)];
        assert_eq!((w.cpu, w.wait), (0.0, 1.0));
        assert_eq!(m.source(), CpuSource::ThreadCpuTimes);
    }
}
