//! The `contention` report: who waited on which lock, for how long, and who held it.

use std::io::{self, Write};

use clrspy_analysis::Analysis;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::rows::MethodWeight;
use super::text::{method_table, TextStyle, Unit};
use super::needs::{CONTENTION, Models, Needs};
use super::sections::{SummaryDef, SummaryInput, SummarySection};
use super::def::ReportDef;
use super::view::{to_json, ReportOptions, TextView};
use crate::units::{percent, round1};

/// The `contention` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "contention",
    description: "Lock contention by method and lock",
    // Contention start/stop are verbose.
    needs: Needs::runtime(CONTENTION, 5),
    models: Models::Named(&["contention"]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 60,
        build: |i| Box::new(ContentionSection::build(i)),
    }),
    html: None,
};

/// One contended lock.
#[derive(Clone, Debug, Serialize)]
pub struct LockReport {
    /// The runtime's lock id (0: not reported by this runtime).
    pub lock_id: String,
    /// Contended acquisitions.
    pub count: u64,
    /// Total wait, ms.
    pub wait_ms: f64,
    /// Threads that held it while others waited, most often first.
    pub(crate) owner_threads: Vec<u64>,
}

/// Contention.
#[derive(Clone, Debug, Serialize)]
pub struct ContentionReport {
    /// Contended acquisitions.
    pub count: u64,
    /// Total wait, ms.
    pub(crate) total_wait_ms: f64,
    /// Methods that waited (the first frame outside the lock's own code), by wait time.
    pub(crate) top_exclusive: Vec<MethodWeight>,
    /// Methods by wait time including callees.
    pub(crate) top_inclusive: Vec<MethodWeight>,
    /// Locks by wait time.
    pub locks: Vec<LockReport>,
}

/// Frames of the lock implementation itself, skipped to find who waited.
fn is_lock_internal(frame: &str) -> bool {
    frame.starts_with('[')
        || frame.contains('!')
        || frame.starts_with("System.Threading.Monitor.")
        || frame.starts_with("System.Threading.Lock.")
        || frame.starts_with("System.Threading.SpinWait")
        || frame.starts_with("System.Threading.ObjectHeader")
}

type Sums = FxHashMap<String, (u64, f64)>;

/// Builds the contention report.
pub fn build(a: &Analysis, o: &ReportOptions) -> ContentionReport {
    let top = o.top;
    let total = a.contention.total_ns.max(1.0);
    let entries: Vec<_> = a
        .contention
        .by_stack
        .iter()
        .map(|(k, v)| (*k, *v))
        .collect();
    let mut excl: Sums = FxHashMap::default();
    let mut incl: Sums = FxHashMap::default();
    for ((_, stack), (count, ns)) in entries {
        let frames = a.frames(stack);
        let waiter = frames
            .iter()
            .find(|f| !is_lock_internal(f))
            .or_else(|| frames.first())
            .cloned()
            .unwrap_or_else(|| "[no stack]".into());
        let e = excl.entry(waiter).or_default();
        e.0 += count;
        e.1 += ns;
        let mut seen = FxHashSet::default();
        for f in frames {
            if seen.insert(f.clone()) {
                let e = incl.entry(f).or_default();
                e.0 += count;
                e.1 += ns;
            }
        }
    }
    let conv = |m: Sums| {
        let mut v: Vec<MethodWeight> = m
            .into_iter()
            .map(|(method, (c, ns))| MethodWeight {
                method,
                samples: c as f64,
                percent: percent(ns, total),
                ms: round1(ns / 1e6),
                called_from: None,
            })
            .collect();
        v.sort_by(|x, y| y.ms.total_cmp(&x.ms).then_with(|| x.method.cmp(&y.method)));
        v.truncate(top);
        v
    };
    let mut locks: Vec<LockReport> = a
        .contention
        .by_lock
        .iter()
        .map(|(id, l)| {
            let mut owners: Vec<(u64, u64)> = l.owners.iter().map(|(t, c)| (*t, *c)).collect();
            owners.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            LockReport {
                lock_id: format!("0x{id:x}"),
                count: l.count,
                wait_ms: round1(l.wait_ns / 1e6),
                owner_threads: owners.into_iter().take(5).map(|o| o.0).collect(),
            }
        })
        .collect();
    locks.sort_by(|x, y| {
        y.wait_ms
            .total_cmp(&x.wait_ms)
            .then_with(|| x.lock_id.cmp(&y.lock_id))
    });
    locks.truncate(top);
    ContentionReport {
        count: a.contention.count,
        total_wait_ms: round1(a.contention.total_ns / 1e6),
        top_exclusive: conv(excl),
        top_inclusive: conv(incl),
        locks,
    }
}

/// Owner threads as the text view lists them: "12, 34", or "not reported".
pub(crate) fn owners_text(owners: &[u64]) -> String {
    if owners.is_empty() {
        return "not reported (runtime before .NET 8)".into();
    }
    owners
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl TextView for ContentionReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Lock contention: {} waits, {:.1} ms waited",
                self.count, self.total_wait_ms
            ))
        )?;
        if self.count == 0 {
            writeln!(
                out,
                "  none in this trace: record with --profile contention"
            )?;
        }
        writeln!(out, "\n{}", style.heading("Methods that waited"))?;
        method_table(out, &self.top_exclusive, Unit::Ms, style)?;
        writeln!(out, "\n{}", style.heading("Locks"))?;
        for l in &self.locks {
            writeln!(
                out,
                "  {:>10.1} ms {:>7} waits  lock {}  held by threads: {}",
                l.wait_ms,
                l.count,
                l.lock_id,
                owners_text(&l.owner_threads)
            )?;
        }
        Ok(())
    }
}

/// The summary's contention section: the `contention` key (top 5) and the most waited method.
struct ContentionSection {
    contention: ContentionReport,
    next: Vec<String>,
}

impl ContentionSection {
    fn build(i: &SummaryInput<'_>) -> ContentionSection {
        let contention = build(i.a, &i.o);
        let next = (contention.count > 0)
            .then(|| {
                format!(
                    "clrspy report {} contention   (who waited on which lock)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        ContentionSection { contention, next }
    }
}

impl SummarySection for ContentionSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![("contention", to_json(&self.contention))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let c = &self.contention;
        if c.count == 0 {
            return Ok(());
        }
        writeln!(
            out,
            "\n{}",
            style.heading(&format!(
                "Lock contention: {} waits, {:.1} ms",
                c.count, c.total_wait_ms
            ))
        )?;
        if let Some(m) = c.top_exclusive.first() {
            writeln!(out, "  most waited: {} ({:.1} ms)", m.method, m.ms)?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}
