//! Garbage collections, PerfView's GCStats in a table: one row per GC (number, generation,
//! reason, type, pause, heap after, promoted), totals (per generation and reason, pause
//! percentiles, share of the trace paused, allocation rate) and the GC's flavour (Server or
//! workstation, concurrent or not, heaps).
//!
//! Events come in file order, and the runtime writes them from several threads (under Server
//! GC, `GC/Start` and `GC/Stop` come from different GC threads; a background GC has a thread
//! of its own): nothing here relies on "the last GC". The events are kept by GC number and
//! thread, and [`GcModel::finish`] puts each GC together:
//!
//! - a pause is a suspension for a GC (`GC/SuspendEEStart` with reason "for GC" or "for GC
//!   prep", to `GC/RestartEEStop` on the same thread). It belongs to the GC whose `GC/Start`
//!   falls inside it (a blocking GC, a background GC's first pause, a foreground GC); one
//!   with no `GC/Start` inside belongs to the background GC in progress (its later pauses),
//!   else to the GC in progress. When two GCs start inside one suspension (a background GC
//!   that first runs a blocking ephemeral GC), the later one is paused from its `GC/Start` to
//!   the restart and the first one for the time it took to suspend (`GC/SuspendEEStop`), as
//!   TraceEvent's GCStats counts them. The suspension's own `Count` is not used: during a background
//!   GC it stays the background GC's number while foreground GCs run.
//! - `GC/HeapStats` follows the `GC/Stop` of its GC on the same thread.
//! - the flavour: more than one heap (`GC/GlobalHeapHistory`'s `NumHeaps`) is Server GC; else
//!   blocking GCs that run on the thread that asked for them (`GC/Triggered`) are workstation
//!   GC, on other threads (the GC's own) Server GC; concurrent from the latency mode (`Batch`
//!   is no background GC) or from a background GC seen.

use clr_events::runtime::{
    ids, GcEnd, GcGlobalHeapHistory, GcHeapStats, GcPauseMode, GcReason, GcRestartEeEnd, GcStart,
    GcSuspendEe, GcType,
};
use clr_events::ViewError;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::event::{Model, ModelEvent, Wanted};

fn display<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// One GC.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GcRow {
    /// The runtime's GC number.
    pub number: u64,
    /// Generation collected (0, 1, 2).
    pub generation: u64,
    /// Why it ran.
    #[serde(serialize_with = "display")]
    pub reason: GcReason,
    /// NonConcurrent (blocking), Background or Foreground.
    #[serde(rename = "type", serialize_with = "display")]
    pub kind: GcType,
    /// Start, ms since the trace started.
    pub start_ms: f64,
    /// Time from GC/Start to GC/Stop, ms.
    pub duration_ms: Option<f64>,
    /// Time the program was suspended for it, ms (a background GC's pauses added up).
    pub pause_ms: f64,
    /// Heap size after it (all generations, LOH and POH), MB.
    pub heap_after_mb: Option<f64>,
    /// Bytes promoted (survived), MB.
    pub promoted_mb: Option<f64>,
    /// Generation sizes after it (gen0, gen1, gen2, LOH, POH), MB.
    pub(crate) generation_sizes_mb: Option<[f64; 5]>,
}

/// Counts by a key.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Count {
    /// The key.
    pub name: String,
    /// How many.
    pub count: u64,
}

/// GC totals.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct GcTotals {
    /// GCs.
    pub count: u64,
    /// GCs per generation [gen0, gen1, gen2].
    pub per_generation: [u64; 3],
    /// Induced gen2 GCs (`GC.Collect()`).
    pub induced: u64,
    /// GCs per reason, most first.
    pub per_reason: Vec<Count>,
    /// Sum of pauses, ms.
    pub total_pause_ms: f64,
    /// Longest pause, ms.
    pub max_pause_ms: f64,
    /// Median pause, ms.
    pub p50_pause_ms: f64,
    /// 95th percentile pause, ms.
    pub p95_pause_ms: f64,
    /// 99th percentile pause, ms.
    pub p99_pause_ms: f64,
    /// Share of the trace's time the program was paused by GCs, percent.
    pub paused_percent: f64,
    /// Allocation rate from the allocation ticks, MB/s (None without them).
    pub allocation_mb_per_s: Option<f64>,
    /// Largest heap seen after a GC, MB.
    pub peak_heap_mb: Option<f64>,
}

/// Server or workstation GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GcKind {
    /// Server GC: one heap and one GC thread per core (or per `GCHeapCount`).
    Server,
    /// Workstation GC: one heap; blocking GCs run on the thread that allocated.
    Workstation,
}

impl std::fmt::Display for GcKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            GcKind::Server => "Server",
            GcKind::Workstation => "workstation",
        })
    }
}

/// The GC's flavour as the trace shows it (each part None when the trace does not say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GcMode {
    /// Server or workstation.
    pub gc_mode: Option<GcKind>,
    /// Background GCs enabled (concurrent GC).
    pub concurrent: Option<bool>,
    /// GC heaps.
    pub heaps: Option<u32>,
}

/// A GC as its events tell it, before [`GcModel::finish`] makes a row of it.
#[derive(Clone, Copy, Debug)]
struct Started {
    ts_ns: i64,
    start: GcStart,
}

/// One suspension for a GC, ns.
#[derive(Clone, Copy, Debug)]
struct Suspension {
    /// `GC/SuspendEEStart`.
    start: i64,
    /// `GC/SuspendEEStop` (every thread suspended), when seen.
    suspended: Option<i64>,
    /// `GC/RestartEEStop`.
    end: i64,
}

/// Sizes after a GC, from its `GC/HeapStats`.
#[derive(Clone, Copy, Debug)]
struct HeapAfter {
    sizes: [u64; 5],
    promoted: u64,
}

/// The GC model.
#[derive(Clone, Debug, Default)]
pub struct GcModel {
    /// One row per GC, in start order (made by [`GcModel::finish`]).
    pub gcs: Vec<GcRow>,
    /// The GC's flavour (made by [`GcModel::finish`]).
    pub mode: GcMode,
    started: FxHashMap<u32, Started>,
    stopped: FxHashMap<u32, i64>,
    heap_after: FxHashMap<u32, HeapAfter>,
    /// The GC number of each thread's last `GC/Stop` (its `GC/HeapStats` follows).
    last_stop: FxHashMap<u64, u32>,
    /// Suspensions for a GC in progress, by the suspending thread: when it started and when
    /// every thread was suspended.
    suspend_start: FxHashMap<u64, (i64, Option<i64>)>,
    /// Finished suspensions for a GC.
    suspensions: Vec<Suspension>,
    /// Threads whose last GC event was `GC/Triggered`.
    triggered: FxHashSet<u64>,
    /// The stacks that asked for induced GCs (`GC/Triggered` of an `Induced*` reason:
    /// `GC.Collect()` and friends), with how many each asked for.
    pub induced_stacks: FxHashMap<Option<crate::stacks::StackId>, u64>,
    /// Blocking GCs that started on the thread that triggered them (workstation GC) and on
    /// another thread (Server GC's GC threads).
    on_trigger_thread: u64,
    on_gc_thread: u64,
    max_heaps: Option<u32>,
    batch: bool,
    interactive: bool,
}

const MB: f64 = 1024.0 * 1024.0;

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

impl GcModel {
    /// An empty model.
    pub fn new() -> GcModel {
        GcModel::default()
    }

    /// A `GC/Start` on `thread` at `ts_ns`.
    pub(crate) fn on_start(&mut self, ts_ns: i64, thread: u64, gc: &GcStart) {
        if gc.kind != GcType::Background {
            if self.triggered.remove(&thread) {
                self.on_trigger_thread += 1;
            } else {
                self.on_gc_thread += 1;
            }
        }
        self.started.insert(gc.count, Started { ts_ns, start: *gc });
    }

    /// A `GC/Stop` on `thread` at `ts_ns`.
    pub(crate) fn on_end(&mut self, ts_ns: i64, thread: u64, end: &GcEnd) {
        self.stopped.insert(end.count, ts_ns);
        self.last_stop.insert(thread, end.count);
    }

    /// A `GC/HeapStats` on `thread`: it follows the `GC/Stop` of its GC on that thread.
    pub(crate) fn on_heap_stats(&mut self, thread: u64, stats: &GcHeapStats) {
        if let Some(n) = self.last_stop.get(&thread) {
            self.heap_after.insert(
                *n,
                HeapAfter {
                    sizes: stats.generation_sizes,
                    promoted: stats.promoted.iter().sum(),
                },
            );
        }
    }

    /// The median time the runtime took to suspend the threads for a GC (`GC/SuspendEEStart`
    /// to `GC/SuspendEEStop`), ms; none without those events.
    pub fn median_suspend_ms(&self) -> Option<f64> {
        let mut v: Vec<i64> = self
            .suspensions
            .iter()
            .filter_map(|s| s.suspended.map(|t| t - s.start))
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        Some(v[v.len() / 2] as f64 / 1e6)
    }

    /// A `GC/SuspendEEStart` on `thread` at `ts_ns`.
    pub(crate) fn on_suspend(&mut self, ts_ns: i64, thread: u64, s: &GcSuspendEe) {
        // Only suspensions for a GC or its preparation pause for the GC; the others (the
        // sampler's, the debugger's, ...) are not GC pauses.
        if s.reason.is_for_gc() {
            self.suspend_start.insert(thread, (ts_ns, None));
        }
    }

    /// A `GC/SuspendEEStop` on `thread` at `ts_ns`: the threads are suspended.
    pub(crate) fn on_suspended(&mut self, ts_ns: i64, thread: u64) {
        if let Some((_, at)) = self.suspend_start.get_mut(&thread) {
            at.get_or_insert(ts_ns);
        }
    }

    /// A `GC/RestartEEStop` on `thread` at `ts_ns`.
    pub(crate) fn on_restart_end(&mut self, ts_ns: i64, thread: u64) {
        if let Some((start, suspended)) = self.suspend_start.remove(&thread) {
            self.suspensions.push(Suspension {
                start,
                suspended: suspended.map(|t| t.clamp(start, ts_ns.max(start))),
                end: ts_ns.max(start),
            });
        }
    }

    /// A `GC/GlobalHeapHistory`.
    pub(crate) fn on_global_heap_history(&mut self, h: &GcGlobalHeapHistory) {
        self.max_heaps = Some(self.max_heaps.map_or(h.num_heaps, |m| m.max(h.num_heaps)));
        match h.pause_mode {
            Some(GcPauseMode::Batch) => self.batch = true,
            Some(GcPauseMode::Interactive | GcPauseMode::SustainedLowLatency) => {
                self.interactive = true
            }
            _ => {}
        }
    }

    /// Puts each GC together from its events (see the module's note): fills
    /// [`GcModel::gcs`] and [`GcModel::mode`]. Call it again after more events.
    pub fn finish(&mut self) {
        let mut order: Vec<(&u32, &Started)> = self.started.iter().collect();
        order.sort_by_key(|(n, s)| (s.ts_ns, **n));
        let mut pause_ns = vec![0i64; order.len()];
        let stop_of = |i: usize| self.stopped.get(order[i].0).copied();
        let background: Vec<usize> = (0..order.len())
            .filter(|&i| order[i].1.start.kind == GcType::Background)
            .collect();
        for sus in &self.suspensions {
            let (s, e) = (sus.start, sus.end);
            let first = order.partition_point(|(_, g)| g.ts_ns < s);
            let inside = order[first..].partition_point(|(_, g)| g.ts_ns <= e);
            match inside {
                0 => {
                    let running =
                        |i: usize| order[i].1.ts_ns <= s && stop_of(i).is_none_or(|t| t >= s);
                    let owner = background
                        .iter()
                        .rev()
                        .copied()
                        .find(|&i| running(i))
                        .or_else(|| first.checked_sub(1).filter(|&i| running(i)));
                    if let Some(i) = owner {
                        pause_ns[i] += e - s;
                    }
                }
                1 => pause_ns[first] += e - s,
                n => {
                    // The first GC paid for the suspension, each later one runs from its
                    // start to the next one's, the last to the restart.
                    let last = first + n - 1;
                    let next_start = order[first + 1].1.ts_ns;
                    pause_ns[first] += sus.suspended.unwrap_or(next_start).min(next_start) - s;
                    for i in first + 1..last {
                        pause_ns[i] += order[i + 1].1.ts_ns - order[i].1.ts_ns;
                    }
                    pause_ns[last] += e - order[last].1.ts_ns;
                }
            }
        }
        self.gcs = order
            .iter()
            .zip(pause_ns)
            .map(|((n, g), pause)| {
                let after = self.heap_after.get(n);
                let sizes = after.map(|h| h.sizes.map(|b| b as f64 / MB));
                GcRow {
                    number: u64::from(**n),
                    generation: u64::from(g.start.depth),
                    reason: g.start.reason,
                    kind: g.start.kind,
                    start_ms: ms(g.ts_ns),
                    duration_ms: self.stopped.get(n).map(|t| ms(t - g.ts_ns)),
                    pause_ms: ms(pause),
                    heap_after_mb: sizes.map(|s| s.iter().sum()),
                    promoted_mb: after.map(|h| h.promoted as f64 / MB),
                    generation_sizes_mb: sizes,
                }
            })
            .collect();
        self.mode = self.flavour();
    }

    fn flavour(&self) -> GcMode {
        let gc_mode = match self.max_heaps {
            Some(h) if h > 1 => Some(GcKind::Server),
            _ if self.on_gc_thread > self.on_trigger_thread => Some(GcKind::Server),
            _ if self.on_trigger_thread > self.on_gc_thread => Some(GcKind::Workstation),
            Some(1) => Some(GcKind::Workstation),
            _ => None,
        };
        let background = self.gcs.iter().any(|g| g.kind == GcType::Background);
        let concurrent = if background || self.interactive {
            Some(true)
        } else if self.batch {
            Some(false)
        } else {
            None
        };
        GcMode {
            gc_mode,
            concurrent,
            heaps: self.max_heaps,
        }
    }

    /// Totals over the trace: `duration_ns` is the trace's length, `allocated_bytes` what the
    /// allocation ticks stand for (None without them).
    pub fn totals(&self, duration_ns: i64, allocated_bytes: Option<u64>) -> GcTotals {
        let mut t = GcTotals {
            count: self.gcs.len() as u64,
            ..GcTotals::default()
        };
        let mut reasons: Vec<Count> = Vec::new();
        let mut pauses: Vec<f64> = Vec::new();
        for g in &self.gcs {
            if let Some(c) = t.per_generation.get_mut(g.generation as usize) {
                *c += 1;
            }
            if g.reason.is_induced() && g.generation == 2 {
                t.induced += 1;
            }
            let name = g.reason.to_string();
            match reasons.iter_mut().find(|r| r.name == name) {
                Some(r) => r.count += 1,
                None => reasons.push(Count { name, count: 1 }),
            }
            pauses.push(g.pause_ms);
            if let Some(h) = g.heap_after_mb {
                t.peak_heap_mb = Some(t.peak_heap_mb.map_or(h, |p: f64| p.max(h)));
            }
        }
        reasons.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        t.per_reason = reasons;
        pauses.sort_by(|a, b| a.total_cmp(b));
        t.total_pause_ms = pauses.iter().sum();
        t.max_pause_ms = pauses.last().copied().unwrap_or(0.0);
        let pct = |p: f64| -> f64 {
            if pauses.is_empty() {
                return 0.0;
            }
            let i = ((pauses.len() as f64 - 1.0) * p).round() as usize;
            pauses[i.min(pauses.len() - 1)]
        };
        t.p50_pause_ms = pct(0.50);
        t.p95_pause_ms = pct(0.95);
        t.p99_pause_ms = pct(0.99);
        if duration_ns > 0 {
            t.paused_percent = t.total_pause_ms * 1e6 / duration_ns as f64 * 100.0;
            t.allocation_mb_per_s =
                allocated_bytes.map(|b| b as f64 / MB / (duration_ns as f64 / 1e9));
        }
        t
    }
}

impl Model for GcModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::GC_START),
        Wanted::runtime(ids::GC_STOP),
        Wanted::runtime(ids::GC_HEAP_STATS),
        Wanted::runtime(ids::GC_SUSPEND_EE_START),
        Wanted::runtime(ids::GC_SUSPEND_EE_STOP),
        Wanted::runtime(ids::GC_RESTART_EE_STOP),
        Wanted::runtime(ids::GC_TRIGGERED).with_stack(),
        Wanted::runtime(ids::GC_GLOBAL_HEAP_HISTORY),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let (p, v, ptr) = (ev.payload, ev.version, ev.pointer_size);
        let (ts, thread) = (ev.ts_ns, ev.thread_id);
        match ev.id {
            ids::GC_START => self.on_start(ts, thread, &GcStart::parse(p, v, ptr)?),
            ids::GC_STOP => self.on_end(ts, thread, &GcEnd::parse(p, v, ptr)?),
            ids::GC_HEAP_STATS => self.on_heap_stats(thread, &GcHeapStats::parse(p, v, ptr)?),
            ids::GC_SUSPEND_EE_START => {
                self.on_suspend(ts, thread, &GcSuspendEe::parse(p, v, ptr)?)
            }
            ids::GC_SUSPEND_EE_STOP => self.on_suspended(ts, thread),
            ids::GC_RESTART_EE_STOP => {
                GcRestartEeEnd::parse(p, v, ptr)?;
                self.on_restart_end(ts, thread);
            }
            ids::GC_TRIGGERED => {
                self.triggered.insert(thread);
                let reason = p
                    .get(..4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                if reason.is_some_and(|r| GcReason::from_u32(r).is_induced()) {
                    *self.induced_stacks.entry(ev.stack).or_default() += 1;
                }
            }
            ids::GC_GLOBAL_HEAP_HISTORY => {
                self.on_global_heap_history(&GcGlobalHeapHistory::parse(p, v, ptr)?)
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Provider;

    fn ev(id: u32, version: u8, ms: i64, payload: &[u8]) -> ModelEvent<'_> {
        ModelEvent {
            provider: Provider::Known(clr_events::KnownProvider::Runtime),
            id,
            version,
            ts_ns: ms * 1_000_000,
            thread_id: 3,
            payload,
            pointer_size: 8,
            stack: None,
            context: crate::EventContext::default(),
        }
    }

    fn u32s(v: &[u32], tail16: bool) -> Vec<u8> {
        let mut p: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        if tail16 {
            p.extend(0u16.to_le_bytes());
        }
        p
    }

    #[test]
    fn one_blocking_gc_with_its_pause_and_heap() {
        let mut m = GcModel::new();
        m.on_event(&ev(ids::GC_SUSPEND_EE_START, 1, 10, &u32s(&[1, 4], true)))
            .unwrap();
        m.on_event(&ev(ids::GC_START, 1, 11, &u32s(&[4, 2, 1, 0], true)))
            .unwrap();
        m.on_event(&ev(ids::GC_STOP, 1, 14, &u32s(&[4, 2], true)))
            .unwrap();
        let mut hs = Vec::new();
        for b in [1u64, 2, 3, 4, 5, 6, 7, 8, 0, 0] {
            hs.extend((b * 1024 * 1024).to_le_bytes());
        }
        hs.extend(u32s(&[0, 0, 0], true));
        m.on_event(&ev(ids::GC_HEAP_STATS, 1, 14, &hs)).unwrap();
        m.on_event(&ev(ids::GC_RESTART_EE_STOP, 1, 15, &[0, 0]))
            .unwrap();
        // A suspension for the debugger is not a GC pause.
        m.on_event(&ev(ids::GC_SUSPEND_EE_START, 1, 20, &u32s(&[5, 4], true)))
            .unwrap();
        m.on_event(&ev(ids::GC_RESTART_EE_STOP, 1, 25, &[0, 0]))
            .unwrap();
        m.finish();
        let g = &m.gcs[0];
        assert_eq!(
            (g.number, g.generation, g.reason),
            (4, 2, GcReason::Induced)
        );
        assert_eq!(g.kind, GcType::NonConcurrent);
        assert_eq!((g.duration_ms, g.pause_ms), (Some(3.0), 5.0));
        assert_eq!(g.heap_after_mb, Some(1.0 + 3.0 + 5.0 + 7.0));
        assert_eq!(g.promoted_mb, Some(2.0 + 4.0 + 6.0 + 8.0));
        let t = m.totals(1_000_000_000, None);
        assert_eq!((t.count, t.induced, t.per_generation), (1, 1, [0, 0, 1]));
        assert_eq!(t.per_reason[0].name, "Induced");
        let json = serde_json::to_value(g).unwrap();
        assert_eq!(
            (json["reason"].as_str(), json["type"].as_str()),
            (Some("Induced"), Some("NonConcurrent"))
        );
        // A cut GC/Start is an error, not GC number 0.
        let e = m
            .on_event(&ev(ids::GC_START, 1, 30, &u32s(&[5, 0], false)))
            .unwrap_err();
        assert!(e.to_string().contains("Reason"), "{e}");
        m.finish();
        assert_eq!(m.gcs.len(), 1);
    }

    /// Feeds `(thread, event, ms, payload)` in the order given (file order, not time order).
    fn feed(m: &mut GcModel, events: &[(u64, u32, i64, Vec<u8>)]) {
        for (thread, id, at, payload) in events {
            let version = if *id == ids::GC_GLOBAL_HEAP_HISTORY {
                2
            } else {
                1
            };
            let mut e = ev(*id, version, *at, payload);
            if *id == ids::GC_TRIGGERED {
                e.version = 0;
            }
            e.thread_id = *thread;
            m.on_event(&e).unwrap();
        }
        m.finish();
    }

    fn heap_stats(mb: u64) -> Vec<u8> {
        let mut p = Vec::new();
        for b in [mb, 0, 0, 0, 0, 0, 0, 0, 0, 0] {
            p.extend((b * 1024 * 1024).to_le_bytes());
        }
        p.extend(u32s(&[0, 0, 0], true));
        p
    }

    fn global_heap_history(heaps: u32, pause_mode: u32) -> Vec<u8> {
        let mut p = 0u64.to_le_bytes().to_vec();
        p.extend(u32s(&[heaps, 0, 0, 0, 0], true));
        p.extend(u32s(&[pause_mode, 0], false));
        p
    }

    const SUSPEND: u32 = ids::GC_SUSPEND_EE_START;
    const SUSPENDED: u32 = ids::GC_SUSPEND_EE_STOP;
    const RESTART: u32 = ids::GC_RESTART_EE_STOP;

    #[test]
    fn server_gc_threads_in_file_order() {
        // Thread 10 suspends, stops GCs and writes HeapStats; thread 11 (another heap's GC
        // thread) writes GC/Start; thread 20 allocates. Thread 10's events come first in the
        // file, as the runtime flushes one thread's buffer at a time.
        let mut m = GcModel::new();
        feed(
            &mut m,
            &[
                (10, SUSPEND, 10, u32s(&[1, 6], true)),
                (10, ids::GC_STOP, 13, u32s(&[7, 0], true)),
                (10, ids::GC_HEAP_STATS, 13, heap_stats(5)),
                (10, RESTART, 14, vec![0, 0]),
                (10, SUSPEND, 20, u32s(&[1, 7], true)),
                (10, ids::GC_STOP, 22, u32s(&[8, 1], true)),
                (10, ids::GC_HEAP_STATS, 22, heap_stats(9)),
                (10, RESTART, 24, vec![0, 0]),
                (11, ids::GC_START, 11, u32s(&[7, 0, 0, 0], true)),
                (
                    11,
                    ids::GC_GLOBAL_HEAP_HISTORY,
                    12,
                    global_heap_history(2, 1),
                ),
                (11, ids::GC_START, 21, u32s(&[8, 1, 0, 0], true)),
                (20, ids::GC_TRIGGERED, 9, u32s(&[0], true)),
                (20, ids::GC_TRIGGERED, 19, u32s(&[0], true)),
            ],
        );
        let rows: Vec<_> = m
            .gcs
            .iter()
            .map(|g| (g.number, g.generation, g.pause_ms, g.heap_after_mb))
            .collect();
        assert_eq!(rows, [(7, 0, 4.0, Some(5.0)), (8, 1, 4.0, Some(9.0))]);
        assert_eq!(m.gcs[0].duration_ms, Some(2.0));
        let mode = m.mode;
        assert_eq!(
            (mode.gc_mode, mode.concurrent, mode.heaps),
            (Some(GcKind::Server), Some(true), Some(2))
        );
    }

    #[test]
    fn background_gc_with_foreground_gcs_inside() {
        // BGC 30 starts with an ephemeral GC 31 in the same suspension, foreground GC 32 runs
        // while it marks, and its last pause (suspension for GC prep, on the BGC thread 12)
        // has no GC/Start inside. Workstation GC: blocking GCs run on the allocating thread.
        let mut m = GcModel::new();
        feed(
            &mut m,
            &[
                (5, ids::GC_TRIGGERED, 99, u32s(&[7], true)),
                (5, SUSPEND, 100, u32s(&[1, 29], true)),
                (5, SUSPENDED, 101, vec![0, 0]),
                (5, ids::GC_START, 102, u32s(&[30, 2, 7, 1], true)),
                (5, ids::GC_START, 103, u32s(&[31, 0, 7, 0], true)),
                (5, ids::GC_STOP, 104, u32s(&[31, 0], true)),
                (5, ids::GC_HEAP_STATS, 104, heap_stats(3)),
                (5, RESTART, 106, vec![0, 0]),
                (5, ids::GC_TRIGGERED, 109, u32s(&[0], true)),
                (5, SUSPEND, 110, u32s(&[1, 30], true)),
                (5, ids::GC_START, 111, u32s(&[32, 0, 0, 2], true)),
                (5, ids::GC_STOP, 112, u32s(&[32, 0], true)),
                (5, ids::GC_HEAP_STATS, 112, heap_stats(4)),
                (5, RESTART, 113, vec![0, 0]),
                (
                    5,
                    ids::GC_GLOBAL_HEAP_HISTORY,
                    113,
                    global_heap_history(1, 1),
                ),
                (12, SUSPEND, 120, u32s(&[6, 30], true)),
                (12, RESTART, 122, vec![0, 0]),
                (12, ids::GC_STOP, 130, u32s(&[30, 2], true)),
                (12, ids::GC_HEAP_STATS, 130, heap_stats(50)),
            ],
        );
        let rows: Vec<_> = m
            .gcs
            .iter()
            .map(|g| (g.number, g.kind, g.pause_ms, g.heap_after_mb))
            .collect();
        assert_eq!(
            rows,
            [
                (30, GcType::Background, 1.0 + 2.0, Some(50.0)),
                (31, GcType::NonConcurrent, 3.0, Some(3.0)),
                (32, GcType::Foreground, 3.0, Some(4.0)),
            ]
        );
        let mode = m.mode;
        assert_eq!(
            (mode.gc_mode, mode.concurrent, mode.heaps),
            (Some(GcKind::Workstation), Some(true), Some(1))
        );
        // Nothing about the flavour: unknown, not guessed.
        let mut empty = GcModel::new();
        empty.finish();
        assert_eq!(empty.mode, GcMode::default());
    }
}
