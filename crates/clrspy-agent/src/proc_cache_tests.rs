//! The cache over a scan and an ask that count their calls, with real processes (this test
//! and `sleep` children) so start times and ends are the kernel's.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;

struct Fake {
    pids: Arc<Mutex<Vec<u32>>>,
    scans: Arc<AtomicUsize>,
    asks: Arc<AtomicUsize>,
    cache: ProcCache,
}

fn ep(pid: u32) -> Endpoint {
    Endpoint {
        pid,
        path: PathBuf::from(format!("/tmp/dotnet-diagnostic-{pid}-1-socket")),
    }
}

/// A cache whose scan finds `pids` and whose ask takes `delay`, failing for pids in `failing`.
fn fake(pids: Vec<u32>, delay: Duration, failing: Vec<u32>) -> Fake {
    let pids = Arc::new(Mutex::new(pids));
    let (scans, asks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (p, s, a) = (pids.clone(), scans.clone(), asks.clone());
    let cache = ProcCache::new(
        Box::new(move || {
            s.fetch_add(1, Ordering::SeqCst);
            p.lock().unwrap().iter().map(|&pid| ep(pid)).collect()
        }),
        Box::new(move |e| {
            a.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(delay);
            if failing.contains(&e.pid) {
                return Err(format!("pid {} did not answer", e.pid));
            }
            Ok(ProcessInfo {
                pid: e.pid,
                runtime_cookie: format!("{:032x}", e.pid),
                command_line: format!("app {}", e.pid),
                entrypoint_assembly: Some(format!("App{}", e.pid)),
                ..ProcessInfo::default()
            })
        }),
    );
    Fake {
        pids,
        scans,
        asks,
        cache,
    }
}

fn sleeper() -> Child {
    Command::new("sleep").arg("30").spawn().unwrap()
}

fn end(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

#[test]
fn each_runtime_is_asked_once_and_listed_as_it_said() {
    let (a, b) = (sleeper(), sleeper());
    let f = fake(vec![b.id(), a.id()], Duration::ZERO, vec![]);
    assert!(f.cache.known_listing().is_none(), "not scanned yet");
    assert!(!f.cache.all_known());
    assert!(f.cache.known_listing().is_none(), "not asked yet");
    for _ in 0..5 {
        let rows = f.cache.listing();
        let pids: Vec<u32> = rows.iter().map(|r| r.pid).collect();
        let mut want = vec![a.id(), b.id()];
        want.sort();
        assert_eq!(pids, want, "by pid");
        assert_eq!(rows[0].name, format!("App{}", rows[0].pid));
        assert_eq!(rows[0].command_line, format!("app {}", rows[0].pid));
    }
    assert_eq!(f.asks.load(Ordering::SeqCst), 2);
    assert!(f.cache.all_known());
    assert_eq!(f.cache.known_listing().map(|l| l.len()), Some(2));
    // Within RESCAN the scan is reused.
    assert_eq!(f.scans.load(Ordering::SeqCst), 1);
    std::thread::sleep(RESCAN);
    f.cache.listing();
    assert_eq!(f.scans.load(Ordering::SeqCst), 2);
    assert_eq!(
        f.asks.load(Ordering::SeqCst),
        2,
        "still known after a rescan"
    );
    end(a);
    end(b);
}

#[test]
fn an_ended_process_leaves_at_once_and_a_new_one_within_a_rescan() {
    let (a, b) = (sleeper(), sleeper());
    let (pa, pb) = (a.id(), b.id());
    let f = fake(vec![pa], Duration::ZERO, vec![]);
    assert_eq!(f.cache.endpoints(), vec![ep(pa)]);
    f.pids.lock().unwrap().push(pb);
    // Not yet scanned; asking for it by pid scans again.
    assert_eq!(f.cache.endpoint(pb), Some(ep(pb)));
    end(a);
    // Gone before the next scan is due: left out, and its entry dropped.
    assert_eq!(f.cache.endpoints(), vec![ep(pb)]);
    assert_eq!(f.cache.endpoint(pa), None);
    assert_eq!(f.cache.listing().len(), 1);
    end(b);
}

#[test]
fn concurrent_callers_share_one_ask() {
    let a = sleeper();
    let f = Arc::new(fake(vec![a.id()], Duration::from_millis(200), vec![]));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || f.cache.listing())
        })
        .collect();
    for t in threads {
        let rows = t.join().unwrap();
        assert!(rows[0].info.is_ok());
    }
    assert_eq!(f.asks.load(Ordering::SeqCst), 1);
    assert!(f.cache.info(&ep(a.id())).is_ok());
    assert_eq!(f.asks.load(Ordering::SeqCst), 1);
    end(a);
}

#[test]
fn a_listing_waiting_for_another_ask_starts_none() {
    let a = sleeper();
    let f = Arc::new(fake(vec![a.id()], Duration::from_millis(300), vec![]));
    assert!(f.cache.needs_ask());
    let g = f.clone();
    let first = std::thread::spawn(move || g.cache.listing());
    std::thread::sleep(Duration::from_millis(100));
    // Under way: a second listing would wait for it.
    assert!(!f.cache.needs_ask());
    assert!(first.join().unwrap()[0].info.is_ok());
    assert!(!f.cache.needs_ask());
    assert_eq!(f.asks.load(Ordering::SeqCst), 1);
    end(a);
}

#[test]
fn no_listing_before_the_first_scan_ends() {
    let a = sleeper();
    let f = Arc::new(fake(vec![a.id()], Duration::ZERO, vec![]));
    // The first scan under way (its lock held): nothing is known yet, so no quick answer.
    let held = f.cache.scanning.lock().unwrap();
    assert!(f.cache.known_listing().is_none());
    drop(held);
    assert_eq!(f.cache.listing().len(), 1);
    // A later scan under way: the last one serves.
    std::thread::sleep(RESCAN);
    let held = f.cache.scanning.lock().unwrap();
    assert_eq!(f.cache.known_listing().map(|l| l.len()), Some(1));
    drop(held);
    end(a);
}

#[test]
fn a_failed_ask_is_tried_again_after_a_while() {
    let a = sleeper();
    let f = fake(vec![a.id()], Duration::ZERO, vec![a.id()]);
    let rows = f.cache.listing();
    assert_eq!(rows[0].info, Err(format!("pid {} did not answer", a.id())));
    // Its name and command line come from the kernel.
    assert_eq!(rows[0].name, "sleep");
    assert_eq!(rows[0].command_line, "sleep 30");
    f.cache.listing();
    assert_eq!(f.asks.load(Ordering::SeqCst), 1);
    std::thread::sleep(RETRY_FAILED);
    assert!(!f.cache.all_known());
    f.cache.listing();
    assert_eq!(f.asks.load(Ordering::SeqCst), 2);
    end(a);
}

#[test]
fn a_reused_pid_is_a_new_process() {
    // This process, remembered with another start time, is asked again.
    let me = std::process::id();
    let f = fake(vec![me], Duration::ZERO, vec![]);
    f.cache.listing();
    lock(&f.cache.seen).known.get_mut(&me).unwrap().start += 1;
    assert!(f.cache.known_listing().is_none_or(|l| l.is_empty()));
    // Dropped as another process (between scans), found anew by the next scan: asked again.
    f.cache.listing();
    std::thread::sleep(RESCAN);
    assert_eq!(f.cache.listing().len(), 1);
    assert_eq!(f.asks.load(Ordering::SeqCst), 2);
}
