//! `clrspy agent` under a short load with three idle .NET processes visible: 2,000 requests on
//! four keep-alive connections (`/processes`, `/processes/{pid}`, `/health`, a bad key 401, a
//! traversal-like pid 400, an unknown pid 404), every answer the status it should be, every
//! listing naming the three processes; the agent's RSS after the first 500 and at the end
//! differ by less than a generous bound (no growth per request). No timing is asserted; the
//! figures are printed. Full load figures: bench/agent_load.sh.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::agent::{new_key, start_agent};
use common::{live, machine, start, Running};

/// One keep-alive connection: (status, body) per GET.
struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    fn get(&mut self, path: &str, key: Option<&str>) -> (u16, String) {
        let auth = key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
        // One write: a request in pieces would wait on Nagle and the delayed ACK.
        let request = format!("GET {path} HTTP/1.1\r\nHost: agent\r\n{auth}\r\n");
        self.w.write_all(request.as_bytes()).unwrap();
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut length = 0usize;
        loop {
            line.clear();
            self.r.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0; length];
        self.r.read_exact(&mut body).unwrap();
        (status, String::from_utf8_lossy(&body).to_string())
    }
}

fn rss_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("RssAnon:"))
}

#[test]
fn two_thousand_requests_without_errors_or_growth() {
    if !live() {
        return;
    }
    let _machine = machine();
    let work: Vec<Running> = (0..3)
        .map(|_| start("idle", &["--seconds", "120"]))
        .collect();
    let pids: Vec<u32> = work.iter().map(|w| w.1).collect();
    let (key, hash) = new_key();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.toml");
    std::fs::write(&config, "[metrics]\nenabled = false\n").unwrap();
    let agent = start_agent(&[
        "--config",
        config.to_str().unwrap(),
        "--urls",
        "http://127.0.0.1:0",
        "--api-key-hash",
        &hash,
    ]);
    let addr = agent.base.trim_start_matches("http://").to_string();
    let agent_pid = agent.child.id();

    // The plan: each entry's path, whether the good key goes with it, the status it must get.
    let mut plan: Vec<(String, Option<&str>, u16)> = vec![
        ("/processes".into(), Some(&key), 200),
        ("/processes".into(), Some(&key), 200),
        ("/processes".into(), Some(&key), 200),
        ("/health".into(), None, 200),
        ("/processes".into(), Some("not-the-key"), 401),
        ("/processes/..%2F..%2Fetc%2Fpasswd".into(), Some(&key), 400),
        ("/processes/4194304".into(), Some(&key), 404),
    ];
    plan.extend(
        pids.iter()
            .map(|p| (format!("/processes/{p}"), Some(key.as_str()), 200)),
    );
    let total = 2000;
    let per_conn = total / 4;
    let mut first = None;
    let start_at = Instant::now();
    let mut times: Vec<Duration> = Vec::new();
    std::thread::scope(|s| {
        let results: Vec<_> = (0..4)
            .map(|c| {
                let (plan, addr, pids) = (&plan, &addr, &pids);
                s.spawn(move || {
                    let mut conn = Conn::open(addr);
                    let mut times = Vec::new();
                    for i in 0..per_conn {
                        let (path, key, want) = &plan[(i * 4 + c) % plan.len()];
                        let t = Instant::now();
                        let (status, body) = conn.get(path, *key);
                        times.push(t.elapsed());
                        assert_eq!(status, *want, "{path}: {body}");
                        if path == "/processes" && *want == 200 {
                            let list: serde_json::Value = serde_json::from_str(&body).unwrap();
                            let listed: Vec<u64> = list
                                .as_array()
                                .unwrap()
                                .iter()
                                .filter_map(|p| p["pid"].as_u64())
                                .collect();
                            for p in pids {
                                assert!(listed.contains(&u64::from(*p)), "{p} not in {body}");
                            }
                        }
                    }
                    times
                })
            })
            .collect();
        // The RSS once the first quarter or so is done (the agent's pools warmed up).
        while first.is_none() {
            std::thread::sleep(Duration::from_millis(20));
            if start_at.elapsed() > Duration::from_millis(500)
                || results.iter().all(|h| h.is_finished())
            {
                first = Some(rss_kb(agent_pid));
            }
        }
        for h in results {
            times.extend(h.join().unwrap());
        }
    });
    let took = start_at.elapsed();
    let (first_rss, first_anon) = first.unwrap();
    let (rss, anon) = rss_kb(agent_pid);
    times.sort();
    eprintln!(
        "{total} requests in {took:?} ({:.0}/s on 4 connections): p50 {:?} p99 {:?} max {:?}; \
         agent VmRSS {first_rss} kB -> {rss} kB, RssAnon {first_anon} kB -> {anon} kB",
        total as f64 / took.as_secs_f64(),
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1],
    );
    // Generous: pools (blocking threads, buffers) may still grow a little; a per-request leak
    // of even 2 kB would be 4 MB.
    assert!(
        anon < first_anon + 4096,
        "RssAnon grew from {first_anon} kB to {anon} kB"
    );
}
