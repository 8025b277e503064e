//! The process's CPU over the window by who used it ([`ProcessCpu`]): managed threads, the
//! runtime's own threads by role, the recording's cost on the target and the recorder's own.
//! The `threads` report shows it, and so do the time reports' notes and `report FOLDER`.

use clrspy_analysis::cpu::CpuSource;
use clrspy_analysis::threads::ThreadRole;
use clrspy_analysis::{Analysis, StackFilter};
use serde::Serialize;

use crate::units::{percent, round1};

/// The CPU of the threads of one role.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RoleTime {
    /// The role.
    pub(crate) role: ThreadRole,
    /// Its name in words ("tiered JIT").
    pub(crate) label: String,
    /// Threads with CPU.
    pub(crate) threads: u64,
    /// Their CPU, ms.
    pub(crate) cpu_ms: f64,
}

/// The process's CPU over the window, by who used it.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessCpu {
    /// Every thread's CPU, ms.
    pub cpu_ms: f64,
    /// True when it is the threads' CPU readings (exact to a reading interval).
    pub exact: bool,
    /// How CPU was told from waiting (the same word as the `cpu` report's `method`).
    pub method: CpuSource,
    /// Threads running managed code, ms.
    pub(crate) managed_cpu_ms: f64,
    /// The runtime's own threads by role (JIT, GC, EventPipe, ...), busiest first.
    pub(crate) runtime_threads: Vec<RoleTime>,
    /// The recording's own cost on the target (EventPipe's threads), ms.
    pub(crate) overhead_cpu_ms: f64,
    /// The same as a share of the process's CPU, percent.
    pub(crate) overhead_percent: f64,
    /// The recorder's own CPU over the window (clrspy itself, another process), ms: its
    /// threads recording this target where the trace says (`record --children` records many
    /// targets in one process), else its whole process; null when the trace has no such
    /// reading.
    pub(crate) recorder_cpu_ms: Option<f64>,
    /// The same as a share of the target process's CPU, percent.
    pub(crate) recorder_percent: Option<f64>,
    /// The recorder's whole process over the window, ms, when `recorder_cpu_ms` is its
    /// session's (key absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) recorder_process_cpu_ms: Option<f64>,
}

/// Builds the process's CPU by role.
pub(crate) fn process_cpu(a: &Analysis) -> ProcessCpu {
    let profile = a.profile(&StackFilter::default());
    let ms = a.sampling_interval_ns as f64 / 1e6;
    let mut roles: Vec<RoleTime> = Vec::new();
    let (mut total, mut managed) = (0.0, 0.0);
    for t in profile.threads(&a.symbols) {
        let cpu = t.cpu * ms;
        total += cpu;
        let role = a.thread_role(t.thread);
        if role == ThreadRole::Managed {
            managed += cpu;
            continue;
        }
        if cpu <= 0.0 {
            continue;
        }
        match roles.iter_mut().find(|r| r.role == role) {
            Some(r) => {
                r.threads += 1;
                r.cpu_ms += cpu;
            }
            None => roles.push(RoleTime {
                role,
                label: role.label().into(),
                threads: 1,
                cpu_ms: cpu,
            }),
        }
    }
    roles.sort_by(|x, y| y.cpu_ms.total_cmp(&x.cpu_ms).then(x.role.cmp(&y.role)));
    let overhead: f64 = roles
        .iter()
        .filter(|r| r.role.is_overhead())
        .map(|r| r.cpu_ms)
        .sum();
    for r in &mut roles {
        r.cpu_ms = round1(r.cpu_ms);
    }
    let session = a.cpu.recorder_session_cpu_ns().map(|ns| ns as f64 / 1e6);
    let process = a.cpu.recorder_cpu_ns().map(|ns| ns as f64 / 1e6);
    let recorder = session.or(process);
    ProcessCpu {
        cpu_ms: round1(total),
        exact: a.cpu.source() == CpuSource::ThreadCpuTimes,
        method: a.cpu.source(),
        managed_cpu_ms: round1(managed),
        runtime_threads: roles,
        overhead_cpu_ms: round1(overhead),
        overhead_percent: percent(overhead, total),
        recorder_cpu_ms: recorder.map(round1),
        recorder_percent: recorder.map(|r| percent(r, total)),
        recorder_process_cpu_ms: session.and(process).map(round1),
    }
}

impl ProcessCpu {
    /// "runtime threads: tiered JIT 1.4 s, GC 0.3 s", or nothing.
    pub(crate) fn runtime_line(&self) -> Option<String> {
        let parts: Vec<String> = self
            .runtime_threads
            .iter()
            .filter(|r| r.role.is_runtime())
            .map(|r| format!("{} {}", r.label, seconds(r.cpu_ms)))
            .collect();
        (!parts.is_empty()).then(|| format!("runtime threads: {}", parts.join(", ")))
    }

    /// "recording overhead on the target: EventPipe threads 2.2 s (9.5% of the process's
    /// CPU); clrspy itself 0.3 s (1.2%)", or nothing.
    pub(crate) fn overhead_line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.overhead_cpu_ms > 0.0 {
            parts.push(format!(
                "recording overhead on the target: EventPipe threads {} ({:.1}% of the process's CPU)",
                seconds(self.overhead_cpu_ms),
                self.overhead_percent
            ));
        }
        if let (Some(ms), Some(pct)) = (self.recorder_cpu_ms, self.recorder_percent) {
            let whole = self
                .recorder_process_cpu_ms
                .filter(|&p| p > ms * 1.5 + 100.0)
                .map(|p| {
                    format!(
                        "; its whole process {} (it recorded other processes too)",
                        seconds(p)
                    )
                })
                .unwrap_or_default();
            parts.push(format!(
                "clrspy itself {} ({pct:.1}% of the target's CPU{whole})",
                seconds(ms)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A duration in ms as "1.4 s" or "85 ms".
fn seconds(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1e3)
    } else {
        format!("{ms:.0} ms")
    }
}
