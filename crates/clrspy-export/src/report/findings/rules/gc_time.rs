//! `gc-time`: the app spends a large share of its time paused for GCs. The cause is almost
//! always what it allocates: the allocation rate and the types and stacks that allocate most
//! say what to cut.
//!
//! Evidence: the share of the window paused, the GCs by generation, the longest and the
//! 95th-percentile pause, the allocation rate, and the types and the stack that allocated
//! most.
//!
//! Thresholds: a warning at 10% of the window paused (the runtime's own guidance calls more
//! than that a problem to look at); critical at 25%; info from 5%. When the threads'
//! suspension is most of the pauses (the median time from `GC/SuspendEEStart` to
//! `GC/SuspendEEStop` half the median pause or more, and 1 ms or more), the time is not the
//! GC's work nor the allocations': then it is info, saying so (a thread in a long loop
//! without a safe point; old runtimes' sampling profiler suspends the threads too, and slows
//! every GC's suspension under it). It is measured, never guessed from the heap's size.

use super::super::finding::{count, ms, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "gc-time",
    title: "A large share of the time paused for GCs",
    fix: "Allocate less on the hot path: reuse buffers (ArrayPool), avoid per-call LINQ, boxing, string concatenation and closures, size collections up front; then check the GC mode (Server GC for a busy server, DOTNET_GCgen0size for a large gen0).",
    link: "https://learn.microsoft.com/dotnet/core/runtime-config/garbage-collector",
    check,
};

const WARN_PAUSED: f64 = 10.0;
const CRITICAL_PAUSED: f64 = 25.0;
const INFO_PAUSED: f64 = 5.0;
/// The suspension is most of the pause from this share of the median pause…
const SUSPEND_SHARE: f64 = 0.5;
/// …and at least this long (ms).
const SLOW_SUSPEND_MS: f64 = 1.0;

/// The severity of `paused` percent of the window paused for GCs; `slow_to_suspend` when
/// the pauses are long for the heap's size (then the time is not the GC's work).
fn grade(paused: f64, slow_to_suspend: bool) -> Option<Severity> {
    let severity = if paused >= CRITICAL_PAUSED {
        Severity::Critical
    } else if paused >= WARN_PAUSED {
        Severity::Warning
    } else if paused >= INFO_PAUSED {
        Severity::Info
    } else {
        return None;
    };
    Some(if slow_to_suspend {
        Severity::Info
    } else {
        severity
    })
}

fn check(input: &Input<'_>) -> Option<Found> {
    let t = &input.gc().totals;
    let paused = t.paused_percent;
    let suspend_ms = input.a.gc.median_suspend_ms();
    let slow_to_suspend = suspend_ms
        .is_some_and(|s| s >= SLOW_SUSPEND_MS && s >= t.p50_pause_ms * SUSPEND_SHARE);

    let severity = grade(paused, slow_to_suspend)?;
    let alloc = input.alloc();
    let sites = top_sites(
        alloc
            .types
            .iter()
            .map(|t| (t.type_name.clone(), t.bytes as f64))
            .collect(),
        alloc.total_bytes as f64,
        5,
        |b| format!("{:.1} MB", b / (1024.0 * 1024.0)),
    );
    let rate = t
        .allocation_mb_per_s
        .map(|r| format!(", allocating {r:.0} MB/s"))
        .unwrap_or_default();
    let induced = if t.induced > 0 {
        format!(" ({} induced: see induced-gc)", count(t.induced))
    } else {
        String::new()
    };
    let said = format!(
        "paused for GCs {paused:.1}% of the time ({} GCs{induced}, {} in all){rate}{}",
        count(t.count),
        ms(t.total_pause_ms),
        sites
            .first()
            .map(|s| format!("; {} is {}% of what was allocated", s.name, s.percent))
            .unwrap_or_default()
    );
    let said = if slow_to_suspend {
        format!(
            "{said}; but suspending the threads took {} of the median pause of {}: the time is the threads' suspension, not the collection",
            ms(suspend_ms.unwrap_or(0.0)),
            ms(t.p50_pause_ms)
        )
    } else {
        said
    };
    let said = if alloc.ticks == 0 {
        format!("{said}; the trace has no allocation ticks to name what allocates (record with `--profile alloc`)")
    } else {
        said
    };
    let mut found = Found::new(severity, said)
        .fact("paused", format!("{paused:.1}% of the time, {}", ms(t.total_pause_ms)))
        .fact(
            "GCs",
            format!(
                "{} (gen0 {}, gen1 {}, gen2 {})",
                count(t.count),
                t.per_generation[0],
                t.per_generation[1],
                t.per_generation[2]
            ),
        )
        .fact("longest pause", ms(t.max_pause_ms))
        .fact("95th percentile pause", ms(t.p95_pause_ms));
    if let Some(s) = suspend_ms {
        found = found.fact("median time to suspend the threads", format!("{s:.2} ms"));
    }
    if let Some(r) = t.allocation_mb_per_s {
        found = found.fact("allocation rate", format!("{r:.1} MB/s"));
    }
    let stack = alloc
        .stacks
        .first()
        .map(|s| s.frames.clone())
        .unwrap_or_default();
    Some(found.sites(sites).stack(stack))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(48.1, false), Some(Severity::Critical));
        assert_eq!(grade(13.6, false), Some(Severity::Warning));
        assert_eq!(grade(5.5, false), Some(Severity::Info));
        assert_eq!(grade(3.0, false), None);
        // TraceEvent's test trace: 20% paused in 15 ms gen0 pauses of a 3.6 MB heap.
        assert_eq!(grade(20.0, true), Some(Severity::Info));
    }
}
