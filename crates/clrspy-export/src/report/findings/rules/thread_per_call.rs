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

use super::super::finding::{count, rate, Found, Input, Rule, Severity};
use super::per_request;

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

fn check(input: &Input<'_>) -> Option<Found> {
    // The pool's own workers are its growth, not the app's threads.
    let created = input
        .threads()
        .threads_created
        .saturating_sub(input.hangs().starvation.worker_starts);
    let seconds = input.seconds().max(1e-3);
    let per_s = created as f64 / seconds;
    let severity = if created >= WARN_COUNT && per_s >= CRITICAL_RATE {
        Severity::Critical
    } else if created >= WARN_COUNT && per_s >= WARN_RATE {
        Severity::Warning
    } else if per_s >= INFO_RATE && created >= INFO_COUNT {
        Severity::Info
    } else {
        return None;
    };
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
