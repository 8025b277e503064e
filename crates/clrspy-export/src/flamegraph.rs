//! An interactive flame graph SVG (search with Ctrl+F, click to zoom), drawn by the inferno
//! crate from the folded stacks.

use std::io::{self, Write};

use crate::folded;
use crate::{Metric, WeightedStack};

/// Writes a flame graph SVG of `stacks`, titled `title`.
pub fn write(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    metric: Metric,
    title: &str,
    thread_label: &dyn Fn(u64) -> String,
) -> io::Result<()> {
    let mut text = Vec::new();
    folded::write(&mut text, stacks, metric, thread_label, false)?;
    let text = String::from_utf8_lossy(&text);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    // A fixed width: the fluid layout miscomputes its width in some browsers (negative sizes).
    opts.image_width = Some(1200);
    opts.count_name = match metric {
        Metric::Cpu | Metric::Wait => "µs".into(),
        Metric::Alloc => "bytes".into(),
    };
    opts.subtitle = Some(match metric {
        Metric::Cpu => "CPU time".into(),
        Metric::Wait => "waiting time".into(),
        Metric::Alloc => "allocated bytes (estimated from allocation ticks)".into(),
    });
    if text.trim().is_empty() {
        // inferno refuses empty input: draw the one "no samples" bar.
        return inferno::flamegraph::from_lines(&mut opts, std::iter::once("[no samples] 1"), out)
            .map_err(io::Error::other);
    }
    inferno::flamegraph::from_lines(&mut opts, text.lines(), out).map_err(io::Error::other)
}
