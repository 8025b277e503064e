//! Resolved stacks with their CPU and waiting weights — the common input of the CPU and waits
//! reports, the call tree and (later) every stack export. Built once at the end of the pass
//! from the samples model, the stack table and the symbols; it holds one row per distinct
//! (thread, stack), never one per sample.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::cpu::{is_lock_acquisition, CpuModel};
use crate::stacks::{StackId, StackTable};
use crate::symbols::{FrameId, FrameKind, Symbols};

mod frames;
pub(crate) mod native;
mod tree;

pub(crate) use frames::blocking_call;
use frames::{apply_filter, fold_safepoint_frames, idle_kind, is_runnable};
pub use frames::{Groups, StackFilter};
pub use native::NativeView;
pub use tree::TreeNode;

/// Methods with their weights, heaviest first.
pub type Ranked = Vec<(String, f64)>;

/// The frame idle thread-pool workers show as (waiting or spinning for work).
pub(crate) const IDLE_POOL_FRAME: &str = "[idle: thread pool waiting for work]";

/// The frame the sockets' event loop shows as while it waits for events.
pub(crate) const IDLE_SOCKETS_FRAME: &str = "[idle: sockets waiting for events]";

/// What waiting for a CPU is named in the waits by blocking call: the threads' measured
/// run-queue time where the readings have it; in traces without it, waiting outside any
/// blocking call (the thread was caught in managed code but did not run all the time).
pub(crate) const RUNNABLE_FRAME: &str = "[runnable: ready, waiting for a CPU]";

/// The frame of a sampled thread's measured CPU in intervals before its first sample, or
/// after a sample in a blocking call (the thread had left the call: it burns no CPU).
pub const UNSAMPLED_FRAME: &str = "[unsampled]";

/// One thread's totals (weight units: see [`StackProfile::interval_ns`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadTotals {
    /// OS thread id.
    pub thread: u64,
    /// CPU.
    pub cpu: f64,
    /// Waiting (blocked, sleeping).
    pub wait: f64,
    /// Idle (a pool worker or event loop waiting for work).
    pub idle: f64,
    /// The part of `wait` spent ready to run, waiting for a CPU: measured (run-queue time)
    /// when `StackProfile::runqueue_measured`, else estimated as the waiting in managed code
    /// outside any blocking call (see `RUNNABLE_FRAME`).
    pub runnable: f64,
    /// The part of `wait` the samples caught in managed code outside any known blocking
    /// call, whatever the readings say: the thread meant to run (waiting for a CPU, or held
    /// by the runtime's suspensions for a GC or a sample).
    pub ready: f64,
    /// Samples.
    pub samples: u64,
    /// The frame it was most often seen in.
    pub top_frame: String,
}

/// What a view weighs: the one metric type of every report, export and flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// CPU time.
    Cpu,
    /// Waiting time (blocked, sleeping, idle).
    Wait,
    /// Allocated bytes (estimated from allocation ticks; samples weigh nothing).
    Alloc,
}

impl Metric {
    /// Every metric, in the order they are listed.
    pub const ALL: [Metric; 3] = [Metric::Cpu, Metric::Wait, Metric::Alloc];

    /// The unit of its weights in views ("milliseconds" or "bytes").
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Cpu | Metric::Wait => "milliseconds",
            Metric::Alloc => "bytes",
        }
    }

    /// Its short name ("cpu", "wait", "alloc"), as flags spell it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cpu => "cpu",
            Metric::Wait => "wait",
            Metric::Alloc => "alloc",
        }
    }

    /// What it weighs, in words.
    pub fn description(self) -> &'static str {
        match self {
            Metric::Cpu => "CPU time",
            Metric::Wait => "waiting time (blocked, sleeping, idle)",
            Metric::Alloc => "allocated bytes",
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown metric '{s}' (cpu, wait, alloc)"))
    }
}

/// One (thread, stack) with its weights in samples.
#[derive(Clone, Debug)]
pub struct Row {
    /// OS thread id.
    pub thread: u64,
    /// Frames, leaf first.
    pub frames: Vec<FrameId>,
    /// CPU, in units of [`StackProfile::interval_ns`] (measured time where readings cover
    /// it, else one unit per sample).
    pub cpu: f64,
    /// Waiting (blocked, sleeping, and runnable but waiting for a CPU), same unit.
    pub wait: f64,
    /// The part of `wait` measured as runnable, waiting for a CPU (run-queue time), same unit.
    pub runq: f64,
    /// Idle: wall time of a pool worker or event loop waiting for work (not waiting), same
    /// unit.
    pub idle: f64,
    /// Samples behind the row (0 for measured CPU no sample shows).
    pub samples: u64,
    /// The native leaf frame [`StackFilter::native`] grouped or folded away (the libc wait a
    /// runtime thread blocks in): the blocking call of a stack no known one names.
    pub(crate) native_leaf: Option<FrameId>,
    /// The sampled stack the row was made from (its addresses: source lines), when it has
    /// one.
    pub stack: Option<StackId>,
}

impl Row {
    /// The weight of `metric`.
    pub fn weight(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Cpu => self.cpu,
            Metric::Wait => self.wait,
            Metric::Alloc => 0.0,
        }
    }

    /// The row's samples that `metric` stands for: each sample shared between CPU, waiting
    /// and idle as its time is (a sample counts once over the three).
    pub fn samples_of(&self, metric: Metric) -> f64 {
        let all = self.cpu + self.wait + self.idle;
        if all <= 0.0 {
            return 0.0;
        }
        self.samples as f64 * self.weight(metric) / all
    }
}

/// All rows.
#[derive(Clone, Debug, Default)]
pub struct StackProfile {
    /// Rows.
    pub rows: Vec<Row>,
    /// The unit of the rows' weights, ns: the trace's nominal sampling interval (a weight of
    /// 1.0 is this much time).
    pub interval_ns: u64,
    /// True when the rows' `runq` is measured (the readings have run-queue time).
    pub(crate) runqueue_measured: bool,
    /// The kernel sampler's waiting of the runtime's plumbing threads, left out of the rows
    /// (same unit as the rows' weights), and how many threads it was.
    pub plumbing_wait: f64,
    /// How many plumbing threads' waits were left out.
    pub plumbing_threads: usize,
}

/// True when the stack is in a known blocking call ([`blocking_call`]).
fn has_blocking_frame(frames: &[FrameId], symbols: &Symbols) -> bool {
    blocking_call(frames, symbols).is_some()
}

/// Sorts a sample's stack into CPU or waiting when it was not measured: waiting in a known
/// blocking call ([`blocking_call`], the same rule every report uses), or an external sample
/// with no managed frame (a runtime thread idling in native code).
fn heuristic_is_waiting(frames: &[FrameId], symbols: &Symbols, managed: bool) -> bool {
    if blocking_call(frames, symbols).is_some() {
        return true;
    }
    !managed
        && !frames
            .iter()
            .any(|&f| symbols.frame(f).kind == FrameKind::Managed)
}

impl StackProfile {
    /// Resolves the samples model into rows.
    pub fn build(
        cpu: &CpuModel,
        stacks: &StackTable,
        symbols: &Symbols,
        groups: &Groups,
        filter: &StackFilter,
        plumbing: &rustc_hash::FxHashSet<u64>,
    ) -> StackProfile {
        let mut left_out: FxHashMap<u64, f64> = FxHashMap::default();
        // The stacks the estimate resolved, handed to their rows (a kernel-sampled trace's
        // stacks are nearly all distinct: a second copy of each would double the profile).
        let mut cache: FxHashMap<StackId, Vec<FrameId>> = FxHashMap::default();
        let times = cpu.estimate().resolve(cpu.cpus(), |(s, managed)| {
            let frames = match s {
                Some(s) => cache
                    .entry(s)
                    .or_insert_with(|| resolve_stack(stacks, symbols, s))
                    .as_slice(),
                None => &[],
            };
            !heuristic_is_waiting(frames, symbols, managed)
        });
        let unit = cpu.interval_ns as f64;
        let mut rows = Vec::new();
        let mut staged: Vec<(Row, bool)> = Vec::new();
        let mut carried: FxHashMap<u64, f64> = FxHashMap::default();
        for (thread, stack, w) in cpu.weights() {
            if filter.thread.is_some_and(|t| t != thread) {
                continue;
            }
            let frames = match stack {
                Some(s) => cache
                    .remove(&s)
                    .unwrap_or_else(|| resolve_stack(stacks, symbols, s)),
                None => Vec::new(),
            };
            let mut cpu_w = w.cpu;
            let mut wait_w = w.wait;
            let mut runq_w = w.runq;
            if plumbing.contains(&thread) && filter.thread.is_none() && w.wait > 0.0 {
                *left_out.entry(thread).or_default() += w.wait;
                wait_w = 0.0;
                runq_w = 0.0;
                if cpu_w <= 0.0 && w.managed == 0 && w.external == 0 {
                    continue;
                }
            }
            let blocked = has_blocking_frame(&frames, symbols);
            if blocked && w.carried > 0.0 {
                // Used after its last sample, which was blocked: the thread had moved on.
                cpu_w -= w.carried;
                *carried.entry(thread).or_default() += w.carried;
            }
            for (n, managed) in [(w.managed, true), (w.external, false)] {
                if n == 0 {
                    continue;
                }
                // The estimate: the samples' real period, their running share after the
                // per-round CPU limit (the rest ready, waiting for a CPU).
                match times.get(&(stack, managed)).filter(|t| t.samples > 0) {
                    Some(t) => {
                        let all = n as f64 * t.per_sample_ns() / unit;
                        let on_cpu = all * t.cpu_share();
                        cpu_w += on_cpu;
                        wait_w += all - on_cpu;
                    }
                    None if heuristic_is_waiting(&frames, symbols, managed) => wait_w += n as f64,
                    None => cpu_w += n as f64,
                }
            }
            let frames = fold_safepoint_frames(frames, symbols);
            staged.push((
                Row {
                    thread,
                    frames,
                    cpu: cpu_w,
                    wait: wait_w,
                    runq: runq_w,
                    idle: 0.0,
                    samples: w.samples,
                    native_leaf: None,
                    stack,
                },
                blocked,
            ));
        }
        let mut unsampled: Vec<(u64, f64)> = cpu.unsampled().collect();
        for (thread, w) in &mut unsampled {
            *w += carried.remove(thread).unwrap_or(0.0);
        }
        let mut rest: Vec<(u64, f64)> = carried.into_iter().collect();
        rest.sort_unstable_by_key(|r| r.0);
        unsampled.extend(rest);
        for (thread, w) in unsampled {
            if filter.thread.is_some_and(|t| t != thread) {
                continue;
            }
            let frame = groups
                .unsampled
                .get(&thread)
                .or(groups.unsampled_any.as_ref());
            if let Some(&f) = frame {
                let row = Row {
                    thread,
                    frames: vec![f],
                    cpu: w,
                    wait: 0.0,
                    runq: 0.0,
                    idle: 0.0,
                    samples: 0,
                    native_leaf: None,
                    stack: None,
                };
                staged.push((row, false));
            }
        }
        exchange_blocked_cpu(&mut staged);
        for (mut r, _) in staged {
            mark_idle(&mut r, symbols, groups);
            let Some(mut frames) = apply_filter(r.frames, symbols, filter) else {
                continue;
            };
            if let Some(g) = &filter.just_my_code {
                frames = g.fold_ids(frames, symbols);
            }
            let native = |f: &FrameId| symbols.frame(*f).kind == FrameKind::Native;
            let leaf = frames.first().copied().filter(native);
            frames = groups.native.apply(frames, symbols, filter.native);
            let native_leaf = leaf.filter(|&l| frames.first() != Some(&l));
            rows.push(Row {
                frames,
                native_leaf,
                ..r
            });
        }
        // Stable order for reproducible output.
        rows.sort_by(|a, b| {
            a.thread
                .cmp(&b.thread)
                .then_with(|| a.frames.cmp(&b.frames))
        });
        StackProfile {
            rows,
            interval_ns: cpu.interval_ns,
            runqueue_measured: cpu.has_runqueue(),
            plumbing_wait: left_out.values().sum(),
            plumbing_threads: left_out.len(),
        }
    }

    /// Total weight of `metric`.
    pub fn total(&self, metric: Metric) -> f64 {
        self.rows.iter().map(|r| r.weight(metric)).sum()
    }

    /// Methods by exclusive (leaf) and inclusive weight, heaviest first. The inclusive
    /// ranking leaves out native frames that call managed code (`start_thread`, the
    /// runtime's thread start and calls into managed code): they hold every managed thread's
    /// time and say nothing of where it went; the call tree keeps them.
    pub fn top(&self, metric: Metric, symbols: &Symbols) -> (Ranked, Ranked) {
        self.top_by(symbols, |r| r.weight(metric))
    }

    /// The heaviest inclusive `metric` of a native frame that calls managed code (thread
    /// start, the runtime's calls into managed code), which the inclusive rankings leave out;
    /// 0 when no stack has one.
    pub fn heaviest_native_caller(&self, metric: Metric, symbols: &Symbols) -> f64 {
        let mut incl: FxHashMap<FrameId, f64> = FxHashMap::default();
        let mut seen = FxHashSet::default();
        for r in &self.rows {
            let w = r.weight(metric);
            if w <= 0.0 {
                continue;
            }
            seen.clear();
            let from = native_callers_from(&r.frames, symbols);
            for &f in r.frames.iter().skip(from.saturating_add(1)) {
                if symbols.frame(f).kind == FrameKind::Native && seen.insert(f) {
                    *incl.entry(f).or_default() += w;
                }
            }
        }
        incl.into_values().fold(0.0, f64::max)
    }

    /// Methods by exclusive (leaf) and inclusive samples of `metric` (each sample's share
    /// of it: see [`Row::samples_of`]), most first.
    pub fn top_samples(&self, metric: Metric, symbols: &Symbols) -> (Ranked, Ranked) {
        self.top_by(symbols, |r| r.samples_of(metric))
    }

    fn top_by(&self, symbols: &Symbols, value: impl Fn(&Row) -> f64) -> (Ranked, Ranked) {
        let mut excl: FxHashMap<FrameId, f64> = FxHashMap::default();
        let mut incl: FxHashMap<FrameId, f64> = FxHashMap::default();
        let mut seen = FxHashSet::default();
        for r in &self.rows {
            let w = value(r);
            if w <= 0.0 {
                continue;
            }
            let leaf = r.frames.first().copied();
            match leaf {
                Some(f) => *excl.entry(f).or_default() += w,
                None => *excl.entry(FrameId(u32::MAX)).or_default() += w,
            }
            seen.clear();
            let callers_from = native_callers_from(&r.frames, symbols);
            for (i, &f) in r.frames.iter().enumerate() {
                if i > callers_from && symbols.frame(f).kind == FrameKind::Native {
                    continue;
                }
                if seen.insert(f) {
                    *incl.entry(f).or_default() += w;
                }
            }
        }
        let name = |f: FrameId| {
            if f.0 == u32::MAX {
                "[no stack]".to_string()
            } else {
                symbols.frame(f).name.clone()
            }
        };
        let sorted = |m: FxHashMap<FrameId, f64>| {
            let mut v: Vec<(String, f64)> = m.into_iter().map(|(f, w)| (name(f), w)).collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v
        };
        (sorted(excl), sorted(incl))
    }

    /// For each frame of native work (`is_work`: a group by default, `[JIT compiler:
    /// libclrjit.so]`; the runtime's stubs) that is a stack's leaf, the managed method nearest to it on those stacks that
    /// paid most of its `metric`, and that share (0..1): who made the JIT compile, who
    /// called into libc.
    pub fn managed_callers(
        &self,
        metric: Metric,
        symbols: &Symbols,
        is_work: impl Fn(FrameId) -> bool,
    ) -> FxHashMap<String, (String, f64)> {
        let mut by: FxHashMap<(FrameId, FrameId), f64> = FxHashMap::default();
        let mut leaf_total: FxHashMap<FrameId, f64> = FxHashMap::default();
        for r in &self.rows {
            let w = r.weight(metric);
            let Some(&leaf) = r.frames.first() else {
                continue;
            };
            if w <= 0.0 || !is_work(leaf) {
                continue;
            }
            *leaf_total.entry(leaf).or_default() += w;
            // The managed method that asked, past the runtime's generated marshalling stubs
            // (`dynamicClass.IL_STUB_PInvoke(…, pMT: 0x…)`: one per signature, named by none).
            let caller = r.frames.iter().copied().find(|&f| {
                let fr = symbols.frame(f);
                fr.kind == FrameKind::Managed && !fr.name.starts_with("dynamicClass.IL_STUB")
            });
            if let Some(c) = caller {
                *by.entry((leaf, c)).or_default() += w;
            }
        }
        let mut best: FxHashMap<FrameId, (FrameId, f64)> = FxHashMap::default();
        for ((leaf, c), w) in by {
            let e = best.entry(leaf).or_insert((c, w));
            if w > e.1 || (w == e.1 && c < e.0) {
                *e = (c, w);
            }
        }
        best.into_iter()
            .map(|(leaf, (c, w))| {
                let total = leaf_total.get(&leaf).copied().unwrap_or(w).max(w);
                (
                    symbols.frame(leaf).name.clone(),
                    (symbols.frame(c).name.clone(), w / total),
                )
            })
            .collect()
    }

    /// Waiting time by blocking call: each stack's deepest known blocking frame; where none
    /// is known, its leaf. Waiting for a CPU is `RUNNABLE_FRAME`: measured run-queue time
    /// where the readings have it, else the waiting of stacks that end in managed code outside
    /// any blocking call (the thread was ready but not on a CPU). Heaviest first, with each
    /// call's samples (their waiting share).
    pub fn by_blocking_call(&self, symbols: &Symbols) -> (Ranked, Ranked) {
        self.by_blocking_call_except(symbols, &FxHashSet::default())
    }

    /// [`StackProfile::by_blocking_call`] of every thread but those of `left_out`.
    pub fn by_blocking_call_except(
        &self,
        symbols: &Symbols,
        left_out: &FxHashSet<u64>,
    ) -> (Ranked, Ranked) {
        let mut m: FxHashMap<String, (f64, f64)> = FxHashMap::default();
        for r in &self.rows {
            if r.wait <= 0.0 || left_out.contains(&r.thread) {
                continue;
            }
            let n = r.samples_of(Metric::Wait);
            let runq = self.runnable_of(r, symbols);
            if runq > 0.0 {
                let e = m.entry(RUNNABLE_FRAME.to_string()).or_default();
                e.0 += runq;
                e.1 += n * runq / r.wait;
            }
            let blocked = r.wait - runq;
            if blocked <= 0.0 {
                continue;
            }
            let key = match blocking_call(&r.frames, symbols) {
                Some(f) => symbols.frame(f).name.clone(),
                None => r.native_leaf.or(r.frames.first().copied()).map_or_else(
                    || "[no stack]".to_string(),
                    |f| symbols.frame(f).name.clone(),
                ),
            };
            let e = m.entry(key).or_default();
            e.0 += blocked;
            e.1 += n * blocked / r.wait;
        }
        let mut v: Vec<(String, f64, f64)> = m.into_iter().map(|(k, (w, n))| (k, w, n)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let n = v.iter().map(|x| (x.0.clone(), x.2)).collect();
        (v.into_iter().map(|x| (x.0, x.1)).collect(), n)
    }

    /// Threads parked for the whole window: waiting, never caught running work (each of
    /// their samples in a blocking call or idle) and with CPU under 1% of their waiting — a
    /// main thread in `Join`, a logger's queue, a timer. Their waiting says nothing of the
    /// work's. A thread whose waiting is mostly for a lock is never parked: stuck on a lock
    /// the whole window is a deadlock or a convoy, the very thing to see.
    pub fn parked_threads(&self, symbols: &Symbols) -> FxHashSet<u64> {
        self.never_ran(symbols)
            .into_iter()
            .filter(|(_, on_lock)| !on_lock)
            .map(|(t, _)| t)
            .collect()
    }

    /// Threads that waited the whole window and never ran work, as [`Self::parked_threads`]
    /// but with the threads stuck on a lock among them (a hang already in progress).
    pub fn never_ran_threads(&self, symbols: &Symbols) -> FxHashSet<u64> {
        self.never_ran(symbols).into_keys().collect()
    }

    /// The threads never caught running work with CPU under 1% of their waiting, each with
    /// whether most of its waiting was for a lock.
    fn never_ran(&self, symbols: &Symbols) -> FxHashMap<u64, bool> {
        // Per thread: ran work, CPU, waiting, waiting for a lock.
        let mut per: FxHashMap<u64, (bool, f64, f64, f64)> = FxHashMap::default();
        for r in &self.rows {
            let e = per.entry(r.thread).or_default();
            let idle = r
                .frames
                .first()
                .is_some_and(|&f| symbols.frame(f).name.starts_with("[idle"));
            let blocked_in = blocking_call(&r.frames, symbols);
            e.0 |= r.samples > 0 && !idle && blocked_in.is_none();
            e.1 += r.cpu;
            e.2 += r.wait;
            if blocked_in.is_some_and(|f| is_lock_acquisition(&symbols.frame(f).name)) {
                e.3 += r.wait;
            }
        }
        per.into_iter()
            .filter(|(_, (ran, cpu, wait, _))| !ran && *wait > 0.0 && *cpu < 0.01 * wait)
            .map(|(t, (_, _, wait, on_lock))| (t, on_lock > 0.5 * wait))
            .collect()
    }

    /// Per-thread totals, busiest first (CPU plus waiting plus idle).
    pub fn threads(&self, symbols: &Symbols) -> Vec<ThreadTotals> {
        let mut per: FxHashMap<u64, (ThreadTotals, FxHashMap<Option<FrameId>, f64>)> =
            FxHashMap::default();
        for r in &self.rows {
            let (t, leaves) = per.entry(r.thread).or_insert_with(|| {
                let t = ThreadTotals {
                    thread: r.thread,
                    cpu: 0.0,
                    wait: 0.0,
                    idle: 0.0,
                    runnable: 0.0,
                    ready: 0.0,
                    samples: 0,
                    top_frame: String::new(),
                };
                (t, FxHashMap::default())
            });
            t.cpu += r.cpu;
            t.wait += r.wait;
            t.idle += r.idle;
            t.runnable += self.runnable_of(r, symbols);
            if is_runnable(&r.frames, symbols) {
                t.ready += r.wait;
            }
            t.samples += r.samples;
            *leaves.entry(r.frames.first().copied()).or_default() += r.cpu + r.wait + r.idle;
        }
        let mut out: Vec<ThreadTotals> = per
            .into_values()
            .map(|(mut t, leaves)| {
                t.top_frame = leaves
                    .into_iter()
                    .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
                    .and_then(|(f, _)| f)
                    .map(|f| symbols.frame(f).name.clone())
                    .unwrap_or_else(|| "[no stack]".into());
                t
            })
            .collect();
        let all = |t: &ThreadTotals| t.cpu + t.wait + t.idle;
        out.sort_by(|a, b| all(b).total_cmp(&all(a)).then(a.thread.cmp(&b.thread)));
        out
    }
}

impl StackProfile {
    /// A row's time waiting for a CPU: measured where the readings have run-queue time, else
    /// all its waiting when it is in managed code outside any known blocking call.
    pub fn runnable_of(&self, r: &Row, symbols: &Symbols) -> f64 {
        if self.runqueue_measured {
            r.runq.min(r.wait)
        } else if is_runnable(&r.frames, symbols) {
            r.wait
        } else {
            0.0
        }
    }
}

/// A stack's frames, leaf first, resolved once.
fn resolve_stack(stacks: &StackTable, symbols: &Symbols, s: StackId) -> Vec<FrameId> {
    stacks
        .ips(s)
        .iter()
        .map(|&ip| symbols.resolve(ip))
        .collect()
}

/// A row of a worker waiting (or spinning) for work: its waiting time is idle, and its
/// stack ends in the idle frame, so spinning shows as idle, not as a hot method.
fn mark_idle(r: &mut Row, symbols: &Symbols, groups: &Groups) {
    let Some((cut, idle)) = idle_kind(&r.frames, symbols, groups) else {
        return;
    };
    r.frames.drain(..cut);
    r.frames.insert(0, idle);
    r.idle += r.wait;
    r.wait = 0.0;
    r.runq = 0.0;
}

/// Measured CPU is per thread and reading interval: a sample caught inside a blocking call
/// shares its interval's CPU with the thread's other samples. Such a sample was waiting when
/// taken, so its CPU share goes to the same thread's running stacks, in exchange for their
/// waiting share (thread CPU and sample totals stay as measured); what they cannot take stays
/// where it was. Only blocked waiting is exchanged: run-queue time stays where it was measured.
/// `staged` holds each row with whether it is blocked.
fn exchange_blocked_cpu(staged: &mut [(Row, bool)]) {
    let mut moved: FxHashMap<u64, f64> = FxHashMap::default();
    let mut room: FxHashMap<u64, f64> = FxHashMap::default();
    for (r, blocked) in staged.iter() {
        if *blocked {
            *moved.entry(r.thread).or_default() += r.cpu;
        } else {
            *room.entry(r.thread).or_default() += r.wait - r.runq.min(r.wait);
        }
    }
    for (r, blocked) in staged.iter_mut() {
        let mv = moved.get(&r.thread).copied().unwrap_or(0.0);
        let rm = room.get(&r.thread).copied().unwrap_or(0.0);
        let placed = mv.min(rm);
        if placed <= 0.0 {
            continue;
        }
        if *blocked {
            let give = r.cpu * placed / mv;
            r.cpu -= give;
            r.wait += give;
        } else {
            let take = (r.wait - r.runq.min(r.wait)) * placed / rm;
            r.cpu += take;
            r.wait -= take;
        }
    }
}

/// Builds the top-down call tree of `metric` (root = all threads).
pub fn call_tree(profile: &StackProfile, metric: Metric, symbols: &Symbols) -> TreeNode {
    tree::build(
        profile
            .rows
            .iter()
            .map(|r| (r.frames.as_slice(), r.weight(metric))),
        symbols,
    )
}

/// The index of a leaf-first stack's leaf-most managed frame (native frames past it are its
/// callers); `usize::MAX` when the stack has none.
fn native_callers_from(frames: &[FrameId], symbols: &Symbols) -> usize {
    frames
        .iter()
        .position(|&f| symbols.frame(f).kind == FrameKind::Managed)
        .unwrap_or(usize::MAX)
}
