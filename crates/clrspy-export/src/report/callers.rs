//! `report cpu --callers METHOD` (and waits): the merged tree of a method's callers up to the
//! threads' roots, each caller with the samples and the share of the total that reach the
//! method through it.

use std::io::{self, Write};

use clrspy_analysis::callers::{method_links, LinkNode};
use clrspy_analysis::grouping::AppCode;
use clrspy_analysis::profile::TreeNode;
use clrspy_analysis::{Analysis, Metric};
use serde::Serialize;

use super::text::TextStyle;
use super::tree::{write_tree_with, Columns};
use super::view::{ReportOptions, TextView, TreeOptions};
use crate::units::{fit, percent, round1};

/// A method's callers.
#[derive(Clone, Debug, Serialize)]
pub(super) struct CallersReport {
    /// "cpu" or "wait".
    pub(super) metric: Metric,
    /// What was asked for (`--callers`).
    pub(super) pattern: String,
    /// The method shown: the frame named exactly `pattern`, else the heaviest whose name
    /// contains it; null when no stack has one.
    pub(super) method: Option<String>,
    /// Other methods `pattern` matched (lighter; not shown).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) also_matched: Vec<String>,
    /// The method's inclusive samples (each sample's share of the metric).
    pub(super) samples: f64,
    /// Its share of the metric's total, percent.
    pub(super) percent: f64,
    /// Its inclusive time, ms.
    pub(super) ms: f64,
    /// The metric's total, ms (what `percent` is of).
    pub(super) total_ms: f64,
    /// Its direct callers, heaviest first; each with its own callers, up to the roots.
    pub(super) callers: Vec<CallerNode>,
    /// How the text view lays out the tree.
    #[serde(skip)]
    pub(super) tree_view: TreeOptions,
    /// A window or filter narrowed the samples.
    #[serde(skip)]
    pub(super) narrowed: bool,
    /// The trace's app code by assembly: the text tree never hides its frames in a chain.
    #[serde(skip)]
    pub(super) app: AppCode,
}

/// A caller.
#[derive(Clone, Debug, Serialize)]
pub(super) struct CallerNode {
    /// Its frame name.
    pub(super) frame: String,
    /// Samples of the method reached through it.
    pub(super) samples: f64,
    /// Their share of the metric's total, percent.
    pub(super) percent: f64,
    /// Its callers.
    pub(super) callers: Vec<CallerNode>,
}

/// Builds the caller tree of `pattern`.
pub(super) fn build(
    a: &Analysis,
    metric: Metric,
    pattern: &str,
    o: &ReportOptions,
) -> CallersReport {
    // The method is found on the ungrouped stacks (--just-my-code would fold a framework
    // method away); its callers are grouped.
    let group = o.filter.just_my_code.clone();
    let mut ungrouped = o.filter.clone();
    ungrouped.just_my_code = None;
    let profile = a.profile(&ungrouped);
    let total = profile.total(metric);
    let ms_per = a.sampling_interval_ns as f64 / 1e6;
    let links = method_links(&profile, metric, &a.symbols, pattern, group.as_ref());
    let convert = |v: &[LinkNode]| -> Vec<CallerNode> { caller_nodes(v, total) };
    let (method, also, samples, weight, callers) = match &links {
        Some(l) => (
            Some(l.method.clone()),
            l.also_matched.clone(),
            l.samples,
            l.weight,
            convert(&l.callers),
        ),
        None => (None, Vec::new(), 0.0, 0.0, Vec::new()),
    };
    CallersReport {
        metric,
        pattern: pattern.to_string(),
        method,
        also_matched: also,
        samples: round1(samples),
        percent: percent(weight, total),
        ms: round1(weight * ms_per),
        total_ms: round1(total * ms_per),
        callers,
        tree_view: o.tree.unwrap_or(TreeOptions {
            depth: usize::MAX,
            ..TreeOptions::default()
        }),
        narrowed: o.narrowed,
        app: a.symbols.app_code().clone(),
    }
}

fn caller_nodes(v: &[LinkNode], total: f64) -> Vec<CallerNode> {
    v.iter()
        .map(|n| CallerNode {
            frame: n.frame.clone(),
            samples: round1(n.samples),
            percent: percent(n.weight, total),
            callers: caller_nodes(&n.next, total),
        })
        .collect()
}

/// The caller tree as the tree writer takes it: `inclusive` in percent, `exclusive` holding
/// the samples ([`Columns::Samples`]).
fn text_tree(name: &str, pct: f64, samples: f64, callers: &[CallerNode]) -> TreeNode {
    TreeNode {
        name: name.to_string(),
        inclusive: pct,
        exclusive: samples,
        children: callers
            .iter()
            .map(|c| text_tree(&c.frame, c.percent, c.samples, &c.callers))
            .collect(),
    }
}

impl TextView for CallersReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let what = if self.metric == Metric::Cpu {
            "CPU"
        } else {
            "waiting"
        };
        let Some(method) = &self.method else {
            let why = if self.narrowed {
                " in this window or filter"
            } else {
                ""
            };
            return writeln!(
                out,
                "{}\n  no {what} stack{why} has a frame containing '{}'",
                style.heading(&format!("Callers of '{}'", self.pattern)),
                self.pattern
            );
        };
        let head = format!(
            "Callers of {}: {:.1} ms, {:.1}% of {what} time ({:.0} raw samples)",
            fit(method, style.room(40)),
            self.ms,
            self.percent,
            self.samples
        );
        writeln!(out, "{}", style.heading(&head))?;
        if !self.also_matched.is_empty() {
            let names: Vec<String> = self
                .also_matched
                .iter()
                .take(5)
                .map(|n| fit(n, style.room(40)))
                .collect();
            writeln!(
                out,
                "  '{}' also matched (lighter; name one exactly to see it): {}{}",
                self.pattern,
                names.join(", "),
                if self.also_matched.len() > 5 {
                    ", ..."
                } else {
                    ""
                }
            )?;
        }
        // The percents weigh each sample by its thread's measured time; the counts are raw samples,
        // so the two columns need not be proportional.
        writeln!(
            out,
            "\n{}\n  % = share of all {what} time, each sample weighted by its thread's measured time; \
             samples = raw sample count (not weighted)",
            style.heading(
                "Caller tree (inclusive %, samples): each frame is called by the frames under it"
            )
        )?;
        let root = text_tree(method, self.percent, self.samples, &self.callers);
        // The cutoff is a share of the method's own time, so a light method's callers show.
        let view = TreeOptions {
            cutoff: self.tree_view.cutoff * self.percent / 100.0,
            ..self.tree_view
        };
        write_tree_with(out, &root, 100.0, &view, Columns::Samples, style, &self.app)
    }
}
