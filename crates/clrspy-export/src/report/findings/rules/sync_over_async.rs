//! `sync-over-async`: thread-pool threads blocked waiting on a task (`Task.Wait`, `.Result`,
//! `GetAwaiter().GetResult()`): each holds a pool thread while the task it waits for needs
//! one to finish, so under load the pool runs out and injects threads one by one
//! (starvation): requests queue, latency climbs.
//!
//! Evidence: the `hangs` report's pool workers blocked on tasks by call site (wait events,
//! or the samples' blocked time before .NET 9) and its starvation (threads injected, how
//! fast, the workers before and after).
//!
//! Thresholds: critical when the pool was starved (3 injections or more, the `hangs`
//! report's rule) while workers blocked on tasks; a warning at 1 s of blocked time or 100
//! waits (a pool worker blocked that long is a pool thread lost to the app's work); info
//! from 100 ms or 10 waits (less is a sample or two, which may be a thread caught between
//! two states).

use super::super::finding::{count, ms, rate, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "sync-over-async",
    title: "Thread-pool threads block on tasks (sync over async)",
    fix: "Await the task instead of blocking on it (`await x` for `x.Result`, `x.Wait()`, `x.GetAwaiter().GetResult()`), all the way up to the request handler; where a synchronous API must stay, call the synchronous version of the I/O.",
    link: "https://learn.microsoft.com/aspnet/core/fundamentals/best-practices#avoid-blocking-calls",
    check,
};

const WARN_MS: f64 = 1000.0;
const WARN_WAITS: u64 = 100;
const INFO_MS: f64 = 100.0;
const INFO_WAITS: u64 = 10;

/// The severity of pool workers blocked on tasks `wait_ms` in `waits` waits, the pool
/// `starved` or not.
fn grade(wait_ms: f64, waits: u64, starved: bool) -> Option<Severity> {
    if starved {
        Some(Severity::Critical)
    } else if wait_ms >= WARN_MS || waits >= WARN_WAITS {
        Some(Severity::Warning)
    } else if wait_ms >= INFO_MS || waits >= INFO_WAITS {
        Some(Severity::Info)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let s = &input.hangs().starvation;
    if s.sync_over_async.is_empty() {
        return None;
    }
    let wait_ms: f64 = s.sync_over_async.iter().map(|w| w.wait_ms).sum();
    let waits: u64 = s.sync_over_async.iter().map(|w| w.waits).sum();
    let severity = grade(wait_ms, waits, s.detected)?;
    let sites = top_sites(
        s.sync_over_async
            .iter()
            .map(|w| (format!("{} in {}", w.blocked_in, w.method), w.wait_ms))
            .collect(),
        wait_ms,
        5,
        ms,
    );
    let starved = if s.detected {
        format!(
            "; the pool was starved: it injected {} threads{}",
            s.injections,
            s.injections_per_s
                .map(|r| format!(" ({})", rate(r)))
                .unwrap_or_default()
        )
    } else {
        String::new()
    };
    let waits_said = if waits > 0 {
        format!("{} waits, ", count(waits))
    } else {
        String::new()
    };
    let said = format!(
        "pool threads blocked on tasks for {} ({waits_said}{} call site{}), most in {}{starved}",
        ms(wait_ms),
        s.sync_over_async_total,
        if s.sync_over_async_total == 1 { "" } else { "s" },
        sites.first().map_or("?", |x| x.name.as_str()),
    );
    let mut found = Found::new(severity, said)
        .fact("blocked on tasks", ms(wait_ms))
        .fact("waits", count(waits))
        .fact("threads injected", count(s.injections))
        .fact(
            "pool workers",
            match s.workers_before {
                Some(b) => format!("{b} before, {} at most", s.workers_max),
                None => format!("{} at most", s.workers_max),
            },
        );
    if let Some(note) = &s.sync_over_async_note {
        found = found.fact("note", note.clone());
    }
    Some(found.sites(sites))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(57_900.0, 0, true), Some(Severity::Critical));
        assert_eq!(grade(1500.0, 20, false), Some(Severity::Warning));
        assert_eq!(grade(50.0, 150, false), Some(Severity::Warning));
        assert_eq!(grade(150.0, 2, false), Some(Severity::Info));
        // A sample or two caught between states.
        assert_eq!(grade(4.0, 0, false), None);
    }
}
