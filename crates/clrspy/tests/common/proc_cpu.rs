//! The test's own view of a process's CPU, to hold clrspy's numbers against: every thread's
//! schedstat polled about every 10 ms, and the readings clrspy stored in a trace.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::clrspy_command;

/// CPU ns of every thread of `pid` from schedstat (the first field: time on CPU).
pub fn poll(pid: u32) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u64>().ok()) else {
            continue;
        };
        let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        if let Some(ns) = s.split_whitespace().next().and_then(|v| v.parse().ok()) {
            out.insert(tid, ns);
        }
    }
    out
}

/// Polls of every thread's CPU, about every 10 ms, while the recording runs.
pub type Polls = Vec<BTreeMap<u64, u64>>;

/// Polls `pid` until `stop` (two minutes at most); a thread that exits keeps its last value.
pub fn poller(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Polls> {
    std::thread::spawn(move || {
        let mut polls: Polls = Vec::new();
        let mut seen = BTreeMap::new();
        let until = Instant::now() + Duration::from_secs(120);
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            seen.extend(poll(pid));
            polls.push(seen.clone());
            std::thread::sleep(Duration::from_millis(10));
        }
        seen.extend(poll(pid));
        polls.push(seen);
        polls
    })
}

/// The poll where `thread` first reached `value`: the moment a reading of it was taken.
pub fn when(polls: &Polls, thread: u64, value: u64) -> Option<usize> {
    polls
        .iter()
        .position(|p| p.get(&thread).is_some_and(|&v| v >= value))
}

/// Each thread's readings in the trace: (CPU over the window, first value, last value), ns;
/// and the window they cover (first to last tick), ns.
pub type Readings = BTreeMap<u64, (u64, u64, u64)>;

pub fn readings(trace: &str) -> (Readings, f64) {
    let out = clrspy_command()
        .args([
            "events",
            trace,
            "--provider",
            "clrspy",
            "--json",
            "--file-order",
        ])
        .output()
        .expect("clrspy events");
    assert!(out.status.success());
    let mut first_tick = None;
    let mut last_tick = 0;
    let mut per: BTreeMap<u64, (Option<u64>, u64, u64)> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let ts = e["timestamp_ns"].as_i64().unwrap();
        match e["name"].as_str() {
            Some("Tick") => {
                first_tick.get_or_insert(ts);
                last_tick = ts;
            }
            Some("ThreadCpu") => {
                let t = e["fields"]["ThreadID"].as_u64().unwrap();
                let ns = e["fields"]["CpuTimeNs"].as_u64().unwrap();
                let r = per.entry(t).or_insert((None, ns, ns));
                // Readings at the first tick are the baseline; a thread first read later
                // was created during the recording (its CPU counts from 0).
                if r.0.is_none() {
                    r.0 = Some(if first_tick.is_none() { ns } else { 0 });
                    r.1 = ns;
                }
                r.2 = ns;
            }
            _ => {}
        }
    }
    let window = (last_tick - first_tick.unwrap_or(last_tick)) as f64;
    let per = per
        .into_iter()
        .map(|(t, (base, first, last))| (t, (last - base.unwrap_or(0), first, last)))
        .collect();
    (per, window)
}
