//! `--lines` of the `cpu` and `waits` reports: the hottest source lines, exclusive. Each
//! sample's innermost managed frame is the line that paid (native work under it — the JIT,
//! the runtime, libc — is charged to the managed line that called it), mapped through the
//! JIT's IL-to-native map to an IL offset and through the module's portable PDB to a file and
//! line ([`clrspy_analysis::source_lines`]).

use std::io::{self, Write};

use clrspy_analysis::profile::StackProfile;
use clrspy_analysis::source_lines::{SourceLine, SourceLines};
use clrspy_analysis::stacks::StackId;
use clrspy_analysis::symbols::FrameKind;
use clrspy_analysis::{Analysis, Metric};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::text::TextStyle;
use crate::units::{fit, percent, round1};

/// A source line and its exclusive weight.
#[derive(Clone, Debug, Serialize)]
pub struct LineWeight {
    /// The document's path as the compiler wrote it.
    pub file: String,
    /// Line (1-based).
    pub line: u32,
    /// The method the line is in.
    pub method: String,
    /// Time, ms.
    pub ms: f64,
    /// Share of the metric's time, percent.
    pub percent: f64,
}

/// The hottest lines.
#[derive(Clone, Debug, Serialize)]
pub struct HotLines {
    /// Lines by exclusive weight, heaviest first.
    pub rows: Vec<LineWeight>,
    /// The share of the metric's time on a known line, percent.
    pub(crate) known_percent: f64,
    /// Assemblies the samples ran in whose PDB was not found (file names), said once.
    pub(crate) missing_pdbs: Vec<String>,
    /// Of those, the app's own (not .NET's, whose PDBs are on Microsoft's symbol server).
    #[serde(skip)]
    app_missing: Vec<String>,
    /// The trace has no IL-to-native maps: recorded without the runtime's
    /// `JittedMethodILToNativeMap` keyword (0x20000), which `clrspy record` asks for.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) no_maps: bool,
}

/// The hottest `top` lines of `metric` in `profile`.
pub(crate) fn hot_lines(
    a: &Analysis,
    profile: &StackProfile,
    metric: Metric,
    top: usize,
) -> HotLines {
    let lines = a.source_lines();
    let ms_per = a.sampling_interval_ns as f64 / 1e6;
    let total = profile.total(metric);
    let mut by: FxHashMap<(SourceLine, u32), f64> = FxHashMap::default();
    let mut methods: Vec<String> = Vec::new();
    let mut method_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut known = 0.0;
    for r in &profile.rows {
        let w = r.weight(metric);
        let Some(stack) = r.stack.filter(|_| w > 0.0) else {
            continue;
        };
        let ips = a.stacks.ips(stack);
        // The innermost managed frame: the line that ran, or called the native work.
        let Some((i, frame)) = ips.iter().enumerate().find_map(|(i, &ip)| {
            let f = a.symbols.frame(a.symbols.resolve(ip));
            (f.kind == FrameKind::Managed).then_some((i, f))
        }) else {
            continue;
        };
        let Some(line) = lines.line(ips[i], i == 0) else {
            continue;
        };
        let m = match method_ids.get(&frame.name) {
            Some(&m) => m,
            None => {
                methods.push(frame.name.clone());
                method_ids.insert(frame.name.clone(), methods.len() as u32 - 1);
                methods.len() as u32 - 1
            }
        };
        *by.entry((line, m)).or_default() += w;
        known += w;
    }
    let mut rows: Vec<((SourceLine, u32), f64)> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    HotLines {
        rows: rows
            .into_iter()
            .take(top)
            .map(|((l, m), w)| LineWeight {
                file: l.file.to_string(),
                line: l.line,
                method: methods[m as usize].clone(),
                ms: round1(w * ms_per),
                percent: percent(w, total),
            })
            .collect(),
        known_percent: percent(known, total),
        app_missing: {
            let app = &a.symbols.app_code().assemblies;
            lines
                .missing()
                .into_iter()
                .filter(|m| app.iter().any(|x| x == m))
                .collect()
        },
        missing_pdbs: lines.missing(),
        no_maps: !lines.has_maps(),
    }
}

/// The source line (`file:line`) of each frame of `stack`, leaf first, where its method's PDB
/// gives one; empty when none does.
pub(crate) fn stack_lines(
    a: &Analysis,
    lines: &SourceLines<'_>,
    stack: Option<StackId>,
) -> Vec<Option<String>> {
    let Some(s) = stack else {
        return Vec::new();
    };
    let out: Vec<Option<String>> = a
        .stacks
        .ips(s)
        .iter()
        .enumerate()
        .map(|(i, &ip)| lines.line(ip, i == 0).map(|l| l.to_string()))
        .collect();
    if out.iter().all(Option::is_none) {
        Vec::new()
    } else {
        out
    }
}

impl HotLines {
    /// The table, with what was not known said once.
    pub(crate) fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "\n{}",
            style.heading("Top lines, exclusive (the innermost managed frame's line)")
        )?;
        if self.no_maps {
            writeln!(
                out,
                "  no lines: the trace has no IL-to-native maps (record with clrspy record, or add the runtime keyword 0x20000)"
            )?;
            return Ok(());
        }
        writeln!(out, "  {:>10} {:>7}  Line  (method)", "ms", "%")?;
        for r in &self.rows {
            let name = format!("{}:{}  ({})", r.file, r.line, r.method);
            writeln!(
                out,
                "  {:>10.1} {:>6.1}%  {}",
                r.ms,
                r.percent,
                fit(&name, style.room(23))
            )?;
        }
        writeln!(
            out,
            "  {:.1}% of the time is on a line known",
            self.known_percent
        )?;
        let others = self.missing_pdbs.len() - self.app_missing.len();
        if !self.app_missing.is_empty() {
            writeln!(
                out,
                "  no PDB found for the app's {} (give their folder with --symbols DIR)",
                self.app_missing.join(", ")
            )?;
        }
        if others > 0 {
            writeln!(
                out,
                "  no PDB found for {others} other assemblies (.NET's and packages': --json lists them)"
            )?;
        }
        Ok(())
    }
}
