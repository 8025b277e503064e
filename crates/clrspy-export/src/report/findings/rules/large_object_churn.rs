//! `large-object-churn`: large arrays and strings (85,000 bytes and more) allocated and
//! dropped all the time: they go to the large object heap, which only a gen2 GC collects,
//! so the churn turns into full collections (`AllocLarge` gen2 GCs) and a fragmented heap.
//!
//! Evidence: the large-heap allocations (the allocation ticks' `large` kind) by type and
//! their rate, and the gen2 GCs the large heap's budget triggered.
//!
//! Thresholds: a warning at 5 gen2 GCs of reason `AllocLarge`, or 2 with 10 MB/s of large
//! allocations (a large buffer now and then is fine; a steady stream of them keeps gen2
//! busy); critical at one such GC a second; info from 1 MB/s of large allocations.

use clrspy_analysis::alloc::HeapKind;
use clr_events::runtime::GcReason;

use super::super::finding::{count, plural, rate, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "large-object-churn",
    title: "Large objects allocated and dropped all the time",
    fix: "Reuse large buffers instead of allocating them per call: rent them from ArrayPool<T>.Shared (and return them), keep one per worker, or stream the data in smaller chunks (RecyclableMemoryStream, PipeReader) so nothing reaches 85,000 bytes.",
    link: "https://learn.microsoft.com/dotnet/standard/garbage-collection/large-object-heap",
    check,
};

const WARN_GEN2: u64 = 5;
const WARN_GEN2_WITH_RATE: u64 = 2;
const WARN_MB_S: f64 = 10.0;
const CRITICAL_GEN2_RATE: f64 = 1.0;
const INFO_MB_S: f64 = 1.0;

const MB: f64 = 1024.0 * 1024.0;

/// The severity of `gen2` GCs of reason `AllocLarge` (`per_s` a second) with `mb_s` MB a
/// second of large objects allocated.
fn grade(gen2: u64, per_s: f64, mb_s: f64) -> Option<Severity> {
    if gen2 >= WARN_GEN2 && per_s >= CRITICAL_GEN2_RATE {
        Some(Severity::Critical)
    } else if gen2 >= WARN_GEN2 || (gen2 >= WARN_GEN2_WITH_RATE && mb_s >= WARN_MB_S) {
        Some(Severity::Warning)
    } else if mb_s >= INFO_MB_S || gen2 > 0 {
        Some(Severity::Info)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let alloc = input.alloc();
    let large: Vec<_> = alloc
        .types
        .iter()
        .filter(|t| t.heap == HeapKind::Large)
        .collect();
    let large_bytes: u64 = large.iter().map(|t| t.bytes).sum();
    let seconds = input.seconds().max(1e-3);
    let mb_s = large_bytes as f64 / MB / seconds;
    let gen2_loh = input
        .gc()
        .gcs
        .iter()
        .filter(|g| g.generation == 2 && g.reason == GcReason::AllocLarge)
        .count() as u64;
    let severity = grade(gen2_loh, gen2_loh as f64 / seconds, mb_s)?;
    let sites = top_sites(
        large
            .iter()
            .map(|t| (t.type_name.clone(), t.bytes as f64))
            .collect(),
        large_bytes as f64,
        5,
        |b| format!("{:.1} MB", b / MB),
    );
    let gcs = format!(
        "{} triggered by the large object heap's budget ({})",
        plural(gen2_loh, "gen2 GC was", "gen2 GCs were"),
        rate(gen2_loh as f64 / seconds)
    );
    let said = if alloc.ticks == 0 {
        format!("{gcs}; the trace has no allocation ticks to name the types (record with `--profile alloc`)")
    } else {
        format!(
            "{gcs}; {mb_s:.1} MB/s of large objects allocated ({:.0}% of all allocations){}",
            crate::units::percent(large_bytes as f64, alloc.total_bytes as f64),
            sites
                .first()
                .map(|s| format!(", mostly {}", s.name))
                .unwrap_or_default(),
        )
    };
    Some(
        Found::new(severity, said)
            .fact(
                "large allocations",
                if alloc.ticks == 0 {
                    "not measured (no allocation ticks)".to_string()
                } else {
                    format!("{:.1} MB ({mb_s:.1} MB/s)", large_bytes as f64 / MB)
                },
            )
            .fact("gen2 GCs of reason AllocLarge", count(gen2_loh))
            .fact("gen2 GCs in all", count(input.gc().totals.per_generation[2]))
            .sites(sites),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(862, 105.0, 320.0), Some(Severity::Critical));
        assert_eq!(grade(6, 0.1, 0.0), Some(Severity::Warning));
        assert_eq!(grade(2, 0.1, 12.0), Some(Severity::Warning));
        assert_eq!(grade(1, 0.5, 11.7), Some(Severity::Info));
        assert_eq!(grade(0, 0.0, 0.5), None);
    }
}
