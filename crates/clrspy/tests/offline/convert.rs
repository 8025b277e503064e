//! `clrspy convert` on a real trace with samples: every format is written, well formed, and
//! leads with the trace's hottest method. (The consumers themselves — speedscope, pprof-format,
//! Chrome DevTools' trace engine, Chromium — are run by bench/views/check.sh.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;

use common::{clrspy, data};

const HOT: &str = "NoNativeStacks.Program.FindByte";

fn convert(format: &str, out: &std::path::Path) -> Vec<u8> {
    clrspy()
        .arg("convert")
        .arg(data("only_managed_samples.nettrace.zip"))
        .args(["--to", format, "-o"])
        .arg(out)
        .assert()
        .success();
    std::fs::read(out).unwrap()
}

#[test]
fn every_format_is_written_and_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let ss: serde_json::Value =
        serde_json::from_slice(&convert("speedscope", &dir.path().join("a.json"))).unwrap();
    assert_eq!(ss["profiles"][0]["type"], "sampled");
    assert!(ss["shared"]["frames"].to_string().contains(HOT));

    let folded = String::from_utf8(convert("folded", &dir.path().join("a.txt"))).unwrap();
    let first = folded.lines().next().unwrap();
    assert!(first.contains(HOT), "{first}");
    assert!(first.rsplit(' ').next().unwrap().parse::<u64>().is_ok());

    let svg = String::from_utf8(convert("flamegraph", &dir.path().join("a.svg"))).unwrap();
    assert!(svg.contains("<svg") && svg.contains(HOT));

    let pb = convert("pprof", &dir.path().join("a.pb.gz"));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&pb[..])
        .read_to_end(&mut raw)
        .unwrap();
    assert!(raw.windows(HOT.len()).any(|w| w == HOT.as_bytes()));

    let chrome: serde_json::Value =
        serde_json::from_slice(&convert("chromium", &dir.path().join("c.json"))).unwrap();
    let events = chrome["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == HOT));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "thread_name"));

    let html = String::from_utf8(convert("html", &dir.path().join("r.html"))).unwrap();
    assert!(html.starts_with("<!doctype html>") && html.contains(HOT));
    assert!(!html.contains("http://") || html.contains("http://www.w3.org"));

    // Allocations: a trace with ticks.
    let out = dir.path().join("alloc.txt");
    clrspy()
        .arg("convert")
        .arg(data("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip"))
        .args(["--to", "folded", "--metric", "alloc", "-o"])
        .arg(&out)
        .assert()
        .success();
    let alloc = std::fs::read_to_string(&out).unwrap();
    assert!(
        alloc
            .lines()
            .next()
            .unwrap()
            .contains("[type] System.Char[]"),
        "{}",
        &alloc[..200.min(alloc.len())]
    );
}

#[test]
fn bad_output_path_is_one_clear_error() {
    let out = clrspy()
        .arg("convert")
        .arg(data("perf.nettrace"))
        .args(["--to", "speedscope", "-o", "/no/such/dir/x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write /no/such/dir/x.json"));
}

/// The Chromium export of test trace `name`: its events, and the ids of the async slices of
/// category `cat` that begin and that end, sorted.
fn slices(name: &str, cat: &str) -> (Vec<serde_json::Value>, Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    clrspy()
        .arg("convert")
        .arg(common::repo().join("crates/clrspy/tests/data").join(name))
        .args(["--to", "chromium", "-o"])
        .arg(&out)
        .assert()
        .success();
    let mut chrome: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = chrome["traceEvents"].take().as_array().unwrap().clone();
    let of = |ph: &str| {
        let mut ids: Vec<String> = events
            .iter()
            .filter(|e| e["cat"] == cat && e["ph"] == ph)
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort_unstable();
        ids
    };
    let (begins, ends) = (of("b"), of("e"));
    (events, begins, ends)
}

/// ASP.NET Core requests (a dotnet-trace recording of the `aspnet` event sources, 25 requests)
/// become async slices in the Chromium export: one begin and one end per request, paired by id.
#[test]
fn requests_are_slices_in_the_chromium_export() {
    let (events, begins, ends) = slices("webapp-requests-dotnet-trace.nettrace.zip", "request");
    assert_eq!(begins.len(), 25);
    assert_eq!(begins, ends, "every begin has its end");
    let sleeps = events
        .iter()
        .filter(|e| e["ph"] == "b" && e["args"]["request"] == "GET /sleep")
        .count();
    assert_eq!(sleeps, 6);
}

/// HttpClient's requests (the http-client workload, 25 requests) are slices too, category
/// `http`, each named by its URL.
#[test]
fn outgoing_http_requests_are_slices_in_the_chromium_export() {
    let (events, begins, ends) = slices("httpclient-net.nettrace.zip", "http");
    assert_eq!(begins.len(), 25);
    assert_eq!(begins, ends, "every begin has its end");
    let dns = events
        .iter()
        .filter(|e| {
            e["ph"] == "b" && e["args"]["request"] == "http://nothing.invalid:80/dns-failure"
        })
        .count();
    assert_eq!(dns, 1);
}
