//! The HTML report's callers and callees of its hottest methods: for each, the merged tree of
//! its callers up to the stacks' roots and of its callees, as nested lists. A chain of
//! framework frames that each have one caller (or callee) folds into a `<details>` saying how
//! many frames it holds, so 60-frame ASP.NET stacks stay readable; the app's frames always show.

use std::fmt::Write as _;

use clrspy_analysis::callers::{method_links, LinkNode};
use clrspy_analysis::{Analysis, JustMyCode, Metric, StackFilter};

use super::markup::escape;
use crate::report::rows::MethodWeight;

/// Nodes under this share of the method's time are left out.
const CUTOFF: f64 = 0.01;
/// Children shown per node.
const WIDTH: usize = 6;
/// Levels shown at most.
const DEPTH: usize = 120;

/// The section for the first `n` methods of `top` (clrspy's own bracketed frames skipped).
pub(crate) fn section(
    a: &Analysis,
    top: &[MethodWeight],
    filter: &StackFilter,
    n: usize,
) -> String {
    let mut h = String::from("<h2>Callers and callees of the hottest methods (CPU)</h2>");
    let group = filter.just_my_code.clone();
    let mut ungrouped = filter.clone();
    ungrouped.just_my_code = None;
    let profile = a.profile(&ungrouped);
    let methods: Vec<&MethodWeight> = top
        .iter()
        .filter(|m| !m.method.starts_with('['))
        .take(n)
        .collect();
    if methods.is_empty() {
        h.push_str("<p class=note>no CPU stacks in this trace</p>");
        return h;
    }
    let rule = JustMyCode::default().for_symbols(&a.symbols);
    for m in methods {
        let Some(l) = method_links(&profile, Metric::Cpu, &a.symbols, &m.method, group.as_ref())
        else {
            continue;
        };
        let _ = write!(
            h,
            "<details class=links><summary>{} — {:.1} ms, {:.1}% (exclusive)</summary>",
            escape(&l.method),
            m.ms,
            m.percent
        );
        h.push_str("<p>Callers (read downward: each frame is called by the ones under it):</p>");
        tree(&mut h, &l.callers, l.weight, &rule, 0);
        h.push_str("<p>Callees:</p>");
        if l.callees.is_empty() {
            h.push_str("<p class=note>none: the method's own code</p>");
        } else {
            tree(&mut h, &l.callees, l.weight, &rule, 0);
        }
        h.push_str("</details>");
    }
    h
}

/// Nested lists of `nodes`, percent of `whole` (the method's inclusive weight).
fn tree(h: &mut String, nodes: &[LinkNode], whole: f64, rule: &JustMyCode, depth: usize) {
    let whole = whole.max(f64::MIN_POSITIVE);
    let shown: Vec<&LinkNode> = nodes
        .iter()
        .take(WIDTH)
        .filter(|n| n.weight / whole >= CUTOFF)
        .collect();
    if shown.is_empty() || depth >= DEPTH {
        return;
    }
    h.push_str("<ul>");
    for n in &shown {
        // The chain of single-link framework frames below `n`.
        let mut chain = vec![*n];
        let mut cur = *n;
        while let [only] = cur.next.as_slice() {
            if !rule.is_framework_name(&only.frame) || chain.len() + depth >= DEPTH {
                break;
            }
            chain.push(only);
            cur = only;
        }
        let _ = write!(
            h,
            "<li><span class=n>{:.1}%</span> {} ",
            n.weight / whole * 100.0,
            escape(&n.frame)
        );
        if chain.len() >= 3 {
            let _ = write!(
                h,
                "<details><summary>… {} more framework frames</summary><ol>",
                chain.len() - 1
            );
            for c in &chain[1..] {
                let _ = write!(h, "<li>{}</li>", escape(&c.frame));
            }
            h.push_str("</ol></details>");
            tree(h, &cur.next, whole, rule, depth + chain.len());
        } else {
            tree(h, &n.next, whole, rule, depth + 1);
        }
        h.push_str("</li>");
    }
    let hidden = nodes.len() - shown.len();
    if hidden > 0 {
        let _ = write!(h, "<li class=note>{hidden} more (lighter)</li>");
    }
    h.push_str("</ul>");
}
