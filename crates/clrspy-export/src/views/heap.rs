//! The heap views: what a snapshot holds (types by retained and shallow bytes, roots), one
//! type and the shortest paths from the roots to it, what changed between two snapshots,
//! and what grew across `heap watch`'s series of them. Each is an object built from `clrspy_analysis::heap`'s model with a JSON and a
//! text view; `clrspy heap` only loads the snapshots and prints these.

use std::io::{self, Write};
use std::time::Duration;

use clrspy_analysis::heap::diff::{diff, TypeDelta};
pub use clrspy_analysis::heap::growth::WatchShot;
use clrspy_analysis::heap::growth::{grew, grew_in_every, holder, Growth};
use clrspy_analysis::heap::{HeapModel, RootPath, TypeStats};
use clrspy_values::human_bytes;
use serde_json::{json, Value};

use super::view::{View, ViewError};
use crate::report::findings::{heap_growth, write_finding, Finding};
use crate::report::text::TextStyle;
use crate::units::group;

/// Paths from the roots shown for one type.
const TYPE_PATHS: usize = 5;

/// `clrspy heap FILE`: the snapshot's totals, its top types and roots, and with `--type` in
/// JSON, that type.
pub struct HeapSummary<'a> {
    model: &'a HeapModel,
    top: usize,
    elapsed: Option<Duration>,
    type_name: Option<String>,
}

/// Builds the summary of a snapshot; `elapsed` (the time loading and analysing took) goes in
/// the text heading when given.
pub fn summary<'a>(
    model: &'a HeapModel,
    top: usize,
    elapsed: Option<Duration>,
    type_name: Option<&str>,
) -> HeapSummary<'a> {
    HeapSummary {
        model,
        top,
        elapsed,
        type_name: type_name.map(String::from),
    }
}

impl View for HeapSummary<'_> {
    fn json(&self) -> Value {
        let m = self.model;
        let mut v = json!({
            "objects": m.objects(),
            "bytes": m.bytes(),
            "unreachable_objects": m.unreachable_objects(),
            "types": m.types().iter().take(self.top).collect::<Vec<_>>(),
            "roots": m.roots().iter().take(self.top).collect::<Vec<_>>(),
        });
        if let Some(t) = &self.type_name {
            v["type"] = type_json(m, t);
        }
        v
    }

    fn write_text(&self, out: &mut dyn Write, _style: &TextStyle) -> io::Result<()> {
        let m = self.model;
        let unreachable = if m.unreachable_objects() > 0 {
            format!(
                "; {} unreachable from any root",
                group(m.unreachable_objects())
            )
        } else {
            String::new()
        };
        let took = self
            .elapsed
            .map(|e| format!(" (analysed in {:.2} s)", e.as_secs_f64()))
            .unwrap_or_default();
        writeln!(
            out,
            "{} objects, {}{took}{unreachable}",
            group(m.objects()),
            bytes(m.bytes()),
        )?;
        writeln!(out, "\nTypes by retained bytes:")?;
        writeln!(
            out,
            "{:>14} {:>14} {:>12}  Type",
            "Retained", "Shallow", "Count"
        )?;
        for t in m.types().iter().take(self.top) {
            writeln!(
                out,
                "{:>14} {:>14} {:>12}  {}",
                bytes(t.retained_bytes),
                bytes(t.bytes),
                group(t.count),
                t.name
            )?;
        }
        let mut by_shallow: Vec<_> = m.types().iter().collect();
        by_shallow.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
        writeln!(out, "\nTypes by shallow bytes:")?;
        writeln!(out, "{:>14} {:>12}  Type", "Shallow", "Count")?;
        for t in by_shallow.iter().take(self.top) {
            writeln!(
                out,
                "{:>14} {:>12}  {}",
                bytes(t.bytes),
                group(t.count),
                t.name
            )?;
        }
        writeln!(
            out,
            "\nRoots by held bytes (each object to the first root that reaches it, statics first; retained: what only that root keeps):"
        )?;
        writeln!(
            out,
            "{:>14} {:>14} {:>10}  {:<16} Root",
            "Held", "Retained", "Objects", "Kind"
        )?;
        for r in m.roots().iter().take(self.top) {
            let kind = serde_json::to_value(r.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            writeln!(
                out,
                "{:>14} {:>14} {:>10}  {:<16} {}",
                bytes(r.held_bytes),
                bytes(r.retained_bytes),
                group(r.objects),
                kind,
                r.name
            )?;
        }
        Ok(())
    }
}

fn type_json(model: &HeapModel, t: &str) -> Value {
    let stats = find_type(model, t).ok();
    let t = stats.map_or(t, |s| s.name.as_str());
    json!({
        "type": t,
        "count": stats.map_or(0, |s| s.count),
        "bytes": stats.map_or(0, |s| s.bytes),
        "retained_bytes": stats.map_or(0, |s| s.retained_bytes),
        "paths": model.paths_to_type(t, TYPE_PATHS),
    })
}

/// `clrspy heap FILE --type T`: one type's totals and the shortest paths from the roots.
pub(crate) struct HeapType {
    stats: TypeStats,
    paths: Vec<RootPath>,
}

/// The type `t` names, as `dumpheap -type` takes a name: the full name, else the one type
/// whose last name segment (after the namespace and any outer type) is `t`, else the one type
/// whose name contains `t`. An error when none or several do (the candidates as its hint).
fn find_type<'m>(model: &'m HeapModel, t: &str) -> Result<&'m TypeStats, ViewError> {
    let types = model.types();
    if let Some(s) = types.iter().find(|s| s.name == t) {
        return Ok(s);
    }
    let last = |n: &str| n.rsplit(['.', '+']).next().unwrap_or(n).to_string();
    let by_last: Vec<&TypeStats> = types.iter().filter(|s| last(&s.name) == t).collect();
    let near: Vec<&TypeStats> = types.iter().filter(|s| s.name.contains(t)).collect();
    let candidates = match (by_last.as_slice(), near.as_slice()) {
        ([one], _) | ([], [one]) => return Ok(one),
        ([], many) => many,
        (many, _) => many,
    };
    let names: Vec<&str> = candidates.iter().take(5).map(|s| s.name.as_str()).collect();
    let more = candidates.len().saturating_sub(names.len());
    Err(ViewError {
        message: match candidates.len() {
            0 => format!("no objects of type {t} in the snapshot"),
            n => format!("{n} types match {t}: give its full name"),
        },
        hint: (!names.is_empty()).then(|| {
            let more = if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            };
            format!("types with that in their name: {}{more}", names.join(", "))
        }),
    })
}

/// Builds the view of type `t` (its full name, or a short name or part of it that names one
/// type); an error (with the candidates as its hint) when it names none or several.
pub(crate) fn type_view(model: &HeapModel, t: &str) -> Result<HeapType, ViewError> {
    let s = find_type(model, t)?;
    Ok(HeapType {
        stats: s.clone(),
        paths: model.paths_to_type(&s.name, TYPE_PATHS),
    })
}

impl View for HeapType {
    fn json(&self) -> Value {
        let s = &self.stats;
        json!({
            "type": s.name,
            "count": s.count,
            "bytes": s.bytes,
            "retained_bytes": s.retained_bytes,
            "paths": self.paths,
        })
    }

    fn write_text(&self, out: &mut dyn Write, _style: &TextStyle) -> io::Result<()> {
        let s = &self.stats;
        writeln!(
            out,
            "{}: {} objects, {} shallow, {} retained",
            s.name,
            group(s.count),
            bytes(s.bytes),
            bytes(s.retained_bytes)
        )?;
        writeln!(out, "\nShortest paths from the roots:")?;
        for p in &self.paths {
            writeln!(
                out,
                "{:>12} objects  {}",
                group(p.objects),
                p.steps.join(" → ")
            )?;
        }
        Ok(())
    }
}

/// `clrspy heap diff OLD NEW`: the totals of both and the types by change.
pub struct HeapDiff<'a> {
    old: &'a HeapModel,
    new: &'a HeapModel,
    top: usize,
}

/// Builds the difference between two snapshots, `top` types shown in text.
pub(crate) fn diff_view<'a>(old: &'a HeapModel, new: &'a HeapModel, top: usize) -> HeapDiff<'a> {
    HeapDiff { old, new, top }
}

impl HeapDiff<'_> {
    /// The heap-growth finding of the two snapshots (one interval), when it shows one.
    fn finding(&self, d: &[TypeDelta]) -> Option<Finding> {
        let growth = grew_in_every(&[d.to_vec()]);
        heap_growth(&growth, 1, Some(self.new))
    }
}

impl View for HeapDiff<'_> {
    fn json(&self) -> Value {
        let d = diff(self.old, self.new);
        let findings: Vec<Finding> = self.finding(&d).into_iter().collect();
        json!({
            "objects_old": self.old.objects(),
            "objects_new": self.new.objects(),
            "bytes_old": self.old.bytes(),
            "bytes_new": self.new.bytes(),
            "types": d,
            "findings": findings,
        })
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let (old_m, new_m) = (self.old, self.new);
        let d = diff(old_m, new_m);
        writeln!(
            out,
            "{} → {} objects, {} → {}",
            group(old_m.objects()),
            group(new_m.objects()),
            bytes(old_m.bytes()),
            bytes(new_m.bytes())
        )?;
        writeln!(
            out,
            "\n{:>12} {:>12} {:>12} {:>14} {:>14}  Type",
            "Count old", "Count new", "Δ count", "Bytes new", "Δ bytes"
        )?;
        for t in d.iter().take(self.top) {
            let new_mark = if t.count_old == 0 { "  (new)" } else { "" };
            writeln!(
                out,
                "{:>12} {:>12} {:>+12} {:>14} {:>+14}  {}{new_mark}",
                group(t.count_old),
                group(t.count_new),
                t.count_delta,
                bytes(t.bytes_new),
                t.bytes_delta,
                t.name
            )?;
        }
        let grew: Vec<_> = d.iter().filter(|t| t.bytes_delta > 0).take(3).collect();
        let Some(first) = grew.first() else {
            return writeln!(out, "\nNo type grew.");
        };
        let names: Vec<String> = grew
            .iter()
            .map(|t| {
                format!(
                    "{} (+{} objects, +{})",
                    t.name,
                    t.count_delta,
                    bytes(t.bytes_delta.unsigned_abs())
                )
            })
            .collect();
        let holder = new_m
            .paths_to_type(&first.name, 1)
            .into_iter()
            .next()
            .map(|p| format!("; in NEW they are held by {}", p.steps.join(" → ")))
            .unwrap_or_default();
        writeln!(out, "\nGrew most: {}{holder}", names.join(", "))?;
        match self.finding(&d) {
            Some(f) => write_finding(out, &f, style),
            None => Ok(()),
        }
    }
}

/// `clrspy heap watch`: the snapshots, what grew in each interval, the types that grew in
/// every interval with what holds them in the last snapshot, and the verdict.
pub struct HeapWatch<'a> {
    pid: u32,
    shots: &'a [WatchShot],
    intervals: &'a [Vec<TypeDelta>],
    growth: Vec<Growth>,
    last: Option<&'a HeapModel>,
    top: usize,
    stopped_early: bool,
    /// The heap-growth finding of the series, when it shows one.
    finding: Option<Finding>,
}

/// Builds the watch of `pid` from its snapshots, the diffs of consecutive ones and the last
/// model; `top` types shown per list; `stopped_early` when Ctrl+C ended it.
pub fn watch_view<'a>(
    pid: u32,
    shots: &'a [WatchShot],
    intervals: &'a [Vec<TypeDelta>],
    last: Option<&'a HeapModel>,
    top: usize,
    stopped_early: bool,
) -> HeapWatch<'a> {
    let growth = grew_in_every(intervals);
    let finding = heap_growth(&growth, intervals.len(), last);
    HeapWatch {
        pid,
        shots,
        intervals,
        growth,
        last,
        top,
        stopped_early,
        finding,
    }
}

/// The text of one interval of `clrspy heap watch`: what grew since the previous snapshot
/// (`i` is the newer one's index from 0), `top` types.
pub fn write_watch_interval(
    out: &mut dyn Write,
    i: usize,
    d: &[TypeDelta],
    top: usize,
) -> io::Result<()> {
    let grown: Vec<&TypeDelta> = d.iter().filter(|t| grew(t)).collect();
    writeln!(
        out,
        "\nSnapshot {} against {}: {} types grew",
        i + 1,
        i,
        grown.len()
    )?;
    for t in grown.iter().take(top) {
        writeln!(
            out,
            "  {:>+12} objects {:>+14} bytes  {}",
            t.count_delta, t.bytes_delta, t.name
        )?;
    }
    Ok(())
}

impl HeapWatch<'_> {
    /// The closing line.
    fn verdict(&self) -> String {
        let intervals = self.shots.len().saturating_sub(1);
        if intervals == 0 {
            return "Fewer than two snapshots: nothing to compare.".into();
        }
        let Some(first) = self.growth.first() else {
            return format!("No type grew in every interval ({intervals} intervals).");
        };
        let names: Vec<String> = self
            .growth
            .iter()
            .take(3)
            .map(|g| {
                format!(
                    "{} (+{} objects, +{})",
                    g.name,
                    g.count_total(),
                    human_bytes(g.bytes_total().unsigned_abs())
                )
            })
            .collect();
        let path = holder(self.last, &first.name);
        let held = if path.is_empty() {
            String::new()
        } else {
            format!("; held by {}", path.join(" → "))
        };
        format!(
            "Grew in every one of {intervals} intervals: {}{held}",
            names.join(", ")
        )
    }
}

impl View for HeapWatch<'_> {
    fn json(&self) -> Value {
        let snapshots: Vec<Value> = self
            .shots
            .iter()
            .map(|s| {
                json!({
                    "file": s.file.display().to_string(),
                    "objects": s.objects,
                    "bytes": s.bytes,
                    "at_seconds": s.at.as_secs_f64(),
                })
            })
            .collect();
        let intervals: Vec<Value> = self
            .intervals
            .iter()
            .map(|d| {
                let grown: Vec<&TypeDelta> = d.iter().filter(|t| grew(t)).take(self.top).collect();
                json!({ "grew": grown })
            })
            .collect();
        let growing: Vec<Value> = self
            .growth
            .iter()
            .map(|g| {
                json!({
                    "type": g.name,
                    "count_deltas": g.count_deltas,
                    "bytes_deltas": g.bytes_deltas,
                    "count_delta": g.count_total(),
                    "bytes_delta": g.bytes_total(),
                    "held_by": holder(self.last, &g.name),
                })
            })
            .collect();
        let mut v = json!({
            "pid": self.pid,
            "snapshots": snapshots,
            "intervals": intervals,
            "grew_in_every_interval": growing,
            "verdict": self.verdict(),
            "findings": self.finding.iter().collect::<Vec<_>>(),
        });
        v["stopped_early"] = json!(self.stopped_early);
        v
    }

    fn write_text(&self, out: &mut dyn Write, _style: &TextStyle) -> io::Result<()> {
        if self.shots.len() >= 2 {
            writeln!(
                out,
                "\nTypes that grew in every interval ({}), by total bytes:",
                self.growth.len()
            )?;
            for g in self.growth.iter().take(self.top) {
                let per: Vec<String> = g
                    .count_deltas
                    .iter()
                    .zip(&g.bytes_deltas)
                    .map(|(c, b)| format!("{c:+}/{b:+}"))
                    .collect();
                writeln!(
                    out,
                    "  {:>+12} objects {:>+14} bytes  {}  (per interval objects/bytes: {})",
                    g.count_total(),
                    g.bytes_total(),
                    g.name,
                    per.join(", ")
                )?;
                let path = holder(self.last, &g.name);
                if !path.is_empty() {
                    writeln!(out, "      held by {}", path.join(" → "))?;
                }
            }
        }
        if let Some(f) = &self.finding {
            write_finding(out, f, _style)?;
        }
        writeln!(out, "\n{}", self.verdict())
    }
}

/// A heap byte count: `512 B`, `12.3 KB`, `4.5 MB`, `1.25 GB` (the heap views' own format,
/// kept as `clrspy heap` has always printed it).
fn bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}
