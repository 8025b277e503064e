//! The live pipeline against a real runtime: an event consumer on the pump's event tap asks for
//! a dump (handed to the caller) and then to stop; the recording ends there, rundown included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

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
    let config = SessionConfig {
        providers: vec![Provider {
            name: "Microsoft-DotNETCore-SampleProfiler".into(),
            keywords: 0,
            level: 5,
            arguments: None,
        }],
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        ..SessionConfig::default()
    };
    let stop = StopSignal::new();
    let rec = Recording {
        config: &config,
        out: &out,
        // A bound, never reached: 200 samples take about 2 s.
        duration: Some(Duration::from_secs(50)),
        stop: &stop,
        thread_cpu: None,
        ring: None,
    };
    let mut requests = Vec::new();
    let mut on_request = |a: &Action| requests.push(a.clone());
    let summary = clrspy_collect::record_live(
        &ep,
        &rec,
        LiveFeeds {
            consumers: vec![Box::new(SampleWatch(0))],
            on_request: Some(&mut on_request),
            ..LiveFeeds::default()
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(summary.reason, StopReason::Triggered, "{summary:?}");
    assert_eq!(summary.trigger.as_deref(), Some("200 samples seen"));
    assert!(summary.complete, "{summary:?}");
    assert_eq!(
        requests,
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
