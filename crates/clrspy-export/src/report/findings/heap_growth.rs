//! `heap-growth`: a type that grows and is never freed, held by a static — the shape of most
//! .NET leaks (a static list or dictionary used as a cache nobody empties, event handlers never
//! unsubscribed). Read from heap snapshots, not a trace: `clrspy heap watch` (a series) and
//! `clrspy heap diff` (two).
//!
//! Evidence: the type that grew most in bytes among those that grew in every interval, its
//! growth per interval (objects and bytes), its share of the last snapshot's heap, and the
//! path from the root that holds it in the last snapshot.
//!
//! Thresholds: growth under 64 KB is never a finding (allocation noise between snapshots).
//! A series (two intervals or more, so "never falls" can be seen): a warning when the type is
//! held by a static and grew by 1% of the heap or more; critical when it grew by 10% of the
//! heap or more, held by a static, over three intervals or more; info otherwise (grew in every
//! interval, held by something else: a thread's locals, a handle, a queue being worked). Two
//! snapshots alone (one interval) cannot tell a leak from a high-water mark: a warning only
//! when the type is held by a static and grew by 10% of the heap or more, else info.

use clrspy_analysis::heap::growth::{holder, Growth};
use clrspy_analysis::heap::HeapModel;
use clrspy_values::human_bytes;

use super::finding::{count, Fact, Finding, Severity, Site};

/// The rule's id.
const ID: &str = "heap-growth";
const TITLE: &str = "A type grows and is never freed, held by a static";
const FIX: &str = "Find what adds to the collection on the path below and bound it: remove entries when their work is done, use a cache with a size limit or expiry (MemoryCache with SizeLimit), unsubscribe event handlers, and keep no static that only grows.";
const LINK: &str = "https://learn.microsoft.com/dotnet/core/diagnostics/debug-memory-leak";

const MIN_BYTES: i64 = 64 * 1024;
const WARN_SHARE: f64 = 1.0;
const CRITICAL_SHARE: f64 = 10.0;
const CRITICAL_INTERVALS: usize = 3;

/// The severity of growth of `share` percent of the heap over `intervals` intervals, held by a
/// static or not.
fn grade(bytes: i64, share: f64, intervals: usize, static_root: bool) -> Option<Severity> {
    if bytes < MIN_BYTES || intervals == 0 {
        return None;
    }
    if intervals == 1 {
        return Some(if static_root && share >= CRITICAL_SHARE {
            Severity::Warning
        } else {
            Severity::Info
        });
    }
    Some(if !static_root || share < WARN_SHARE {
        Severity::Info
    } else if share >= CRITICAL_SHARE && intervals >= CRITICAL_INTERVALS {
        Severity::Critical
    } else {
        Severity::Warning
    })
}

/// The finding of a series of snapshots: `growth` are the types that grew in every one of
/// `intervals` intervals (heaviest first), `last` the last snapshot's model. None when nothing
/// grew enough.
pub(crate) fn heap_growth(
    growth: &[Growth],
    intervals: usize,
    last: Option<&HeapModel>,
) -> Option<Finding> {
    let g = growth.first()?;
    let heap = last.map(HeapModel::bytes).unwrap_or(0);
    let bytes = g.bytes_total();
    let share = if heap > 0 {
        bytes as f64 * 100.0 / heap as f64
    } else {
        0.0
    };
    let path = holder(last, &g.name);
    // The roots: `[static vars] → [static var App.Cache] → …`.
    let static_root = path.iter().take(2).any(|r| r.starts_with("[static var"));
    let severity = grade(bytes, share, intervals, static_root)?;
    let per: Vec<String> = g.bytes_deltas.iter().map(|b| format!("{b:+}")).collect();
    let held = if path.is_empty() {
        String::new()
    } else {
        format!(", held by {}", path.join(" → "))
    };
    let said = if intervals == 1 {
        format!(
            "{} grew by {} objects, {} ({share:.1}% of the heap) between the two snapshots{held}; one interval cannot tell a leak from a high-water mark (clrspy heap watch can)",
            g.name,
            count(g.count_total().unsigned_abs()),
            human_bytes(bytes.unsigned_abs())
        )
    } else {
        format!(
            "{} grew in every one of {intervals} intervals, by {} objects, {} in all ({share:.1}% of the last heap){held}",
            g.name,
            count(g.count_total().unsigned_abs()),
            human_bytes(bytes.unsigned_abs())
        )
    };
    let fact = |name: &str, value: String| Fact {
        name: name.to_string(),
        value,
    };
    let mut evidence = vec![
        fact("type", g.name.clone()),
        fact("intervals", intervals.to_string()),
        fact("objects grown", count(g.count_total().unsigned_abs())),
        fact("bytes grown", human_bytes(bytes.unsigned_abs())),
        fact("bytes per interval", per.join(", ")),
        fact("share of the last heap", format!("{share:.1}%")),
    ];
    if !path.is_empty() {
        evidence.push(fact("held by", path.join(" → ")));
    }
    let total: i64 = growth.iter().map(Growth::bytes_total).sum::<i64>().max(1);
    let sites = growth
        .iter()
        .take(5)
        .map(|t| Site {
            name: t.name.clone(),
            value: format!(
                "+{} objects, +{}",
                count(t.count_total().unsigned_abs()),
                human_bytes(t.bytes_total().unsigned_abs())
            ),
            percent: crate::units::round1(crate::units::percent(
                t.bytes_total() as f64,
                total as f64,
            )),
        })
        .collect();
    Some(Finding {
        id: ID,
        severity,
        title: TITLE,
        said,
        evidence,
        sites,
        stack: Vec::new(),
        fix: FIX,
        link: LINK,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        // Noise: too small to say anything.
        assert_eq!(grade(10_000, 50.0, 5, true), None);
        // A series, held by a static.
        assert_eq!(grade(1 << 20, 12.0, 3, true), Some(Severity::Critical));
        assert_eq!(grade(1 << 20, 12.0, 2, true), Some(Severity::Warning));
        assert_eq!(grade(1 << 20, 2.0, 4, true), Some(Severity::Warning));
        assert_eq!(grade(1 << 20, 0.5, 4, true), Some(Severity::Info));
        // Held by something that is not a static: a queue being worked, a request's locals.
        assert_eq!(grade(1 << 20, 40.0, 4, false), Some(Severity::Info));
        // Two snapshots: a high-water mark looks the same.
        assert_eq!(grade(1 << 20, 12.0, 1, true), Some(Severity::Warning));
        assert_eq!(grade(1 << 20, 5.0, 1, true), Some(Severity::Info));
        assert_eq!(grade(1 << 20, 5.0, 0, true), None);
    }

    #[test]
    fn nothing_grew_nothing_found() {
        assert!(heap_growth(&[], 3, None).is_none());
    }

    #[test]
    fn growth_without_a_model_is_info() {
        let g = Growth {
            name: "App.Order".into(),
            count_deltas: vec![1_000, 2_000],
            bytes_deltas: vec![100_000, 200_000],
        };
        let f = heap_growth(&[g], 2, None).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f.said.contains("App.Order grew in every one of 2 intervals"), "{}", f.said);
        assert!(f.said.contains("3,000 objects"), "{}", f.said);
    }
}
