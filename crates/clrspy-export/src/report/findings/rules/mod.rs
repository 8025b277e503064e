//! The rules, one file each (its `RULE`, its thresholds with why, its unit tests), and the
//! list that registers them ([`ALL`]), in the order a report shows findings of one severity.
//! docs/findings.md says each rule's thresholds; a new rule is a file and a line below.

use super::finding::{Rule, Site};

mod blocking_on_pool;
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
    lock_convoy::RULE,
    induced_gc::RULE,
    large_object_churn::RULE,
    gc_time::RULE,
    http_client_per_call::RULE,
    thread_per_call::RULE,
    cpu_saturated::RULE,
];

/// The first frame of a leaf-first stack that is none of `inside` (name prefixes) and no
/// group of native work (`[runtime: …]`): the code that called into them.
pub(crate) fn caller_outside<'f>(frames: &'f [String], inside: &[&str]) -> Option<&'f str> {
    frames
        .iter()
        .map(String::as_str)
        .find(|f| !f.starts_with('[') && !inside.iter().any(|p| f.starts_with(p)))
}

/// Sites from named amounts, heaviest first, the first `n`, each with its share of `total`.
pub(crate) fn top_sites(
    mut amounts: Vec<(String, f64)>,
    total: f64,
    n: usize,
    value: impl Fn(f64) -> String,
) -> Vec<Site> {
    amounts.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    amounts
        .into_iter()
        .take(n)
        .map(|(name, v)| Site {
            percent: crate::units::round1(crate::units::percent(v, total)),
            value: value(v),
            name,
        })
        .collect()
}

/// "(1.3 per request)" when the app served requests, else "".
pub(crate) fn per_request(n: f64, served: Option<u64>) -> String {
    match served {
        Some(r) => format!(", {:.2} per request", n / r as f64),
        None => String::new(),
    }
}

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

    #[test]
    fn the_caller_is_the_first_frame_outside() {
        let f: Vec<String> = ["[JIT compiler: libclrjit.so]", "System.Linq.Expressions.Expression`1.Compile", "App.Orders.Get", "Main"]
            .map(String::from)
            .to_vec();
        assert_eq!(caller_outside(&f, &["System.Linq."]), Some("App.Orders.Get"));
        assert_eq!(caller_outside(&f[..2], &["System."]), None);
    }
}
