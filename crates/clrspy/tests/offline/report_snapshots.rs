//! `clrspy report --json` prints exactly the report views of clrspy-export: for the real traces
//! in crates/nettrace/tests/data, each report's JSON equals the snapshot that
//! crates/clrspy-export/tests/integration/report_views.rs keeps (regenerate them there).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, data, repo};

const TRACES: &[&str] = &[
    "perf.nettrace",
    "trace.nettrace",
    "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
    "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
    "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
    "only_managed_samples.nettrace.zip",
];

const KINDS: &[&str] = &[
    "cpu",
    "waits",
    "alloc",
    "exceptions",
    "contention",
    "gc",
    "threads",
    "findings",
];

#[test]
fn reports_of_the_shared_traces_match_their_snapshots() {
    let dir = repo().join("crates/clrspy-export/tests/snapshots");
    let mut failures = Vec::new();
    for trace in TRACES {
        let mut all = serde_json::Map::new();
        for kind in KINDS {
            let out = clrspy()
                .arg("report")
                .arg(data(trace))
                .args([kind, "--json", "--top", "8"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{trace} {kind}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            all.insert(kind.to_string(), v);
        }
        let got = serde_json::Value::Object(all);
        let path = dir.join(format!("{trace}.report.json"));
        // Both sides parsed by the same reader, so float parsing is the same on each.
        match std::fs::read(&path).map(|b| serde_json::from_slice::<serde_json::Value>(&b)) {
            Ok(Ok(want)) if want == got => {}
            Ok(_) => failures.push(format!("{trace}: report differs from {}", path.display())),
            Err(e) => failures.push(format!("{trace}: no snapshot at {} ({e})", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(the snapshots are clrspy-export's: see crates/clrspy-export/tests/integration/report_views.rs)",
        failures.join("\n")
    );
}
