//! Traces written by the real .NET runtime on this machine, with no tool of ours involved: the
//! runtime's own `DOTNET_EnableEventPipe` settings record the test workloads, then clrspy reads
//! the files as a user would (`clrspy info --json`, `clrspy events --json`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{clrspy, json, live, machine, ok_stdout, workloads};

const PROVIDERS: &str = "Microsoft-DotNETCore-SampleProfiler:0x0:5,\
Microsoft-Windows-DotNETRuntime:0x4c14fccbd:5,Clrspy-Workloads:0xffffffff:5";

/// Runs a workload scenario under an EventPipe file session started by environment variables.
fn record(scenario: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("{scenario}.nettrace"));
    let run = Command::new("dotnet")
        .arg(workloads())
        .arg(scenario)
        .args(args)
        .env("DOTNET_EnableEventPipe", "1")
        .env("DOTNET_EventPipeOutputPath", &out)
        .env("DOTNET_EventPipeOutputStreaming", "1")
        .env("DOTNET_EventPipeRundown", "1")
        .env("DOTNET_EventPipeCircularMB", "100") // hex: 256 MB
        .env("DOTNET_EventPipeConfig", PROVIDERS)
        .output()
        .expect("run the workload");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "workload {scenario} failed: {stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(out.exists(), "the runtime wrote no trace for {scenario}");
    (dir, out, stdout)
}

fn counts(info: &serde_json::Value) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for e in info["per_event"].as_array().unwrap() {
        *m.entry(e["name"].as_str().unwrap().to_string())
            .or_default() += e["count"].as_u64().unwrap();
    }
    m
}

fn events(trace: &Path, event: &str) -> Vec<serde_json::Value> {
    let out = clrspy()
        .args(["events", "--json", "--event", event])
        .arg(trace)
        .output()
        .unwrap();
    ok_stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn exceptions_trace_reads_completely_with_decoded_exceptions() {
    if !live() {
        return;
    }
    let (_dir, trace, stdout) = record("exceptions", &["--count", "200"]);
    assert!(stdout.contains("thrown=200"), "{stdout}");
    let info = json(&["info", "--json", trace.to_str().unwrap()]);
    assert_eq!(info["truncated"], false, "{info}");
    assert_eq!(info["pointer_size"], 8);
    let c = counts(&info);
    assert_eq!(c.get("Exception/Start"), Some(&200), "{c:?}");
    assert!(
        c.get("Method/DCStopVerbose").copied().unwrap_or(0) > 100,
        "{c:?}"
    );
    let thrown = events(&trace, "Exception/Start");
    assert_eq!(thrown.len(), 200);
    for e in &thrown {
        assert_eq!(
            e["fields"]["ExceptionType"], "Workloads.WorkloadException",
            "{e}"
        );
        assert!(e["fields"]["ExceptionMessage"]
            .as_str()
            .unwrap()
            .starts_with("workload failure "));
        assert!(
            !e["stack"].as_array().unwrap().is_empty(),
            "exception without stack: {e}"
        );
    }
}

#[test]
fn gc_trace_has_exactly_the_induced_gen2_gcs() {
    if !live() {
        return;
    }
    let (_dir, trace, _) = record("gc", &["--count", "7"]);
    let starts = events(&trace, "GC/Start");
    let gen2: Vec<_> = starts
        .iter()
        .filter(|e| e["fields"]["Depth"] == 2 && e["fields"]["Reason"] == 1)
        .collect();
    assert_eq!(gen2.len(), 7, "{starts:?}");
    let ends = events(&trace, "GC/Stop");
    assert!(ends.len() >= 7);
}

#[test]
fn alloc_and_cpu_traces_have_typed_allocations_samples_and_methods() {
    if !live() {
        return;
    }
    let (_dir, trace, _) = record("alloc", &["--seconds", "1"]);
    let ticks = events(&trace, "GC/AllocationTick");
    assert!(ticks.len() > 20, "{}", ticks.len());
    let things = ticks
        .iter()
        .filter(|e| e["fields"]["TypeName"] == "Workloads.AllocatedThing")
        .count();
    assert!(things * 2 > ticks.len(), "{things} of {}", ticks.len());
    assert!(ticks
        .iter()
        .any(|e| e["fields"]["TypeName"] == "Workloads.BigThing[]"
            && e["fields"]["AllocationKind"] == 1));

    // The sampler's rate is counted: the test takes the machine lock.
    let machine = machine();
    let (_dir2, trace, _) = record("cpu", &["--seconds", "1"]);
    let info = json(&["info", "--json", trace.to_str().unwrap()]);
    let c = counts(&info);
    let samples = c.get("Thread/Sample").copied().unwrap_or(0);
    assert!(samples > 0, "{c:?}");
    // The runtime suspends every thread for each sample: on a busy machine it takes fewer.
    machine.check("over 500 samples in a second", || {
        assert!(samples > 500, "{c:?}");
    });
    let loads = events(&trace, "Method/LoadVerbose");
    assert!(
        loads.iter().any(|e| e["fields"]["MethodName"] == "Burn"
            && e["fields"]["MethodNamespace"] == "Workloads.Cpu"),
        "no Method/LoadVerbose for Workloads.Cpu.Burn"
    );
    let samples = events(&trace, "Thread/Sample");
    assert!(samples
        .iter()
        .all(|e| !e["stack"].as_array().unwrap().is_empty()));
}

#[test]
fn eventsource_trace_decodes_self_describing_fields_exactly() {
    if !live() {
        return;
    }
    let (_dir, trace, stdout) = record("eventsource", &["--count", "500", "--threads", "2"]);
    assert!(stdout.contains("written="), "{stdout}");
    let info = json(&["info", "--json", trace.to_str().unwrap()]);
    let per: HashMap<(String, u64), u64> = info["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                (
                    e["provider"].as_str().unwrap().to_string(),
                    e["event_id"].as_u64().unwrap(),
                ),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let get = |id| {
        per.get(&("Clrspy-Workloads".to_string(), id))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(get(1), 1000, "Tick");
    assert_eq!(get(5), 100, "Mixed");
    assert_eq!(get(4), 10, "Triple");
    let ticks = events(&trace, "Tick");
    let t = ticks
        .iter()
        .find(|e| e["fields"]["iteration"] == 7)
        .unwrap();
    let v = t["fields"]["value"].as_i64().unwrap();
    assert!(v == 7000 || v == 7001, "{t}");
    assert_eq!(t["fields"]["text"], "tick 7");
    let mixed = events(&trace, "Mixed");
    assert!(mixed.iter().all(|e| e["fields"]["g"]
        .as_str()
        .unwrap()
        .starts_with("00000000-0000-0000-0000-00000000000")));
}
