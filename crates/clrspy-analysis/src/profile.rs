//! Resolved stacks with their CPU and waiting weights — the common input of the CPU and waits
//! reports, the call tree and (later) every stack export. Built once at the end of the pass
//! from the samples model, the stack table and the symbols; it holds one row per distinct
//! (thread, stack), never one per sample.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::cpu::{is_blocking_frame, CpuModel};
use crate::stacks::{StackId, StackTable};
use crate::symbols::{FrameId, FrameKind, Symbols};

/// Methods with their weights, heaviest first.
pub type Ranked = Vec<(String, f64)>;

/// Per-thread totals while summing: CPU, waiting, weight per leaf frame.
type ThreadSums = (f64, f64, FxHashMap<Option<FrameId>, f64>);

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
    /// CPU samples (fractional where measured).
    pub cpu: f64,
    /// Waiting samples.
    pub wait: f64,
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
}

/// Filters applied to stacks before any view.
#[derive(Clone, Debug, Default)]
pub struct StackFilter {
    /// Only this thread.
    pub thread: Option<u64>,
    /// Re-root at the outermost frame whose name contains this (stacks without it are dropped).
    pub focus: Option<String>,
    /// Drop stacks with a frame whose name contains any of these.
    pub exclude: Vec<String>,
}

/// All rows.
#[derive(Clone, Debug, Default)]
pub struct StackProfile {
    /// Rows.
    pub rows: Vec<Row>,
    /// Wall time one sample stands for.
    pub interval_ns: u64,
}

/// True when a managed frame of the stack is a known blocking call.
fn has_blocking_frame(frames: &[FrameId], symbols: &Symbols) -> bool {
    frames.iter().any(|&f| {
        let fr = symbols.frame(f);
        fr.kind == FrameKind::Managed && is_blocking_frame(&fr.name)
    })
}

/// Sorts a sample's stack into CPU or waiting when it was not measured.
fn heuristic_is_waiting(frames: &[FrameId], symbols: &Symbols, managed: bool) -> bool {
    let mut any_managed = false;
    for &f in frames {
        let fr = symbols.frame(f);
        if fr.kind == FrameKind::Managed {
            any_managed = true;
            if is_blocking_frame(&fr.name) {
                return true;
            }
        }
    }
    // An external sample with no managed frame: a runtime thread idling in native code.
    !managed && !any_managed
}

impl StackProfile {
    /// Resolves the samples model into rows.
    pub fn build(
        cpu: &CpuModel,
        stacks: &StackTable,
        symbols: &Symbols,
        filter: &StackFilter,
    ) -> StackProfile {
        let mut cache: FxHashMap<StackId, Vec<FrameId>> = FxHashMap::default();
        let mut rows = Vec::new();
        let mut staged: Vec<(Row, bool)> = Vec::new();
        for (thread, stack, w) in cpu.weights() {
            if filter.thread.is_some_and(|t| t != thread) {
                continue;
            }
            let frames = match stack {
                Some(s) => cache
                    .entry(s)
                    .or_insert_with(|| {
                        stacks
                            .ips(s)
                            .iter()
                            .map(|&ip| symbols.resolve(ip))
                            .collect()
                    })
                    .clone(),
                None => Vec::new(),
            };
            let mut cpu_w = w.cpu;
            let mut wait_w = w.wait;
            let blocked = has_blocking_frame(&frames, symbols);
            for (n, managed) in [(w.managed, true), (w.external, false)] {
                if n == 0 {
                    continue;
                }
                if heuristic_is_waiting(&frames, symbols, managed) {
                    wait_w += n as f64;
                } else {
                    cpu_w += n as f64;
                }
            }
            let frames = fold_safepoint_frames(frames, symbols);
            staged.push((
                Row {
                    thread,
                    frames,
                    cpu: cpu_w,
                    wait: wait_w,
                },
                blocked,
            ));
        }
        // Measured CPU is per thread and tick interval: a sample caught inside a blocking call
        // shares its interval's CPU with the thread's other samples. Such a sample was waiting
        // when taken, so its CPU share goes to the same thread's running stacks, in exchange for
        // their waiting share (thread CPU and sample totals stay as measured); what they cannot
        // take stays where it was.
        // Each sample is one unit, running plus waiting: the running rows can take at most
        // their own waiting share, which they give up in exchange.
        let mut moved: FxHashMap<u64, f64> = FxHashMap::default();
        let mut room: FxHashMap<u64, f64> = FxHashMap::default();
        for (r, blocked) in &staged {
            if *blocked {
                *moved.entry(r.thread).or_default() += r.cpu;
            } else {
                *room.entry(r.thread).or_default() += r.wait;
            }
        }
        for (r, blocked) in &mut staged {
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
                let take = r.wait * placed / rm;
                r.cpu += take;
                r.wait -= take;
            }
        }
        for (r, _) in staged {
            let Some(frames) = apply_filter(r.frames, symbols, filter) else {
                continue;
            };
            rows.push(Row { frames, ..r });
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
        }
    }

    /// Total weight of `metric`.
    pub fn total(&self, metric: Metric) -> f64 {
        self.rows.iter().map(|r| r.weight(metric)).sum()
    }

    /// Methods by exclusive (leaf) and inclusive weight, heaviest first.
    pub fn top(&self, metric: Metric, symbols: &Symbols) -> (Ranked, Ranked) {
        let mut excl: FxHashMap<FrameId, f64> = FxHashMap::default();
        let mut incl: FxHashMap<FrameId, f64> = FxHashMap::default();
        let mut seen = FxHashSet::default();
        for r in &self.rows {
            let w = r.weight(metric);
            if w <= 0.0 {
                continue;
            }
            let leaf = r.frames.first().copied();
            match leaf {
                Some(f) => *excl.entry(f).or_default() += w,
                None => *excl.entry(FrameId(u32::MAX)).or_default() += w,
            }
            seen.clear();
            for &f in &r.frames {
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

    /// Per-thread totals: (thread, cpu, wait, heaviest leaf frame by all samples).
    pub fn threads(&self, symbols: &Symbols) -> Vec<(u64, f64, f64, String)> {
        let mut per: FxHashMap<u64, ThreadSums> = FxHashMap::default();
        for r in &self.rows {
            let e = per.entry(r.thread).or_default();
            e.0 += r.cpu;
            e.1 += r.wait;
            *e.2.entry(r.frames.first().copied()).or_default() += r.cpu + r.wait;
        }
        let mut out: Vec<(u64, f64, f64, String)> = per
            .into_iter()
            .map(|(t, (c, w, leaves))| {
                let top = leaves
                    .into_iter()
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .and_then(|(f, _)| f)
                    .map(|f| symbols.frame(f).name.clone())
                    .unwrap_or_else(|| "[no stack]".into());
                (t, c, w, top)
            })
            .collect();
        out.sort_by(|a, b| (b.1 + b.2).total_cmp(&(a.1 + a.2)).then(a.0.cmp(&b.0)));
        out
    }
}

/// The runtime's GC poll helpers, where the sampler often catches a thread that is running
/// its caller's loop: their samples belong to the caller.
fn is_safepoint_frame(name: &str) -> bool {
    name.starts_with("System.Threading.Thread.<PollGC>") || name == "System.Threading.Thread.PollGC"
}

/// Drops GC poll frames from the leaf end of a stack.
fn fold_safepoint_frames(mut frames: Vec<FrameId>, symbols: &Symbols) -> Vec<FrameId> {
    let n = frames
        .iter()
        .take_while(|&&f| is_safepoint_frame(&symbols.frame(f).name))
        .count();
    if n > 0 && n < frames.len() {
        frames.drain(..n);
    }
    frames
}

/// Applies focus and exclude to a leaf-first frame list.
fn apply_filter(frames: Vec<FrameId>, symbols: &Symbols, f: &StackFilter) -> Option<Vec<FrameId>> {
    if !f.exclude.is_empty()
        && frames.iter().any(|&fr| {
            let n = &symbols.frame(fr).name;
            f.exclude.iter().any(|x| n.contains(x.as_str()))
        })
    {
        return None;
    }
    match &f.focus {
        None => Some(frames),
        Some(focus) => {
            // The outermost (root-most) matching frame becomes the root.
            let pos = frames
                .iter()
                .rposition(|&fr| symbols.frame(fr).name.contains(focus.as_str()))?;
            Some(frames[..=pos].to_vec())
        }
    }
}

/// A call tree node: a frame, its inclusive and exclusive weight, its callees.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TreeNode {
    /// Frame name.
    pub name: String,
    /// Weight including callees.
    pub inclusive: f64,
    /// Weight of the frame itself.
    pub exclusive: f64,
    /// Callees, heaviest first.
    pub children: Vec<TreeNode>,
}

/// Builds the top-down call tree of `metric` (root = all threads).
pub fn call_tree(profile: &StackProfile, metric: Metric, symbols: &Symbols) -> TreeNode {
    #[derive(Default)]
    struct N {
        incl: f64,
        excl: f64,
        kids: FxHashMap<FrameId, N>,
    }
    let mut root = N::default();
    for r in &profile.rows {
        let w = r.weight(metric);
        if w <= 0.0 {
            continue;
        }
        root.incl += w;
        let mut node = &mut root;
        for &f in r.frames.iter().rev() {
            node = node.kids.entry(f).or_default();
            node.incl += w;
        }
        node.excl += w;
    }
    fn convert(name: String, n: N, symbols: &Symbols) -> TreeNode {
        let mut children: Vec<TreeNode> = n
            .kids
            .into_iter()
            .map(|(f, k)| convert(symbols.frame(f).name.clone(), k, symbols))
            .collect();
        children.sort_by(|a, b| {
            b.inclusive
                .total_cmp(&a.inclusive)
                .then_with(|| a.name.cmp(&b.name))
        });
        TreeNode {
            name,
            inclusive: n.incl,
            exclusive: n.excl,
            children,
        }
    }
    convert("[all threads]".into(), root, symbols)
}
