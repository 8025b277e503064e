//! The heap views, beside the trace reports: what a heap snapshot holds (types by retained and
//! shallow bytes, roots by what they hold), one type with its shortest paths from the roots,
//! and two snapshots' difference — each a JSON value (keys in docs/heap-json.md) and a text
//! view. `clrspy heap` and `clrspy heap diff` print them.

use std::io::{self, Write};
use std::time::Duration;

use clrspy_analysis::heap::{diff::diff, HeapModel};
use serde_json::{json, Value};

/// The snapshot's JSON: totals, the `top` types and roots, and `type_name`'s paths.
pub fn summary_json(model: &HeapModel, top: usize, type_name: Option<&str>) -> Value {
    let mut v = json!({
        "objects": model.objects(),
        "bytes": model.bytes(),
        "unreachable_objects": model.unreachable_objects(),
        "types": model.types().iter().take(top).collect::<Vec<_>>(),
        "roots": model.roots().iter().take(top).collect::<Vec<_>>(),
    });
    if let Some(t) = type_name {
        v["type"] = type_json(model, t);
    }
    v
}

/// One type's JSON: count, bytes, retained bytes and up to 5 shortest paths from the roots.
pub fn type_json(model: &HeapModel, t: &str) -> Value {
    let stats = model.types().iter().find(|s| s.name == t);
    json!({
        "type": t,
        "count": stats.map_or(0, |s| s.count),
        "bytes": stats.map_or(0, |s| s.bytes),
        "retained_bytes": stats.map_or(0, |s| s.retained_bytes),
        "paths": model.paths_to_type(t, 5),
    })
}

/// The snapshot in text: totals (and how long the analysis took), the `top` types by retained
/// and by shallow bytes, the `top` roots.
pub fn write_summary(
    out: &mut dyn Write,
    model: &HeapModel,
    top: usize,
    elapsed: Duration,
) -> io::Result<()> {
    writeln!(
        out,
        "{} objects, {} (analysed in {:.2} s){}",
        group(model.objects()),
        bytes(model.bytes()),
        elapsed.as_secs_f64(),
        if model.unreachable_objects() > 0 {
            format!(
                "; {} unreachable from any root",
                group(model.unreachable_objects())
            )
        } else {
            String::new()
        }
    )?;
    writeln!(out, "\nTypes by retained bytes:")?;
    writeln!(
        out,
        "{:>14} {:>14} {:>12}  Type",
        "Retained", "Shallow", "Count"
    )?;
    for t in model.types().iter().take(top) {
        writeln!(
            out,
            "{:>14} {:>14} {:>12}  {}",
            bytes(t.retained_bytes),
            bytes(t.bytes),
            group(t.count),
            t.name
        )?;
    }
    let mut by_shallow: Vec<_> = model.types().iter().collect();
    by_shallow.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    writeln!(out, "\nTypes by shallow bytes:")?;
    writeln!(out, "{:>14} {:>12}  Type", "Shallow", "Count")?;
    for t in by_shallow.iter().take(top) {
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
    for r in model.roots().iter().take(top) {
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

/// A type the snapshot does not have, with the names that contain what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoSuchType {
    /// Up to 5 type names containing the name asked for.
    pub near: Vec<String>,
}

/// One type in text: its totals and up to 5 shortest paths from the roots.
pub fn write_type(
    out: &mut dyn Write,
    model: &HeapModel,
    t: &str,
) -> io::Result<Result<(), NoSuchType>> {
    let Some(s) = model.types().iter().find(|s| s.name == t) else {
        let near = model
            .types()
            .iter()
            .filter(|s| s.name.contains(t))
            .take(5)
            .map(|s| s.name.clone())
            .collect();
        return Ok(Err(NoSuchType { near }));
    };
    writeln!(
        out,
        "{}: {} objects, {} shallow, {} retained",
        s.name,
        group(s.count),
        bytes(s.bytes),
        bytes(s.retained_bytes)
    )?;
    writeln!(out, "\nShortest paths from the roots:")?;
    for p in model.paths_to_type(t, 5) {
        writeln!(
            out,
            "{:>12} objects  {}",
            group(p.objects),
            p.steps.join(" → ")
        )?;
    }
    Ok(Ok(()))
}

/// Two snapshots' difference as JSON: totals, then every type's change.
pub fn diff_json(old: &HeapModel, new: &HeapModel) -> Value {
    json!({
        "objects_old": old.objects(),
        "objects_new": new.objects(),
        "bytes_old": old.bytes(),
        "bytes_new": new.bytes(),
        "types": diff(old, new),
    })
}

/// Two snapshots' difference in text: totals, the `top` types by growth, what grew most and
/// what holds it in the newer snapshot.
pub fn write_diff(
    out: &mut dyn Write,
    old: &HeapModel,
    new: &HeapModel,
    top: usize,
) -> io::Result<()> {
    let d = diff(old, new);
    writeln!(
        out,
        "{} → {} objects, {} → {}",
        group(old.objects()),
        group(new.objects()),
        bytes(old.bytes()),
        bytes(new.bytes())
    )?;
    writeln!(
        out,
        "\n{:>12} {:>12} {:>12} {:>14} {:>14}  Type",
        "Count old", "Count new", "Δ count", "Bytes new", "Δ bytes"
    )?;
    for t in d.iter().take(top) {
        let newark = if t.count_old == 0 { "  (new)" } else { "" };
        writeln!(
            out,
            "{:>12} {:>12} {:>+12} {:>14} {:>+14}  {}{newark}",
            group(t.count_old),
            group(t.count_new),
            t.count_delta,
            bytes(t.bytes_new),
            t.bytes_delta,
            t.name
        )?;
    }
    let grew: Vec<_> = d.iter().filter(|t| t.bytes_delta > 0).take(3).collect();
    if grew.is_empty() {
        writeln!(out, "\nNo type grew.")?;
    } else {
        let names: Vec<String> = grew
            .iter()
            .map(|t| {
                format!(
                    "{} (+{} objects, +{})",
                    t.name,
                    t.count_delta,
                    bytes(t.bytes_delta as u64)
                )
            })
            .collect();
        let holder = new
            .paths_to_type(&grew[0].name, 1)
            .into_iter()
            .next()
            .map(|p| format!("; in NEW they are held by {}", p.steps.join(" → ")))
            .unwrap_or_default();
        writeln!(out, "\nGrew most: {}{holder}", names.join(", "))?;
    }
    Ok(())
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

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
