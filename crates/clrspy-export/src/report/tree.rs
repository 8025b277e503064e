//! The text view of call trees (top-down, callers) at any depth: a chain of frames that each
//! show one callee (the rest of their time under the cutoff) collapses to one line saying how
//! many frames it hides (only the runtime's
//! and frameworks' frames are hidden, by [`JustMyCode`]'s rule), indentation stops
//! growing at [`MAX_INDENT`] levels (deeper lines say their level), and names are shortened
//! only inside (never cut from the left; whole when piped).

use std::io::{self, Write};

use clrspy_analysis::profile::TreeNode;
use clrspy_analysis::JustMyCode;

use super::text::TextStyle;
use super::TreeOptions;
use crate::units::fit;

/// Levels of indentation at most; deeper lines start with their level, `(L42)`.
pub const MAX_INDENT: usize = 16;

/// Chains of this many frames or more collapse to one line.
pub const MIN_CHAIN: usize = 4;

/// Which columns a tree shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Columns {
    /// Inclusive and exclusive percent (the top-down tree).
    Both,
    /// Inclusive percent and samples (the caller tree): the nodes' `exclusive` field holds
    /// their samples.
    Samples,
}

/// Writes `root` and its descendants, each percent of `total`.
pub fn write_tree(
    out: &mut dyn Write,
    root: &TreeNode,
    total: f64,
    view: &TreeOptions,
    columns: Columns,
    style: &TextStyle,
) -> io::Result<()> {
    let w = Writer {
        total: total.max(f64::MIN_POSITIVE),
        view,
        columns,
        style,
        framework: JustMyCode::default(),
    };
    w.line(out, root, &[], 0)?;
    w.children(out, root, 0, 0)
}

struct Writer<'a> {
    total: f64,
    view: &'a TreeOptions,
    columns: Columns,
    style: &'a TextStyle,
    framework: JustMyCode,
}

impl Writer<'_> {
    fn pct(&self, v: f64) -> f64 {
        v / self.total * 100.0 + 0.0
    }

    fn shown(&self, n: &TreeNode) -> Vec<usize> {
        n.children
            .iter()
            .enumerate()
            .filter(|(i, c)| *i < self.view.width && self.pct(c.inclusive) >= self.view.cutoff)
            .map(|(i, _)| i)
            .collect()
    }

    /// The chain from `n` down: each frame but the last shows exactly one callee, and its
    /// own time and its hidden callees' are together under the cutoff; the app's frames end
    /// it.
    fn chain<'t>(&self, n: &'t TreeNode, depth: usize) -> Vec<&'t TreeNode> {
        let mut chain = vec![n];
        let mut cur = n;
        while depth + chain.len() <= self.view.depth {
            let shown = self.shown(cur);
            let [only] = shown[..] else {
                break;
            };
            // Its own time and its hidden callees' together under the cutoff.
            let off_chain = cur.inclusive - cur.children[only].inclusive;
            if self.pct(off_chain) >= self.view.cutoff {
                break;
            }
            cur = &cur.children[only];
            chain.push(cur);
            // The app's own frames are never hidden: one ends the chain.
            if !self.framework.is_framework_name(&cur.name) {
                break;
            }
        }
        chain
    }

    fn children(
        &self,
        out: &mut dyn Write,
        n: &TreeNode,
        depth: usize,
        level: usize,
    ) -> io::Result<()> {
        if depth >= self.view.depth {
            return Ok(());
        }
        let shown = self.shown(n);
        for &i in &shown {
            self.node(out, &n.children[i], depth + 1, level + 1)?;
        }
        let hidden = n.children.len() - shown.len();
        if hidden > 0 {
            // At the children's level (indented one step past `n`).
            let (indent, mark) = indent(level + 1);
            writeln!(
                out,
                "{:>pad$}{indent}{mark}({hidden} more below the cutoff)",
                "",
                pad = self.prefix_width()
            )?;
        }
        Ok(())
    }

    fn node(
        &self,
        out: &mut dyn Write,
        n: &TreeNode,
        depth: usize,
        level: usize,
    ) -> io::Result<()> {
        let chain = self.chain(n, depth);
        if chain.len() >= MIN_CHAIN {
            let last = chain[chain.len() - 1];
            self.line(out, n, &chain, level)?;
            return self.children(out, last, depth + chain.len() - 1, level);
        }
        self.line(out, n, &[], level)?;
        self.children(out, n, depth, level)
    }

    fn prefix_width(&self) -> usize {
        match self.columns {
            Columns::Both => 17,
            Columns::Samples => 18,
        }
    }

    /// One line: `n` alone, or the collapsed `chain` (which starts with `n`).
    fn line(
        &self,
        out: &mut dyn Write,
        n: &TreeNode,
        chain: &[&TreeNode],
        level: usize,
    ) -> io::Result<()> {
        let (indent, mark) = indent(level);
        let excl: f64 = if chain.is_empty() || self.columns == Columns::Samples {
            n.exclusive
        } else {
            chain.iter().map(|c| c.exclusive).sum()
        };
        let head = match self.columns {
            Columns::Both => format!(
                "{:>6.1}% {:>6.1}%  {indent}{mark}",
                self.pct(n.inclusive),
                self.pct(excl)
            ),
            Columns::Samples => format!(
                "{:>6.1}% {:>8.0}  {indent}{mark}",
                self.pct(n.inclusive),
                n.exclusive
            ),
        };
        let room = self.style.room(head.chars().count());
        let text = match chain {
            [] | [_] => fit(&n.name, room),
            [first, .., last] => {
                let middle = format!(" → […{} frames…] → ", chain.len() - 2);
                let each = room.saturating_sub(middle.chars().count()) / 2;
                format!(
                    "{}{middle}{}",
                    fit(&first.name, each.max(20)),
                    fit(&last.name, each.max(20))
                )
            }
        };
        writeln!(out, "{head}{text}")
    }
}

/// The indentation of a level, and the level mark of lines past [`MAX_INDENT`].
fn indent(level: usize) -> (String, String) {
    let indent = "  ".repeat(level.min(MAX_INDENT));
    let mark = if level > MAX_INDENT {
        format!("(L{level}) ")
    } else {
        String::new()
    };
    (indent, mark)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, incl: f64, excl: f64, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            name: name.into(),
            inclusive: incl,
            exclusive: excl,
            children,
        }
    }

    fn text(root: &TreeNode, view: &TreeOptions) -> String {
        let mut out = Vec::new();
        let style = TextStyle::default();
        write_tree(&mut out, root, root.inclusive, view, Columns::Both, &style).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn chains_collapse_and_indentation_is_bounded() {
        // root -> f0 -> f1 -> ... -> f59 -> {a, b}, framework frames.
        let mut n = node(
            "System.f59",
            10.0,
            0.0,
            vec![node("a", 6.0, 6.0, vec![]), node("b", 4.0, 4.0, vec![])],
        );
        for i in (0..59).rev() {
            n = node(&format!("System.f{i}"), 10.0, 0.0, vec![n]);
        }
        let root = node("[all threads]", 10.0, 0.0, vec![n]);
        let view = TreeOptions {
            depth: 100,
            ..TreeOptions::default()
        };
        let t = text(&root, &view);
        assert_eq!(
            t,
            " 100.0%    0.0%  [all threads]\n 100.0%    0.0%    System.f0 → […58 frames…] → System.f59\n  60.0%   60.0%      a\n  40.0%   40.0%      b\n"
        );
        // Without collapsible chains (each frame has time of its own), indentation stops.
        let mut n = node("leaf", 1.0, 1.0, vec![]);
        for i in (0..30).rev() {
            n = node(&format!("g{i}"), 1.0 + (30 - i) as f64, 1.0, vec![n]);
        }
        let root = node("[all threads]", n.inclusive, 0.0, vec![n]);
        let t = text(&root, &view);
        let deepest = t.lines().last().unwrap();
        assert!(deepest.contains("(L31) leaf"), "{t}");
        let width = deepest.find('(').unwrap();
        assert_eq!(width, 17 + 2 * MAX_INDENT, "{t}");
    }

    #[test]
    fn depth_limits_frames_not_lines() {
        let mut n = node("System.f9", 1.0, 1.0, vec![]);
        for i in (0..9).rev() {
            let name = if i == 7 {
                "App.Mine".into()
            } else {
                format!("System.f{i}")
            };
            n = node(&name, 1.0, 0.0, vec![n]);
        }
        let root = node("[all threads]", 1.0, 0.0, vec![n]);
        let view = TreeOptions {
            depth: 5,
            ..TreeOptions::default()
        };
        let t = text(&root, &view);
        assert!(t.contains("System.f0 → […3 frames…] → System.f4\n"), "{t}");
        assert!(!t.contains("f5"), "{t}");
        // The app's frames end a chain (they are never hidden).
        let view = TreeOptions {
            depth: 100,
            ..TreeOptions::default()
        };
        let t = text(&root, &view);
        assert!(
            t.contains("System.f0 → […6 frames…] → App.Mine\n") && t.contains("      System.f8\n"),
            "{t}"
        );
    }
}
