//! `thread-per-call`: a new thread started per request or per work item instead of using
//! the thread pool: each costs a stack (reserved and committed pages), a kernel thread and
//! its start and exit, and many at once oversubscribe the CPUs.
//!
//! Evidence: the threads the runtime created while recording (`Thread/Creating`), less the
//! thread pool's own workers (`ThreadPoolWorkerThread/Start`), per second and per request.
//!
//! Thresholds: a warning at 50 threads created and 5 a second (an app starts a few threads
//! of its own, a timer or a logger one); critical at 100 a second; info from 20 threads and
//! 2 a second.

use super::super::finding::{count, per_request, rate, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "thread-per-call",
    title: "A new thread started per call",
    fix: "Run short work on the thread pool (Task.Run, or await the async API) instead of new Thread(...); keep dedicated threads for long-lived loops, created once.",
    link: "https://learn.microsoft.com/dotnet/standard/threading/the-managed-thread-pool",
    check,
};

const WARN_COUNT: u64 = 50;
const WARN_RATE: f64 = 5.0;
const CRITICAL_RATE: f64 = 100.0;
const INFO_RATE: f64 = 2.0;
const INFO_COUNT: u64 = 20;

/// The severity of `created` threads at `per_s` a second.
fn grade(created: u64, per_s: f64) -> Option<Severity> {
    if created >= WARN_COUNT && per_s >= CRITICAL_RATE {
        Some(Severity::Critical)
    } else if created >= WARN_COUNT && per_s >= WARN_RATE {
        Some(Severity::Warning)
    } else if per_s >= INFO_RATE && created >= INFO_COUNT {
        Some(Severity::Info)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    // The pool's own workers are its growth, not the app's threads.
    let created = input
        .threads()
        .threads_created
        .saturating_sub(input.hangs().starvation.worker_starts);
    let seconds = input.seconds().max(1e-3);
    let per_s = created as f64 / seconds;
    let severity = grade(created, per_s)?;
    let said = format!(
        "{} threads were created while recording ({}{})",
        count(created),
        rate(per_s),
        per_request(created as f64, input.served())
    );
    Some(
        Found::new(severity, said)
            .fact("threads created", count(created))
            .fact("per second", rate(per_s)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(18_913, 2311.0), Some(Severity::Critical));
        assert_eq!(grade(80, 8.0), Some(Severity::Warning));
        assert_eq!(grade(25, 3.0), Some(Severity::Info));
        // An app's few threads of its own.
        assert_eq!(grade(9, 1.1), None);
        assert_eq!(grade(60, 0.5), None);
    }
}
