//! `clrspy diff BASE NEW`: two traces compared figure by figure — CPU and waiting time by
//! method, allocations by type and allocating method, exceptions by type and throw site, lock
//! waits, GCs, requests by route, outgoing HTTP by host — each per unit of work (requests,
//! seconds or an event of the app's), with the interval sampling alone explains
//! ([`stats`]), and a verdict per row: a regression only beyond that interval and beyond its
//! class's threshold ([`limits`]). docs/report-json.md lists the JSON keys.

mod limits;
mod measure;
mod model;
mod stats;
mod text;
mod views;

use std::collections::BTreeMap;

use clrspy_analysis::sketch::Sketch;
use clrspy_analysis::Analysis;
use rustc_hash::FxHashSet;

pub use limits::{Class, FailIf, Per};
pub use model::{DiffRow, TraceDiff};

use model::{DiffTable, Presence, SideFacts, Verdict};
pub use views::{write_flamegraph, write_html, write_speedscope};

use measure::{Figure, Measures, Table, Unit};

use crate::units::round;

/// Requests each trace must have served for `--per` to default to requests.
const AUTO_REQUESTS: u64 = 30;

/// A row counts (can be called a regression) when it is at least this share of its table's
/// total in one of the traces: below it, a method's tier-up or an inlining decision moves
/// it more than any change of the code.
const MIN_SHARE: f64 = 0.01;

/// A rate is judged only when one side counted at least this many events (samples, ticks,
/// throws, waits as counted): below it one long lock wait, one slow GC moves the row by
/// orders of magnitude, which its count cannot say (a live test's two recordings of one
/// build once had a socket queue's lock waited on 0.02 ms in one, 13 ms in the other).
const MIN_EVENTS: f64 = 10.0;

/// A percentile is judged only over this many durations on each side.
const MIN_DURATIONS: u64 = 10;

/// One of the two traces, read: its figures, not its analysis (which can be dropped before
/// the other trace is read).
pub struct Side {
    /// Its figures.
    measures: Measures,
    /// What to call it (its path).
    pub label: String,
    /// Events of `--per ops:EVENT`'s name it holds, when asked.
    pub ops: Option<u64>,
}

impl Side {
    /// The side of `a`, called `label`.
    pub fn new(a: &Analysis, label: String, ops: Option<u64>) -> Side {
        Side {
            measures: measure::measure(a),
            label,
            ops,
        }
    }
}

/// How to compare.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// What the figures are divided by; `None`: requests when both traces served some, else
    /// seconds.
    pub per: Option<Per>,
    /// Rows per table besides the ones judged changed.
    pub top: usize,
    /// The classes a CI job fails on, with their thresholds (they replace the defaults).
    pub fail_if: Option<FailIf>,
}

/// The interval's method, said in the JSON and the text.
const INTERVAL: &str = "99.7% (3 sd): counts (samples, allocation ticks, exceptions, GCs, \
waits) over each trace's units of work, Wilson's interval of the new trace's share of the two, \
their variance a measured multiple of a Poisson's (cpu 2.5, waits and locks 8, allocations, \
exceptions and GCs 1.5: two runs of one build differ by more than sampling); sums of unequal \
events (pauses) as fewer events; percentiles from each side's order-statistic ranks (variance \
x4); docs/diff.md";

/// Compares `base` with `new`.
pub fn diff(base: &Side, new: &Side, o: &DiffOptions) -> Result<TraceDiff, String> {
    let (mb, mn) = (&base.measures, &new.measures);
    let (per, per_reason) = match &o.per {
        Some(p) => (p.clone(), "asked (--per)".to_string()),
        None if mb.requests >= AUTO_REQUESTS && mn.requests >= AUTO_REQUESTS => (
            Per::Requests,
            "both traces served requests (--per seconds to change)".to_string(),
        ),
        None if mb.requests == 0 && mn.requests == 0 => (
            Per::Seconds,
            "neither trace holds requests (ASP.NET Core's events; --per ops:EVENT to change)"
                .to_string(),
        ),
        None => (
            Per::Seconds,
            format!(
                "fewer than {AUTO_REQUESTS} requests in a trace (--per requests or ops:EVENT to change)"
            ),
        ),
    };
    let units = |m: &Measures, s: &Side| -> Result<f64, String> {
        let u = match &per {
            Per::Requests => m.requests as f64,
            Per::Seconds => m.seconds,
            Per::Ops(_) => s.ops.unwrap_or(0) as f64,
        };
        if u > 0.0 {
            Ok(u)
        } else {
            Err(format!("{} has no {per} to divide by", s.label))
        }
    };
    let (ub, un) = (units(mb, base)?, units(mn, new)?);
    let thresholds: BTreeMap<&'static str, f64> = Class::ALL
        .iter()
        .map(|c| (c.name(), threshold(*c, o) * 100.0))
        .collect();
    let mut tables = Vec::new();
    let mut regressions = Vec::new();
    let mut failed = Vec::new();
    let mut improved = false;
    for (tb, tn) in mb.tables.iter().zip(&mn.tables) {
        let mut rows = compare_table(tb, tn, ub, un, o);
        let kept = rows.iter().filter(|r| r.verdict.judged()).count();
        let keep = kept.max(o.top);
        for r in &rows {
            match r.verdict {
                Verdict::Regression => {
                    regressions.push((tb.id, r.clone()));
                    if o.fail_if
                        .as_ref()
                        .is_some_and(|f| f.0.iter().any(|(c, _)| *c == r.class))
                    {
                        failed.push((tb.id, r.clone()));
                    }
                }
                Verdict::Improvement => improved = true,
                _ => {}
            }
        }
        // The judged rows first (in rank order), then the others by rank.
        rows.sort_by_key(|r| !r.verdict.judged());
        let more = rows.len().saturating_sub(keep);
        rows.truncate(keep);
        tables.push(DiffTable {
            id: tb.id,
            title: tb.title,
            key: tb.key,
            rows,
            rows_more: more,
        });
    }
    let notes = notes(mb, mn, base, new);
    let facts = |m: &Measures, s: &Side, units: f64| SideFacts {
        label: s.label.clone(),
        seconds: round(m.seconds, 3),
        requests: m.requests,
        units,
    };
    Ok(TraceDiff {
        base: facts(mb, base, ub),
        new: facts(mn, new, un),
        per: per.to_string(),
        per_reason,
        interval: INTERVAL,
        thresholds,
        verdict: if !regressions.is_empty() {
            "regressed"
        } else if improved {
            "improved"
        } else {
            "unchanged"
        },
        notes,
        regressions,
        failed,
        tables,
    })
}

/// Share of a trace's CPU the JIT may take before the diff says the app was still warming up.
const WARMING_JIT: f64 = 0.10;

/// The notes of a diff: a side whose JIT took a large share of the CPU (the app was still
/// compiling: its runtime rows move from run to run), and the tables neither trace can fill.
fn notes(mb: &Measures, mn: &Measures, base: &Side, new: &Side) -> Vec<String> {
    let mut out = Vec::new();
    for (m, s) in [(mb, base), (mn, new)] {
        let Some(t) = m.tables.iter().find(|t| t.id == "cpu.exclusive") else {
            continue;
        };
        let jit: f64 = t
            .rows
            .iter()
            .filter(|((name, _), _)| name.starts_with("[JIT"))
            .map(|(_, f)| match f {
                Figure::Rate { value, .. } => *value,
                Figure::Quantile { .. } => 0.0,
            })
            .sum();
        let total = t.total.unwrap_or(0.0);
        if total > 0.0 && jit / total >= WARMING_JIT {
            out.push(format!(
                "{}: the JIT took {:.0}% of the CPU — the app was still compiling, and its runtime rows move from run to run; record both traces after the same warm-up",
                s.label,
                jit / total * 100.0
            ));
        }
    }
    let empty = |id: &str| {
        [mb, mn].iter().all(|m| {
            m.tables
                .iter()
                .find(|t| t.id == id)
                .is_none_or(|t| t.rows.is_empty())
        })
    };
    for (id, what, how) in [
        (
            "alloc.types",
            "allocations",
            "the runtime's allocation ticks (--profile alloc, or the runtime provider at level 5)",
        ),
        (
            "requests.routes",
            "requests",
            "ASP.NET Core's events (--profile aspnet), which also make --per requests the default",
        ),
    ] {
        if empty(id) {
            out.push(format!("no {what} in either trace: they need {how}"));
        }
    }
    out
}

/// A class's threshold: `--fail-if`'s when it names the class, else the default.
fn threshold(c: Class, o: &DiffOptions) -> f64 {
    o.fail_if
        .as_ref()
        .and_then(|f| f.0.iter().find(|(k, _)| *k == c).map(|(_, t)| *t))
        .unwrap_or_else(|| c.default_threshold())
}

/// The rows of one table in both traces, compared and ranked: tables with a total by the
/// size of the change per unit of work, the others in their own order.
fn compare_table(tb: &Table, tn: &Table, ub: f64, un: f64, o: &DiffOptions) -> Vec<DiffRow> {
    let mut seen = FxHashSet::default();
    let mut keys: Vec<&(String, &'static str)> = Vec::new();
    for k in tn.order.iter().chain(&tb.order) {
        if seen.insert(k) {
            keys.push(k);
        }
    }
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .filter_map(|k| compare_row(tb, tn, k, ub, un, o))
        .collect();
    if tb.total.is_some() {
        rows.sort_by(|x, y| {
            y.delta
                .abs()
                .total_cmp(&x.delta.abs())
                .then_with(|| x.name.cmp(&y.name))
        });
    }
    rows
}

/// One row compared; `None` when neither trace has anything in it.
fn compare_row(
    tb: &Table,
    tn: &Table,
    key: &(String, &'static str),
    ub: f64,
    un: f64,
    o: &DiffOptions,
) -> Option<DiffRow> {
    let (fb, fneu) = (tb.rows.get(key), tn.rows.get(key));
    let figure = fneu.or(fb)?;
    let (name, measure) = (key.0.clone(), key.1);
    let class = tb.class_of(measure);
    let unit = tb.unit_of(measure, figure);
    let presence = match (fb.is_some_and(nonzero), fneu.is_some_and(nonzero)) {
        (true, true) => Presence::Both,
        (false, true) => Presence::New,
        (true, false) => Presence::Gone,
        (false, false) => return None,
    };
    // The runtime's own work (its native code, stubs, the JIT) moves with tiering, the GC and
    // the pool from one run to the next: four times the variance, twice the threshold.
    let runtime: f64 = if is_runtime_group(&name) { 4.0 } else { 1.0 };
    let t = threshold(class, o) * runtime.sqrt();
    let c = match figure {
        Figure::Rate { .. } => {
            let d = class.dispersion() * runtime;
            rates(fb, fneu, ub, un, tb.total, tn.total, d)
        }
        Figure::Quantile { q, .. } => quantiles(fb, fneu, *q, class.dispersion()),
    };
    let verdict = match judge(&c, t, class) {
        Verdict::Regression | Verdict::Improvement if (tb.unjudged)(&name) => Verdict::Changed,
        v => v,
    };
    let pct = |r: f64| (r.is_finite()).then(|| round((r - 1.0) * 100.0, 1));
    Some(DiffRow {
        name,
        measure,
        class,
        unit: match unit {
            Unit::Ms => "ms",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
            Unit::Percent => "percent",
        },
        base: round(c.base, 3),
        new: round(c.new, 3),
        base_per: round(c.base_per, 6),
        new_per: round(c.new_per, 6),
        delta: round(c.new_per - c.base_per, 6),
        delta_percent: (c.base_per > 0.0).then(|| round((c.new_per / c.base_per - 1.0) * 100.0, 1)),
        interval_percent: c.interval.map(|(lo, hi)| [pct(lo), pct(hi)]),
        presence,
        verdict,
    })
}

/// True for a group of the runtime's own native work (`[runtime: libcoreclr.so]`, `[JIT
/// compiler: libclrjit.so]`, `[runtime stubs and helpers]`).
fn is_runtime_group(name: &str) -> bool {
    name.starts_with("[runtime") || name.starts_with("[JIT")
}

/// True when a figure counted something.
fn nonzero(f: &Figure) -> bool {
    match f {
        Figure::Rate { value, count, .. } => *value > 0.0 || *count > 0.0,
        Figure::Quantile { sketch, .. } => sketch.count() > 0,
    }
}

/// A row's figures side by side.
struct Compared {
    base: f64,
    new: f64,
    base_per: f64,
    new_per: f64,
    /// The ratio new/base sampling explains.
    interval: Option<(f64, f64)>,
    /// Large enough to judge.
    material: bool,
}

/// Two rates per unit of work (or per their own exposure), their counts' variance
/// `dispersion` times a Poisson's.
fn rates(
    fb: Option<&Figure>,
    fneu: Option<&Figure>,
    ub: f64,
    un: f64,
    total_b: Option<f64>,
    total_n: Option<f64>,
    dispersion: f64,
) -> Compared {
    let parts = |f: Option<&Figure>, units: f64| match f {
        Some(Figure::Rate {
            value,
            count,
            exposure,
        }) => (
            *value,
            *count,
            exposure.unwrap_or(units),
            exposure.is_some(),
        ),
        _ => (0.0, 0.0, units, false),
    };
    let (vb, cb, eb, own_b) = parts(fb, ub);
    let (vn, cn, en, own_n) = parts(fneu, un);
    // A percentage (over its own exposure) reads ×100; a side without the row has none.
    let scale = if own_b || own_n { 100.0 } else { 1.0 };
    let eb = if own_n && !own_b && fb.is_none() {
        0.0
    } else {
        eb
    };
    let en = if own_b && !own_n && fneu.is_none() {
        0.0
    } else {
        en
    };
    let per = |v: f64, e: f64| if e > 0.0 { v / e * scale } else { 0.0 };
    let (base_per, new_per) = (per(vb, eb), per(vn, en));
    let d = dispersion.max(1e-9);
    let mut interval = stats::rate_ratio(cb / d, cn / d, eb, en);
    // The counts give the interval's width; the values (measured time, bytes) its centre.
    if let (Some((lo, hi)), true, true) = (interval, cb > 0.0 && cn > 0.0, base_per > 0.0) {
        let counts = (cn / en) / (cb / eb);
        let values = new_per / base_per;
        if counts > 0.0 && values.is_finite() {
            let k = values / counts;
            interval = Some((lo * k, hi * k));
        }
    }
    let share = |v: f64, t: Option<f64>| t.map_or(1.0, |t| if t > 0.0 { v / t } else { 0.0 });
    let material =
        share(vb, total_b).max(share(vn, total_n)) >= MIN_SHARE && cb.max(cn) >= MIN_EVENTS;
    Compared {
        base: vb,
        new: vn,
        base_per,
        new_per,
        interval,
        material,
    }
}

/// Two percentiles, each with the interval of ranks its count allows (its variance
/// `dispersion` times the binomial's).
fn quantiles(fb: Option<&Figure>, fneu: Option<&Figure>, q: f64, dispersion: f64) -> Compared {
    fn get(f: Option<&Figure>) -> Option<&Sketch> {
        match f {
            Some(Figure::Quantile { sketch, .. }) if sketch.count() > 0 => Some(sketch),
            _ => None,
        }
    }
    let (sb, sn) = (get(fb), get(fneu));
    let at = |s: Option<&Sketch>, q: f64| s.map_or(0.0, |s| s.quantile_ms(q));
    let (base, new) = (at(sb, q), at(sn, q));
    let interval = match (sb, sn) {
        (Some(b), Some(n)) => {
            let (bl, bh) = stats::quantile_bounds(q, b.count(), dispersion);
            let (nl, nh) = stats::quantile_bounds(q, n.count(), dispersion);
            let (b_lo, b_hi) = (b.quantile_ms(bl), b.quantile_ms(bh));
            let (n_lo, n_hi) = (n.quantile_ms(nl), n.quantile_ms(nh));
            (b_hi > 0.0).then(|| {
                let hi = if b_lo > 0.0 {
                    n_hi / b_lo
                } else {
                    f64::INFINITY
                };
                (n_lo / b_hi, hi)
            })
        }
        _ => None,
    };
    let material = sb
        .zip(sn)
        .is_some_and(|(b, n)| b.count() >= MIN_DURATIONS && n.count() >= MIN_DURATIONS);
    Compared {
        base,
        new,
        base_per: base,
        new_per: new,
        interval,
        material,
    }
}

/// A row's verdict: beyond the noise (the interval leaves out "no change") and beyond the
/// threshold, in a table share large enough to judge.
fn judge(c: &Compared, threshold: f64, class: Class) -> Verdict {
    let Some((lo, hi)) = c.interval else {
        return Verdict::Noise;
    };
    if lo <= 1.0 && hi >= 1.0 {
        return Verdict::Noise;
    }
    if !c.material {
        return Verdict::BelowThreshold;
    }
    let ratio = if c.base_per > 0.0 {
        c.new_per / c.base_per
    } else {
        f64::INFINITY
    };
    let grew = ratio > 1.0 + threshold && lo > 1.0;
    let shrank = ratio < 1.0 / (1.0 + threshold) && hi < 1.0;
    match (grew, shrank) {
        // More or fewer requests on a route is the load's mix, not the app's speed.
        (true, _) | (_, true) if class == Class::Requests => Verdict::Changed,
        (true, _) => Verdict::Regression,
        (_, true) => Verdict::Improvement,
        _ => Verdict::BelowThreshold,
    }
}

#[cfg(test)]
mod tests;
