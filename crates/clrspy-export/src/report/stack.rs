//! The `cpu` and `waits` reports: time by method, exclusive and inclusive, and the call tree.

use std::io::{self, Write};

use clrspy_analysis::cpu::CpuSource;
use clrspy_analysis::profile::{call_tree, TreeNode};
use clrspy_analysis::{Analysis, Metric};
use serde::Serialize;

use super::text::{method_table, TextStyle, Unit};
use super::{MethodWeight, ReportKind, ReportOptions, ReportView, TreeOptions};
use crate::units::{fit, percent, round1};

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
    /// How the text view lays out the tree.
    #[serde(skip)]
    pub tree_view: TreeOptions,
}

/// The words for how CPU was told from waiting.
pub fn cpu_source_note(method: CpuSource) -> &'static str {
    match method {
        CpuSource::ThreadCpuTimes => "each sample weighed by its thread's CPU time, read from /proc while recording (exact)",
        CpuSource::Mixed => "samples weighed by measured thread CPU time where readings cover them; the rest by sample kind and blocking frames",
        CpuSource::Heuristic => "no thread CPU readings in this trace: samples sorted by kind (managed/external) and known blocking frames (waits, sleeps, joins, I/O, locks); record with `clrspy record` for exact CPU",
        CpuSource::None => "the trace has no CPU samples (record with the cpu profile)",
    }
}

/// Builds the CPU (`Metric::Cpu`) or waits (`Metric::Wait`) report.
pub fn build(a: &Analysis, metric: Metric, o: &ReportOptions) -> StackReport {
    let profile = a.profile(&o.filter);
    let total = profile.total(metric);
    let (excl, incl) = profile.top(metric, &a.symbols);
    let ms_per = a.sampling_interval_ns as f64 / 1e6;
    let conv = |v: Vec<(String, f64)>| -> Vec<MethodWeight> {
        v.into_iter()
            .take(o.top)
            .map(|(method, w)| MethodWeight {
                method,
                samples: round1(w),
                percent: percent(w, total),
                ms: round1(w * ms_per),
            })
            .collect()
    };
    let method = a.cpu.source();
    StackReport {
        metric,
        method,
        method_note: cpu_source_note(method).into(),
        sample_interval_ms: ms_per,
        total_samples: round1(total),
        total_ms: round1(total * ms_per),
        top_exclusive: conv(excl),
        top_inclusive: conv(incl),
        tree: o
            .tree
            .is_some()
            .then(|| call_tree(&profile, metric, &a.symbols)),
        tree_view: o.tree.unwrap_or_default(),
    }
}

impl ReportView for StackReport {
    fn kind(&self) -> ReportKind {
        if self.metric == Metric::Cpu {
            ReportKind::Cpu
        } else {
            ReportKind::Waits
        }
    }

    fn json(&self) -> serde_json::Value {
        super::to_json(self)
    }

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
                "{what} time: {:.1} ms ({:.0} samples of {:.3} ms)",
                self.total_ms, self.total_samples, self.sample_interval_ms
            ))
        )?;
        writeln!(out, "  how: {}", self.method_note)?;
        if self.total_samples <= 0.0 {
            writeln!(
                out,
                "  nothing matched: {}",
                nothing_matched_hint(self.metric)
            )?;
        }
        writeln!(
            out,
            "\n{}",
            style.heading("Top methods, exclusive (the frame itself)")
        )?;
        method_table(out, &self.top_exclusive, Unit::Samples, style)?;
        writeln!(
            out,
            "\n{}",
            style.heading("Top methods, inclusive (with callees)")
        )?;
        method_table(out, &self.top_inclusive, Unit::Samples, style)?;
        if let Some(tree) = &self.tree {
            writeln!(
                out,
                "\n{}",
                style.heading("Call tree (inclusive %, exclusive %)")
            )?;
            let total = tree.inclusive.max(f64::MIN_POSITIVE);
            write_tree(out, tree, 0, total, &self.tree_view, style)?;
        }
        Ok(())
    }
}

fn nothing_matched_hint(metric: Metric) -> &'static str {
    match metric {
        Metric::Wait => "no waiting samples in this window or filter",
        _ => "no CPU samples in this window or filter (check --thread, --from/--to, --focus; a trace without samples needs the cpu profile)",
    }
}

fn write_tree(
    out: &mut dyn Write,
    n: &TreeNode,
    depth: usize,
    total: f64,
    view: &TreeOptions,
    style: &TextStyle,
) -> io::Result<()> {
    if depth > view.depth {
        return Ok(());
    }
    let indent = "  ".repeat(depth.min(40));
    let line = format!(
        "{:>6.1}% {:>6.1}%  {indent}",
        n.inclusive / total * 100.0 + 0.0,
        n.exclusive / total * 100.0 + 0.0
    );
    writeln!(
        out,
        "{line}{}",
        fit(&n.name, style.room(line.chars().count()))
    )?;
    let mut hidden = 0;
    for (i, c) in n.children.iter().enumerate() {
        if i >= view.width || c.inclusive / total * 100.0 < view.cutoff {
            hidden += 1;
            continue;
        }
        write_tree(out, c, depth + 1, total, view, style)?;
    }
    if hidden > 0 && depth < view.depth {
        writeln!(out, "{:>16}{indent}  ({hidden} more below the cutoff)", "")?;
    }
    Ok(())
}
