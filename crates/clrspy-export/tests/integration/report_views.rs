//! Every report's JSON and text views of the real traces in crates/nettrace/tests/data are
//! stable: they are compared with the snapshots in tests/snapshots/ (`<trace>.report.json`,
//! all reports' JSON; `<trace>.report.txt`, all reports' text at 100 columns). After a
//! deliberate change, regenerate with `CLRSPY_UPDATE_SNAPSHOTS=1 cargo test -p clrspy-export
//! --test integration -- report_views::` and review the diff. The CLI's own test
//! (crates/clrspy/tests/offline/report_snapshots.rs) checks `clrspy report --json` against the
//! same JSON files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};

use clrspy_analysis::{Analysis, Metric, Options};
use clrspy_export::report::{self, ReportKind, ReportOptions, ReportView, TextStyle};

const TRACES: &[&str] = &[
    "perf.nettrace",
    "trace.nettrace",
    "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
    "eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",
    "eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
    "only_managed_samples.nettrace.zip",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The trace's bytes (the first entry of a zip).
fn bytes(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if !raw.starts_with(b"PK\x03\x04") {
        return raw;
    }
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
    let mut f = z.by_index(0).unwrap();
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    out
}

fn analyse(name: &str) -> Analysis {
    let b = bytes(&repo().join("crates/nettrace/tests/data").join(name));
    let mut r = nettrace::StreamReader::from_read(std::io::Cursor::new(b)).unwrap();
    Analysis::run(&mut r, Options::default(), &mut |_| ()).unwrap()
}

/// A 100-column terminal: the text snapshots show how long names are shortened.
const NARROW: TextStyle = TextStyle {
    width: 100,
    bold: false,
};

/// The snapshot kinds: every report but the summary (its JSON holds the others').
const KINDS: &[ReportKind] = &[
    ReportKind::Cpu,
    ReportKind::Waits,
    ReportKind::Alloc,
    ReportKind::Exceptions,
    ReportKind::Contention,
    ReportKind::Gc,
    ReportKind::Threads,
    ReportKind::Findings,
];

/// The JSON of `kind` built by its own module's builder, not through the registry: the
/// registry maps each kind to its own report.
fn own_json(kind: ReportKind, a: &Analysis, o: &ReportOptions) -> serde_json::Value {
    use clrspy_export::report::{
        alloc, contention, exceptions, gc, hangs, stack, summary, threads,
    };
    match kind {
        ReportKind::Summary => {
            let sections: Vec<_> = ReportKind::ALL
                .into_iter()
                .filter_map(|k| k.def().summary)
                .collect();
            summary::build(a, o, &sections).json()
        }
        ReportKind::Cpu => stack::build(a, Metric::Cpu, o).json(),
        ReportKind::Waits => stack::build(a, Metric::Wait, o).json(),
        ReportKind::Alloc => alloc::build(a, o).json(),
        ReportKind::Exceptions => exceptions::build(a, o).json(),
        ReportKind::Contention => contention::build(a, o).json(),
        ReportKind::Gc => gc::build(a, o).json(),
        ReportKind::Threads => threads::build(a, o).json(),
        ReportKind::Http => clrspy_export::report::http::build(a, o).json(),
        ReportKind::Loader => clrspy_export::report::loader::build(a, o).json(),
        ReportKind::Hangs => hangs::build(a, o).json(),
        ReportKind::Requests => clrspy_export::report::requests::build(a, o).json(),
        ReportKind::Findings => clrspy_export::report::findings::build(a, o).json(),
    }
}

fn check(path: &Path, got: &str, update: bool, failures: &mut Vec<String>) {
    if update {
        std::fs::write(path, got).unwrap();
        return;
    }
    match std::fs::read_to_string(path) {
        Ok(want) if want == got => {}
        Ok(_) => failures.push(format!("differs from {}", path.display())),
        Err(e) => failures.push(format!("no snapshot at {} ({e})", path.display())),
    }
}

#[test]
fn report_views_of_the_shared_traces_match_their_snapshots() {
    let update = std::env::var("CLRSPY_UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1");
    let dir = repo().join("crates/clrspy-export/tests/snapshots");
    let mut failures = Vec::new();
    for trace in TRACES {
        let a = analyse(trace);
        let options = ReportOptions {
            top: 8,
            trace: (*trace).into(),
            ..ReportOptions::default()
        };
        let mut json = serde_json::Map::new();
        let mut text = Vec::new();
        for &kind in KINDS.iter().chain([&ReportKind::Summary]) {
            let r = report::build(kind, &a, &options);
            assert_eq!(r.json(), own_json(kind, &a, &options), "{trace}: {kind:?}");
            if kind != ReportKind::Summary {
                json.insert(kind.name().into(), r.json());
            }
            text.extend_from_slice(format!("==> {} <==\n", kind.name()).as_bytes());
            r.write_text(&mut text, &NARROW).unwrap();
            text.push(b'\n');
        }
        let json = serde_json::to_string_pretty(&serde_json::Value::Object(json)).unwrap() + "\n";
        let text = String::from_utf8(text).unwrap();
        assert!(!json.contains("-0.0"), "{trace}: -0.0 in JSON");
        assert!(!text.contains("-0.0"), "{trace}: -0.0 in text");
        check(
            &dir.join(format!("{trace}.report.json")),
            &json,
            update,
            &mut failures,
        );
        check(
            &dir.join(format!("{trace}.report.txt")),
            &text,
            update,
            &mut failures,
        );
    }
    assert!(
        failures.is_empty(),
        "{}\n(regenerate with CLRSPY_UPDATE_SNAPSHOTS=1 after checking the change)",
        failures.join("\n")
    );
}
