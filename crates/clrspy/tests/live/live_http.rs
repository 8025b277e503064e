//! `clrspy report http` on the http-client workload (testapps/Workloads/HttpClientCalls.cs),
//! recorded as a user would (`clrspy record --profile net -- dotnet Workloads.dll
//! http-client`) and by dotnet-trace (installed by `.ci/setup`) with the same providers:
//! the report has exactly the workload's statuses and errors by kind, the slow requests'
//! durations, the pool waits, and one `--requests-jsonl` line per request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{clrspy, json, launch_record, live, need, workloads, Need};

/// The net profile's System.Net providers, as dotnet-trace takes them.
const PROVIDERS: &str = "System.Threading.Tasks.TplEventSource:0x80:4,System.Net.Http:0xFFFFFFFFFFFFFFFF:5,System.Net.NameResolution:0xFFFFFFFFFFFFFFFF:5,System.Net.Sockets:0xFFFFFFFFFFFFFFFF:5,System.Net.Security:0xFFFFFFFFFFFFFFFF:5";

/// Statuses and error kinds over every host.
fn totals(r: &serde_json::Value) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let mut statuses = BTreeMap::new();
    let mut kinds = BTreeMap::new();
    for h in r["hosts"].as_array().unwrap() {
        for (s, n) in h["statuses"].as_object().unwrap() {
            *statuses.entry(s.clone()).or_insert(0) += n.as_u64().unwrap();
        }
        for e in h["error_kinds"].as_array().unwrap() {
            *kinds
                .entry(e["kind"].as_str().unwrap().to_string())
                .or_insert(0) += e["count"].as_u64().unwrap();
        }
    }
    (statuses, kinds)
}

/// Checks the report of a trace of the workload: counts, slow durations, pool waits, rows.
fn check(trace: &Path, rows: &Path) {
    let t = trace.to_str().unwrap();
    let r = json(&[
        "report",
        t,
        "http",
        "--json",
        "--top",
        "10",
        "--requests-jsonl",
        rows.to_str().unwrap(),
    ]);
    assert_eq!(r["requests"], 25, "{r}");
    let (statuses, kinds) = totals(&r);
    let want = |v: &[(&str, u64)]| {
        v.iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect::<BTreeMap<_, _>>()
    };
    // 10 + 2 slow + 4 pooled + 1 via localhost = 17 OK; 3 × 500; 5 with no response.
    assert_eq!(statuses, want(&[("-1", 5), ("200", 17), ("500", 3)]), "{r}");
    assert_eq!(
        kinds,
        want(&[
            ("5xx", 3),
            ("dns", 1),
            ("refused", 2),
            ("timeout", 1),
            ("tls", 1)
        ]),
        "{r}"
    );
    let slowest = r["slowest"].as_array().unwrap();
    let slow_200: Vec<f64> = slowest
        .iter()
        .filter(|s| s["status"] == 200 && s["queue_ms"].as_f64().unwrap() < 50.0)
        .map(|s| s["duration_ms"].as_f64().unwrap())
        .filter(|d| *d >= 250.0)
        .collect();
    // The two /slow?ms=300 requests: 300 ms of sleep, not much more (.NET's timer may fire a
    // millisecond or two early: 298.6 ms was seen under load).
    assert_eq!(slow_200.len(), 2, "{r}");
    assert!(
        slow_200.iter().all(|d| (295.0..600.0).contains(d)),
        "{slow_200:?}"
    );
    // The timeout: HttpClient.Timeout of 250 ms.
    let timeout = slowest
        .iter()
        .find(|s| s["error_kind"] == "timeout")
        .unwrap();
    let d = timeout["duration_ms"].as_f64().unwrap();
    assert!((250.0..600.0).contains(&d), "{timeout}");
    // Four requests on one connection: three waited for it, about 100, 200 and 300 ms.
    let main = r["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["waited_for_connection"] == 3)
        .unwrap_or_else(|| panic!("no host with 3 pool waits: {r}"));
    assert_eq!(main["pool_exhausted"], true);
    assert!(
        main["pool_wait"]["max_ms"].as_f64().unwrap() >= 290.0,
        "{main}"
    );
    let lines = std::fs::read_to_string(rows).unwrap();
    assert_eq!(lines.lines().count(), 25);
    let dns = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["path"] == "/ok/dns")
        .unwrap();
    assert!(dns["dns_ms"].as_f64().unwrap() > 0.0, "{dns}");
}

#[test]
fn http_report_counts_the_workloads_requests() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("http.nettrace");
    let out = launch_record(&trace, &["--profile", "net"], &["http-client"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&trace, &dir.path().join("rows.jsonl"));

    // The summary points to the report.
    let s = clrspy()
        .args(["report", trace.to_str().unwrap(), "summary"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&s.stdout);
    assert!(
        text.contains("HTTP requests (outgoing): 25 to 5 hosts, 8 failed"),
        "{text}"
    );
    assert!(text.contains(" http   (outgoing requests"), "{text}");

    // The same workload under dotnet-trace.
    let Some(tool) = need(Need::DotnetTrace) else {
        return;
    };
    let dt = dir.path().join("dotnet-trace.nettrace");
    let status = std::process::Command::new(tool)
        .args(["collect", "--providers", PROVIDERS, "-o"])
        .arg(&dt)
        .arg("--")
        .arg("dotnet")
        .arg(workloads())
        .arg("http-client")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    check(&dt, &dir.path().join("rows-dt.jsonl"));
}
