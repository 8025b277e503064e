//! Folded stacks (Brendan Gregg's format, read by flamegraph.pl, inferno, speedscope and
//! others): one line per distinct stack, frames root first separated by `;`, then a space and
//! the weight as an integer (milliseconds rounded up to microsecond precision: weights are
//! written in microseconds for time metrics so short stacks are not lost; bytes for
//! allocations and retained bytes). Semicolons inside frame names become `:`.

use std::io::{self, Write};

use crate::stack_unit::StackUnit;
use crate::WeightedStack;

/// The integer weight written for a stack weighing `unit`.
pub(crate) fn unit_weight(unit: StackUnit, w: f64) -> u64 {
    if unit.is_bytes() {
        w.round().max(1.0) as u64
    } else {
        (w * 1000.0).round().max(1.0) as u64
    }
}

/// Writes folded stacks of a metric or another [`StackUnit`]; `per_thread` puts the thread
/// label as the root frame.
pub(crate) fn write(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    unit: impl Into<StackUnit>,
    thread_label: &dyn Fn(u64) -> String,
    per_thread: bool,
) -> io::Result<()> {
    let unit = unit.into();
    let mut line = String::new();
    for s in stacks {
        fill(&mut line, s, unit, thread_label, per_thread);
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The lines [`write`] writes, each its own string of its own size (a flame graph of a
/// kernel-sampled trace reads megabytes of them: one buffer grown by doubling held twice
/// that).
pub(crate) fn lines(
    stacks: &[WeightedStack],
    unit: StackUnit,
    thread_label: &dyn Fn(u64) -> String,
    per_thread: bool,
) -> Vec<String> {
    let mut line = String::new();
    stacks
        .iter()
        .map(|s| {
            fill(&mut line, s, unit, thread_label, per_thread);
            line.as_str().to_owned()
        })
        .collect()
}

/// One stack's line, without its end of line.
fn fill(
    line: &mut String,
    s: &WeightedStack,
    unit: StackUnit,
    thread_label: &dyn Fn(u64) -> String,
    per_thread: bool,
) {
    use std::fmt::Write as _;
    line.clear();
    if per_thread {
        line.push_str(&clean(&thread_label(s.thread)));
    }
    for f in &s.frames {
        if !line.is_empty() {
            line.push(';');
        }
        line.push_str(&clean(f));
    }
    if line.is_empty() {
        line.push_str("[no stack]");
    }
    let _ = write!(line, " {}", unit_weight(unit, s.weight));
}

fn clean(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;

    #[test]
    fn lines() {
        let stacks = vec![
            WeightedStack {
                thread: 5,
                frames: vec!["Main".into(), "A;B".into()],
                weight: 2.5,
            },
            WeightedStack {
                thread: 6,
                frames: vec![],
                weight: 0.0001,
            },
        ];
        let mut out = Vec::new();
        write(&mut out, &stacks, Metric::Cpu, &|t| format!("t{t}"), true).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "t5;Main;A:B 2500\nt6 1\n");
        let l = super::lines(&stacks, Metric::Cpu.into(), &|t| format!("t{t}"), false);
        assert_eq!(l, ["Main;A:B 2500", "[no stack] 1"]);
    }
}
