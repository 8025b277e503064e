//! The `cpu` and `waits` reports: time by method, exclusive and inclusive, and the call tree.

use std::io::{self, Write};

use clrspy_analysis::callers::method_links;
use clrspy_analysis::cpu::CpuSource;
use clrspy_analysis::grouping::AppCode;
use clrspy_analysis::profile::{call_tree, TreeNode};
use clrspy_analysis::{Analysis, Metric};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::process::{process_cpu, ProcessCpu};
use super::rows::{CalledFrom, MethodWeight};
use super::runqueue::{self, CpuThrottling, RunqueueSource};
use super::text::{method_table, TextStyle, Unit};
use super::tree::{write_tree_with, Columns};
use super::view::{ReportOptions, TextView, TreeOptions};
use crate::units::{percent, round1};

/// The footnote under the method tables when `[unsampled]` is one of their rows.
const UNSAMPLED_NOTE: &str = "[unsampled]: CPU a thread's readings measured before the sampler \
     first caught it, or after it was last caught blocked (its stack then is unknown); it is \
     counted, not guessed at";

/// Threads that waited the whole window without running work ([`StackReport::parked`]).
#[derive(Clone, Debug, Serialize)]
pub struct ParkedThreads {
    /// How many.
    pub threads: usize,
    /// Their waiting, ms.
    pub wait_ms: f64,
    /// Their names (the thread id where unnamed), most waiting first, at most five.
    pub names: Vec<String>,
    /// The blocking call the other threads (those that ran work or waited for a lock) waited
    /// in most (clrspy's bracketed groups skipped), percent of their waiting; null when none.
    pub(crate) others_most_waited_in: Option<MethodWeight>,
}

/// The runtime's plumbing threads' waiting, left out of a waits report.
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    /// How many threads.
    pub threads: usize,
    /// Their waiting, ms.
    pub wait_ms: f64,
}

/// The parked threads of `profile` (see [`ParkedThreads`]), when there are any.
fn parked(
    a: &Analysis,
    profile: &clrspy_analysis::profile::StackProfile,
    ms_per: f64,
) -> Option<ParkedThreads> {
    let set = profile.parked_threads(&a.symbols);
    if set.is_empty() {
        return None;
    }
    let mut waits: Vec<(u64, f64)> = profile
        .threads(&a.symbols)
        .into_iter()
        .filter(|t| set.contains(&t.thread))
        .map(|t| (t.thread, t.wait))
        .collect();
    waits.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let names = waits
        .iter()
        .take(5)
        .map(|(t, _)| a.thread_name(*t).unwrap_or_else(|| format!("thread {t}")))
        .collect();
    let (others, _) = profile.by_blocking_call_except(&a.symbols, &set);
    let others_total: f64 = others.iter().map(|m| m.1).sum();
    let others_most_waited_in =
        others
            .into_iter()
            .find(|m| !m.0.starts_with('['))
            .map(|(method, w)| MethodWeight {
                method,
                samples: 0.0,
                percent: percent(w, others_total),
                ms: round1(w * ms_per),
                called_from: None,
            });
    Some(ParkedThreads {
        threads: set.len(),
        wait_ms: round1(waits.iter().map(|w| w.1).sum::<f64>() * ms_per),
        names,
        others_most_waited_in,
    })
}

/// Why the top rows' generated methods (`dynamicClass.lambda_method…`) are not labelled with
/// the app's code the JIT inlined into them, when such rows (`lambdas`,
/// `Symbols::is_unlabelled_lambda`) rank at the top (`followed`: the recording followed the
/// JIT's inlining, so they were compiled before it began).
pub(crate) fn inlining_note<'a>(
    lambdas: impl Iterator<Item = &'a str>,
    followed: bool,
) -> Option<String> {
    let mut lambdas: Vec<&str> = lambdas.collect();
    lambdas.sort_unstable();
    lambdas.dedup();
    let first = *lambdas.first()?;
    let which = match lambdas.len() {
        1 => first.to_string(),
        n => format!("{first} and {} more", n - 1),
    };
    Some(if followed {
        format!("{which}: compiled before the recording began, so what the JIT inlined into it (often a controller action, which MVC's invoker inlines) is not known; a recording from the program's start (`clrspy record -- dotnet app.dll`) names it")
    } else {
        format!("{which}: this trace does not say what the JIT inlined into it (often a controller action, which MVC's invoker inlines): clrspy records that on .NET 10 and later")
    })
}

/// CPU or waiting time by method.
#[derive(Clone, Debug, Serialize)]
pub struct StackReport {
    /// "cpu" or "wait".
    pub metric: Metric,
    /// How CPU was told from waiting.
    pub method: CpuSource,
    /// What `method` means, in words.
    pub(crate) method_note: String,
    /// Top rows are methods the runtime generated (`dynamicClass.lambda_method…`, MVC's
    /// invokers) without the app's code they inline named: why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) inlining_note: Option<String>,
    /// The trace's nominal sampling interval, ms: the unit of `samples` weights (and the
    /// time each sample stands for when nothing measured it).
    pub(crate) sample_interval_ms: f64,
    /// The sampler's real period, ms: the mean time between the starts of its rounds.
    pub(crate) sampler_period_ms: Option<f64>,
    /// The samples are the kernel's (`record --sampler kernel`): taken only on a CPU, none
    /// suspended the runtime; left out of the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kernel_samples: bool,
    /// The kernel sampler also took the waits (a stack each time a thread left its CPU, and
    /// how long until it came back); left out of the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kernel_waits: bool,
    /// The trace's CPU count: an estimate counts no more threads on a CPU per sampling round.
    pub cpus: Option<u32>,
    /// True when the time is measured (thread CPU readings), not estimated from samples.
    pub exact: bool,
    /// Samples behind this metric's time: each sample shared between CPU, waiting and idle
    /// as its time is, so `cpu` + `waits` + idle count every sample once.
    pub(crate) total_samples: f64,
    /// The same, rounded.
    pub samples: u64,
    /// The time, ms.
    pub total_ms: f64,
    /// Methods by exclusive weight (the frame itself).
    pub(crate) top_exclusive: Vec<MethodWeight>,
    /// Methods by inclusive weight (with callees), without the native frames that call
    /// managed code (see `native_callers_left_out`).
    pub(crate) top_inclusive: Vec<MethodWeight>,
    /// Native frames that call managed code (`start_thread`, the runtime's thread start and
    /// its calls into managed code) were left out of `top_inclusive` where one would have
    /// ranked among its rows: they hold every managed thread's time; the tree keeps them.
    /// Left out of the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) native_callers_left_out: bool,
    /// Waiting only: time by the blocking call waited in (the deepest known blocking frame
    /// of each stack; the leaf where none is known).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_blocking_call: Vec<MethodWeight>,
    /// Waiting only: the threads parked for the whole window (never caught running work:
    /// a main thread in `Join`, a logger's queue, a timer), whose waiting says nothing of the
    /// work's; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parked: Option<ParkedThreads>,
    /// Waiting only: the kernel sampler's waits of the runtime's plumbing threads (tiered
    /// JIT, GC, EventPipe, signal handler, synchronization manager, debugger), left out of
    /// `total_ms` and the tables: they wait by design, never for the app; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
    /// Waiting only: the part of `total_ms` spent runnable, waiting for a CPU (on a run
    /// queue), ms; the rest is `blocked_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runqueue_ms: Option<f64>,
    /// Waiting only: the part of `total_ms` spent blocked (sleeping, waiting on I/O or a
    /// lock), ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) blocked_ms: Option<f64>,
    /// Waiting only: where `runqueue_ms` comes from, `schedstat` (measured) or `estimate`
    /// (waiting caught in managed code outside any known blocking call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runqueue_source: Option<RunqueueSource>,
    /// Waiting only: the CPU throttling of the target's cgroup over the window (filters do
    /// not apply); absent without cgroup readings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_throttling: Option<CpuThrottling>,
    /// Waiting only: the CPU time of the same stacks, ms (for the share of ready time).
    #[serde(skip)]
    pub cpu_ms: f64,
    /// CPU only: the process's CPU by role (managed code, the runtime's own threads) and the
    /// recording's overhead, over the whole window (filters do not apply).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessCpu>,
    /// The hottest source lines, exclusive, when asked for (`--lines`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<super::lines::HotLines>,
    /// The call tree, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeNode>,
    /// Under `--focus` with the tree: the heaviest path from a thread's root to the focused
    /// method, root first, ending at its direct caller (`--callers` shows every path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) focus_path: Option<Vec<PathFrame>>,
    /// How the text view lays out the tree.
    #[serde(skip)]
    pub(crate) tree_view: TreeOptions,
    /// A window or filter narrowed the samples ([`ReportOptions::narrowed`]).
    #[serde(skip)]
    pub narrowed: bool,
    /// The trace's app code by assembly: the text tree never hides its frames in a chain.
    #[serde(skip)]
    pub app: AppCode,
}

/// A frame of the path to a focused method.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PathFrame {
    /// Frame name.
    pub(crate) frame: String,
    /// Samples of the focused method reached through this frame on this path.
    pub(crate) samples: f64,
    /// Their share of the focused method's time, percent.
    pub(crate) percent: f64,
}

/// What `method` means, in words: what was measured, and what the estimate assumed (`cpus`:
/// the trace's CPU count, the most threads a sampling round counts on a CPU; `per_group`:
/// rounds the limit holds over, 1 unless a long trace's rounds were grouped to bound memory).
pub(crate) fn cpu_source_note(method: CpuSource, cpus: Option<u32>, per_group: u32) -> String {
    let limit = match cpus {
        Some(n) if per_group > 1 => format!("no {per_group} consecutive sampling rounds count more threads on a CPU than {per_group} times the trace's {n} CPUs (the rest were ready, waiting for a CPU)"),
        Some(n) => format!("no sampling round counts more threads on a CPU than the trace's {n} CPUs (the rest were ready, waiting for a CPU)"),
        None => "the trace does not say how many CPUs it had, so no limit per round".into(),
    };
    let rule = "each sample stands for the sampler's real period (measured from its rounds in this trace, not the nominal interval); it ran unless its stack is in a known blocking call (waits, sleeps, joins, socket and file reads, locks) or it is an idle runtime thread";
    match method {
        CpuSource::ThreadCpuTimes => "each thread's CPU from its CPU readings (read from /proc about every 20 ms while recording; exact per thread), shared among its samples in each reading interval; waiting is the rest of the interval's wall time".into(),
        CpuSource::Mixed => format!("measured by thread CPU readings until they stopped, estimated after: {rule}; {limit}"),
        CpuSource::Estimate => format!("no thread CPU readings in this trace: an estimate; {rule}; {limit}; record with `clrspy record` for measured CPU"),
        CpuSource::None => "the trace has no CPU samples (record with the cpu profile)".into(),
    }
}

/// How CPU was told from waiting with the kernel's samples.
const KERNEL_WAITS_NOTE: &str = "each thread's CPU from its CPU readings (read from /proc at most every 100 ms beside the kernel sampler while recording; exact per thread), shared among its samples in each reading interval — the kernel's samples, taken only while the thread was on a CPU; waiting from the kernel's context switches: each time a thread left its CPU, its stack then and how long until it came back (run-queue time when it was preempted)";
const KERNEL_NOTE: &str = "each thread's CPU from its CPU readings (read from /proc at most every 100 ms beside the kernel sampler while recording; exact per thread), shared among its samples in each reading interval — the kernel's samples, taken only while the thread was on a CPU; the rest of the interval's wall time is waiting, on no stack (where a thread waited needs the runtime's sampler)";

/// Under the inclusive table when it left native callers of managed code out.
const NATIVE_CALLERS_NOTE: &str = "left out: native frames that call managed code (start_thread, the runtime's thread start and calls into managed code) hold every managed thread's time; `--tree` shows them";

/// The name of the frame that stands for run-queue time in waiting stacks.
const RUNNABLE: &str = "[runnable";

/// Builds the CPU (`Metric::Cpu`) or waits (`Metric::Wait`) report.
pub fn build(a: &Analysis, metric: Metric, o: &ReportOptions) -> StackReport {
    // The process's CPU by thread role builds a profile of its own: before this one, so that
    // the two are not held at once.
    let process = (metric == Metric::Cpu).then(|| process_cpu(a));
    let profile = a.profile(&o.filter);
    let total = profile.total(metric);
    let (excl, incl) = profile.top(metric, &a.symbols);
    let (excl_n, incl_n) = profile.top_samples(metric, &a.symbols);
    let (excl_n, incl_n): (FxHashMap<String, f64>, FxHashMap<String, f64>) =
        (excl_n.into_iter().collect(), incl_n.into_iter().collect());
    let ms_per = a.sampling_interval_ns as f64 / 1e6;
    // Without a single sample no method is known: the readings' groups are not methods.
    let sampled = a.cpu.span_ns().is_some();
    // Said only when one of them would have ranked among the rows shown.
    let last_shown = incl.get(o.top.saturating_sub(1)).map_or(0.0, |m| m.1);
    let native_callers_left_out =
        sampled && profile.heaviest_native_caller(metric, &a.symbols) > last_shown;
    let method = a.cpu.source();
    let samples: f64 = profile.rows.iter().map(|r| r.samples_of(metric)).sum();
    let waits = metric == Metric::Wait;
    let sampled_runq: f64 = profile
        .rows
        .iter()
        .map(|r| profile.runnable_of(r, &a.symbols))
        .sum();
    let mut runq = sampled_runq;
    // One "waiting for a CPU" everywhere: over the whole process (no thread, focus or exclude
    // filter) and measured, it is every thread's measured run-queue time, as in the summary
    // and the threads report (the sampled rows miss the threads the sampler never saw).
    let whole =
        o.filter.thread.is_none() && o.filter.focus.is_none() && o.filter.exclude.is_empty();
    if let (true, true, Some((_, measured, _))) = (waits, whole, runqueue::measured_totals(a)) {
        runq = measured / ms_per.max(f64::MIN_POSITIVE);
    }
    // The threads the sampler never saw waited for a CPU too: what the measured total has
    // beyond the sampled rows joins the total and the `[runnable: ...]` row, so the waits
    // report's runnable row, its run-queue and blocked parts and its total agree.
    let extra = runq - sampled_runq;
    let total = total + extra;

    // Who paid for the native work at the leaves (`[JIT compiler: …]` under CreateDelegate):
    // said on the exclusive rows only, where the group is the leaf.
    let leaf_callers = profile.managed_callers(metric, &a.symbols, |f| a.is_native_work(f));
    let no_callers = FxHashMap::default();
    let conv = |v: Vec<(String, f64)>,
                n: &FxHashMap<String, f64>,
                callers: &FxHashMap<String, (String, f64)>|
     -> Vec<MethodWeight> {
        let mut rows: Vec<MethodWeight> = v
            .into_iter()
            .take(if sampled { o.top } else { 0 })
            .map(|(method, w)| {
                let more = if method.starts_with(RUNNABLE) {
                    extra
                } else {
                    0.0
                };
                // A caller that paid under a tenth says nothing of who paid.
                let called_from = callers
                    .get(&method)
                    .filter(|c| c.1 >= 0.1)
                    .map(|(m, share)| CalledFrom {
                        method: m.clone(),
                        percent: round1(share * 100.0),
                    });
                MethodWeight {
                    samples: round1(n.get(&method).copied().unwrap_or(0.0) + more),
                    percent: percent(w + more, total),
                    ms: round1((w + more) * ms_per),
                    method,
                    called_from,
                }
            })
            .collect();
        if extra != 0.0 {
            rows.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        }
        rows
    };
    let by_blocking_call = match metric {
        Metric::Wait => {
            let (w, n) = profile.by_blocking_call(&a.symbols);
            conv(w, &n.into_iter().collect(), &no_callers)
        }
        _ => Vec::new(),
    };
    let inlining_note = inlining_note(
        excl.iter()
            .take(o.top)
            .chain(incl.iter().take(o.top))
            .map(|(m, _)| m.as_str())
            .filter(|m| a.symbols.is_unlabelled_lambda(m)),
        a.symbols.inlining_followed(),
    );
    StackReport {
        metric,
        method,
        inlining_note,
        method_note: match a.cpu.kernel_sampled() {
            true if method == CpuSource::ThreadCpuTimes && a.cpu.kernel_waits() => {
                KERNEL_WAITS_NOTE.into()
            }
            true if method == CpuSource::ThreadCpuTimes => KERNEL_NOTE.into(),
            _ => cpu_source_note(method, a.cpu.cpus(), a.cpu.estimate().rounds_per_group()),
        },
        sample_interval_ms: ms_per,
        sampler_period_ms: a.cpu.measured_period_ns().map(|p| p as f64 / 1e6),
        kernel_samples: a.cpu.kernel_sampled(),
        kernel_waits: a.cpu.kernel_waits(),
        cpus: a.cpu.cpus(),
        exact: method == CpuSource::ThreadCpuTimes,
        total_samples: round1(samples),
        samples: samples.round() as u64,
        total_ms: round1(total * ms_per),
        top_exclusive: conv(excl, &excl_n, &leaf_callers),
        top_inclusive: conv(incl, &incl_n, &no_callers),
        native_callers_left_out,
        by_blocking_call,
        left_out: (waits && profile.plumbing_threads > 0).then(|| LeftOut {
            threads: profile.plumbing_threads,
            wait_ms: round1(profile.plumbing_wait * ms_per),
        }),
        parked: if waits && whole {
            parked(a, &profile, ms_per)
        } else {
            None
        },
        runqueue_ms: waits.then(|| round1(runq * ms_per)),
        blocked_ms: waits.then(|| round1((total - runq).max(0.0) * ms_per)),
        runqueue_source: waits.then(|| RunqueueSource::of(a)),
        cpu_throttling: runqueue::throttling(a).filter(|_| waits),
        cpu_ms: profile.total(Metric::Cpu) * ms_per,
        process,
        lines: o
            .lines
            .then(|| super::lines::hot_lines(a, &profile, metric, o.top)),
        tree: o
            .tree
            .is_some()
            .then(|| call_tree(&profile, metric, &a.symbols)),
        focus_path: o.tree.is_some().then(|| focus_path(a, metric, o)).flatten(),
        tree_view: o.tree.unwrap_or_default(),
        app: a.symbols.app_code().clone(),
        narrowed: o.narrowed,
    }
}

impl TextView for StackReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let what = if self.metric == Metric::Cpu {
            "CPU"
        } else {
            "Waiting"
        };
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "{what} time: {:.1} ms ({})",
                self.total_ms,
                self.basis()
            ))
        )?;
        if self.nothing_weighed() && self.narrowed {
            // The trace may well have samples: the window or the filter left none.
            writeln!(
                out,
                "  nothing matched: no samples in this window or filter (check --thread, --from/--to, --focus, --exclude)"
            )?;
            return Ok(());
        }
        writeln!(out, "  how: {}", self.method_note)?;
        if let Some(n) = &self.inlining_note {
            writeln!(out, "  note: {n}")?;
        }
        if let Some(p) = &self.process {
            for line in [p.runtime_line(), p.overhead_line()].into_iter().flatten() {
                writeln!(out, "  {line}")?;
            }
        }
        if self.nothing_weighed() && self.method != CpuSource::None {
            writeln!(
                out,
                "  nothing matched: {}",
                nothing_matched_hint(self.metric, self.kernel_samples && !self.kernel_waits)
            )?;
        }
        if let (Some(runq), Some(blocked), Some(src), true) = (
            self.runqueue_ms,
            self.blocked_ms,
            self.runqueue_source,
            self.total_ms > 0.0,
        ) {
            writeln!(
                out,
                "  of it: waiting for a CPU (run queue) {runq:.1} ms, blocked {blocked:.1} ms (run queue {})",
                src.words()
            )?;
            let measured = (src == RunqueueSource::Schedstat).then_some(runq);
            for line in runqueue::lines(self.cpu_ms, measured, self.cpu_throttling.as_ref()) {
                writeln!(out, "  {line}")?;
            }
        }
        if let Some(l) = &self.left_out {
            writeln!(
                out,
                "  left out: {} of waiting by {} of the runtime's own threads (tiered JIT, GC, EventPipe, signal handler, debugger): they wait by design (`report threads` lists them)",
                ms_text(l.wait_ms),
                l.threads
            )?;
        }
        if !self.by_blocking_call.is_empty() {
            writeln!(
                out,
                "\n{}",
                style.heading("Waiting by blocking call (the deepest known one)")
            )?;
            method_table(out, &self.by_blocking_call, Unit::Ms, style)?;
            if let Some(p) = &self.parked {
                writeln!(
                    out,
                    "  {} of it by {} thread{} parked the whole window, never caught running work ({}); they wait by design",
                    ms_text(p.wait_ms),
                    p.threads,
                    if p.threads == 1 { "" } else { "s" },
                    p.names.join(", ")
                )?;
            }
        }
        writeln!(
            out,
            "\n{}",
            style.heading("Top methods, exclusive (the frame itself)")
        )?;
        method_table(out, &self.top_exclusive, Unit::Ms, style)?;
        if let Some(l) = &self.lines {
            l.write_text(out, style)?;
        }
        writeln!(
            out,
            "\n{}",
            style.heading("Top methods, inclusive (with callees)")
        )?;
        method_table(out, &self.top_inclusive, Unit::Ms, style)?;
        if self.native_callers_left_out && !self.top_inclusive.is_empty() {
            writeln!(out, "  {NATIVE_CALLERS_NOTE}")?;
        }
        let unsampled = clrspy_analysis::profile::UNSAMPLED_FRAME;
        if self
            .top_exclusive
            .iter()
            .chain(&self.top_inclusive)
            .any(|m| m.method == unsampled)
        {
            writeln!(out, "  {UNSAMPLED_NOTE}")?;
        }
        if let Some(tree) = &self.tree {
            writeln!(
                out,
                "\n{}",
                style.heading("Call tree (inclusive %, exclusive %)")
            )?;
            match &self.focus_path {
                Some(path) if !path.is_empty() => {
                    writeln!(
                        out,
                        "  under the heaviest path from a stack's root to the focus, collapsed ({:.1}% of the focus's time comes through all of it; --callers METHOD shows every path)",
                        path[0].percent
                    )?;
                    let tree = under_path(tree, path);
                    // --depth counts the frames from the focus down, not the path's.
                    let view = TreeOptions {
                        depth: self.tree_view.depth.saturating_add(path.len()),
                        ..self.tree_view
                    };
                    write_tree_with(
                        out,
                        &tree,
                        tree.inclusive,
                        &view,
                        Columns::Both,
                        style,
                        &self.app,
                    )?;
                }
                _ => {
                    write_tree_with(
                        out,
                        tree,
                        tree.inclusive,
                        &self.tree_view,
                        Columns::Both,
                        style,
                        &self.app,
                    )?;
                }
            }
        }
        Ok(())
    }
}

impl StackReport {
    /// What the total rests on, in words, led by the one word of its kind of evidence
    /// ([`CpuSource::word`]): measured or estimated, samples, the sampler's period.
    pub(crate) fn basis(&self) -> String {
        if self.waits_from_switches() {
            return format!(
                "{}: measured by thread CPU readings; waiting from the kernel's context switches",
                self.method.word()
            );
        }
        let period = match self.sampler_period_ms {
            _ if self.kernel_samples => "taken by the kernel on a CPU (nothing suspended)".into(),
            Some(p) => format!("sampler period {p:.2} ms measured"),
            None => "sampler period not measured".into(),
        };
        let cpus = self.cpus.map_or_else(
            || "CPUs unknown".into(),
            |n| format!("at most {n} CPUs per round"),
        );
        // What the count counts: samples of this metric's time (a runtime's sampler's round
        // samples every managed thread, waiting ones too; those are another metric's).
        let n = match self.metric {
            Metric::Cpu => format!("{} samples of threads on a CPU", self.samples),
            Metric::Wait => format!("{} samples of waiting threads", self.samples),
            _ => format!("{} samples", self.samples),
        };
        let word = self.method.word();
        match self.method {
            CpuSource::None => format!("{word}: no samples"),
            CpuSource::ThreadCpuTimes => {
                format!("{word}: measured by thread CPU readings; {n}, {period}")
            }
            CpuSource::Mixed => format!(
                "{word}: measured until the readings stopped, then estimated; {n}, {period}, {cpus}"
            ),
            CpuSource::Estimate => format!(
                "{word}: {n} at the {period} ({:.3} ms nominal), {cpus}",
                self.sample_interval_ms
            ),
        }
    }
}

impl StackReport {
    /// True when the waiting time comes from the kernel's context switches, not samples.
    fn waits_from_switches(&self) -> bool {
        self.metric == Metric::Wait && self.kernel_waits
    }

    /// True when nothing weighs in the report: no samples (no time from switches either).
    fn nothing_weighed(&self) -> bool {
        match self.waits_from_switches() {
            true => self.total_ms <= 0.0,
            false => self.total_samples <= 0.0,
        }
    }
}

fn nothing_matched_hint(metric: Metric, kernel: bool) -> &'static str {
    match metric {
        Metric::Wait if kernel => "the kernel's samples are taken only on a CPU: where threads waited has no stacks (the kernel sampled user mode only: record as root or with CAP_PERFMON for waits' stacks, or with the runtime's sampler, the default)",
        Metric::Wait => "no sample of this trace was waiting",
        _ => "every sample of this trace was waiting or idle",
    }
}

/// The heaviest path from a thread's root to the `--focus` method (on the stacks without the
/// focus), when there is a focus and a path.
fn focus_path(a: &Analysis, metric: Metric, o: &ReportOptions) -> Option<Vec<PathFrame>> {
    let focus = o.filter.focus.as_deref()?;
    let mut unfocused = o.filter.clone();
    unfocused.focus = None;
    let group = unfocused.just_my_code.take();
    let profile = a.profile(&unfocused);
    let links = method_links(&profile, metric, &a.symbols, focus, group.as_ref())?;
    let path: Vec<PathFrame> = links
        .heaviest_path()
        .into_iter()
        .map(|(frame, w, n)| PathFrame {
            frame,
            samples: round1(n),
            percent: percent(w, links.weight),
        })
        .collect();
    Some(path)
}

/// The focused tree hung under its path: the path's frames each one node deep (shown with
/// the tree's whole weight: the heading says how much comes through the path), then the
/// tree's own frames.
fn under_path(tree: &TreeNode, path: &[PathFrame]) -> TreeNode {
    let mut children = tree.children.clone();
    for p in path.iter().rev() {
        children = vec![TreeNode {
            name: p.frame.clone(),
            inclusive: tree.inclusive,
            exclusive: 0.0,
            children,
        }];
    }
    TreeNode {
        name: tree.name.clone(),
        inclusive: tree.inclusive,
        exclusive: tree.exclusive,
        children,
    }
}

/// A time in ms as "12.3 s" or "85.0 ms".
fn ms_text(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1e3)
    } else {
        format!("{ms:.1} ms")
    }
}
