//! `lock-convoy`: one lock that many threads queue on: every request takes it in turn, so
//! the app runs one request at a time there however many threads and CPUs it has.
//!
//! Evidence: the `contention` report's most waited-for lock (contended acquisitions, wait
//! time, the threads that held it), the average number of threads waiting on it over the
//! window, the methods that waited, and where its owner was while they waited (the holder's
//! stack: its samples and waits then, from .NET 8, which names the owner).
//!
//! Thresholds: a warning at 50 contended acquisitions and a quarter of a thread waiting on
//! the lock on average over the window (a lock held briefly now and then is not a convoy);
//! critical at one thread or more waiting on average (one thread's worth of the app always
//! waiting on it); a warning too for long holds: 5 acquisitions or more with one thread or
//! more waiting on average (a lock held for seconds, a blocking call inside it); info from 20
//! acquisitions and 5% of a thread.

use super::super::finding::{count, ms, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "lock-convoy",
    title: "Many threads queue on one lock",
    fix: "Hold the lock for less: move the work (I/O, computation) out of it, take it per item rather than for all, or use a concurrent collection or a lock-free structure; never block or await while holding it.",
    link: "https://learn.microsoft.com/dotnet/standard/threading/managed-threading-best-practices",
    check,
};

const WARN_COUNT: u64 = 50;
const WARN_WAITERS: f64 = 0.25;
const CRITICAL_WAITERS: f64 = 1.0;
const INFO_COUNT: u64 = 20;
const LONG_COUNT: u64 = 5;
const INFO_WAITERS: f64 = 0.05;

/// The severity of a lock waited for `count` times by `waiters` threads on average.
fn grade(count: u64, waiters: f64) -> Option<Severity> {
    if count >= WARN_COUNT && waiters >= CRITICAL_WAITERS {
        Some(Severity::Critical)
    } else if (count >= WARN_COUNT && waiters >= WARN_WAITERS)
        || (count >= LONG_COUNT && waiters >= CRITICAL_WAITERS)
    {
        Some(Severity::Warning)
    } else if count >= INFO_COUNT && waiters >= INFO_WAITERS {
        Some(Severity::Info)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let c = input.contention();
    let lock = c
        .locks
        .iter()
        .max_by(|a, b| a.wait_ms.total_cmp(&b.wait_ms))?;
    let window_ms = input.seconds() * 1000.0;
    if window_ms <= 0.0 {
        return None;
    }
    let waiters = lock.wait_ms / window_ms;
    let severity = grade(lock.count, waiters)?;
    let sites: Vec<_> = lock
        .waited_in
        .iter()
        .take(5)
        .map(|m| super::super::finding::Site {
            name: m.method.clone(),
            value: format!("{} waits, {}", count(m.samples.round() as u64), ms(m.ms)),
            percent: m.percent,
        })
        .collect();
    let lock_name = if lock.lock_id == "0x0" {
        "the most contended lock".to_string()
    } else {
        format!("lock {}", lock.lock_id)
    };
    let holder = lock.held_in.first();
    let said = format!(
        "{lock_name} was waited for {} times, {} in all: {waiters:.1} threads waiting on it on average{}{}",
        count(lock.count),
        ms(lock.wait_ms),
        sites
            .first()
            .map(|s| format!(", most in {}", s.name))
            .unwrap_or_default(),
        match holder {
            Some(h) => format!("; while they waited, its owner was in {} ({:.0}%)", h.method, h.percent),
            None if !lock.owner_threads.is_empty() => "; what its owner did meanwhile was not sampled (record with --profile hangs: samples and lock waits)".to_string(),
            None => String::new(),
        }
    );
    let mut found = Found::new(severity, said);
    if let Some(h) = holder {
        found = found
            .fact("owner was in", format!("{} ({:.1}%)", h.method, h.percent))
            .stack(h.stack.clone());
    }
    Some(
        found
            .fact("lock", lock.lock_id.clone())
            .fact("contended acquisitions", count(lock.count))
            .fact("waiting", ms(lock.wait_ms))
            .fact("threads waiting on average", format!("{waiters:.2}"))
            .fact("threads that held it", count(lock.owner_threads.len() as u64))
            .sites(sites),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(1403, 1.7), Some(Severity::Critical));
        assert_eq!(grade(200, 0.4), Some(Severity::Warning));
        // Few waits, each long: a lock held for seconds (7 waits, 26.9 s in 8 s).
        assert_eq!(grade(7, 3.3), Some(Severity::Warning));
        assert_eq!(grade(30, 0.1), Some(Severity::Info));
        assert_eq!(grade(4, 3.0), None);
        assert_eq!(grade(5000, 0.01), None);
    }
}
