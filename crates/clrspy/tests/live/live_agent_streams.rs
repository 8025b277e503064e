//! `clrspy agent`'s streamed routes against real .NET processes: `/trace` (GET with a profile,
//! POST with dotnet-monitor's body) gives a whole .nettrace (rundown, clean end) that TraceEvent
//! reads with the same event count as clrspy; a slow reader loses nothing and does not cut the
//! recording short; a client that leaves stops it and the spool goes; `/counters` gives JSON
//! lines of System.Runtime; `/logs` gives the web app's messages as NDJSON with secrets
//! masked. Without the key every route is 401; the agent's folder is empty afterwards but for
//! its audit log, which has a line for each stream (the one whose client left: cut). The agent
//! runs under umask 000: its folder, spools and audit log are owner-only all the same. SIGTERM
//! during a minute's trace: the trace ends whole at once and the agent says nothing was cut.
//! An agent started from flags alone (no config) traces too (its disk budget was 0 MB: 507).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::agent::{audit_lines, new_key, not_private, start_agent_with};
use common::{harness, info, live, start, start_web_with_env};
use serde_json::Value;

/// A curl call: `extra` arguments, the body into `out`; the status and the response headers.
fn curl(url: &str, key: Option<&str>, out: &Path, extra: &[&str]) -> (u16, String) {
    let headers = out.with_extension("headers");
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o"])
        .arg(out)
        .arg("-D")
        .arg(&headers)
        .args(["-w", "%{http_code}"])
        .args(extra);
    if let Some(k) = key {
        cmd.args(["-H", &format!("Authorization: Bearer {k}")]);
    }
    let o = cmd.arg(url).output().unwrap();
    let code = String::from_utf8_lossy(&o.stdout).parse().unwrap_or(0);
    let h = std::fs::read_to_string(&headers).unwrap_or_default();
    (code, h.to_ascii_lowercase())
}

/// The folder holds nothing but the audit log (within a few seconds: a stopped recording
/// ends its rundown).
fn empties(dir: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let left = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name() != "audit.jsonl")
            .count();
        if left == 0 {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The trace is whole, and TraceEvent reads as many events from it as clrspy.
fn whole_and_read_by_traceevent(trace: &Path) -> Value {
    let i = info(trace);
    assert_eq!(i["truncated"], false, "{i}");
    assert_eq!(i["ended_cleanly"], true, "{i}");
    assert_eq!(i["has_rundown"], true, "{i}");
    assert_eq!(i["bytes_read"], i["bytes_total"], "{i}");
    assert!(i["events"].as_u64().unwrap() > 100, "{i}");
    if let Some(h) = harness() {
        let out = Command::new("dotnet")
            .arg(&h)
            .arg("counts")
            .arg(trace)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let te: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(te["events"], i["events"], "TraceEvent: {te}");
        assert_eq!(te["lost_events"], 0, "{te}");
    }
    i
}

/// GET `path` over HTTP/1.0 (a body that ends when the connection closes): reads the headers
/// and a few KB, stops reading for `stall`, then reads the rest 16 KB at a time with pauses.
/// The body, and the size of the spool in `folder` at the end of the stall (checked
/// owner-only then).
fn stalled_get(
    base: &str,
    path: &str,
    key: &str,
    stall: Duration,
    folder: &Path,
) -> (Vec<u8>, u64) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    // A small receive buffer, fixed (no autotuning): the kernel holds little for the client.
    {
        use std::os::fd::AsRawFd;
        let size: libc::c_int = 64 * 1024;
        // SAFETY: setsockopt on our own socket with a c_int option value.
        let rc = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
    }
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    all.extend_from_slice(&buf[..n]);
    std::thread::sleep(stall);
    let open = not_private(folder);
    assert!(open.is_empty(), "open to others while spooling: {open:?}");
    let spooled = std::fs::read_dir(folder)
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0);
    let mut piece = vec![0u8; 16 * 1024];
    loop {
        let n = s.read(&mut piece).unwrap();
        if n == 0 {
            break;
        }
        all.extend_from_slice(&piece[..n]);
        std::thread::sleep(Duration::from_millis(5));
    }
    let at = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("the response's headers");
    let head = String::from_utf8_lossy(&all[..at]).to_string();
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(!head.to_ascii_lowercase().contains("chunked"), "{head}");
    (all.split_off(at + 4), spooled)
}

fn providers(i: &Value) -> Vec<String> {
    i["per_provider"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["provider"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn streamed_traces_counters_and_logs() {
    if !live() {
        return;
    }
    let cpu = start("cpu", &["--seconds", "240", "--threads", "1"]);
    let web = start_web_with_env(&[(
        "ConnectionStrings__Shop",
        "Server=db;User Id=shop;Password=hunter2-secret;",
    )]);
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("agent-folder");
    let (key, hash) = new_key();
    let config = dir.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "folder = {:?}\n[auth]\napi_key_hashes = [{hash:?}]\n[metrics]\nenabled = false\n",
            folder.to_str().unwrap()
        ),
    )
    .unwrap();
    let mut agent = start_agent_with(
        &[
            "--urls",
            "http://127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        Some(0o000),
        &[],
    );
    let b = &agent.base.clone();
    let pid = cpu.1;
    let out = dir.path().join("t.nettrace");

    // Without the key: 401 everywhere, before anything starts.
    for r in [
        format!("/trace?pid={pid}&duration=1s"),
        format!("/counters?pid={pid}"),
        format!("/logs?pid={pid}"),
    ] {
        assert_eq!(curl(&format!("{b}{r}"), None, &out, &[]).0, 401, "{r}");
    }

    // GET: three seconds of the cpu profile, whole, read by TraceEvent.
    let (s, h) = curl(
        &format!("{b}/trace?pid={pid}&duration=3s&profile=cpu"),
        Some(&key),
        &out,
        &["--max-time", "90"],
    );
    assert_eq!(
        s,
        200,
        "{h}{}",
        String::from_utf8_lossy(&std::fs::read(&out).unwrap())
    );
    assert!(h.contains("content-type: application/octet-stream"), "{h}");
    assert!(
        h.contains(&format!(
            "content-disposition: attachment; filename=\"{pid}-"
        )),
        "{h}"
    );
    let i = whole_and_read_by_traceevent(&out);
    let first_bytes = std::fs::metadata(&out).unwrap().len();
    eprintln!(
        "GET /trace: {} bytes, {} events",
        i["bytes_total"], i["events"]
    );
    assert!(providers(&i)
        .iter()
        .any(|p| p == "Microsoft-DotNETCore-SampleProfiler"));
    assert!(empties(&folder), "the spool is left");

    // POST with dotnet-monitor's body: its providers, whole.
    let body = r#"{"Providers":[{"Name":"Microsoft-DotNETCore-SampleProfiler","EventLevel":"Informational"},
        {"Name":"Microsoft-Windows-DotNETRuntime","Keywords":"0x1","EventLevel":"Informational"}],
        "RequestRundown":true,"BufferSizeInMB":64}"#;
    let (s, h) = curl(
        &format!("{b}/trace?pid={pid}&duration=2s"),
        Some(&key),
        &out,
        &[
            "--max-time",
            "90",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
        ],
    );
    assert_eq!(
        s,
        200,
        "{h}{}",
        String::from_utf8_lossy(&std::fs::read(&out).unwrap())
    );
    let i = whole_and_read_by_traceevent(&out);
    assert!(providers(&i)
        .iter()
        .any(|p| p == "Microsoft-DotNETCore-SampleProfiler"));
    assert!(empties(&folder));

    // A stalled, then slow reader: it reads the headers and a little, stops reading for
    // longer than the recording lasts, then reads in small pieces. Nothing is lost and the
    // recording ran its whole duration meanwhile (the pump never waited for the client).
    // The allocating workload with gc-verbose: about 10 MB, more than the sockets' buffers
    // hold (the client's is fixed at 64 KB, the agent's grows to 4 MB at most).
    let alloc = start("alloc", &["--seconds", "120"]);
    let started = Instant::now();
    let (got, spooled) = stalled_get(
        b,
        &format!("/trace?pid={}&duration=5s&profile=gc-verbose", alloc.1),
        &key,
        Duration::from_secs(8),
        &folder,
    );
    std::fs::write(&out, &got).unwrap();
    let i = whole_and_read_by_traceevent(&out);
    let secs = i["duration_ns"].as_f64().unwrap() / 1e9;
    eprintln!(
        "stalled reader: {} bytes in {:?}, trace of {secs:.1} s, {spooled} spooled during the stall",
        i["bytes_total"],
        started.elapsed()
    );
    assert!(secs >= 4.5, "the recording was cut short: {secs} s");
    assert!(
        got.len() > 8 << 20,
        "too small to outgrow the sockets' buffers: {}",
        got.len()
    );
    // While the client read nothing, the recording went on into the spool to its end.
    assert!(
        spooled + (1 << 20) >= got.len() as u64,
        "spooled {spooled} of {} during the stall",
        got.len()
    );
    assert!(empties(&folder));
    drop(alloc);

    // A client that leaves after a second stops a minute's recording: the spool goes and the
    // process can be traced again at once.
    let left = Instant::now();
    let (s, _) = curl(
        &format!("{b}/trace?pid={pid}&duration=60s&profile=cpu"),
        Some(&key),
        &out,
        &["--max-time", "2"],
    );
    assert_eq!(s, 200);
    assert!(
        empties(&folder),
        "the recording went on after its client left"
    );
    assert!(left.elapsed() < Duration::from_secs(30));
    let (s, _) = curl(
        &format!("{b}/trace?pid={pid}&duration=1s&profile=cpu"),
        Some(&key),
        &out,
        &["--max-time", "60"],
    );
    assert_eq!(s, 200, "traced again");

    // Counters: JSON lines of System.Runtime, one reading each. Its EventCounters, which any
    // number of sessions may read (the meters allow one session per process, and other
    // agents on this machine may hold it).
    let lines = out.with_extension("jsonl");
    let (s, h) = curl(
        &format!("{b}/counters?pid={pid}&duration=4s&counters=EventCounters%5CSystem.Runtime"),
        Some(&key),
        &lines,
        &["--max-time", "60"],
    );
    assert_eq!(s, 200, "{h}");
    assert!(h.contains("content-type: application/x-ndjson"), "{h}");
    let text = std::fs::read_to_string(&lines).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let runtime: Vec<&Value> = rows
        .iter()
        .filter(|r| r["provider"] == "System.Runtime")
        .collect();
    let names: std::collections::BTreeSet<&str> =
        runtime.iter().filter_map(|r| r["name"].as_str()).collect();
    eprintln!("counters: {} rows, {names:?}", runtime.len());
    assert!(runtime.len() >= 2, "{text}");
    assert!(names.iter().any(|n| n.contains("gc")), "{text}");
    // The default (the meter): its rows, or a note line saying why there are none.
    let (s, _) = curl(
        &format!("{b}/counters?pid={pid}&durationSeconds=3"),
        Some(&key),
        &lines,
        &["--max-time", "60"],
    );
    assert_eq!(s, 200);
    let text = std::fs::read_to_string(&lines).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let meter_rows = rows
        .iter()
        .filter(|r| r["provider"] == "System.Runtime")
        .count();
    let held = rows.iter().any(|r| {
        r["note"]
            .as_str()
            .is_some_and(|n| n.contains("another tool"))
    });
    eprintln!("counters (meter): {meter_rows} rows, held elsewhere: {held}");
    assert!(meter_rows >= 2 || held, "{text}");
    assert!(empties(&folder));

    // Logs: the web app's messages while the stream runs, its secret masked.
    let wp = web.app.1;
    let logs_out = dir.path().join("logs.jsonl");
    let mut stream = Command::new("curl")
        .args(["-s", "--max-time", "60", "-o"])
        .arg(&logs_out)
        .args(["-H", &format!("Authorization: Bearer {key}")])
        .arg(format!("{b}/logs?pid={wp}&level=Information&duration=8s"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let web_get = |path: &str| {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null"])
            .arg(format!("http://127.0.0.1:{}{path}", web.port))
            .status()
            .unwrap()
    };
    for _ in 0..3 {
        assert!(web_get("/log").success());
    }
    assert!(web_get("/logconfig?key=ConnectionStrings:Shop").success());
    assert!(stream.wait().unwrap().success());
    let text = std::fs::read_to_string(&logs_out).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let slow: Vec<&Value> = recs
        .iter()
        .filter(|r| r["category"] == "WebApp.Requests")
        .collect();
    assert_eq!(slow.len(), 3, "{text}");
    assert_eq!(slow[0]["level"], "Warning");
    assert_eq!(slow[0]["message"], "slow request 42");
    let config = recs
        .iter()
        .find(|r| r["category"] == "WebApp.Config")
        .unwrap_or_else(|| panic!("no config message: {text}"));
    assert!(!text.contains("hunter2"), "a secret went out: {config}");
    assert!(
        config["message"].as_str().unwrap().contains("Server=db"),
        "{config}"
    );
    assert!(empties(&folder));

    // SIGTERM during a minute's trace: the recording is asked to end, its body ends whole
    // (rundown included) within the grace period, and the agent says nothing was cut.
    let last = dir.path().join("last.nettrace");
    let mut tracing = Command::new("curl")
        .args(["-s", "--max-time", "60", "-o"])
        .arg(&last)
        .args(["-H", &format!("Authorization: Bearer {key}")])
        .arg(format!("{b}/trace?pid={pid}&duration=60s&profile=cpu"))
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let stopped = Instant::now();
    // SAFETY: kill(2) on the agent's own pid.
    assert_eq!(
        unsafe { libc::kill(agent.child.id() as i32, libc::SIGTERM) },
        0
    );
    assert!(tracing.wait().unwrap().success());
    let status = loop {
        if let Some(s) = agent.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(40),
            "the agent did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("stopped in {:?}: {status}", stopped.elapsed());
    assert!(status.success(), "{status}");
    assert!(stopped.elapsed() < Duration::from_secs(25));
    let i = whole_and_read_by_traceevent(&last);
    assert!(i["duration_ns"].as_f64().unwrap() < 30e9, "{i}");
    let said = agent.said.lock().unwrap().join("\n");
    assert!(said.contains("every response in flight finished"), "{said}");

    // Under umask 000: the folder and the audit log are the agent's alone.
    let open = not_private(&folder);
    assert!(open.is_empty(), "open to others: {open:?}");
    // A line per stream, with the caller's key hash prefix and the process; the trace whose
    // client left is cut, the first one's bytes are what curl got.
    let lines = audit_lines(&folder.join("audit.jsonl"));
    for l in &lines {
        eprintln!("audit: {l}");
        assert_eq!(l["credential"], format!("key:{}", &hash[..12]), "{l}");
        assert!(l["process"].as_u64().is_some(), "{l}");
    }
    let count = |route: &str, method: &str, outcome: &str| {
        lines
            .iter()
            .filter(|l| l["route"] == route && l["method"] == method && l["outcome"] == outcome)
            .count()
    };
    assert_eq!(lines[0]["bytes"], first_bytes, "{}", lines[0]);
    assert_eq!(lines[0]["process"], pid);
    assert_eq!(count("/trace", "GET", "complete"), 4, "{lines:#?}");
    assert_eq!(count("/trace", "POST", "complete"), 1, "{lines:#?}");
    assert_eq!(count("/trace", "GET", "cut"), 1, "{lines:#?}");
    assert_eq!(count("/counters", "GET", "complete"), 2, "{lines:#?}");
    assert_eq!(count("/logs", "GET", "complete"), 1, "{lines:#?}");
    assert_eq!(lines.len(), 9, "{lines:#?}");
    drop(agent);

    // Started from flags alone: the config's defaults (a 1024 MB disk budget), so a trace is
    // recorded, not refused 507. Its folder is the default one in its temporary directory.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let flags = start_agent_with(
        &["--urls", "http://127.0.0.1:0", "--api-key-hash", &hash],
        None,
        &[("TMPDIR", tmp.as_path())],
    );
    let (s, h) = curl(
        &format!("{}/trace?pid={pid}&duration=1s&profile=cpu", flags.base),
        Some(&key),
        &out,
        &["--max-time", "60"],
    );
    assert_eq!(
        s,
        200,
        "{h}{}",
        String::from_utf8_lossy(&std::fs::read(&out).unwrap())
    );
    whole_and_read_by_traceevent(&out);
}
