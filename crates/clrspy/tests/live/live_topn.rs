//! clrspy's traces read right in Microsoft's tools: `dotnet-trace report TRACE topN` (TraceEvent's
//! thread-time stacks, as PerfView builds them) on a fresh `clrspy record` of a CPU-bound loop
//! ranks the hot method first and lists none of clrspy's own events (the readings and ticks
//! clrspy stores are on no thread, so that view does not take them for samples).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;

use common::{launch_record, live, need, Need};

/// The rows of `report topN`: (name, inclusive %, exclusive %).
fn rows(text: &str) -> Vec<(String, f64, f64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let Some((n, rest)) = t.split_once(". ") else {
            continue;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cols: Vec<&str> = rest.split("  ").filter(|c| !c.trim().is_empty()).collect();
        let pct = |s: &str| s.trim().trim_end_matches('%').parse::<f64>().ok();
        if let [name @ .., incl, excl] = cols.as_slice() {
            if let (Some(i), Some(e)) = (pct(incl), pct(excl)) {
                out.push((name.join("  ").trim().to_string(), i, e));
            }
        }
    }
    out
}

#[test]
fn dotnet_trace_top_n_ranks_the_hot_method_first_on_a_clrspy_trace() {
    if !live() {
        return;
    }
    let Some(dt) = need(Need::DotnetTrace) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("cpu.nettrace");
    // Two burners, so the hot method outweighs the main thread's Thread.Join in a thread-time
    // view (that counts waiting too).
    // The runtime's samples: topN ranks them (the kernel's it must not: live_kernel_sampler).
    let out = launch_record(
        &trace,
        &["--sampler", "runtime"],
        &["cpu", "--seconds", "3", "--threads", "2"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("Thread CPU times:"),
        "no readings stored: {err}"
    );

    let out = Command::new(&dt)
        .arg("report")
        .arg(&trace)
        .args(["topN", "-n", "10"])
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .output()
        .expect("run dotnet-trace");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let top = rows(&text);
    assert!(top.len() >= 2, "no table in:\n{text}");
    assert!(
        top[0].0.contains("Cpu.Burn"),
        "the hot method is not first:\n{text}"
    );
    assert!(
        !top.iter().any(|r| r.0.contains("clrspy")),
        "a clrspy event is counted as samples:\n{text}"
    );
}
