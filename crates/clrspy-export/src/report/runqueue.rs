//! Waiting for a CPU: the threads' run-queue time and the CPU throttling of the target's
//! cgroup, as numbers and as the line the summary, threads and waits reports print ("my code
//! is slow" is often "my code was not allowed to run").

use clrspy_analysis::Analysis;
use serde::Serialize;

use crate::units::{percent, round1};

/// Where the split of waiting into run queue and blocked comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RunqueueSource {
    /// Measured: each thread's run-queue time from schedstat, read while recording.
    Schedstat,
    /// Estimated from the samples: waiting caught in managed code outside any known blocking
    /// call (traces without run-queue readings).
    Estimate,
}

impl RunqueueSource {
    /// The source of `a`'s run-queue times.
    pub(crate) fn of(a: &Analysis) -> RunqueueSource {
        if a.cpu.has_runqueue() {
            RunqueueSource::Schedstat
        } else {
            RunqueueSource::Estimate
        }
    }

    /// "measured" or "estimated from samples".
    pub(crate) fn words(self) -> &'static str {
        match self {
            RunqueueSource::Schedstat => "measured",
            RunqueueSource::Estimate => "estimated from samples",
        }
    }
}

/// The CPU throttling of the target's cgroup over the window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct CpuThrottling {
    /// Enforcement periods that elapsed with the group runnable.
    pub(crate) periods: u64,
    /// Periods in which the group used up its quota and was held off the CPU.
    pub(crate) throttled_periods: u64,
    /// The same as a share of `periods`, percent.
    pub(crate) throttled_percent: f64,
    /// Time the group was held off the CPU by throttling, ms.
    pub(crate) throttled_ms: f64,
    /// The limit in CPUs (quota / period); null when the group has none.
    pub(crate) limit_cpus: Option<f64>,
    /// The group's directory, as the recorder saw it.
    pub(crate) cgroup: String,
    /// 1 or 2.
    pub(crate) cgroup_version: u16,
}

/// The throttling of `a`'s trace; `None` without cgroup readings.
pub(crate) fn throttling(a: &Analysis) -> Option<CpuThrottling> {
    let t = a.cpu.throttling()?;
    Some(CpuThrottling {
        periods: t.periods,
        throttled_periods: t.throttled_periods,
        throttled_percent: percent(t.throttled_periods as f64, t.periods as f64),
        throttled_ms: round1(t.throttled_ns as f64 / 1e6),
        limit_cpus: t
            .quota_us
            .filter(|_| t.period_us > 0)
            .map(|q| (q as f64 / t.period_us as f64 * 100.0).round() / 100.0),
        cgroup: t.cgroup,
        cgroup_version: t.cgroup_version,
    })
}

/// Every thread's measured time over the window, summed, ms: (CPU, run queue, lifetime);
/// `None` when the readings have no run-queue time.
pub(crate) fn measured_totals(a: &Analysis) -> Option<(f64, f64, f64)> {
    if !a.cpu.has_runqueue() {
        return None;
    }
    let (mut cpu, mut runq, mut life) = (0.0, 0.0, 0.0);
    for (_, t) in a.cpu.thread_times() {
        cpu += t.cpu_ns;
        runq += t.runqueue_ns;
        life += t.lifetime_ns;
    }
    Some((cpu / 1e6, runq / 1e6, life / 1e6))
}

/// A duration in ms as "4.2 s" or "85 ms".
fn seconds(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1e3)
    } else {
        format!("{ms:.0} ms")
    }
}

/// "throttled 31% of periods (limit 0.5 CPU), 4.2 s waiting for a CPU (38% of the time
/// threads were ready to run)", with the advice when it matters; nothing when there is
/// neither run-queue time nor throttling to speak of. `cpu_ms`, `runq_ms`: the threads' CPU and
/// run-queue time.
pub(crate) fn lines(cpu_ms: f64, runq_ms: Option<f64>, t: Option<&CpuThrottling>) -> Vec<String> {
    let mut parts = Vec::new();
    let throttled = t.is_some_and(|t| t.throttled_periods > 0);
    if let Some(t) = t.filter(|_| throttled) {
        let limit = t
            .limit_cpus
            .map(|c| format!(", limit {c} CPU"))
            .unwrap_or_default();
        parts.push(format!(
            "throttled {:.0}% of periods ({} of {}{limit}; held off the CPU {})",
            t.throttled_percent,
            t.throttled_periods,
            t.periods,
            seconds(t.throttled_ms)
        ));
    }
    let queued = runq_ms.filter(|&r| r > 0.0);
    let share = queued.map_or(0.0, |r| percent(r, r + cpu_ms));
    if let Some(r) = queued {
        parts.push(format!(
            "{} waiting for a CPU ({share:.0}% of the time threads were ready to run)",
            seconds(r)
        ));
    }
    if parts.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("CPU contention: {}", parts.join(", "))];
    if throttled || share >= 10.0 {
        out.push(
            "  threads were ready but not allowed to run (the CPU limit, or more runnable threads than CPUs): part of the slowness is waiting for a CPU, not the code"
                .into(),
        );
    }
    out
}

/// The advice under the contention line once the process's own load is known: `used` CPUs
/// of the `cpus` it may use over the window; `hottest` is the heaviest CPU frame and its share.
/// A process that used most of its CPUs is CPU-bound (its own threads queue for the CPUs);
/// one that used few was held off by others (other processes, or the CPU limit).
pub(crate) fn load_line(used: f64, cpus: f64, hottest: Option<(&str, f64)>) -> String {
    if used >= 0.85 * cpus {
        let by = hottest.map_or_else(
            || "record CPU samples to see by what".to_string(),
            |(m, pct)| {
                format!("most of it in {m} ({pct:.1}% of CPU): less work there is what helps")
            },
        );
        format!(
            "  the process itself used {used:.2} of {cpus} CPUs: it is CPU-bound, its own threads queue for the CPUs; {by}"
        )
    } else {
        format!(
            "  the process used {used:.2} of {cpus} CPUs: other processes (or the CPU limit) kept its ready threads waiting; part of the slowness is waiting for a CPU, not the code"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saturated_process_is_called_cpu_bound_and_by_what() {
        let l = load_line(1.79, 2.0, Some(("App.Render", 57.6)));
        assert!(l.contains("used 1.79 of 2 CPUs: it is CPU-bound"), "{l}");
        assert!(l.contains("App.Render (57.6% of CPU)"), "{l}");
        assert!(load_line(1.79, 2.0, None).contains("record CPU samples"));
        let l = load_line(0.82, 2.0, Some(("App.Render", 57.6)));
        assert!(l.contains("used 0.82 of 2 CPUs: other processes"), "{l}");
        assert!(!l.contains("CPU-bound"), "{l}");
    }

    #[test]
    fn the_line_says_throttling_and_run_queue_time() {
        let t = CpuThrottling {
            periods: 100,
            throttled_periods: 31,
            throttled_percent: 31.0,
            throttled_ms: 2100.0,
            limit_cpus: Some(0.5),
            cgroup: "/sys/fs/cgroup/cpu/x".into(),
            cgroup_version: 1,
        };
        let l = lines(6800.0, Some(4200.0), Some(&t));
        assert_eq!(
            l[0],
            "CPU contention: throttled 31% of periods (31 of 100, limit 0.5 CPU; held off the CPU 2.1 s), 4.2 s waiting for a CPU (38% of the time threads were ready to run)"
        );
        assert_eq!(l.len(), 2);
        // A little run-queue time, no throttling: said, without the advice.
        let quiet = CpuThrottling {
            throttled_periods: 0,
            ..t
        };
        assert_eq!(lines(1000.0, Some(5.0), Some(&quiet)).len(), 1);
        assert!(lines(1000.0, None, None).is_empty());
        assert!(lines(1000.0, Some(0.0), Some(&quiet)).is_empty());
    }
}
