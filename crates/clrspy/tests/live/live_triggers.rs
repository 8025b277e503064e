//! Live: each kind of `--stop-on` trigger fires on a workload built to fire it; the recording
//! stops after `--after-trigger`; the trace holds clrspy's `Trigger` event naming it and the
//! event that fired it (found by its name and time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::{clrspy, json, launch_record, live, ok_stdout};

/// Records `scenario` with `trigger` (and a 1 s delay); returns stderr and the trace's events
/// of the firing event's name, as JSON.
struct Fired {
    stderr: String,
    /// The `Trigger` event's fields.
    trigger: serde_json::Value,
    /// "fired at X s" from stderr, seconds since the trace start.
    at_s: f64,
}

fn events(trace: &Path, provider: &str, name: &str) -> Vec<serde_json::Value> {
    let out = clrspy()
        .args([
            "events",
            trace.to_str().unwrap(),
            "--json",
            "--provider",
            provider,
        ])
        .args(["--event", name])
        .output()
        .unwrap();
    ok_stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn fire(dir: &Path, trigger: &str, scenario: &[&str]) -> (std::path::PathBuf, Fired) {
    let trace = dir.join("t.nettrace");
    let out = launch_record(
        &trace,
        &["--stop-on", trigger, "--after-trigger", "1s"],
        scenario,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&format!("Trigger {trigger} fired at ")))
        .unwrap_or_else(|| panic!("{trigger} did not fire: {stderr}"));
    let at_s: f64 = line
        .split(" fired at ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let t = events(&trace, "clrspy", "Trigger");
    assert_eq!(t.len(), 1, "{t:?}");
    let fields = t[0]["fields"].clone();
    assert_eq!(fields["Trigger"], trigger);
    assert_eq!(fields["AfterMs"], 1000);
    (
        trace,
        Fired {
            stderr,
            trigger: fields,
            at_s,
        },
    )
}

/// The firing event is in the trace: `clrspy info` names it and its time (from the Trigger
/// event), and an event of that name at exactly that time is there, for which `is_it` holds.
fn firing_event_is_inside(
    trace: &Path,
    f: &Fired,
    is_it: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    let t = &info["trigger"];
    assert_eq!(t["trigger"], f.trigger["Trigger"], "{info}");
    let provider = f.trigger["Provider"].as_str().unwrap();
    let name = f.trigger["Event"].as_str().unwrap();
    assert_eq!(t["event"], format!("{provider}/{name}"));
    let at = t["event_ns"].as_i64().unwrap();
    assert!(
        (at as f64 / 1e9 - f.at_s).abs() < 0.001,
        "{at} vs {} s",
        f.at_s
    );
    let evs = events(trace, provider, name);
    evs.into_iter()
        .find(|e| e["timestamp_ns"].as_i64() == Some(at) && is_it(e))
        .unwrap_or_else(|| panic!("no such {provider}/{name} at {at} ns in the trace"))
}

#[test]
fn a_first_chance_exception_of_a_matching_type() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, f) = fire(
        dir.path(),
        "exception=System.Net.*",
        &["throw-later", "--seconds", "1"],
    );
    assert!(
        f.stderr.contains("clrspy ended the program"),
        "{}",
        f.stderr
    );
    firing_event_is_inside(&trace, &f, |e| {
        e["fields"]["ExceptionType"] == "System.Net.Sockets.SocketException"
    });
    // Events before the symptom and after it are in the trace.
    let ticks = events(&trace, "clrspy", "Tick");
    let ts = |e: &serde_json::Value| e["timestamp_ns"].as_f64().unwrap() / 1e9;
    assert!(ticks.iter().any(|t| ts(t) < f.at_s - 0.5));
    assert!(ticks.iter().any(|t| ts(t) > f.at_s + 0.5));
    // The report's summary says it too.
    let summary = json(&["report", trace.to_str().unwrap(), "--json"]);
    assert_eq!(
        summary["trigger"]["trigger"], "exception=System.Net.*",
        "{summary}"
    );
}

#[test]
fn a_gen2_gc() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, f) = fire(dir.path(), "gen2", &["pauses", "--seconds", "30"]);
    firing_event_is_inside(&trace, &f, |e| e["fields"]["Depth"] == 2);
}

#[test]
fn a_long_gc_pause() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, f) = fire(dir.path(), "gc-pause-ms=5", &["pauses", "--seconds", "30"]);
    assert_eq!(f.trigger["Event"], "GC/RestartEEStop");
    firing_event_is_inside(&trace, &f, |_| true);
    let ms: f64 = f.trigger["Reason"]
        .as_str()
        .and_then(|r| r.strip_prefix("a GC paused the runtime "))
        .and_then(|r| r.strip_suffix(" ms"))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("{}", f.trigger));
    assert!(ms > 5.0, "{ms}");
}

#[test]
fn an_event_with_a_payload_condition() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, f) = fire(
        dir.path(),
        "event=Clrspy-Workloads/Tick:iteration>=300",
        &["eventsource", "--seconds", "30", "--threads", "1"],
    );
    // One writer thread: iteration 300 is the first to pass the condition.
    firing_event_is_inside(&trace, &f, |e| e["fields"]["iteration"] == 300);
}

#[test]
fn a_runtime_counter_over_a_threshold() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, f) = fire(
        dir.path(),
        "counter=cpu-usage>10",
        &["cpu", "--seconds", "30"],
    );
    firing_event_is_inside(&trace, &f, |e| {
        let p = &e["fields"][""]["Payload"];
        p["Name"] == "cpu-usage" && p["Mean"].as_f64().is_some_and(|m| m > 10.0)
    });
}

#[test]
fn the_targets_exit() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.nettrace");
    let out = launch_record(
        &trace,
        &["--stop-on", "exit", "--stop-on", "exception=Nothing.*"],
        &["idle", "--seconds", "1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Trigger exit fired: the target exited."),
        "{stderr}"
    ); // The trace says so too, before its end marker: no event fired it.
    let t = events(&trace, "clrspy", "Trigger");
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0]["fields"]["Trigger"], "exit");
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true);
    assert_eq!(info["trigger"]["trigger"], "exit", "{info}");
    assert!(info["trigger"]["event_ns"].is_null(), "{info}");
}

#[test]
fn a_bad_trigger_is_a_usage_error() {
    let out = clrspy()
        .args(["record", "--stop-on", "frobnicate=1", "-p", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown trigger"));
}
