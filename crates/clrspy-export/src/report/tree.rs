//! The text view of call trees (top-down, callers) at any depth: a chain of frames that each
//! show one callee (the rest of their time under the cutoff) collapses to one line saying how
//! many frames it hides (only the runtime's and frameworks' frames are hidden, by
//! [`JustMyCode`]'s rule with the trace's app code), indentation stops growing at
//! [`MAX_INDENT`] levels (deeper lines say their level), and names are shortened only inside
//! (never cut from the left; whole when piped), each line within the terminal's width and
//! sibling lines never alike. Every cut by `--depth` says how many levels it hides and the
//! depth that shows them; by default the hottest path goes on to its leaf.

use std::io::{self, Write};

use clrspy_analysis::grouping::AppCode;
use clrspy_analysis::profile::TreeNode;
use clrspy_analysis::JustMyCode;

use super::text::TextStyle;
use super::view::TreeOptions;
use crate::units::{cut_middle, fit, fit_among};

/// Levels of indentation at most; deeper lines start with their level, `(L42)`.
pub(crate) const MAX_INDENT: usize = 16;

/// Chains of this many frames or more collapse to one line.
pub(crate) const MIN_CHAIN: usize = 4;

/// Which columns a tree shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Columns {
    /// Inclusive and exclusive percent (the top-down tree).
    Both,
    /// Inclusive percent and samples (the caller tree): the nodes' `exclusive` field holds
    /// their samples.
    Samples,
}

/// Writes `root` and its descendants, each percent of `total`.
#[cfg(test)]
fn write_tree(
    out: &mut dyn Write,
    root: &TreeNode,
    total: f64,
    view: &TreeOptions,
    columns: Columns,
    style: &TextStyle,
) -> io::Result<()> {
    write_tree_with(out, root, total, view, columns, style, &AppCode::default())
}

/// Writes `root` and its descendants, each percent of `total`, knowing the trace's app code
/// (its frames end collapsed chains).
pub(crate) fn write_tree_with(
    out: &mut dyn Write,
    root: &TreeNode,
    total: f64,
    view: &TreeOptions,
    columns: Columns,
    style: &TextStyle,
    app: &AppCode,
) -> io::Result<()> {
    let mut w = Writer {
        total: total.max(f64::MIN_POSITIVE),
        view,
        columns,
        style,
        framework: JustMyCode::default().with_app_code(app),
        hot: Vec::new(),
    };
    w.hot = w.hottest_path(root);
    w.line(out, root, &[], 0, &[])?;
    w.children(out, root, 0, 0)
}

struct Writer<'a> {
    total: f64,
    view: &'a TreeOptions,
    columns: Columns,
    style: &'a TextStyle,
    framework: JustMyCode,
    /// The hottest path: the heaviest shown child at each level from the root.
    hot: Vec<*const TreeNode>,
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

    /// The heaviest shown child of `n`.
    fn heaviest(&self, n: &TreeNode) -> Option<usize> {
        self.shown(n).into_iter().max_by(|&a, &b| {
            n.children[a]
                .inclusive
                .total_cmp(&n.children[b].inclusive)
                .then(b.cmp(&a))
        })
    }

    fn hottest_path(&self, root: &TreeNode) -> Vec<*const TreeNode> {
        let mut path = vec![root as *const TreeNode];
        let mut cur = root;
        while let Some(i) = self.heaviest(cur) {
            cur = &cur.children[i];
            path.push(cur as *const TreeNode);
        }
        path
    }

    fn is_hot(&self, n: &TreeNode) -> bool {
        self.view.follow_hottest && self.hot.iter().any(|&p| std::ptr::eq(p, n))
    }

    /// Levels of frames below `n` the tree would show with no depth limit.
    fn height(&self, n: &TreeNode) -> usize {
        self.shown(n)
            .into_iter()
            .map(|i| 1 + self.height(&n.children[i]))
            .max()
            .unwrap_or(0)
    }

    /// The chain from `n` down: each frame but the last shows exactly one callee, and its
    /// own time and its hidden callees' are together under the cutoff; the app's frames end
    /// it.
    fn chain<'t>(&self, n: &'t TreeNode, depth: usize) -> Vec<&'t TreeNode> {
        let mut chain = vec![n];
        let mut cur = n;
        // The app's frames start no chain (its first frame may be dropped to fit the width).
        if !self.framework.is_framework_name(&n.name) {
            return chain;
        }
        while depth + chain.len() <= self.view.depth || self.is_hot(cur) {
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
        let shown = self.shown(n);
        if depth >= self.view.depth {
            // Cut by --depth: the hottest path goes on (by default), the rest says what it hides.
            let mut cut = shown.clone();
            if self.is_hot(n) {
                if let Some(h) = self.heaviest(n) {
                    let names = [n.children[h].name.as_str()];
                    self.node(out, &n.children[h], depth + 1, level + 1, &names)?;
                    cut.retain(|&i| i != h);
                }
            }
            let levels = cut
                .iter()
                .map(|&i| 1 + self.height(&n.children[i]))
                .max()
                .unwrap_or(0);
            if levels > 0 {
                let (indent, mark) = indent(level + 1);
                writeln!(
                    out,
                    "{:>pad$}{indent}{mark}… {levels} more level{}: --depth {}",
                    "",
                    if levels == 1 { "" } else { "s" },
                    depth + levels,
                    pad = self.prefix_width()
                )?;
            }
            return Ok(());
        }
        let names: Vec<&str> = shown.iter().map(|&i| n.children[i].name.as_str()).collect();
        for &i in &shown {
            self.node(out, &n.children[i], depth + 1, level + 1, &names)?;
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
        siblings: &[&str],
    ) -> io::Result<()> {
        let chain = self.chain(n, depth);
        if chain.len() >= MIN_CHAIN {
            let last = chain[chain.len() - 1];
            self.line(out, n, &chain, level, siblings)?;
            return self.children(out, last, depth + chain.len() - 1, level);
        }
        self.line(out, n, &[], level, siblings)?;
        self.children(out, n, depth, level)
    }

    fn prefix_width(&self) -> usize {
        match self.columns {
            Columns::Both => 17,
            Columns::Samples => 18,
        }
    }

    /// One line: `n` alone, or the collapsed `chain` (which starts with `n`); `siblings` are
    /// the names of the lines beside it (its own among them), which it must not read as.
    fn line(
        &self,
        out: &mut dyn Write,
        n: &TreeNode,
        chain: &[&TreeNode],
        level: usize,
        siblings: &[&str],
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
            [] | [_] => fit_among(&n.name, room, siblings),
            [first, .., last] => {
                let middle = format!(" → […{} frames…] → ", chain.len() - 2);
                let avail = room.saturating_sub(middle.chars().count());
                // Where the chain lands reads first; the frame it starts from gets the rest,
                // or is counted with the hidden frames when it cannot be read in it.
                let l = fit(&last.name, avail.saturating_sub(20).max(20));
                let first_room = avail.saturating_sub(l.chars().count());
                let f = fit_among(&first.name, first_room, siblings);
                if first_room >= 20 && f.chars().count() <= first_room {
                    format!("{f}{middle}{l}")
                } else {
                    let middle = format!("[…{} frames…] → ", chain.len() - 1);
                    let rest = room.saturating_sub(middle.chars().count()).max(20);
                    format!("{middle}{}", cut_middle(&fit(&last.name, rest), rest))
                }
            }
        };
        // Within the terminal's width, whatever the names could not give up.
        let width = self.style.width.saturating_sub(head.chars().count());
        writeln!(out, "{head}{}", cut_middle(&text, width.max(20)))
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
            follow_hottest: false,
            ..TreeOptions::default()
        };
        let t = text(&root, &view);
        assert!(t.contains("System.f0 → […3 frames…] → System.f4\n"), "{t}");
        assert!(!t.contains("f5"), "{t}");
        // The cut says so, and the depth that shows the rest.
        assert!(t.contains("… 5 more levels: --depth 10\n"), "{t}");
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

    #[test]
    fn the_hottest_path_goes_to_its_leaf_and_every_cut_is_marked() {
        // root -> f0..f39 (framework, each with a light side branch) -> hot leaf.
        let mut n = node("App.Hot", 60.0, 60.0, vec![]);
        for i in (0..40).rev() {
            let side = node(
                &format!("System.side{i}"),
                3.0,
                1.0,
                vec![node("System.deeper", 2.0, 2.0, vec![])],
            );
            n = node(
                &format!("System.f{i}"),
                n.inclusive + 3.0,
                0.0,
                vec![n, side],
            );
        }
        let root = node("[all threads]", n.inclusive, 0.0, vec![n]);
        let t = text(&root, &TreeOptions::default());
        assert!(t.contains("App.Hot"), "{t}");
        // Side branches cut at the depth say what they hide.
        assert!(t.contains("… 2 more levels: --depth 32"), "{t}");
        assert!(!t.contains("System.side35"), "{t}");
        // With an explicit depth the hottest path is cut too, and says so.
        let view = TreeOptions {
            depth: 10,
            follow_hottest: false,
            ..TreeOptions::default()
        };
        let t = text(&root, &view);
        assert!(!t.contains("App.Hot"), "{t}");
        assert!(t.contains("… 32 more levels: --depth 42"), "{t}");
    }

    #[test]
    fn siblings_stay_distinct_and_lines_fit_the_terminal() {
        let a = "System.Diagnostics.Metrics.Meter.GetOrCreateInstrument(Type,String,String,String,String,IEnumerable`1<KeyValuePair`2<String,Object>>,Func`1<Instrument>)";
        let b = "System.Diagnostics.Metrics.Meter.GetOrCreateInstrument(Type,String,String,String,String,IEnumerable`1<KeyValuePair`2<String,Object>>,Func`1<Counter>)";
        let long = "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol+<ProcessRequests>d__237`1[Microsoft.AspNetCore.Hosting.HostingApplication+Context].MoveNext";
        let root = node(
            "[all threads]",
            100.0,
            0.0,
            vec![
                node(a, 40.0, 40.0, vec![]),
                node(b, 30.0, 30.0, vec![]),
                node(long, 30.0, 0.0, vec![node(long, 30.0, 30.0, vec![])]),
            ],
        );
        let mut out = Vec::new();
        let style = TextStyle {
            width: 100,
            bold: false,
        };
        write_tree(
            &mut out,
            &root,
            100.0,
            &TreeOptions::default(),
            Columns::Both,
            &style,
        )
        .unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        for l in &lines {
            assert!(
                l.chars().count() <= 100,
                "{} columns: {l}\n{t}",
                l.chars().count()
            );
        }
        let names: Vec<&str> = lines[1..3].iter().map(|l| l[17..].trim()).collect();
        assert_ne!(names[0], names[1], "{t}");
        assert!(
            names[0].contains("Instrument") && names[1].contains("Counter"),
            "{t}"
        );
    }
}
