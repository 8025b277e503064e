//! Live: testapps/WebApp (Server GC, concurrent) under `ab -c 16` load that allocates, with
//! background GCs asked for every 250 ms, recorded with `clrspy record -p PID --profile
//! gc-collect`: every GC that ran inside a suspension has a pause, every finished GC its heap
//! size after, and the report says Server GC with more than one heap (this machine has 2
//! cores: 2 heaps).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{needs, Load, Need};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{clrspy, json, live, start_web};

/// `GET path` on 127.0.0.1:port; the response's status line.
fn get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to WebApp");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.lines().next().unwrap_or_default().to_string()
}

/// (start, end) ns of every suspension for a GC in the trace (SuspendEEStart reason 1 or 6
/// to RestartEEStop on the same thread), read with `clrspy events --json`.
fn gc_suspensions(trace: &str) -> Vec<(i64, i64)> {
    let mut events = Vec::new();
    for name in ["GC/SuspendEEStart", "GC/RestartEEStop"] {
        let out = clrspy()
            .args(["events", trace, "--json", "--event", name])
            .output()
            .unwrap();
        assert!(out.status.success());
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let e: serde_json::Value = serde_json::from_str(line).unwrap();
            events.push(e);
        }
    }
    events.sort_by_key(|e| e["timestamp_ns"].as_i64());
    let mut open = std::collections::HashMap::new();
    let mut done = Vec::new();
    for e in &events {
        let (ts, thread) = (e["timestamp_ns"].as_i64().unwrap(), e["thread_id"].as_u64());
        if e["name"] == "GC/SuspendEEStart" {
            if matches!(e["fields"]["Reason"].as_u64(), Some(1 | 6)) {
                open.insert(thread, ts);
            }
        } else if let Some(s) = open.remove(&thread) {
            done.push((s, ts));
        }
    }
    done
}

#[test]
fn server_gc_under_load_has_every_pause_and_heap() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let web = start_web();
    let port = web.port;
    // A gen2 big enough that GC.Collect(2, Forced, blocking: false) runs in the background.
    assert!(get(port, "/retain?mb=64").contains("200"));
    let ab = Command::new(Need::Ab.path())
        .args(["-q", "-t", "30", "-n", "2000000", "-c", "16"])
        .arg(format!("http://127.0.0.1:{port}/alloc?kb=512"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run ab");
    let _load = Load(ab);
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = stop.clone();
    let collector = std::thread::spawn(move || {
        for _ in 0..120 {
            if stopper.load(Ordering::Relaxed) {
                break;
            }
            get(port, "/gc?gen=2&blocking=false");
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("web-gc.nettrace");
    let out = clrspy()
        .args(["record", "-p", &web.app.1.to_string()])
        .args(["--profile", "gc-collect", "--duration", "6s", "-o"])
        .arg(&trace)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let _ = collector.join();
    assert!(
        out.status.success(),
        "record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = trace.to_str().unwrap();
    let report = json(&["report", trace, "gc", "--json"]);
    assert_eq!(report["gc_mode"], "server", "{}", report["gc_mode"]);
    assert!(
        report["heaps"].as_u64().unwrap_or(0) > 1,
        "{}",
        report["heaps"]
    );
    assert_eq!(report["concurrent"], true);
    let gcs = report["gcs"].as_array().unwrap();
    assert!(gcs.len() >= 20, "only {} GCs under load", gcs.len());
    assert!(
        gcs.iter().any(|g| g["type"] == "Background"),
        "no background GC in {} GCs",
        gcs.len()
    );
    let suspensions = gc_suspensions(trace);
    let mut suspended = 0;
    for g in gcs {
        // start_ms is rounded to the µs.
        let start = (g["start_ms"].as_f64().unwrap() * 1e6) as i64;
        if suspensions
            .iter()
            .any(|&(s, e)| s <= start + 1000 && start - 1000 <= e)
        {
            suspended += 1;
            assert!(g["pause_ms"].as_f64().unwrap() > 0.0, "pause 0: {g}");
        }
    }
    assert!(
        suspended + 2 >= gcs.len(),
        "{suspended} of {} GCs",
        gcs.len()
    );
    // Every finished GC has its HeapStats (but the last, which the end may cut between them).
    for g in &gcs[..gcs.len() - 1] {
        if !g["duration_ms"].is_null() {
            assert!(!g["heap_after_mb"].is_null(), "no heap after: {g}");
        }
    }
    assert!(report["totals"]["p50_pause_ms"].as_f64().unwrap() > 0.0);
}
