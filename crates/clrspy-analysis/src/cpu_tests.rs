//! Unit tests of the CPU model: measured CPU shared among samples, late samples, the
//! window, the heuristic's bounds.

use super::*;

#[test]
fn blocking_frames() {
    assert!(is_blocking_frame("System.Threading.Thread.Join"));
    assert!(is_blocking_frame("System.Threading.Thread.Join(int32)"));
    assert!(is_blocking_frame("System.Threading.Monitor.Enter"));
    assert!(is_blocking_frame("System.Threading.Monitor.Enter_Slowpath"));
    assert!(is_blocking_frame(
        "System.Threading.WaitSubsystem+ThreadWaitInfo.Wait"
    ));
    assert!(!is_blocking_frame("System.Threading.Thread.JoinMe"));
    assert!(!is_blocking_frame("App.Cpu.Burn"));
}

#[test]
fn measured_cpu_splits_samples_exactly() {
    let mut m = CpuModel::new(1_000_000);
    let s = Some(StackId(0));
    m.thread_cpu(0, 1, 1_000);
    m.thread_cpu(0, 2, 5_000);
    m.tick(0);
    // Thread 1 burns the whole 20 ms; thread 2 only a quarter of it.
    for k in 1..=20 {
        m.sample(k * 1_000_000, 1, s, true);
        m.sample(k * 1_000_000, 2, s, false);
    }
    m.thread_cpu(20_000_000, 1, 1_000 + 20_000_000);
    m.thread_cpu(20_000_000, 2, 5_000 + 5_000_000);
    m.tick(20_000_000);
    // A sample after the last tick with no tick to follow: heuristic.
    m.sample(25_000_000, 1, s, true);
    m.finish();
    let w1 = m.agg[&(1, s)];
    let w2 = m.agg[&(2, s)];
    assert_eq!(w1.samples, 21);
    assert!((w1.cpu - 20.0).abs() < 1e-9 && w1.wait.abs() < 1e-9);
    assert_eq!(w1.managed, 1);
    assert!((w2.cpu - 5.0).abs() < 1e-9 && (w2.wait - 15.0).abs() < 1e-9);
    // One word per kind of evidence: readings throughout are measured, whatever the few
    // samples after the last reading (before, such a sample made it "mixed" in one recording
    // and not in the next).
    assert_eq!(m.source(), CpuSource::ThreadCpuTimes);
}

#[test]
fn samples_after_the_last_tick_do_not_pile_up() {
    let mut m = CpuModel::new(1_000_000);
    let s = Some(StackId(0));
    for k in 0..10 {
        m.thread_cpu(k * 20_000_000, 1, k as u64 * 10_000_000);
        m.tick(k * 20_000_000);
    }
    // The readings stop; a million samples follow, 1 ms apart.
    let last_tick = 9 * 20_000_000;
    let mut max_pending = 0;
    for k in 1..=1_000_000i64 {
        m.sample(last_tick + k * 1_000_000, 1, s, true);
        max_pending = max_pending.max(m.pending_len());
    }
    // At most the pending window's worth (10 s of 1 ms samples) waits.
    assert!(max_pending <= 10_001, "{max_pending} samples pending");
    m.finish();
    let w = m.agg[&(1, s)];
    assert_eq!(w.samples, 1_000_000);
    assert_eq!(w.managed, 1_000_000);
    assert!(m.stale_samples() >= 1_000_000 - 10_001);
    assert_eq!(m.pending_len(), 0);
    // The readings stopped while the samples went on: measured, then estimated.
    assert_eq!(m.source(), CpuSource::Mixed);
}

#[test]
fn a_burst_of_samples_at_one_time_is_bounded_too() {
    let mut m = CpuModel::new(1_000_000);
    m.tick(0);
    for _ in 0..(MAX_PENDING + 10) {
        m.sample(5, 1, None, false);
    }
    assert!(m.pending_len() <= MAX_PENDING);
    m.finish();
    assert_eq!(m.agg[&(1, None)].external as usize, MAX_PENDING + 10);
}

#[test]
fn a_thread_without_readings_in_an_interval_did_not_run() {
    let mut m = CpuModel::new(1_000_000);
    m.thread_cpu(0, 7, 100);
    m.tick(0);
    m.tick(10_000_000);
    m.sample(5_000_000, 7, None, false);
    m.finish();
    // Its one sample stands for the whole 10 ms interval, all of it waiting.
    let w = m.agg[&(7, None)];
    assert_eq!((w.cpu, w.wait), (0.0, 10.0));
    assert_eq!(m.source(), CpuSource::ThreadCpuTimes);
}

/// Sums a thread's CPU and waiting weights over its stacks, plus its unsampled CPU.
fn totals(m: &CpuModel, thread: u64) -> (f64, f64) {
    let (mut c, mut w) = (0.0, 0.0);
    for (t, _, x) in m.weights() {
        if t == thread {
            c += x.cpu;
            w += x.wait;
        }
    }
    let u: f64 = m.unsampled().filter(|x| x.0 == thread).map(|x| x.1).sum();
    (c + u, w)
}

#[test]
fn a_slow_sampler_does_not_shrink_measured_cpu() {
    // Nominal 1 ms, real period 2 ms, ticks every 20 ms for 2 s; thread 1 runs 75% of
    // the time, thread 2 (never sampled: a runtime thread) 10%, thread 3 idles in a wait.
    let mut m = CpuModel::new(1_000_000);
    let (a, b) = (Some(StackId(1)), Some(StackId(2)));
    let (mut c1, mut c2) = (5_000u64, 0u64);
    for t in [1, 2, 3] {
        m.thread_cpu(0, t, if t == 1 { c1 } else { 0 });
    }
    m.tick(0);
    for k in 1..=100i64 {
        let end = k * 20_000_000;
        for s in 0..10 {
            let ts = end - 20_000_000 + s * 2_000_000 + 1;
            m.sample(ts, 1, if s % 2 == 0 { a } else { b }, true);
            m.sample(ts, 3, b, false);
        }
        c1 += 15_000_000;
        c2 += 2_000_000;
        m.thread_cpu(end, 1, c1);
        m.thread_cpu(end, 2, c2);
        m.tick(end);
    }
    m.finish();
    let (cpu1, wait1) = totals(&m, 1);
    assert!((cpu1 - 1500.0).abs() < 1e-6, "{cpu1}");
    assert!((wait1 - 500.0).abs() < 1e-6, "{wait1}");
    assert!((m.agg[&(1, a)].cpu - 750.0).abs() < 1e-6);
    let (cpu2, wait2) = totals(&m, 2);
    assert!((cpu2 - 200.0).abs() < 1e-6 && wait2 == 0.0);
    assert!(!m.was_sampled(2) && m.was_sampled(1));
    let (cpu3, wait3) = totals(&m, 3);
    assert!(cpu3 == 0.0 && (wait3 - 2000.0).abs() < 1e-6);
    assert_eq!(m.source(), CpuSource::ThreadCpuTimes);
    let p = m.measured_period_ns().unwrap();
    assert!((1_990_000..=2_010_000).contains(&p), "{p}");
    let measured: FxHashMap<u64, f64> = m.measured_cpu_ns().collect();
    assert_eq!(measured[&1], 1_500_000_000.0);
}

#[test]
fn samples_flushed_after_later_ticks_still_share_their_interval() {
    let mut m = CpuModel::new(1_000_000);
    let s = Some(StackId(4));
    m.thread_cpu(0, 1, 0);
    m.tick(0);
    for k in 1..=10i64 {
        m.thread_cpu(k * 20_000_000, 1, k as u64 * 10_000_000);
        m.tick(k * 20_000_000);
    }
    // The runtime flushes the first interval's samples 180 ms late.
    for j in 0..4 {
        m.sample(1_000_000 + j * 5_000_000, 1, s, true);
    }
    // A thread with CPU but no sample in an interval keeps it on its last stack.
    m.finish();
    let w = m.agg[&(1, s)];
    assert_eq!(w.samples, 4);
    assert!((w.cpu - 100.0).abs() < 1e-6, "{}", w.cpu);
    assert!((w.wait - 10.0).abs() < 1e-6, "{}", w.wait);
    assert_eq!(m.unmeasured_samples(), 0);
}

#[test]
fn the_window_counts_only_its_intervals() {
    let mut m = CpuModel::new(1_000_000).with_window(Some(100_000_000), Some(200_000_000));
    m.thread_cpu(0, 9, 0);
    m.tick(0);
    for k in 1..=15i64 {
        m.thread_cpu(k * 20_000_000, 9, k as u64 * 20_000_000);
        m.tick(k * 20_000_000);
    }
    m.finish();
    // Intervals with middles in [100, 200) ms: (100,120] .. (180,200] = 5 of 20 ms.
    let measured: FxHashMap<u64, f64> = m.measured_cpu_ns().collect();
    assert_eq!(measured[&9], 100_000_000.0);
    assert!((totals(&m, 9).0 - 100.0).abs() < 1e-6);
}

#[test]
fn a_runtime_worker_sampled_once_keeps_its_cpu_as_its_own() {
    // The JIT thread and a managed thread, each caught once in managed code, then running
    // for four intervals without a sample.
    let mut m = CpuModel::new(1_000_000);
    let s = Some(StackId(3));
    m.thread_named(1, ".NET Tiered Compilation Worker");
    m.thread_named(2, ".NET TP Worker");
    for t in [1, 2] {
        m.thread_cpu(0, t, 0);
    }
    m.tick(0);
    for t in [1, 2] {
        m.sample(5_000_000, t, s, true);
    }
    for k in 1..=5i64 {
        for t in [1, 2] {
            m.thread_cpu(k * 20_000_000, t, k as u64 * 10_000_000);
        }
        m.tick(k * 20_000_000);
    }
    m.finish();
    // The managed thread's CPU goes to its last stack; the JIT's stays the JIT's.
    assert!((m.agg[&(2, s)].cpu - 50.0).abs() < 1e-9);
    assert!((m.agg[&(1, s)].cpu - 10.0).abs() < 1e-9);
    let unsampled: FxHashMap<u64, f64> = m.unsampled().collect();
    assert!((unsampled[&1] - 40.0).abs() < 1e-9, "{unsampled:?}");
    assert!(!unsampled.contains_key(&2));
}

#[test]
fn run_queue_time_is_measured_waiting_and_splits_lifetimes() {
    let mut m = CpuModel::new(1_000_000);
    let s = Some(StackId(0));
    assert!(!m.has_runqueue());
    m.thread_reading(0, 1, 0, Some(0), false);
    m.thread_reading(0, 2, 0, Some(0), false);
    m.tick(0);
    for k in 1..=20 {
        m.sample(k * 1_000_000, 1, s, true);
    }
    // Thread 1: 8 ms on CPU, 10 ms waiting for one, 2 ms blocked. Thread 2 (never sampled):
    // 1 ms on CPU, the rest blocked, then gone.
    m.thread_reading(20_000_000, 1, 8_000_000, Some(10_000_000), false);
    m.thread_reading(20_000_000, 2, 1_000_000, Some(0), true);
    m.tick(20_000_000);
    m.finish();
    assert!(m.has_runqueue());
    let w = m.agg[&(1, s)];
    assert!((w.cpu - 8.0).abs() < 1e-9 && (w.wait - 12.0).abs() < 1e-9);
    assert!((w.runq - 10.0).abs() < 1e-9, "{w:?}");
    let times: FxHashMap<u64, crate::runqueue::ThreadTime> = m.thread_times().collect();
    let t1 = times[&1];
    assert_eq!(
        (t1.lifetime_ns, t1.cpu_ns, t1.runqueue_ns),
        (20e6, 8e6, 10e6)
    );
    assert_eq!(t1.blocked_ns(), 2e6);
    assert_eq!(times[&2].blocked_ns(), 19e6);
    assert_eq!(m.throttling(), None);
}
