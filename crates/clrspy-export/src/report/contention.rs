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
    /// The methods that waited for it (the first frame outside the lock's own code), by wait
    /// time, the first 5.
    pub(crate) waited_in: Vec<MethodWeight>,
    /// Where its owners were while others waited for it (their samples and waits then), by
    /// time: empty where the runtime names no owner (before .NET 8) or nothing was sampled.
    pub(crate) held_in: Vec<HeldIn>,
}

/// Where a lock's owner was while others waited: the app's innermost method on its stack
/// (else the innermost managed frame that is not a marshalling stub, else the innermost named
/// frame), with the time and a stack that shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct HeldIn {
    /// The method.
    pub(crate) method: String,
    /// The owners' time there while others waited, ms.
    pub(crate) ms: f64,
    /// Its share of the time the owners were seen holding the lock.
    pub(crate) percent: f64,
    /// The heaviest stack of it, leaf first (at most [`HELD_FRAMES`] frames).
    pub(crate) stack: Vec<String>,
}

/// Where a holder was, from its stack (leaf first): the innermost managed frame outside the
/// lock's own code and marshalling stubs, when it is a library's rather than the base
/// library's (`System.*`) with the app's innermost frame it was called from — "Logger.Log (from
/// App.Handler)" —, else the app's innermost frame, else that frame, else the innermost named
/// frame.
fn holder_site(frames: &[String], is_app: impl Fn(&str) -> bool) -> String {
    let managed = |f: &&String| !is_lock_internal(f) && !f.starts_with("dynamicClass.IL_STUB");
    let inner = frames.iter().find(managed);
    let app = frames
        .iter()
        .find(|f| is_app(f) && !f.starts_with("dynamicClass."));
    match (inner, app) {
        (Some(i), Some(a)) if i == a => a.clone(),
        (Some(i), Some(a)) if !i.starts_with("System.") => format!("{i} (from {a})"),
        (_, Some(a)) => a.clone(),
        (Some(i), None) => i.clone(),
        (None, None) => frames
            .iter()
            .find(|f| !f.starts_with('['))
            .cloned()
            .unwrap_or_else(|| "[no stack]".into()),
    }
}

/// Frames kept of a holder's stack.
const HELD_FRAMES: usize = 12;

/// Where the owners of a lock were while others waited, heaviest first, the first `top`.
fn held_in(a: &Analysis, held: &FxHashMap<Option<clrspy_analysis::stacks::StackId>, f64>, top: usize) -> Vec<HeldIn> {
    let total: f64 = held.values().sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let app = a.symbols.app_code();
    // Per method: its time, and its heaviest stack with that stack's time.
    let mut by: FxHashMap<String, (f64, f64, Vec<String>)> = FxHashMap::default();
    for (stack, ns) in held {
        let frames = a.frames(*stack);
        let method = holder_site(&frames, |f| app.contains(f));
        let e = by.entry(method).or_default();
        e.0 += ns;
        if *ns > e.1 {
            e.1 = *ns;
            e.2 = frames.into_iter().take(HELD_FRAMES).collect();
        }
    }
    let mut rows: Vec<HeldIn> = by
        .into_iter()
        .map(|(method, (ns, _, stack))| HeldIn {
            method,
            ms: round1(ns / 1e6),
            percent: round1(percent(ns, total)),
            stack,
        })
        .collect();
    rows.sort_by(|x, y| y.ms.total_cmp(&x.ms).then_with(|| x.method.cmp(&y.method)));
    rows.truncate(top);
    rows
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

/// Who waited, of a waiting stack: its first frame outside the lock's own code.
pub(crate) fn waiter(frames: &[String]) -> String {
    frames
        .iter()
        .find(|f| !is_lock_internal(f))
        .or_else(|| frames.first())
        .cloned()
        .unwrap_or_else(|| "[no stack]".into())
}

/// Sums as rows, heaviest first, the first `top`; `total` ns is 100%.
fn weights(m: Sums, total: f64, top: usize) -> Vec<MethodWeight> {
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
}

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
        let e = excl.entry(waiter(&frames)).or_default();
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
    let conv = |m: Sums| weights(m, total, top);
    let mut locks: Vec<LockReport> = a
        .contention
        .by_lock
        .iter()
        .map(|(id, l)| {
            let mut owners: Vec<(u64, u64)> = l.owners.iter().map(|(t, c)| (*t, *c)).collect();
            owners.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            let mut waited: Sums = FxHashMap::default();
            for (stack, (count, ns)) in &l.waited {
                let e = waited.entry(waiter(&a.frames(*stack))).or_default();
                e.0 += count;
                e.1 += ns;
            }
            LockReport {
                waited_in: weights(waited, l.wait_ns.max(1.0), 5),
                lock_id: format!("0x{id:x}"),
                count: l.count,
                wait_ms: round1(l.wait_ns / 1e6),
                owner_threads: owners.into_iter().take(5).map(|o| o.0).collect(),
                held_in: held_in(a, &l.held, 5),
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
            for h in l.held_in.iter().take(3) {
                writeln!(
                    out,
                    "  {:>10.1} ms {:>6.1}%       while held, the owner was in {}",
                    h.ms, h.percent, h.method
                )?;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_holder_is_placed_by_the_app_or_the_library_it_called() {
        let app = |f: &str| f.starts_with("App.") || f.starts_with("dynamicClass.");
        // In the base library under the app's loop: the app's frame.
        let spin = frames(&["[vdso]", "System.Diagnostics.Stopwatch.GetTimestamp", "App.Locks.Spin", "App.Locks.Convoy"]);
        assert_eq!(holder_site(&spin, app), "App.Locks.Spin");
        // In a library (the console logger pulsing its queue's waiters): said, with the app's
        // frame that called it; stubs and the lock's own frames skipped.
        let log = frames(&[
            "libc.so.6!__GI___pthread_cond_signal",
            "System.Threading.Monitor.PulseAll",
            "Microsoft.Extensions.Logging.Console.ConsoleLoggerProcessor.Enqueue",
            "dynamicClass.IL_STUB_InstantiatingStub",
            "App.Todos.Get",
        ]);
        assert_eq!(
            holder_site(&log, app),
            "Microsoft.Extensions.Logging.Console.ConsoleLoggerProcessor.Enqueue (from App.Todos.Get)"
        );
        assert_eq!(holder_site(&frames(&["[native]"]), app), "[no stack]");
    }
}
