//! Garbage collections, PerfView's GCStats in a table: one row per GC (number, generation,
//! reason, type, pause, heap after, promoted) and totals (per generation and reason, pause
//! percentiles, share of the trace paused, allocation rate).
//!
//! Pauses are the runtime's suspensions for a GC (`GC/SuspendEEStart` with reason "for GC" or
//! "for GC prep", to `GC/RestartEEStop` on the same thread). A blocking
//! GC has one, inside which its `GC/Start` falls; a background GC has short ones while it runs
//! concurrently; each suspension goes to the GC that started in it, else to the GC in progress.

use clr_events::runtime::{
    ids, GcEnd, GcHeapStats, GcReason, GcRestartEeEnd, GcStart, GcSuspendEe, GcType,
};
use clr_events::ViewError;

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
    /// Time the program was suspended for it, ms.
    pub pause_ms: f64,
    /// Heap size after it (all generations, LOH and POH), MB.
    pub heap_after_mb: Option<f64>,
    /// Bytes promoted (survived), MB.
    pub promoted_mb: Option<f64>,
    /// Gen0 size budget after it... (generation sizes after: gen0, gen1, gen2, loh, poh), MB.
    pub generation_sizes_mb: Option<[f64; 5]>,
    #[serde(skip)]
    open: bool,
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

/// The GC model.
#[derive(Clone, Debug, Default)]
pub struct GcModel {
    /// One row per GC, in start order.
    pub gcs: Vec<GcRow>,
    /// Suspensions for a GC in progress, by the suspending thread.
    suspend_start: rustc_hash::FxHashMap<u64, i64>,
}

const MB: f64 = 1024.0 * 1024.0;

impl GcModel {
    /// An empty model.
    pub fn new() -> GcModel {
        GcModel::default()
    }

    /// A `GC/Start` at `ms`.
    pub fn on_start(&mut self, ms: f64, gc: &GcStart) {
        self.gcs.push(GcRow {
            number: u64::from(gc.count),
            generation: u64::from(gc.depth),
            reason: gc.reason,
            kind: gc.kind,
            start_ms: ms,
            duration_ms: None,
            pause_ms: 0.0,
            heap_after_mb: None,
            promoted_mb: None,
            generation_sizes_mb: None,
            open: true,
        });
    }

    /// A `GC/Stop` at `ms`: closes the open GC of that number.
    pub fn on_end(&mut self, ms: f64, end: &GcEnd) {
        let n = u64::from(end.count);
        if let Some(g) = self.gcs.iter_mut().rev().find(|g| g.open && g.number == n) {
            g.open = false;
            g.duration_ms = Some(ms - g.start_ms);
        }
    }

    /// A `GC/HeapStats`: it follows the GC it describes.
    pub fn on_heap_stats(&mut self, stats: &GcHeapStats) {
        if let Some(g) = self.gcs.last_mut() {
            let sizes = stats.generation_sizes.map(|b| b as f64 / MB);
            g.generation_sizes_mb = Some(sizes);
            g.heap_after_mb = Some(sizes.iter().sum());
            g.promoted_mb = Some(stats.promoted.iter().sum::<u64>() as f64 / MB);
        }
    }

    /// A `GC/SuspendEEStart` on `thread` at `ts_ns`.
    pub fn on_suspend(&mut self, ts_ns: i64, thread: u64, s: &GcSuspendEe) {
        // Only suspensions for a GC or its preparation pause for the GC; the others (the
        // sampler's, the debugger's, ...) are not GC pauses.
        if s.reason.is_for_gc() {
            self.suspend_start.insert(thread, ts_ns);
        }
    }

    /// A `GC/RestartEEStop` on `thread` at `ts_ns`.
    pub fn on_restart_end(&mut self, ts_ns: i64, thread: u64) {
        let Some(s) = self.suspend_start.remove(&thread) else {
            return;
        };
        let pause = (ts_ns - s).max(0) as f64 / 1e6;
        let s_ms = s as f64 / 1e6;
        if let Some(g) = self.gcs.last_mut() {
            if g.start_ms >= s_ms || g.open || g.kind == GcType::Background {
                g.pause_ms += pause;
            }
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
        Wanted::runtime(ids::GC_RESTART_EE_STOP),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let (p, v, ptr) = (ev.payload, ev.version, ev.pointer_size);
        let ms = ev.ts_ns as f64 / 1e6;
        match ev.id {
            ids::GC_START => self.on_start(ms, &GcStart::parse(p, v, ptr)?),
            ids::GC_STOP => self.on_end(ms, &GcEnd::parse(p, v, ptr)?),
            ids::GC_HEAP_STATS => self.on_heap_stats(&GcHeapStats::parse(p, v, ptr)?),
            ids::GC_SUSPEND_EE_START => {
                self.on_suspend(ev.ts_ns, ev.thread_id, &GcSuspendEe::parse(p, v, ptr)?)
            }
            ids::GC_RESTART_EE_STOP => {
                GcRestartEeEnd::parse(p, v, ptr)?;
                self.on_restart_end(ev.ts_ns, ev.thread_id);
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
        assert_eq!(m.gcs.len(), 1);
    }
}
