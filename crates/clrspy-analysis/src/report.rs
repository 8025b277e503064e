//! The reports as data: what `clrspy report` prints and what `--json` writes. Every key here
//! is part of clrspy's JSON interface (documented in docs/report-json.md); add keys, never
//! rename them.

use serde::Serialize;

use crate::alloc::HeapKind;
use crate::cpu::CpuSource;
use crate::gc::{GcRow, GcTotals};
use crate::profile::{call_tree, Metric, StackFilter, TreeNode};
use crate::threads::WorkerPoint;
use crate::Analysis;

/// A method and its weight.
#[derive(Clone, Debug, Serialize)]
pub struct MethodWeight {
    /// Frame name.
    pub method: String,
    /// Samples (CPU or waiting share; fractional where measured), or events for contention.
    pub samples: f64,
    /// Share of the total, percent.
    pub percent: f64,
    /// The same as time, ms.
    pub ms: f64,
}

/// CPU or waiting time by method.
#[derive(Clone, Debug, Serialize)]
pub struct StackReport {
    /// "cpu" or "wait".
    pub metric: Metric,
    /// How CPU was told from waiting.
    pub method: CpuSource,
    /// What `method` means, in words.
    pub method_note: String,
    /// Wall time one sample stands for, ms.
    pub sample_interval_ms: f64,
    /// Samples of this metric.
    pub total_samples: f64,
    /// The same as time, ms.
    pub total_ms: f64,
    /// Methods by exclusive weight (the frame itself).
    pub top_exclusive: Vec<MethodWeight>,
    /// Methods by inclusive weight (with callees).
    pub top_inclusive: Vec<MethodWeight>,
    /// The call tree, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeNode>,
}

/// Builds the CPU or waits report.
pub fn stack_report(
    a: &mut Analysis,
    metric: Metric,
    filter: &StackFilter,
    top: usize,
    tree: bool,
) -> StackReport {
    let profile = a.profile(filter);
    let total = profile.total(metric);
    let (excl, incl) = profile.top(metric, &a.symbols);
    let ms_per = a.sampling_interval_ns as f64 / 1e6;
    let conv = |v: Vec<(String, f64)>| -> Vec<MethodWeight> {
        v.into_iter()
            .take(top)
            .map(|(method, w)| MethodWeight {
                method,
                samples: round1(w),
                percent: if total > 0.0 {
                    round2(w / total * 100.0)
                } else {
                    0.0
                },
                ms: round1(w * ms_per),
            })
            .collect()
    };
    let method = a.cpu.source();
    StackReport {
        metric,
        method,
        method_note: match method {
            CpuSource::ThreadCpuTimes => "each sample weighed by its thread's CPU time, read from /proc while recording (exact)".into(),
            CpuSource::Mixed => "samples weighed by measured thread CPU time where readings cover them; the rest by sample kind and blocking frames".into(),
            CpuSource::Heuristic => "no thread CPU readings in this trace: samples sorted by kind (managed/external) and known blocking frames (waits, sleeps, joins, I/O, locks); record with `clrspy record` for exact CPU".into(),
            CpuSource::None => "the trace has no CPU samples (record with the cpu profile)".into(),
        },
        sample_interval_ms: ms_per,
        total_samples: round1(total),
        total_ms: round1(total * ms_per),
        top_exclusive: conv(excl),
        top_inclusive: conv(incl),
        tree: tree.then(|| call_tree(&profile, metric, &a.symbols)),
    }
}

/// One allocated type.
#[derive(Clone, Debug, Serialize)]
pub struct TypeBytes {
    /// The type name.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Estimated bytes allocated (what the ticks stand for).
    pub bytes: u64,
    /// Allocation ticks (samples) naming this type.
    pub count: u64,
    /// Which heap.
    pub heap: HeapKind,
    /// Share of all allocated bytes, percent.
    pub percent: f64,
}

/// A stack and what it did.
#[derive(Clone, Debug, Serialize)]
pub struct StackCount {
    /// Frames, leaf first.
    pub frames: Vec<String>,
    /// Events.
    pub count: u64,
    /// Bytes (allocations) or ms (contention), when they apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

/// Allocations.
#[derive(Clone, Debug, Serialize)]
pub struct AllocReport {
    /// Allocation ticks in the trace.
    pub ticks: u64,
    /// Estimated bytes allocated.
    pub total_bytes: u64,
    /// Types by bytes, all heaps.
    pub types: Vec<TypeBytes>,
    /// Methods by allocated bytes (the first managed frame of each allocating stack).
    pub top_methods: Vec<MethodWeight>,
    /// Heaviest allocating stacks.
    pub stacks: Vec<StackCount>,
}

fn first_managed(frames: &[String]) -> String {
    frames
        .iter()
        .find(|f| !f.starts_with('[') && !f.contains('!'))
        .cloned()
        .unwrap_or_else(|| {
            frames
                .first()
                .cloned()
                .unwrap_or_else(|| "[no stack]".into())
        })
}

/// Builds the allocation report.
pub fn alloc_report(a: &mut Analysis, top: usize) -> AllocReport {
    let total = a.alloc.total_bytes.max(1) as f64;
    let mut types: Vec<TypeBytes> = a
        .alloc
        .by_type
        .iter()
        .map(|(&(t, heap), v)| TypeBytes {
            type_name: a.alloc.type_name(t).to_string(),
            bytes: v.bytes,
            count: v.count,
            heap,
            percent: round2(v.bytes as f64 / total * 100.0),
        })
        .collect();
    types.sort_by(|x, y| {
        y.bytes
            .cmp(&x.bytes)
            .then_with(|| x.type_name.cmp(&y.type_name))
    });
    types.truncate(top);
    let entries: Vec<_> = a.alloc.by_stack.iter().map(|(k, v)| (*k, *v)).collect();
    let mut methods: rustc_hash::FxHashMap<String, u64> = Default::default();
    let mut stacks: rustc_hash::FxHashMap<Vec<String>, (u64, u64)> = Default::default();
    for ((_, _, stack), (count, bytes)) in entries {
        let frames = a.frames(stack);
        *methods.entry(first_managed(&frames)).or_default() += bytes;
        let e = stacks.entry(frames).or_default();
        e.0 += count;
        e.1 += bytes;
    }
    let mut top_methods: Vec<MethodWeight> = methods
        .into_iter()
        .map(|(method, b)| MethodWeight {
            method,
            samples: b as f64,
            percent: round2(b as f64 / total * 100.0),
            ms: 0.0,
        })
        .collect();
    top_methods.sort_by(|x, y| {
        y.samples
            .total_cmp(&x.samples)
            .then_with(|| x.method.cmp(&y.method))
    });
    top_methods.truncate(top);
    let mut stacks: Vec<StackCount> = stacks
        .into_iter()
        .map(|(frames, (count, bytes))| StackCount {
            frames,
            count,
            weight: Some(bytes as f64),
        })
        .collect();
    stacks.sort_by(|x, y| {
        y.weight
            .unwrap_or(0.0)
            .total_cmp(&x.weight.unwrap_or(0.0))
            .then_with(|| x.frames.cmp(&y.frames))
    });
    stacks.truncate(top.min(10));
    AllocReport {
        ticks: a.alloc.ticks,
        total_bytes: a.alloc.total_bytes,
        types,
        top_methods,
        stacks,
    }
}

/// A name and a count.
#[derive(Clone, Debug, Serialize)]
pub struct NameCount {
    /// The name (a message, a method).
    pub name: String,
    /// How many.
    pub count: u64,
}

/// One exception type.
#[derive(Clone, Debug, Serialize)]
pub struct ExceptionTypeReport {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Times thrown.
    pub count: u64,
    /// Messages, most frequent first.
    pub messages: Vec<NameCount>,
    /// Throw sites (stacks), most frequent first.
    pub throw_sites: Vec<StackCount>,
    /// Methods that caught it.
    pub catch_sites: Vec<NameCount>,
}

/// Exceptions.
#[derive(Clone, Debug, Serialize)]
pub struct ExceptionsReport {
    /// Exceptions thrown.
    pub total: u64,
    /// By type, most first.
    pub types: Vec<ExceptionTypeReport>,
}

fn sorted_counts(m: &rustc_hash::FxHashMap<String, u64>, top: usize) -> Vec<NameCount> {
    let mut v: Vec<NameCount> = m
        .iter()
        .map(|(n, c)| NameCount {
            name: n.clone(),
            count: *c,
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    v.truncate(top);
    v
}

/// Builds the exceptions report.
pub fn exceptions_report(a: &mut Analysis, top: usize) -> ExceptionsReport {
    let mut types: Vec<(String, crate::exceptions::ExceptionType)> = a
        .exceptions
        .types
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    types.sort_by(|x, y| y.1.count.cmp(&x.1.count).then_with(|| x.0.cmp(&y.0)));
    types.truncate(top);
    let types = types
        .into_iter()
        .map(|(name, t)| {
            let mut sites: Vec<StackCount> = t
                .stacks
                .iter()
                .map(|(&s, &c)| StackCount {
                    frames: a.frames(s),
                    count: c,
                    weight: None,
                })
                .collect();
            sites.sort_by(|x, y| y.count.cmp(&x.count).then_with(|| x.frames.cmp(&y.frames)));
            sites.truncate(5);
            ExceptionTypeReport {
                type_name: name,
                count: t.count,
                messages: sorted_counts(&t.messages, 10),
                throw_sites: sites,
                catch_sites: sorted_counts(&t.catches, 5),
            }
        })
        .collect();
    ExceptionsReport {
        total: a.exceptions.total,
        types,
    }
}

/// One contended lock.
#[derive(Clone, Debug, Serialize)]
pub struct LockReport {
    /// The runtime's lock id (0: not reported by this runtime).
    pub lock_id: String,
    /// Contended acquisitions.
    pub count: u64,
    /// Total wait, ms.
    pub wait_ms: f64,
    /// Threads that held it while others waited, most often first.
    pub owner_threads: Vec<u64>,
}

/// Contention.
#[derive(Clone, Debug, Serialize)]
pub struct ContentionReport {
    /// Contended acquisitions.
    pub count: u64,
    /// Total wait, ms.
    pub total_wait_ms: f64,
    /// Methods that waited (the first frame outside the lock's own code), by wait time.
    pub top_exclusive: Vec<MethodWeight>,
    /// Methods by wait time including callees.
    pub top_inclusive: Vec<MethodWeight>,
    /// Locks by wait time.
    pub locks: Vec<LockReport>,
}

/// Frames of the lock implementation itself, skipped to find who waited.
fn is_lock_internal(frame: &str) -> bool {
    frame.starts_with('[')
        || frame.contains('!')
        || frame.starts_with("System.Threading.Monitor.")
        || frame.starts_with("System.Threading.Lock.")
        || frame.starts_with("System.Threading.SpinWait")
        || frame.starts_with("System.Threading.ObjectHeader")
}

/// Builds the contention report.
pub fn contention_report(a: &mut Analysis, top: usize) -> ContentionReport {
    let total = a.contention.total_ns.max(1.0);
    let entries: Vec<_> = a
        .contention
        .by_stack
        .iter()
        .map(|(k, v)| (*k, *v))
        .collect();
    let mut excl: rustc_hash::FxHashMap<String, (u64, f64)> = Default::default();
    let mut incl: rustc_hash::FxHashMap<String, (u64, f64)> = Default::default();
    for ((_, stack), (count, ns)) in entries {
        let frames = a.frames(stack);
        let waiter = frames
            .iter()
            .find(|f| !is_lock_internal(f))
            .cloned()
            .unwrap_or_else(|| {
                frames
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "[no stack]".into())
            });
        let e = excl.entry(waiter).or_default();
        e.0 += count;
        e.1 += ns;
        let mut seen = rustc_hash::FxHashSet::default();
        for f in frames {
            if seen.insert(f.clone()) {
                let e = incl.entry(f).or_default();
                e.0 += count;
                e.1 += ns;
            }
        }
    }
    let conv = |m: rustc_hash::FxHashMap<String, (u64, f64)>| {
        let mut v: Vec<MethodWeight> = m
            .into_iter()
            .map(|(method, (c, ns))| MethodWeight {
                method,
                samples: c as f64,
                percent: round2(ns / total * 100.0),
                ms: round1(ns / 1e6),
            })
            .collect();
        v.sort_by(|x, y| y.ms.total_cmp(&x.ms).then_with(|| x.method.cmp(&y.method)));
        v.truncate(top);
        v
    };
    let mut locks: Vec<LockReport> = a
        .contention
        .by_lock
        .iter()
        .map(|(id, l)| {
            let mut owners: Vec<(u64, u64)> = l.owners.iter().map(|(t, c)| (*t, *c)).collect();
            owners.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            LockReport {
                lock_id: format!("0x{id:x}"),
                count: l.count,
                wait_ms: round1(l.wait_ns / 1e6),
                owner_threads: owners.into_iter().take(5).map(|o| o.0).collect(),
            }
        })
        .collect();
    locks.sort_by(|x, y| {
        y.wait_ms
            .total_cmp(&x.wait_ms)
            .then_with(|| x.lock_id.cmp(&y.lock_id))
    });
    locks.truncate(top);
    ContentionReport {
        count: a.contention.count,
        total_wait_ms: round1(a.contention.total_ns / 1e6),
        top_exclusive: conv(excl),
        top_inclusive: conv(incl),
        locks,
    }
}

/// GCs.
#[derive(Clone, Debug, Serialize)]
pub struct GcReport {
    /// One row per GC.
    pub gcs: Vec<GcRow>,
    /// Totals.
    pub totals: GcTotals,
}

/// Builds the GC report.
pub fn gc_report(a: &Analysis) -> GcReport {
    let alloc = (a.alloc.ticks > 0).then_some(a.alloc.total_bytes);
    let mut gcs = a.gc.gcs.clone();
    // The file interleaves threads: list GCs in the order they ran.
    gcs.sort_by(|x, y| {
        x.number
            .cmp(&y.number)
            .then(x.start_ms.total_cmp(&y.start_ms))
    });
    for g in &mut gcs {
        g.pause_ms = round3(g.pause_ms);
        g.duration_ms = g.duration_ms.map(round3);
        g.start_ms = round3(g.start_ms);
    }
    GcReport {
        gcs,
        totals: a.gc.totals(a.duration_ns, alloc),
    }
}

/// One thread.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRow {
    /// OS thread id.
    pub thread: u64,
    /// Its name, when clrspy recorded it.
    pub name: Option<String>,
    /// CPU time, ms.
    pub cpu_ms: f64,
    /// Waiting time, ms.
    pub wait_ms: f64,
    /// "running" or "waiting": what it did most.
    pub mostly: String,
    /// The frame it was most often seen in.
    pub top_frame: String,
}

/// Threads and the thread pool.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadsReport {
    /// Threads by sampled time.
    pub threads: Vec<ThreadRow>,
    /// Highest pool worker count seen.
    pub max_workers: u64,
    /// Pool adjustments made because work was starved.
    pub starvation_adjustments: u64,
    /// Pool adjustments by reason.
    pub adjustments: Vec<NameCount>,
    /// Worker count over time.
    pub worker_timeline: Vec<WorkerPoint>,
    /// Threads created during the trace.
    pub threads_created: u64,
}

/// Builds the threads report.
pub fn threads_report(a: &mut Analysis, top: usize) -> ThreadsReport {
    let profile = a.profile(&StackFilter::default());
    let ms = a.sampling_interval_ns as f64 / 1e6;
    let threads = profile
        .threads(&a.symbols)
        .into_iter()
        .take(top)
        .map(|(t, c, w, f)| ThreadRow {
            thread: t,
            name: a.threads.names.get(&t).cloned(),
            cpu_ms: round1(c * ms),
            wait_ms: round1(w * ms),
            mostly: if c >= w { "running" } else { "waiting" }.into(),
            top_frame: f,
        })
        .collect();
    ThreadsReport {
        threads,
        max_workers: a.threads.max_workers,
        starvation_adjustments: a.threads.starvation,
        adjustments: sorted_counts(&a.threads.adjustments, 20),
        worker_timeline: a.threads.timeline.clone(),
        threads_created: a.threads.created,
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
