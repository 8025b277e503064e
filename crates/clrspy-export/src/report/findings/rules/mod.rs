//! The rules, one file each (its `RULE`, its thresholds with why, its unit tests), and the
//! list that registers them ([`ALL`]), in the order a report shows findings of one severity.
//! docs/findings.md says each rule's thresholds; a new rule is a file and a line below.

use super::finding::Rule;

mod blocking_on_pool;
mod bug_exceptions;
mod compiled_per_call;
mod cpu_saturated;
mod exceptions_flow;
mod gc_time;
mod http_client_per_call;
mod induced_gc;
mod large_object_churn;
mod lock_convoy;
mod sync_over_async;
mod thread_per_call;

/// Every rule, in the order findings of one severity are listed.
pub(crate) const ALL: &[Rule] = &[
    sync_over_async::RULE,
    blocking_on_pool::RULE,
    compiled_per_call::RULE,
    exceptions_flow::RULE,
    bug_exceptions::RULE,
    lock_convoy::RULE,
    induced_gc::RULE,
    large_object_churn::RULE,
    gc_time::RULE,
    http_client_per_call::RULE,
    thread_per_call::RULE,
    cpu_saturated::RULE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_each_says_its_fix_and_link() {
        let mut ids: Vec<&str> = ALL.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), ALL.len());
        for r in ALL {
            assert!(r.id.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{}", r.id);
            assert!(r.fix.len() > 40 && r.link.starts_with("https://learn.microsoft.com/"), "{}", r.id);
        }
    }

}
