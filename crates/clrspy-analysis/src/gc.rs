//! Garbage collections, PerfView's GCStats in a table: one row per GC (number, generation,
//! reason, type, pause, heap after, promoted) and totals (per generation and reason, pause
//! percentiles, share of the trace paused, allocation rate).
//!
//! Pauses are the runtime's suspensions for a GC (`GC/SuspendEEStart` with reason "for GC" or
//! "for GC prep", to `GC/RestartEEStop` on the same thread). A blocking
//! GC has one, inside which its `GC/Start` falls; a background GC has short ones while it runs
//! concurrently; each suspension goes to the GC that started in it, else to the GC in progress.

use crate::event::{runtime, EventCtx};

/// One GC.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GcRow {
    /// The runtime's GC number.
    pub number: u64,
    /// Generation collected (0, 1, 2).
    pub generation: u64,
    /// Why it ran.
    pub reason: String,
    /// NonConcurrent (blocking), Background or Foreground.
    #[serde(rename = "type")]
    pub kind: String,
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
#[derive(Debug, Default)]
pub struct GcModel {
    /// One row per GC, in start order.
    pub gcs: Vec<GcRow>,
    /// Suspensions for a GC in progress, by the suspending thread.
    suspend_start: rustc_hash::FxHashMap<u64, i64>,
}

/// The runtime's GC reasons.
pub fn reason_name(r: u64) -> String {
    match r {
        0 => "AllocSmall",
        1 => "Induced",
        2 => "LowMemory",
        3 => "Empty",
        4 => "AllocLarge",
        5 => "OutOfSpaceSOH",
        6 => "OutOfSpaceLOH",
        7 => "InducedNotForced",
        8 => "Internal",
        9 => "InducedLowMemory",
        10 => "InducedCompacting",
        11 => "LowMemoryHost",
        12 => "PMFullGC",
        13 => "LowMemoryHostBlocking",
        other => return format!("Reason{other}"),
    }
    .to_string()
}

fn type_name(t: u64) -> String {
    match t {
        0 => "NonConcurrent",
        1 => "Background",
        2 => "Foreground",
        other => return format!("Type{other}"),
    }
    .to_string()
}

const MB: f64 = 1024.0 * 1024.0;

impl GcModel {
    /// An empty model.
    pub fn new() -> GcModel {
        GcModel::default()
    }

    /// A GC event (start, stop, heap stats, suspend/restart).
    pub fn on_event(&mut self, ev: &EventCtx<'_>) {
        let f = ev.fields;
        let ms = ev.ts_ns as f64 / 1e6;
        match ev.id {
            runtime::GC_START => self.gcs.push(GcRow {
                number: f.u64("Count").unwrap_or(0),
                generation: f.u64("Depth").unwrap_or(0),
                reason: reason_name(f.u64("Reason").unwrap_or(u64::MAX)),
                kind: type_name(f.u64("Type").unwrap_or(0)),
                start_ms: ms,
                duration_ms: None,
                pause_ms: 0.0,
                heap_after_mb: None,
                promoted_mb: None,
                generation_sizes_mb: None,
                open: true,
            }),
            runtime::GC_STOP => {
                let n = f.u64("Count");
                if let Some(g) = self
                    .gcs
                    .iter_mut()
                    .rev()
                    .find(|g| g.open && (n.is_none() || Some(g.number) == n))
                {
                    g.open = false;
                    g.duration_ms = Some(ms - g.start_ms);
                }
            }
            runtime::GC_HEAP_STATS => {
                // Heap stats follow the GC they describe.
                if let Some(g) = self.gcs.last_mut() {
                    let sizes = [
                        f.u64("GenerationSize0").unwrap_or(0) as f64 / MB,
                        f.u64("GenerationSize1").unwrap_or(0) as f64 / MB,
                        f.u64("GenerationSize2").unwrap_or(0) as f64 / MB,
                        f.u64("GenerationSize3").unwrap_or(0) as f64 / MB,
                        f.u64("GenerationSize4").unwrap_or(0) as f64 / MB,
                    ];
                    g.generation_sizes_mb = Some(sizes);
                    g.heap_after_mb = Some(sizes.iter().sum());
                    let promoted: u64 = [
                        "TotalPromotedSize0",
                        "TotalPromotedSize1",
                        "TotalPromotedSize2",
                        "TotalPromotedSize3",
                        "TotalPromotedSize4",
                    ]
                    .iter()
                    .filter_map(|k| f.u64(k))
                    .sum();
                    g.promoted_mb = Some(promoted as f64 / MB);
                }
            }
            runtime::GC_SUSPEND_EE_START => {
                // Only suspensions for a GC (1) or its preparation (6) pause for the GC; the
                // others (the sampler's, the debugger's, ...) are not GC pauses.
                if matches!(f.u64("Reason"), Some(1) | Some(6)) {
                    self.suspend_start.insert(ev.thread_id, ev.ts_ns);
                }
            }
            runtime::GC_RESTART_EE_STOP => {
                let Some(s) = self.suspend_start.remove(&ev.thread_id) else {
                    return;
                };
                let pause = (ev.ts_ns - s).max(0) as f64 / 1e6;
                let s_ms = s as f64 / 1e6;
                if let Some(g) = self.gcs.last_mut() {
                    if g.start_ms >= s_ms || g.open || g.kind == "Background" {
                        g.pause_ms += pause;
                    }
                }
            }
            _ => {}
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
            if g.reason.starts_with("Induced") && g.generation == 2 {
                t.induced += 1;
            }
            match reasons.iter_mut().find(|r| r.name == g.reason) {
                Some(r) => r.count += 1,
                None => reasons.push(Count {
                    name: g.reason.clone(),
                    count: 1,
                }),
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
