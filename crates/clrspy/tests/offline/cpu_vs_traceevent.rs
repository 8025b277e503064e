//! Samples per method against TraceEvent, the reference reader. For each trace, clrspy's
//! exclusive samples per method (`report cpu` + `report waits`: clrspy gives every sample to one
//! of them, or splits it between them with measured thread CPU) must match TraceEvent's.
//!
//! TraceEvent's side is stored in `tests/data/traceevent-cpu.json`. It was made once with
//! `python3 bench/compare_cpu.py --write-test-data` (2026-11-22), which runs
//! `bench/TraceEventHarness cpu-top TRACE --fold PATS --addresses` — TraceEvent 4.0.0's TraceLog
//! route, as PerfView takes it: `.etlx` conversion, `TraceEventStackSource` over the Thread/Sample
//! events, `CallTree.ByID` ("By Name") — and keeps, per method (names without `Module!` and
//! without argument list): the exclusive samples (`exclusive`), the same with PerfView's fold
//! patterns set to the GC poll frames (`exclusive_folded`), the samples TraceLog could not name
//! (`unresolved`), and how many of those lie in ReadyToRun code clrspy names (`r2r`, below).
//!
//! Where the two may differ, and why (each allowance is exact, none is a percentage):
//! - **GC poll frames**: clrspy folds `Thread.PollGC`/`Thread.<PollGC>g__PollGCWorker` at the
//!   leaf into their caller (profile.rs `fold_safepoint_frames`; the sampler catches a running
//!   loop at its GC poll). TraceEvent keeps them; with the same frames folded (PerfView's
//!   FoldPats) it must agree exactly, so clrspy is compared with `exclusive_folded`.
//! - **ReadyToRun code**: TraceEvent 4.0.0 ignores `Method/R2RGetEntryPoint` and leaves code
//!   named only by it unresolved; clrspy names it (symbols.rs: from the entry point to the next
//!   known code start, at most 4 KB). `r2r` holds, per method, the TraceEvent-unresolved leaf
//!   samples in that range: clrspy must have exactly those more, and that many fewer unresolved.
//! - **A cut trace** (trace.nettrace): TraceLog's conversion throws ("Read past end of stream");
//!   the harness retries with `ContinueOnError`, which loses the events still in TraceEvent's
//!   sort buffer. clrspy salvages every complete event of the cut block, so it may count more
//!   samples (never fewer, and at most 1% more). Neither names a method there: the trace has no
//!   method events before the cut.
//! - **Images**: TraceEvent does not read the ReadyToRun images a trace's module map names;
//!   clrspy would (r2r.rs), from this machine's framework when its version matches the trace's.
//!   The comparison runs clrspy with `--no-local-images`, so both name code from the trace alone.
//! - **Rounding**: with measured thread CPU, samples are split into fractional CPU and waiting
//!   shares, each printed to 0.1: the sum is compared to within 0.15 per method.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;

use common::{clrspy, data, repo};
use serde_json::Value;

/// `Namespace.Type.Method(args)` → `Namespace.Type.Method` (argument lists may hold `!!0`).
fn norm(name: &str) -> &str {
    name.split('(').next().unwrap_or(name)
}

/// clrspy's names for frames it could not name: `[native]`, `[unknown 0x…]`, `lib.so!+0x…`.
fn unresolved(name: &str) -> bool {
    name.starts_with('[') || norm(name).contains("!+0x")
}

struct Ours {
    /// Exclusive cpu + waits samples per normalized method.
    methods: BTreeMap<String, f64>,
    unresolved: f64,
    total: f64,
}

fn ours(trace: &std::path::Path) -> Ours {
    let mut o = Ours {
        methods: BTreeMap::new(),
        unresolved: 0.0,
        total: 0.0,
    };
    for kind in ["cpu", "waits"] {
        let out = clrspy()
            .arg("report")
            .arg(trace)
            .args([kind, "--json", "--top", "1000000", "--no-local-images"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} {kind}: {}",
            trace.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        o.total += v["total_samples"].as_f64().unwrap();
        for m in v["top_exclusive"].as_array().unwrap() {
            let name = m["method"].as_str().unwrap();
            let w = m["samples"].as_f64().unwrap();
            if unresolved(name) {
                o.unresolved += w;
            } else {
                *o.methods.entry(norm(name).to_string()).or_default() += w;
            }
        }
    }
    o
}

fn expected() -> Value {
    let path = repo().join("crates/clrspy/tests/data/traceevent-cpu.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn counts(v: &Value) -> BTreeMap<String, f64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_f64().unwrap()))
        .collect()
}

/// Compares one trace; returns the differences found (empty when it agrees).
fn check(name: &str, trace: &std::path::Path) -> Vec<String> {
    let all = expected();
    let te = &all["traces"][name];
    assert!(te.is_object(), "{name}: not in traceevent-cpu.json");
    let o = ours(trace);
    let folded = counts(&te["exclusive_folded"]);
    let r2r = counts(&te["r2r"]);
    let te_samples = te["samples"].as_f64().unwrap();
    let te_unresolved = te["unresolved"].as_f64().unwrap();
    let r2r_total: f64 = r2r.values().sum();
    let cut = !te["conversion_error"].is_null();
    let mut bad = Vec::new();

    // Every sample counted once: as many as TraceEvent saw (more only on a cut trace).
    if !cut {
        if (o.total - te_samples).abs() > 0.15 {
            bad.push(format!(
                "{name}: cpu + waits = {:.1} samples, TraceEvent {te_samples}",
                o.total
            ));
        }
    } else if o.total < te_samples || o.total > te_samples * 1.01 {
        bad.push(format!(
            "{name} (cut trace): cpu + waits = {:.1} samples, TraceEvent {te_samples}",
            o.total
        ));
    }
    // Per method: TraceEvent with GC polls folded, plus the ReadyToRun code only clrspy names.
    let mut names: Vec<&String> = folded
        .keys()
        .chain(r2r.keys())
        .chain(o.methods.keys())
        .collect();
    names.sort();
    names.dedup();
    for m in names {
        let want = folded.get(m).copied().unwrap_or(0.0) + r2r.get(m).copied().unwrap_or(0.0);
        let got = o.methods.get(m).copied().unwrap_or(0.0);
        if (got - want).abs() > 0.15 {
            bad.push(format!(
                "{name}: {m}: clrspy {got:.1}, TraceEvent {want} (folded {}, r2r {})",
                folded.get(m).copied().unwrap_or(0.0),
                r2r.get(m).copied().unwrap_or(0.0)
            ));
        }
    }
    // What TraceEvent leaves unresolved, clrspy too, except the ReadyToRun code it names (on the
    // cut trace the extra samples clrspy salvaged are unresolved as well).
    let extra = if cut { o.total - te_samples } else { 0.0 };
    let want_unresolved = te_unresolved - r2r_total + extra;
    if (o.unresolved - want_unresolved).abs() > 0.15 {
        bad.push(format!(
            "{name}: {:.1} unresolved samples, expected {want_unresolved} (TraceEvent {te_unresolved}, R2R {r2r_total})",
            o.unresolved
        ));
    }
    bad
}

#[test]
fn only_managed_samples_agrees_with_traceevent() {
    let bad = check(
        "only_managed_samples.nettrace.zip",
        &data("only_managed_samples.nettrace.zip"),
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn windows_core3_trace_agrees_with_traceevent_plus_readytorun() {
    let name = "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip";
    let bad = check(name, &data(name));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The allowance is real: most samples are in ReadyToRun code here.
    let te = &expected()["traces"][name];
    let r2r: f64 = counts(&te["r2r"]).values().sum();
    assert!(r2r > 30_000.0 && r2r <= te["unresolved"].as_f64().unwrap());
}

#[test]
fn cut_trace_agrees_with_traceevent() {
    let bad = check("trace.nettrace", &data("trace.nettrace"));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let te = &expected()["traces"]["trace.nettrace"];
    assert!(
        !te["conversion_error"].is_null(),
        "TraceLog throws on the cut"
    );
}

/// A trace `clrspy record` made (contention workload, 2 s, .NET 10, with thread CPU readings):
/// samples are split between CPU and waiting by measured CPU time, and a blocked sample's CPU
/// share moves to the same thread's running stacks. The split must not change how many samples
/// each method has.
#[test]
fn measured_thread_cpu_keeps_samples_per_method() {
    let bad = check(
        "contention-thread-cpu.nettrace.zip",
        &repo().join("crates/clrspy/tests/data/contention-thread-cpu.nettrace.zip"),
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
