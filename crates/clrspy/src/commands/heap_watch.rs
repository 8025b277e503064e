//! `clrspy heap watch`: snapshots of a live process `--every` apart, what grew in each interval,
//! and at the end the types that grew in every interval with what holds them in the last
//! snapshot (the leak workflow in one command). The snapshots are taken as `clrspy gcdump`
//! takes them (heap_snap); which types grew throughout is [`grew_in_every`], a pure function.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clrspy_analysis::heap::{diff::TypeDelta, HeapModel};
use clrspy_collect::{Resolved, StopSignal};
use clrspy_values::human_bytes;
use serde_json::{json, Value};

use super::heap_snap;
use super::record::resolve_target;
use crate::cli::HeapWatchArgs;
use crate::output::{CliError, CliResult};

/// A type that grew in every interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Growth {
    /// The type.
    pub name: String,
    /// Its object count delta in each interval.
    pub count_deltas: Vec<i64>,
    /// Its byte delta in each interval.
    pub bytes_deltas: Vec<i64>,
}

impl Growth {
    fn count_total(&self) -> i64 {
        self.count_deltas.iter().sum()
    }
    fn bytes_total(&self) -> i64 {
        self.bytes_deltas.iter().sum()
    }
}

/// Whether a type grew in one interval: more objects or more bytes.
fn grew(d: &TypeDelta) -> bool {
    d.count_delta > 0 || d.bytes_delta > 0
}

/// The types that grew in each of `intervals` (each the diff of two consecutive snapshots), by
/// total bytes grown, then objects grown, then name. No intervals: none.
pub fn grew_in_every(intervals: &[Vec<TypeDelta>]) -> Vec<Growth> {
    let Some((first, rest)) = intervals.split_first() else {
        return Vec::new();
    };
    let mut out: Vec<Growth> = first
        .iter()
        .filter(|d| grew(d))
        .filter_map(|d| {
            let mut g = Growth {
                name: d.name.clone(),
                count_deltas: vec![d.count_delta],
                bytes_deltas: vec![d.bytes_delta],
            };
            for iv in rest {
                let e = iv.iter().find(|e| e.name == d.name && grew(e))?;
                g.count_deltas.push(e.count_delta);
                g.bytes_deltas.push(e.bytes_delta);
            }
            Some(g)
        })
        .collect();
    out.sort_by(|a, b| {
        b.bytes_total()
            .cmp(&a.bytes_total())
            .then(b.count_total().cmp(&a.count_total()))
            .then(a.name.cmp(&b.name))
    });
    out
}

/// One snapshot taken.
struct Shot {
    file: PathBuf,
    objects: u64,
    bytes: u64,
    at: Duration,
}

/// Runs `clrspy heap watch`.
pub fn run(a: &HeapWatchArgs) -> CliResult<std::process::ExitCode> {
    if a.process_id.is_none() && a.name.is_none() {
        return Err(CliError::new("heap watch needs a process (-p PID or -n NAME)").code(2));
    }
    let target = resolve_target(&crate::cli::TargetArgs {
        process_id: a.process_id,
        name: a.name.clone(),
        command: Vec::new(),
    })?;
    let Resolved::Attach { endpoint, label } = target else {
        return Err(CliError::new("heap watch attaches to a running process").code(2));
    };
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    heap_snap::announce(&label, endpoint.pid, a.timeout, a.yes)?;
    eprintln!(
        "{} snapshots, {:.0} s apart, into {} (Ctrl+C ends early and keeps those taken).",
        a.count,
        a.every.as_secs_f64(),
        dir.display()
    );
    let stop = heap_snap::stop_signal();
    let stamp = clrspy_collect::utc_stamp();
    let t0 = Instant::now();
    let mut shots: Vec<Shot> = Vec::new();
    let mut intervals: Vec<Vec<TypeDelta>> = Vec::new();
    let mut prev: Option<HeapModel> = None;
    let mut failure = None;
    let mut text = std::io::stdout().lock();
    for i in 0..a.count {
        if !wait_until(t0 + a.every * i, stop) {
            break;
        }
        let file = dir.join(format!("{}_{stamp}_{}.gcdump", endpoint.pid, i + 1));
        let taken = match heap_snap::take(&endpoint, &label, &file, a.timeout, stop) {
            Ok(t) => t,
            Err(e) => {
                if stop.count() == 0 {
                    failure = Some(e);
                }
                break;
            }
        };
        let at = t0.elapsed();
        let model = HeapModel::new(taken.dump.graph);
        eprintln!(
            "snapshot {}/{}: {} ({} objects, {}) at {:.1} s",
            i + 1,
            a.count,
            file.display(),
            model.objects(),
            human_bytes(model.bytes()),
            at.as_secs_f64()
        );
        shots.push(Shot {
            file,
            objects: model.objects(),
            bytes: model.bytes(),
            at,
        });
        if let Some(p) = &prev {
            let d = clrspy_analysis::heap::diff::diff(p, &model);
            if !a.json {
                write_interval(&mut text, i as usize, &d, a.top)?;
            }
            intervals.push(d);
        }
        prev = Some(model);
        if stop.count() > 0 {
            break;
        }
    }
    let stopped_early = stop.count() > 0;
    if stopped_early {
        eprintln!(
            "Stopped after {} of {} snapshots (kept).",
            shots.len(),
            a.count
        );
    }
    let growth = grew_in_every(&intervals);
    let last = prev.as_ref();
    if a.json {
        let mut v = report_json(endpoint.pid, &shots, &intervals, &growth, last, a.top);
        v["stopped_early"] = json!(stopped_early);
        clrspy_export::report::write_json(&mut text, &v)?;
    } else {
        write_summary(&mut text, &shots, &growth, last, a.top)?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(std::process::ExitCode::SUCCESS),
    }
}

/// Sleeps until `when`; false when a stop was requested first.
fn wait_until(when: Instant, stop: &StopSignal) -> bool {
    while Instant::now() < when {
        if stop.count() > 0 {
            return false;
        }
        std::thread::sleep((when - Instant::now()).min(Duration::from_millis(100)));
    }
    stop.count() == 0
}

/// What grew since the previous snapshot (`i` is the newer one's index from 0).
fn write_interval(
    out: &mut dyn Write,
    i: usize,
    d: &[TypeDelta],
    top: usize,
) -> std::io::Result<()> {
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

/// The first path from a root to `name` in `model`, as its steps.
fn holder(model: Option<&HeapModel>, name: &str) -> Vec<String> {
    model
        .and_then(|m| m.paths_to_type(name, 1).into_iter().next())
        .map(|p| p.steps)
        .unwrap_or_default()
}

/// The closing line.
fn verdict(shots: &[Shot], growth: &[Growth], last: Option<&HeapModel>) -> String {
    let intervals = shots.len().saturating_sub(1);
    if intervals == 0 {
        return "Fewer than two snapshots: nothing to compare.".into();
    }
    let Some(first) = growth.first() else {
        return format!("No type grew in every interval ({intervals} intervals).");
    };
    let names: Vec<String> = growth
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
    let path = holder(last, &first.name);
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

fn write_summary(
    out: &mut dyn Write,
    shots: &[Shot],
    growth: &[Growth],
    last: Option<&HeapModel>,
    top: usize,
) -> std::io::Result<()> {
    if shots.len() >= 2 {
        writeln!(
            out,
            "\nTypes that grew in every interval ({}), by total bytes:",
            growth.len()
        )?;
        for g in growth.iter().take(top) {
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
            let path = holder(last, &g.name);
            if !path.is_empty() {
                writeln!(out, "      held by {}", path.join(" → "))?;
            }
        }
    }
    writeln!(out, "\n{}", verdict(shots, growth, last))
}

fn report_json(
    pid: u32,
    shots: &[Shot],
    intervals: &[Vec<TypeDelta>],
    growth: &[Growth],
    last: Option<&HeapModel>,
    top: usize,
) -> Value {
    let snapshots: Vec<Value> = shots
        .iter()
        .map(|s| {
            json!({
                "file": path_str(&s.file),
                "objects": s.objects,
                "bytes": s.bytes,
                "at_seconds": s.at.as_secs_f64(),
            })
        })
        .collect();
    let intervals: Vec<Value> = intervals
        .iter()
        .map(|d| {
            let grown: Vec<&TypeDelta> = d.iter().filter(|t| grew(t)).take(top).collect();
            json!({ "grew": grown })
        })
        .collect();
    let growing: Vec<Value> = growth
        .iter()
        .map(|g| {
            json!({
                "type": g.name,
                "count_deltas": g.count_deltas,
                "bytes_deltas": g.bytes_deltas,
                "count_delta": g.count_total(),
                "bytes_delta": g.bytes_total(),
                "held_by": holder(last, &g.name),
            })
        })
        .collect();
    json!({
        "pid": pid,
        "snapshots": snapshots,
        "intervals": intervals,
        "grew_in_every_interval": growing,
        "verdict": verdict(shots, growth, last),
    })
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, count_delta: i64, bytes_delta: i64) -> TypeDelta {
        TypeDelta {
            name: name.into(),
            count_old: 100,
            count_new: (100 + count_delta) as u64,
            count_delta,
            bytes_old: 1000,
            bytes_new: (1000 + bytes_delta) as u64,
            bytes_delta,
        }
    }

    #[test]
    fn only_types_that_grew_in_every_interval_are_kept_by_total_bytes() {
        let intervals = vec![
            vec![
                d("A", 10, 240),
                d("B", 5, 500),
                d("C", 1, 8),
                d("D", -3, -30),
            ],
            vec![d("A", 20, 480), d("B", 0, 0), d("C", 2, 16), d("D", 4, 40)],
            vec![d("A", 1, 24), d("C", 0, 8), d("B", 1, 10)],
        ];
        let g = grew_in_every(&intervals);
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["A", "C"]);
        assert_eq!(g[0].count_deltas, [10, 20, 1]);
        assert_eq!(g[0].bytes_deltas, [240, 480, 24]);
        assert_eq!(g[0].count_total(), 31);
        assert_eq!(g[1].bytes_total(), 32);
    }

    #[test]
    fn no_interval_no_growth() {
        assert!(grew_in_every(&[]).is_empty());
        assert!(grew_in_every(&[vec![d("A", 0, 0)]]).is_empty());
    }

    #[test]
    fn ties_sort_by_objects_then_name() {
        let g = grew_in_every(&[vec![d("B", 1, 8), d("A", 1, 8), d("C", 2, 8)]]);
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["C", "A", "B"]);
    }
}
