//! Threads and the thread pool: worker counts over time (from the pool's start/stop and
//! adjustment events), hill-climbing adjustments and starvation, and thread names (from
//! clrspy's thread readings). The per-thread running/waiting split comes from the samples
//! (see [`crate::profile::StackProfile::threads`]).

use rustc_hash::FxHashMap;

use crate::event::{runtime, EventCtx};

/// Points kept for the worker-count timeline (older points are thinned).
const MAX_POINTS: usize = 2000;

/// One point of the worker count.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct WorkerPoint {
    /// ms since the trace started.
    pub ms: f64,
    /// Active worker threads.
    pub workers: u64,
}

/// The threads model.
#[derive(Debug, Default)]
pub struct ThreadModel {
    /// Worker counts over time.
    pub timeline: Vec<WorkerPoint>,
    /// Hill-climbing adjustments by reason.
    pub adjustments: FxHashMap<String, u64>,
    /// Adjustments made because the pool was starved.
    pub starvation: u64,
    /// Highest worker count seen.
    pub max_workers: u64,
    /// Thread names by OS thread id.
    pub names: FxHashMap<u64, String>,
    /// Threads the runtime created during the trace.
    pub created: u64,
}

fn adjustment_reason(r: u64) -> String {
    match r {
        0 => "Warmup",
        1 => "Initializing",
        2 => "RandomMove",
        3 => "ClimbingMove",
        4 => "ChangePoint",
        5 => "Stabilizing",
        6 => "Starvation",
        7 => "ThreadTimedOut",
        8 => "CooperativeBlocking",
        other => return format!("Reason{other}"),
    }
    .to_string()
}

impl ThreadModel {
    /// An empty model.
    pub fn new() -> ThreadModel {
        ThreadModel::default()
    }

    fn point(&mut self, ms: f64, workers: u64) {
        self.max_workers = self.max_workers.max(workers);
        if self.timeline.last().is_some_and(|p| p.workers == workers) {
            return;
        }
        if self.timeline.len() >= MAX_POINTS {
            // Keep every other point: the shape stays, memory does not grow.
            let mut i = 0;
            self.timeline.retain(|_| {
                i += 1;
                i % 2 == 0
            });
        }
        self.timeline.push(WorkerPoint { ms, workers });
    }

    /// A thread pool or thread event.
    pub fn on_event(&mut self, ev: &EventCtx<'_>) {
        let f = ev.fields;
        let ms = ev.ts_ns as f64 / 1e6;
        match ev.id {
            runtime::TP_WORKER_START | runtime::TP_WORKER_STOP | runtime::TP_WORKER_WAIT => {
                if let Some(n) = f.u64("ActiveWorkerThreadCount") {
                    self.point(ms, n);
                }
            }
            runtime::TP_ADJUSTMENT => {
                let reason = adjustment_reason(f.u64("Reason").unwrap_or(u64::MAX));
                if reason == "Starvation" {
                    self.starvation += 1;
                }
                *self.adjustments.entry(reason).or_default() += 1;
                if let Some(n) = f.u64("NewWorkerThreadCount") {
                    self.point(ms, n);
                }
            }
            runtime::THREAD_CREATED | runtime::THREAD_CREATING => self.created += 1,
            _ => {}
        }
    }

    /// A thread's name (from clrspy's readings).
    pub fn name(&mut self, thread: u64, name: &str) {
        if !name.is_empty() {
            self.names.insert(thread, name.to_string());
        }
    }
}
