//! Reports of the real traces in crates/nettrace/tests/data are stable: each report's JSON is
//! compared with the snapshot in tests/snapshots/. After a deliberate change, regenerate with
//! `CLRSPY_UPDATE_SNAPSHOTS=1 cargo test -p clrspy --test report_snapshots` and review the diff.

mod common;

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
];

#[test]
fn reports_of_the_shared_traces_match_their_snapshots() {
    let update = std::env::var("CLRSPY_UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1");
    let dir = repo().join("crates/clrspy/tests/snapshots");
    std::fs::create_dir_all(&dir).unwrap();
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
        let got = serde_json::to_string_pretty(&serde_json::Value::Object(all)).unwrap() + "\n";
        let path = dir.join(format!("{trace}.report.json"));
        if update {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == got => {}
            Ok(_) => failures.push(format!("{trace}: report differs from {}", path.display())),
            Err(e) => failures.push(format!("{trace}: no snapshot at {} ({e})", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(regenerate with CLRSPY_UPDATE_SNAPSHOTS=1 after checking the change)",
        failures.join("\n")
    );
}
