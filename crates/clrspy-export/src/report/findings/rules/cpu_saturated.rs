//! `cpu-saturated`: the process used all the CPU it may (every CPU, or its cgroup's limit),
//! so more load only queues: requests wait for a CPU, not for their work. Saturated alone
//! is a condition, not a mistake (a build, a batch job): it is info; a cgroup limit that
//! throttles the process is a mistake of its deployment, a warning.
//!
//! Evidence: the process's CPU over the window against the CPUs it may use, the time its
//! threads were ready and waiting for a CPU (run queue), and its cgroup's throttling.
//!
//! Thresholds: info at 90% of the CPUs it may use; a warning when the cgroup throttled it
//! in 10% of the periods or more; critical at 50%.

use super::super::finding::{ms, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "cpu-saturated",
    title: "The process uses all the CPU it may",
    fix: "Find what burns the CPU (`clrspy report TRACE cpu`) and make it cheaper; otherwise give the process more CPUs, or raise its container's CPU limit (a limit it hits throttles every request).",
    link: "https://learn.microsoft.com/dotnet/core/diagnostics/debug-highcpu",
    check,
};

const INFO_USED: f64 = 0.9;
const WARN_THROTTLED: f64 = 10.0;
const CRITICAL_THROTTLED: f64 = 50.0;

/// The severity of `used` CPUs of the `cpus` the process may use, throttled in `throttled`
/// percent of its cgroup's periods.
fn grade(used: f64, cpus: f64, throttled: f64) -> Option<Severity> {
    if throttled >= CRITICAL_THROTTLED {
        Some(Severity::Critical)
    } else if throttled >= WARN_THROTTLED {
        Some(Severity::Warning)
    } else if used >= INFO_USED * cpus {
        Some(Severity::Info)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let window_ms = input.seconds() * 1000.0;
    if window_ms <= 0.0 {
        return None;
    }
    let cpu_ms = input.threads().process.cpu_ms;
    let throttling = input.threads().cpu_throttling.clone();
    let cpus = throttling
        .as_ref()
        .and_then(|t| t.limit_cpus)
        .or_else(|| input.a.cpu.cpus().map(f64::from))?;
    let used = cpu_ms / window_ms;
    let throttled = throttling.as_ref().map_or(0.0, |t| t.throttled_percent);
    let severity = grade(used, cpus, throttled)?;
    let runq = super::super::super::runqueue::measured_totals(input.a).map(|(_, r, _)| r);
    let said = format!(
        "the process used {used:.2} of the {cpus} CPUs it may use ({:.0}%){}{}",
        used * 100.0 / cpus,
        runq.map(|r| format!("; its threads waited {} for a CPU", ms(r)))
            .unwrap_or_default(),
        throttling
            .as_ref()
            .filter(|t| t.throttled_periods > 0)
            .map(|t| format!("; its cgroup throttled it in {:.0}% of the periods ({})", t.throttled_percent, ms(t.throttled_ms)))
            .unwrap_or_default()
    );
    let mut found = Found::new(severity, said)
        .fact("CPU used", format!("{} over {}", ms(cpu_ms), ms(window_ms)))
        .fact("CPUs it may use", format!("{cpus}"));
    if let Some(r) = runq {
        found = found.fact("waiting for a CPU", ms(r));
    }
    if let Some(t) = &throttling {
        found = found.fact("throttled", format!("{:.1}% of the periods", t.throttled_percent));
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(0.5, 0.5, 60.0), Some(Severity::Critical));
        assert_eq!(grade(0.5, 0.5, 20.0), Some(Severity::Warning));
        // A build using both CPUs: a condition, not a mistake.
        assert_eq!(grade(1.95, 2.0, 0.0), Some(Severity::Info));
        assert_eq!(grade(1.2, 2.0, 0.0), None);
    }
}
