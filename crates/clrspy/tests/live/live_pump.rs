//! The live pipeline against a real runtime: an event consumer on the pump's event tap asks for
//! a dump (handed to the caller) and then to stop; the recording ends there, rundown included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

use clrspy_collect::{Action, EventConsumer, LiveFeeds, Recording, StopReason, StopSignal};
use common::{json, live, start};
use diagnostics_client::{DumpType, Provider, SessionConfig, DEFAULT_RUNDOWN_KEYWORD};

/// Asks for a dump at the first sample, and to stop at the 200th.
struct SampleWatch(u64);

impl EventConsumer for SampleWatch {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if ev.metadata.provider != "Microsoft-DotNETCore-SampleProfiler" {
            return Action::Continue;
        }
        self.0 += 1;
        match self.0 {
            1 => Action::Dump {
                kind: DumpType::Normal,
                reason: "first sample".into(),
            },
            200 => Action::Stop {
                reason: "200 samples seen".into(),
            },
            _ => Action::Continue,
        }
    }
}

#[test]
fn a_consumer_stops_a_live_recording_and_asks_for_a_dump() {
    if !live() {
        return;
    }
    let w = start("cpu", &["--seconds", "60"]);
    let ep = clrspy_collect::endpoint_for_pid(w.1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.nettrace");
    let config = samples_config();
    let stop = StopSignal::new();
    let rec = Recording {
        config: &config,
        out: Some(&out),
        // A bound, never reached: 200 samples take about 2 s.
        duration: Some(Duration::from_secs(50)),
        stop: &stop,
        thread_cpu: None,
        ring: None,
    };
    let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = requests.clone();
    let worker = clrspy_collect::Worker::start("test-requests", 8, move |a: Action| {
        r.lock().unwrap().push(a)
    });
    let summary = clrspy_collect::record_live(
        &ep,
        &rec,
        LiveFeeds {
            consumers: vec![Box::new(SampleWatch(0))],
            requests: Some(worker.handle()),
            ..LiveFeeds::default()
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(summary.reason, StopReason::Triggered, "{summary:?}");
    assert_eq!(summary.trigger.as_deref(), Some("200 samples seen"));
    assert!(summary.complete, "{summary:?}");
    worker.finish();
    assert_eq!(
        *requests.lock().unwrap(),
        vec![Action::Dump {
            kind: DumpType::Normal,
            reason: "first sample".into()
        }]
    );
    let info = json(&["info", out.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true, "{info}");
    // The rundown came after the stop: method names are there.
    let names: Vec<&str> = info["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("Method/DCStop")),
        "{names:?}"
    );
}

/// Events per (provider, id) a consumer saw, with whether it was told the header first and
/// how it ended; sent at the end.
type Census = (bool, BTreeMap<(String, u32), u64>, clrspy_collect::End);

struct Counter {
    header: bool,
    seen: BTreeMap<(String, u32), u64>,
    done: mpsc::Sender<Census>,
}

impl EventConsumer for Counter {
    fn start(&mut self, _header: &nettrace::TraceHeader) {
        self.header = true;
    }

    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        *self
            .seen
            .entry((ev.provider().to_string(), ev.event_id()))
            .or_default() += 1;
        Action::Continue
    }

    fn end(&mut self, end: &clrspy_collect::End) {
        let _ = self
            .done
            .send((self.header, std::mem::take(&mut self.seen), end.clone()));
    }
}

fn counter() -> (Counter, mpsc::Receiver<Census>) {
    let (tx, rx) = mpsc::channel();
    (
        Counter {
            header: false,
            seen: BTreeMap::new(),
            done: tx,
        },
        rx,
    )
}

fn samples_config() -> SessionConfig {
    SessionConfig {
        providers: vec![Provider {
            name: "Microsoft-DotNETCore-SampleProfiler".into(),
            keywords: 0,
            level: 5,
            arguments: None,
        }],
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        ..SessionConfig::default()
    }
}

#[test]
fn the_live_view_sees_every_event_the_file_holds_clrspys_included() {
    if !live() {
        return;
    }
    let w = start("cpu", &["--seconds", "60"]);
    let ep = clrspy_collect::endpoint_for_pid(w.1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.nettrace");
    let config = samples_config();
    let stop = StopSignal::new();
    let rec = Recording {
        config: &config,
        out: Some(&out),
        duration: Some(Duration::from_secs(3)),
        stop: &stop,
        thread_cpu: Some(Duration::from_millis(50)),
        ring: None,
    };
    let (c, rx) = counter();
    let summary = clrspy_collect::record_live(
        &ep,
        &rec,
        LiveFeeds {
            consumers: vec![Box::new(c)],
            ..LiveFeeds::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let (header, seen, end) = rx.recv().unwrap();
    assert!(header, "told the header first");
    assert_eq!(end.error, None);
    assert_eq!(
        summary.tap_lost, None,
        "a 3 s sample recording never falls behind"
    );
    let bytes = std::fs::read(&out).unwrap();
    let mut r = nettrace::TraceReader::new(&bytes).unwrap();
    let mut in_file = BTreeMap::new();
    while let Some(ev) = r.next_event().unwrap() {
        *in_file
            .entry((ev.provider().to_string(), ev.event_id()))
            .or_default() += 1;
    }
    let ours = |m: &BTreeMap<(String, u32), u64>| {
        m.iter()
            .filter(|((p, _), _)| p == clr_events::clrspy::PROVIDER)
            .map(|(_, n)| *n)
            .sum::<u64>()
    };
    assert!(ours(&in_file) > 20, "readings spliced: {in_file:?}");
    assert_eq!(seen, in_file);
    assert_eq!(summary.events, Some(r.stats().events));
}

#[test]
fn a_session_without_a_file_still_reads_thread_cpu_and_names() {
    if !live() {
        return;
    }
    let w = start("cpu", &["--seconds", "60"]);
    let ep = clrspy_collect::endpoint_for_pid(w.1).unwrap();
    let config = samples_config();
    let stop = StopSignal::new();
    let rec = Recording {
        config: &config,
        out: None,
        duration: Some(Duration::from_secs(2)),
        stop: &stop,
        thread_cpu: Some(Duration::from_millis(50)),
        ring: None,
    };
    let (c, rx) = counter();
    let broadcast = clrspy_collect::Broadcast::new();
    let (late, late_rx) = counter();
    let b = broadcast.clone();
    let joiner = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        b.join(Box::new(late))
    });
    let summary = clrspy_collect::record_live(
        &ep,
        &rec,
        LiveFeeds {
            consumers: vec![Box::new(c)],
            broadcast: Some(broadcast),
            ..LiveFeeds::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let _sub = joiner.join().unwrap();
    assert_eq!(summary.path, None);
    assert_eq!(summary.bytes, 0);
    let (_, seen, _) = rx.recv().unwrap();
    let count = |m: &BTreeMap<(String, u32), u64>, id: u32| {
        m.get(&(clr_events::clrspy::PROVIDER.to_string(), id))
            .copied()
            .unwrap_or(0)
    };
    use clr_events::clrspy::ids;
    assert!(count(&seen, ids::THREAD_CPU) > 10, "{seen:?}");
    assert!(count(&seen, ids::THREAD_NAME) > 0, "{seen:?}");
    let (header, late_seen, end) = late_rx.recv().unwrap();
    assert!(header && !end.left);
    let total = |m: &BTreeMap<(String, u32), u64>| m.values().sum::<u64>();
    assert!(
        total(&late_seen) > 0 && total(&late_seen) < total(&seen),
        "joined late: {} of {}",
        total(&late_seen),
        total(&seen)
    );
}

/// Asks for a dump at the 500th event.
struct DumpAt(u64);

impl EventConsumer for DumpAt {
    fn event(&mut self, _ev: &nettrace::Event<'_>) -> Action {
        self.0 += 1;
        if self.0 == 500 {
            Action::Dump {
                kind: DumpType::Normal,
                reason: "500 events".into(),
            }
        } else {
            Action::Continue
        }
    }
}

/// Records 6 s of two threads writing EventSource events as fast as they can (16 MB runtime
/// buffer) while a consumer asks for a dump at the 500th event, whose handler takes 4 s.
/// Returns the events the runtime dropped, how many times the handler was asked, and the tap's
/// event counts the pump reported while the handler ran (from 0.5 s after it started to 0.5 s
/// before it ended): a pump that waited for the handler reports nothing then.
fn record_with_slow_action() -> (u64, usize, Vec<u64>) {
    let w = start("eventsource", &["--seconds", "30", "--threads", "2"]);
    let ep = clrspy_collect::endpoint_for_pid(w.1).unwrap();
    let config = SessionConfig {
        circular_buffer_mb: 16,
        providers: vec![Provider {
            name: "Clrspy-Workloads".into(),
            keywords: u64::MAX,
            level: 5,
            arguments: None,
        }],
        ..samples_config()
    };
    let stop = StopSignal::new();
    let rec = Recording {
        config: &config,
        out: None,
        duration: Some(Duration::from_secs(6)),
        stop: &stop,
        thread_cpu: Some(Duration::from_millis(20)),
        ring: None,
    };
    let started: std::sync::Arc<std::sync::Mutex<Vec<std::time::Instant>>> = Default::default();
    let s = started.clone();
    // The slow action: as long as a dump of a big process takes.
    let worker = clrspy_collect::Worker::start("test-slow-action", 4, move |_: Action| {
        s.lock().unwrap().push(std::time::Instant::now());
        std::thread::sleep(Duration::from_secs(4));
    });
    let mut progress: Vec<(std::time::Instant, u64)> = Vec::new();
    let summary = clrspy_collect::record_live(
        &ep,
        &rec,
        LiveFeeds {
            consumers: vec![Box::new(DumpAt(0))],
            requests: Some(worker.handle()),
            ..LiveFeeds::default()
        },
        &mut |p| progress.push((std::time::Instant::now(), p.events.unwrap_or(0))),
    )
    .unwrap();
    worker.finish();
    let started = started.lock().unwrap().clone();
    let during = match started.first() {
        Some(&t0) => progress
            .iter()
            .filter(|(t, _)| {
                *t >= t0 + Duration::from_millis(500) && *t <= t0 + Duration::from_millis(3500)
            })
            .map(|p| p.1)
            .collect(),
        None => Vec::new(),
    };
    let dropped = summary.dropped_events.unwrap_or(0);
    (dropped, started.len(), during)
}

#[test]
fn a_slow_action_does_not_stall_draining() {
    if !live() {
        return;
    }
    let (dropped, asked, during) = record_with_slow_action();
    eprintln!(
        "events the runtime dropped: {dropped}; {} progress rounds while the action ran",
        during.len()
    );
    assert_eq!(asked, 1, "the dump was asked for");
    // The pump kept reading (and the tap decoding) while the handler slept: a handler on the
    // pump's thread, as before, stops both for 4 s (no rounds at all in that window; the
    // runtime then dropped 5.5 M events where it drops 0.05-0.5 M without the action).
    assert!(during.len() >= 10, "{} rounds", during.len());
    assert!(
        during.last() > during.first(),
        "events decoded while the action ran: {during:?}"
    );
}
