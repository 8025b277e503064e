//! `clrspy agent`'s `/gcdump`, `/dump` and `/operations` against the leak workload (exactly
//! 12,345 `Workloads.HeapOrder`, grown by a known number): the heap snapshot the agent serves
//! counts the type exactly (read by `clrspy heap --json`); a mini dump is a gzip'd ELF core;
//! `mode=operation` answers 202 with `Location`, polling reaches `succeeded`, the result
//! downloads with the SHA-256 the operation states, DELETE forgets it and its file; DELETE of a
//! running heap snapshot cancels it (`cancelled`, nothing left in the folder); a disk budget of
//! 1 MB is 507. The agent runs under umask 000: what it writes (the folders, the results, the
//! audit log) is owner-only all the same, and the audit log has a line for each dump, snapshot,
//! download and delete, the one whose client left included. Prints the agent's resident memory
//! before, during (its peak) and after the snapshot, and the child's.
//! `CLRSPY_AGENT_GCDUMP_OBJECTS` sets the heap's size (default 1,000,000 orders).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::agent::{audit_lines, new_key, not_private, start_agent_with, Agent};
use common::heap_workload::Workload;
use common::{clrspy_command, live};
use serde_json::Value;

const ORDER: &str = "Workloads.HeapOrder";

/// `curl` METHOD `url` into `out`: the status and the response headers.
fn curl(method: &str, url: &str, key: &str, out: &Path, max_time: u32) -> (u16, String) {
    let headers = out.with_extension("headers");
    let o = Command::new("curl")
        .args([
            "-s",
            "-X",
            method,
            "--max-time",
            &max_time.to_string(),
            "-o",
        ])
        .arg(out)
        .arg("-D")
        .arg(&headers)
        .args([
            "-w",
            "%{http_code}",
            "-H",
            &format!("Authorization: Bearer {key}"),
        ])
        .arg(url)
        .output()
        .unwrap();
    let code = String::from_utf8_lossy(&o.stdout).parse().unwrap_or(0);
    (code, std::fs::read_to_string(&headers).unwrap_or_default())
}

fn json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
}

fn header<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// `VmRSS` and `VmHWM` of a process, KB.
fn rss_kb(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let c = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(c.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out
}

/// The count of `ORDER` in a `.gcdump`, as `clrspy heap --json` reads it.
fn order_count(gcdump: &Path) -> u64 {
    let out = clrspy_command()
        .args(["heap", gcdump.to_str().unwrap(), "--json", "--type", ORDER])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == ORDER)
        .map(|t| t["count"].as_u64().unwrap())
        .unwrap()
}

/// Files under `dir`, any depth, but the audit log (which stays).
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(files(&e.path()));
        } else if e.file_name() != "audit.jsonl" {
            out.push(e.path().display().to_string());
        }
    }
    out
}

fn agent(dir: &Path, folder: &Path, hash: &str, disk_mb: u64) -> Agent {
    let config = dir.join(format!("agent-{disk_mb}.toml"));
    std::fs::write(
        &config,
        format!(
            "folder = {:?}\ndisk_mb = {disk_mb}\n[auth]\napi_key_hashes = [{hash:?}]\n[metrics]\nenabled = false\n",
            folder.to_str().unwrap()
        ),
    )
    .unwrap();
    start_agent_with(
        &[
            "--urls",
            "http://127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        Some(0o000),
        &[],
    )
}

/// Polls `/operations/{id}` until it is no longer running.
fn wait_ended(base: &str, id: &str, key: &str, out: &Path, within: Duration) -> Value {
    let t0 = Instant::now();
    loop {
        let (s, _) = curl("GET", &format!("{base}/operations/{id}"), key, out, 10);
        assert_eq!(s, 200);
        let v = json(out);
        if v["state"] != "running" {
            return v;
        }
        assert!(t0.elapsed() < within, "still running: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The audit log of the first agent: a line for each dump, snapshot, download and delete,
/// naming the key by its hash's first 12 digits and the process; the direct snapshot and the
/// downloaded result with their sizes, the snapshot whose client left as cut.
fn audited(log: &Path, hash: &str, pid: u32, served: u64, result: u64) {
    let lines = audit_lines(log);
    for l in &lines {
        eprintln!("audit: {l}");
        assert_eq!(l["credential"], format!("key:{}", &hash[..12]), "{l}");
        assert_eq!(l["process"], pid, "{l}");
    }
    let find = |route: &str, method: &str, outcome: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l["route"] == route && l["method"] == method && l["outcome"] == outcome)
            .collect()
    };
    let gcdumps = find("/gcdump", "GET", "complete");
    // Served directly (200, the file's bytes), then two started as operations (202).
    assert_eq!(gcdumps.len(), 3, "{lines:#?}");
    assert_eq!(
        (&gcdumps[0]["status"], &gcdumps[0]["bytes"]),
        (&200.into(), &served.into())
    );
    let left = find("/gcdump", "GET", "cut");
    assert_eq!(left.len(), 1, "the client that left: {lines:#?}");
    assert!(
        left[0]["status"].is_null() && left[0]["bytes"] == 0,
        "{}",
        left[0]
    );
    assert_eq!(find("/gcdump", "GET", "refused")[0]["status"], 429);
    assert_eq!(find("/dump", "GET", "complete").len(), 4, "{lines:#?}");
    let got = find("/operations/{id}/result", "GET", "complete");
    assert_eq!(got.len(), 1, "{lines:#?}");
    assert_eq!(got[0]["bytes"], result);
    assert_eq!(
        find("/operations/{id}", "DELETE", "complete").len(),
        4,
        "{lines:#?}"
    );
    assert_eq!(lines.len(), 3 + 1 + 1 + 4 + 1 + 4, "{lines:#?}");
}

#[test]
fn dumps_heap_snapshots_and_operations() {
    if !live() {
        return;
    }
    let objects: u64 = std::env::var("CLRSPY_AGENT_GCDUMP_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut w = Workload::start();
    let held = w.grow(objects.saturating_sub(12_345));
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("agent-folder");
    let (key, hash) = new_key();
    let a = agent(dir.path(), &folder, &hash, 4096);
    let (b, agent_pid) = (a.base.clone(), a.child.id());
    let out = dir.path().join("out");

    // A heap snapshot served directly: the exact count; the agent's memory stays small.
    let before = rss_kb(agent_pid).0;
    let sampler = std::thread::spawn(move || {
        // The child's resident memory, sampled while it runs.
        let (mut child_peak, t0) = (0u64, Instant::now());
        while t0.elapsed() < Duration::from_secs(300) {
            for c in children(agent_pid) {
                child_peak = child_peak.max(rss_kb(c).0);
            }
            if child_peak > 0 && children(agent_pid).is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child_peak
    });
    let t0 = Instant::now();
    let gc = dir.path().join("served.gcdump");
    let (s, h) = curl("GET", &format!("{b}/gcdump?pid={}", w.pid), &key, &gc, 400);
    let took = t0.elapsed();
    assert_eq!(
        s,
        200,
        "{h} {}",
        String::from_utf8_lossy(&std::fs::read(&gc).unwrap())
    );
    let child_peak = sampler.join().unwrap();
    let (after, peak) = rss_kb(agent_pid);
    let size = std::fs::metadata(&gc).unwrap().len();
    eprintln!(
        "gcdump of {held} orders: {:.1} MB in {:.1} s; agent RSS before {before} KB, peak {peak} KB, \
         after {after} KB; the child's peak RSS {child_peak} KB",
        size as f64 / 1048576.0,
        took.as_secs_f64()
    );
    assert!(
        header(&h, "content-disposition")
            .unwrap()
            .contains(".gcdump\""),
        "{h}"
    );
    assert_eq!(order_count(&gc), held);
    // The graph was built in the child: the agent grew by far less than the heap's size.
    assert!(
        peak < before + 32 * 1024,
        "agent peak {peak} KB (before {before} KB)"
    );
    assert!(files(&folder).is_empty(), "left: {:?}", files(&folder));

    // A client that leaves a direct request: the child is killed, nothing is left or listed.
    let (s, _) = curl("GET", &format!("{b}/gcdump?pid={}", w.pid), &key, &out, 1);
    assert_eq!(s, 0, "curl gave up after 1 s");
    let t0 = Instant::now();
    while !(children(agent_pid).is_empty() && files(&folder).is_empty()) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "left: {:?}",
            files(&folder)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Killed, not finished: far sooner than the snapshot took above.
    assert!(
        t0.elapsed() < took / 2,
        "{:?} after the client left",
        t0.elapsed()
    );
    assert_eq!(
        curl("GET", &format!("{b}/operations"), &key, &out, 10).0,
        200
    );
    assert_eq!(json(&out), serde_json::json!([]));

    // A mini dump: a gzip'd ELF core.
    let t0 = Instant::now();
    let gz = dir.path().join("mini.dmp.gz");
    let (s, h) = curl(
        "GET",
        &format!("{b}/dump?pid={}&type=mini", w.pid),
        &key,
        &gz,
        400,
    );
    assert_eq!(
        s,
        200,
        "{h} {}",
        String::from_utf8_lossy(&std::fs::read(&gz).unwrap())
    );
    let mut magic = [0u8; 4];
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap())
        .read_exact(&mut magic)
        .unwrap();
    assert_eq!(&magic, b"\x7fELF");
    eprintln!(
        "mini dump: {:.1} MB gzip in {:.1} s",
        std::fs::metadata(&gz).unwrap().len() as f64 / 1048576.0,
        t0.elapsed().as_secs_f64()
    );
    assert!(files(&folder).is_empty(), "left: {:?}", files(&folder));

    // analyze=1: a heap dump read at once; the answer is its analysis, the dump is deleted.
    let t0 = Instant::now();
    let read = dir.path().join("analysis.json");
    let (s, h) = curl(
        "GET",
        &format!("{b}/dump?pid={}&analyze=1", w.pid),
        &key,
        &read,
        400,
    );
    assert_eq!(
        s,
        200,
        "{h} {}",
        String::from_utf8_lossy(&std::fs::read(&read).unwrap())
    );
    let a = json(&read);
    assert_eq!(a["dump"]["pid"], w.pid, "{a}");
    let threads = a["threads"].as_array().unwrap();
    assert!(
        threads.iter().any(
            |t| t["frames"].as_array().is_some_and(|f| f
                .iter()
                .any(|f| f["method"].as_str().unwrap_or("").contains("Workloads.")))
        ),
        "no thread in the workload's code: {a}"
    );
    assert!(a["locks"].is_array() && a["deadlocks"].is_array(), "{a}");
    eprintln!(
        "dump analyzed through the agent in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert!(files(&folder).is_empty(), "left: {:?}", files(&folder));

    // As an operation: 202 + Location, polled to succeeded, downloaded, deleted.
    let (s, h) = curl(
        "GET",
        &format!("{b}/gcdump?pid={}&mode=operation", w.pid),
        &key,
        &out,
        30,
    );
    assert_eq!(s, 202, "{h}");
    let op = json(&out);
    let location = header(&h, "location").unwrap().to_string();
    assert_eq!(
        location,
        format!("/operations/{}", op["id"].as_str().unwrap())
    );
    assert_eq!(
        (op["kind"].as_str(), op["state"].as_str()),
        (Some("gcdump"), Some("running"))
    );
    let id = op["id"].as_str().unwrap().to_string();
    // One heap snapshot of a process at a time.
    let (s, h) = curl("GET", &format!("{b}/gcdump?pid={}", w.pid), &key, &out, 30);
    assert_eq!((s, header(&h, "retry-after")), (429, Some("1")), "{h}");
    let done = wait_ended(&b, &id, &key, &out, Duration::from_secs(300));
    assert_eq!(done["state"], "succeeded", "{done}");
    // Under umask 000, the folders and the result are the agent's alone.
    assert_eq!(files(&folder).len(), 1, "{:?}", files(&folder));
    let open = not_private(&folder);
    assert!(open.is_empty(), "open to others: {open:?}");
    let (s, list_h) = curl("GET", &format!("{b}/operations"), &key, &out, 10);
    assert_eq!(s, 200, "{list_h}");
    assert_eq!(json(&out)[0]["id"], id.as_str());
    let result = dir.path().join("result.gcdump");
    let (s, _) = curl("GET", &format!("{b}{location}/result"), &key, &result, 120);
    assert_eq!(s, 200);
    let (bytes, sha) = {
        use sha2::Digest;
        let data = std::fs::read(&result).unwrap();
        let hex: String = sha2::Sha256::digest(&data)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect();
        (data.len() as u64, hex)
    };
    assert_eq!(done["artifact"]["bytes"], bytes);
    assert_eq!(done["artifact"]["sha256"], sha.as_str());
    assert_eq!(order_count(&result), held);
    assert_eq!(
        curl("DELETE", &format!("{b}{location}"), &key, &out, 10).0,
        204
    );
    assert_eq!(
        curl("GET", &format!("{b}{location}"), &key, &out, 10).0,
        404
    );
    assert!(files(&folder).is_empty(), "left: {:?}", files(&folder));

    // DELETE of a running heap snapshot cancels it: the child is killed, nothing is left.
    let (s, _) = curl(
        "GET",
        &format!("{b}/gcdump?pid={}&mode=operation", w.pid),
        &key,
        &out,
        30,
    );
    assert_eq!(s, 202);
    let id = json(&out)["id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(500));
    let (s, _) = curl("DELETE", &format!("{b}/operations/{id}"), &key, &out, 10);
    assert_eq!(s, 202, "{}", json(&out));
    let v = wait_ended(&b, &id, &key, &out, Duration::from_secs(30));
    assert_eq!(v["state"], "cancelled", "{v}");
    assert!(files(&folder).is_empty(), "left: {:?}", files(&folder));
    assert!(children(agent_pid).is_empty(), "the child is left running");
    // So does DELETE of a running full dump.
    let t0 = Instant::now();
    let (s, _) = curl(
        "GET",
        &format!("{b}/dump?pid={}&type=full&mode=operation", w.pid),
        &key,
        &out,
        30,
    );
    assert_eq!(s, 202);
    let id = json(&out)["id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(300));
    let (s, _) = curl("DELETE", &format!("{b}/operations/{id}"), &key, &out, 10);
    assert_eq!(s, 202, "{}", json(&out));
    let v = wait_ended(&b, &id, &key, &out, Duration::from_secs(30));
    assert_eq!(v["state"], "cancelled", "{v}");
    eprintln!(
        "full dump cancelled after {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert!(files(&folder).is_empty(), "left: {:?}", files(&folder));
    assert!(children(agent_pid).is_empty(), "the child is left running");
    // The process can be snapshotted again at once (its limit was released).
    let (s, _) = curl(
        "GET",
        &format!("{b}/dump?pid={}&type=mini&mode=operation", w.pid),
        &key,
        &out,
        30,
    );
    assert_eq!(s, 202, "{}", json(&out));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    assert_eq!(
        wait_ended(&b, &id, &key, &out, Duration::from_secs(120))["state"],
        "succeeded"
    );
    assert_eq!(
        curl("DELETE", &format!("{b}/operations/{id}"), &key, &out, 10).0,
        204
    );
    assert!(files(&folder).is_empty());
    drop(a);
    audited(&folder.join("audit.jsonl"), &hash, w.pid, size, bytes);

    // A disk budget of 1 MB: 507, and nothing started.
    let small = agent(dir.path(), &folder, &hash, 1);
    for route in ["dump?type=mini&", "gcdump?"] {
        let url = format!("{}/{route}pid={}", small.base, w.pid);
        let (s, _) = curl("GET", &url, &key, &out, 30);
        assert_eq!(s, 507, "{route}: {}", json(&out));
        assert!(json(&out)["error"].as_str().unwrap().contains("disk_mb"));
    }
    assert!(files(&folder).is_empty());
}
