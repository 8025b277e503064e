//! `induced-gc`: the app calls `GC.Collect()` (or a library does for it): each is a full,
//! usually blocking collection of every generation the runtime would not have run, and
//! under load it pauses every request.
//!
//! Evidence: the GCs of an induced reason, their pauses and share of the window, and the
//! stacks that asked for them (`GC/Triggered`, whose stack names the caller); those whose
//! stack has no `GC.Collect` the runtime induced itself (to reclaim dead threads, for low
//! memory), and they are left out.
//!
//! Thresholds: a warning at 3 induced GCs that are 10% of the GCs or more than one every
//! 5 s (a tool or a test harness may induce one or two); critical when their pauses take 5%
//! of the window; info for one or two.

use super::super::finding::{caller_outside, count, ms, per_request, plural, rate, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "induced-gc",
    title: "GC.Collect called by the app",
    fix: "Remove the GC.Collect calls: the runtime collects when its budgets say so. To return memory after a one-off peak use GCSettings/AppContext settings (or GC.Collect once, off the request path); to measure memory use GC.GetTotalMemory(false) or GC.GetGCMemoryInfo().",
    link: "https://learn.microsoft.com/dotnet/standard/garbage-collection/induced",
    check,
};

const WARN_COUNT: u64 = 3;
const WARN_SHARE: f64 = 10.0;
const WARN_RATE: f64 = 0.2;
const CRITICAL_PAUSED: f64 = 5.0;

/// The severity of `n` induced GCs (of 1 or more), `share` percent of the GCs, `per_s` a
/// second, pausing the app `paused` percent of the time.
fn grade(n: u64, share: f64, per_s: f64, paused: f64) -> Severity {
    if n >= WARN_COUNT && paused >= CRITICAL_PAUSED {
        Severity::Critical
    } else if n >= WARN_COUNT && (share >= WARN_SHARE || per_s >= WARN_RATE) {
        Severity::Warning
    } else {
        Severity::Info
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let gc = input.gc();
    let induced: Vec<_> = gc.gcs.iter().filter(|g| g.reason.is_induced()).collect();
    if induced.is_empty() {
        return None;
    }
    let seconds = input.seconds().max(1e-3);
    let pause_ms: f64 = induced.iter().map(|g| g.pause_ms).sum();
    let paused = pause_ms * 100.0 / (seconds * 1000.0);
    let mut callers: rustc_hash::FxHashMap<String, f64> = Default::default();
    let mut heaviest: Option<(u64, Vec<String>)> = None;
    // The runtime induces some itself (a GC to reclaim dead threads' objects, a low-memory
    // one): their stacks have no `GC.Collect`, and they are not the app's.
    let mut by_runtime = 0;
    for (&stack, &k) in &input.a.gc.induced_stacks {
        let frames = input.a.frames(stack);
        if stack.is_some() && !frames.iter().any(|f| f.starts_with("System.GC.") && f.contains("Collect")) {
            by_runtime += k;
            continue;
        }
        let caller = caller_outside(&frames, &["System.GC.", "System.GC`"])
            .unwrap_or("[no stack]")
            .to_string();
        *callers.entry(caller).or_default() += k as f64;
        if heaviest.as_ref().is_none_or(|(m, _)| k > *m) {
            heaviest = Some((k, frames));
        }
    }
    let n = (induced.len() as u64).saturating_sub(by_runtime);
    if n == 0 {
        return None;
    }
    let share = n as f64 * 100.0 / gc.gcs.len().max(1) as f64;
    let per_s = n as f64 / seconds;
    let severity = grade(n, share, per_s, paused);
    let asked: f64 = callers.values().sum();
    let sites = top_sites(callers.into_iter().collect(), asked, 5, |v| {
        format!("{} GCs", count(v as u64))
    });
    let gens = [0, 1, 2].map(|gen| induced.iter().filter(|g| g.generation == gen).count());
    let said = format!(
        "{} induced by GC.Collect ({}{}, {share:.0}% of the GCs), pausing the app {} ({paused:.1}% of the time){}",
        plural(n, "GC was", "GCs were"),
        rate(per_s),
        per_request(n as f64, input.served()),
        ms(pause_ms),
        sites
            .first()
            .map(|s| format!(", called from {}", s.name))
            .unwrap_or_default()
    );
    Some(
        Found::new(severity, said)
            .fact("induced GCs", count(n))
            .fact("induced by the runtime itself", count(by_runtime))
            .fact("by generation", format!("gen0 {}, gen1 {}, gen2 {}", gens[0], gens[1], gens[2]))
            .fact("all GCs", count(gc.gcs.len() as u64))
            .fact("their pauses", format!("{} ({paused:.1}% of the time)", ms(pause_ms)))
            .sites(sites)
            .stack(heaviest.map(|(_, f)| f).unwrap_or_default()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(2962, 100.0, 364.0, 52.7), Severity::Critical);
        assert_eq!(grade(4, 1.0, 0.98, 1.2), Severity::Warning);
        assert_eq!(grade(5, 20.0, 0.01, 0.1), Severity::Warning);
        // A tool or a test harness inducing one or two.
        assert_eq!(grade(2, 50.0, 1.0, 10.0), Severity::Info);
        assert_eq!(grade(3, 1.0, 0.01, 0.1), Severity::Info);
    }
}
