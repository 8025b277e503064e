//! An interactive flame graph SVG (search with Ctrl+F, click to zoom), drawn by the inferno
//! crate from the folded stacks; for the HTML report also top-down (root first) or by leaf
//! (stacks reversed: every stack ending in the same method merges into one bar, its callers
//! under it), as wide as the page, with the root bar labelled.

use std::io::{self, Write};

use crate::folded;
use crate::stack_unit::StackUnit;
use crate::WeightedStack;

/// How the HTML report draws a graph ([`write_view`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct View {
    /// By leaf: stacks reversed, so identical leaf methods merge into one bar.
    pub(crate) by_leaf: bool,
    /// Root first, at the top (an icicle graph), instead of at the bottom.
    pub(crate) top_down: bool,
    /// inferno's fluid width (the SVG's own script sizes it; else 1200 px).
    pub(crate) fluid: bool,
    /// Text of the root bar (inferno leaves it empty).
    pub(crate) root_label: Option<String>,
}

/// Writes a flame graph SVG of `stacks` (weighing a metric or another [`StackUnit`]), titled
/// `title`.
pub(crate) fn write(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    unit: impl Into<StackUnit>,
    title: &str,
    thread_label: &dyn Fn(u64) -> String,
) -> io::Result<()> {
    write_view(out, stacks, unit, title, thread_label, &View::default())
}

/// [`write`] drawn as `view` says.
pub(crate) fn write_view(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    unit: impl Into<StackUnit>,
    title: &str,
    thread_label: &dyn Fn(u64) -> String,
    view: &View,
) -> io::Result<()> {
    let metric = unit.into();
    let Some(label) = &view.root_label else {
        return draw(out, stacks, metric, title, thread_label, view);
    };
    let mut svg = Vec::new();
    draw(&mut svg, stacks, metric, title, thread_label, view)?;
    let svg = String::from_utf8_lossy(&svg);
    out.write_all(label_root(&svg, label).as_bytes())
}

/// `svg` with `label` as the name of inferno's root bar (`all`): its tooltip and its text
/// (inferno's script redraws a bar's text from its tooltip).
fn label_root(svg: &str, label: &str) -> String {
    let Some(title) = svg.find("<title>all (") else {
        return svg.to_string();
    };
    let Some(rel) = svg[title..].find("></text>") else {
        return svg.to_string();
    };
    let text: String = label
        .chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            c => c.to_string(),
        })
        .collect();
    let at = title + rel + 1;
    let name_at = title + "<title>".len();
    format!(
        "{}{text}{}{text}{}",
        &svg[..name_at],
        &svg[name_at + "all".len()..at],
        &svg[at..]
    )
}

fn draw(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    metric: StackUnit,
    title: &str,
    thread_label: &dyn Fn(u64) -> String,
    view: &View,
) -> io::Result<()> {
    let lines = folded::lines(stacks, metric, thread_label, false);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    // A fixed width unless the page gives one (the HTML report's frame): the fluid layout
    // miscomputes its width in some standalone viewers (negative sizes).
    opts.image_width = if view.fluid { None } else { Some(1200) };
    opts.reverse_stack_order = view.by_leaf;
    if view.by_leaf {
        // Reversed stacks part ways at every level: bars under a pixel (of 1200) are left
        // out, or the graph holds every distinct stack.
        opts.min_width = 1.0;
    }
    if view.top_down {
        opts.direction = inferno::flamegraph::Direction::Inverted;
    }
    opts.count_name = if metric.is_bytes() { "bytes" } else { "µs" }.into();
    opts.subtitle = Some(metric.description().into());
    if lines.is_empty() {
        // inferno refuses empty input: draw the one "no samples" bar.
        return inferno::flamegraph::from_lines(&mut opts, std::iter::once("[no samples] 1"), out)
            .map_err(io::Error::other);
    }
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(io::Error::other)
}
