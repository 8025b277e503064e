//! `clrspy agent` against real .NET processes, spoken to by curl: `/health` open; every other
//! route (and an unknown one) 401 without credentials, with a wrong key, an expired JWT or one
//! signed by another key — with `WWW-Authenticate: Bearer`; the key from `agent new-key` and a
//! valid JWT (dotnet-monitor's key format) pass; `/processes` lists the workload with its
//! runtime instance cookie; `/processes/{pid}` shows its environment with a planted secret
//! redacted; `/stacks` gives its threads; `..`, absolute paths and bad pids are 400; a 1 MB
//! body is 413; 100 clients that send half a request and sleep do not hold up `/health`. Also
//! HTTPS with a certificate made by rcgen, and the refusals (exit code 2). The agent's RSS with
//! a few processes visible is printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::agent::{new_key, start_agent, Agent};
use common::{clrspy_command, live, workloads, Running};
use serde_json::Value;

const SECRET: &str = "s3cr3t-agent-test-value-4711";
const SUBJECT: &str = "0b6a5b1c-agent-test-subject";
const AUDIENCE: &str = "https://github.com/dotnet/dotnet-monitor";
const ISSUER: &str = "https://github.com/dotnet/dotnet-monitor/generatekey+MonitorApiKey";

impl Agent {
    /// `VmRSS`, and `RssAnon` (what is not the binary's pages), kB.
    fn rss_kb(&self) -> String {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap()
        };
        format!("{} (anonymous {})", field("VmRSS:"), field("RssAnon:"))
    }
}

/// A curl answer: status, the `WWW-Authenticate` header, the body.
struct Answer {
    status: u16,
    www: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn curl(url: &str, token: Option<&str>, extra: &[&str]) -> Answer {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-S", "--path-as-is", "--max-time", "30", "-o", "-"])
        .args(["-w", "\n%{http_code} %header{www-authenticate}"]);
    if let Some(t) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd.args(extra).arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (code, www) = last.split_once(' ').unwrap_or((last, ""));
    Answer {
        status: code.trim().parse().unwrap_or(0),
        www: www.trim().to_string(),
        body: body.to_string(),
    }
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// An EC P-256 key: its signing key and the public key as dotnet-monitor writes it (base64url
/// of a JWK's JSON, .NET's member names).
fn jwt_key() -> (jsonwebtoken::EncodingKey, String) {
    let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = kp.public_key_raw();
    let jwk = serde_json::json!({
        "AdditionalData": {}, "Alg": null, "Crv": "P-256", "D": null, "KeyOps": [], "Kty": "EC",
        "X": b64(&raw[1..33]), "Y": b64(&raw[33..65]),
    });
    (
        jsonwebtoken::EncodingKey::from_ec_der(&kp.serialize_der()),
        b64(jwk.to_string().as_bytes()),
    )
}

fn jwt(key: &jsonwebtoken::EncodingKey, exp_from_now: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = serde_json::json!({
        "aud": AUDIENCE, "iss": ISSUER, "sub": SUBJECT, "exp": now + exp_from_now,
    });
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

/// `idle` with a secret planted in its environment.
fn start_idle() -> Running {
    let mut child = Command::new("dotnet")
        .arg(workloads())
        .args(["idle", "--seconds", "120"])
        .env("MY_API_KEY", SECRET)
        .env("CLRSPY_TEST_MARK", "env-test-value")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = line
        .trim()
        .strip_prefix("ready pid=")
        .unwrap()
        .parse()
        .unwrap();
    Running(child, pid)
}

/// The agent's metrics collector off: it would open a counters session in every .NET process on
/// the machine, other tests' too (whose own `counters` would then find the meters taken).
const METRICS_OFF: &str = "[metrics]\nenabled = false\n";

fn write_config(dir: &Path, text: &str) -> String {
    let p = dir.join("agent.toml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn agent_routes_security_and_limits() {
    if !live() {
        return;
    }
    let work = [start_idle(), start_idle(), start_idle()];
    let w = &work[0];
    let (key, hash) = new_key();
    let (signing, public) = jwt_key();
    let (other, _) = jwt_key();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[auth.jwt]\npublic_key = \"{public}\"\nsubject = \"{SUBJECT}\"\n[limits]\nheader_timeout = \"20s\"\n{METRICS_OFF}"
        ),
    );
    let agent = start_agent(&[
        "--config",
        &config,
        "--urls",
        "http://127.0.0.1:0",
        "--api-key-hash",
        &hash,
    ]);
    let url = |path: &str| format!("{}{path}", agent.base);

    let h = curl(&url("/health"), None, &[]);
    assert_eq!(h.status, 200, "{}", h.body);
    assert_eq!(h.json()["status"], "ok");

    // Every other route, and an unknown one, needs credentials.
    let routes = [
        "/processes".to_string(),
        format!("/processes/{}", w.1),
        format!("/stacks?pid={}", w.1),
        format!("/debug/pprof/profile?seconds=1&pid={}", w.1),
        format!("/debug/pprof/allocs?seconds=1&pid={}", w.1),
        "/no-such-route".to_string(),
        "/processes/..".to_string(),
    ];
    let (expired, forged) = (jwt(&signing, -3600), jwt(&other, 600));
    for r in &routes {
        for token in [
            None,
            Some("wrong-key"),
            Some(hash.as_str()),
            Some(&expired),
            Some(&forged),
        ] {
            let a = curl(&url(r), token, &[]);
            assert_eq!(a.status, 401, "{r} with {token:?}: {}", a.body);
            assert_eq!(a.www, "Bearer", "{r}");
            assert_eq!(a.json()["error"], "invalid credentials", "{r}");
        }
    }

    // The key and a valid JWT pass.
    let good_jwt = jwt(&signing, 600);
    for token in [key.as_str(), good_jwt.as_str()] {
        let a = curl(&url("/processes"), Some(token), &[]);
        assert_eq!(a.status, 200, "{}", a.body);
        let list = a.json();
        for p in &work {
            let me = list
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["pid"] == p.1)
                .unwrap_or_else(|| panic!("pid {} not in {list}", p.1));
            assert_eq!(me["name"], "Workloads");
            assert!(me["runtime_version"]
                .as_str()
                .unwrap()
                .starts_with(char::is_numeric));
            let cookie = me["runtime_instance_cookie"].as_str().unwrap();
            assert_eq!(cookie.len(), 32, "{cookie}");
            assert!(me["command_line"]
                .as_str()
                .unwrap()
                .contains("Workloads.dll idle"));
        }
    }
    // Three processes visible, a listing done: the agent's resident memory.
    println!(
        "agent RSS with {} .NET processes visible: {} kB",
        work.len(),
        agent.rss_kb()
    );

    let one = curl(&url(&format!("/processes/{}", w.1)), Some(&key), &[]);
    assert_eq!(one.status, 200, "{}", one.body);
    let v = one.json();
    assert_eq!(v["pid"], w.1);
    let env = v["environment"].as_object().unwrap();
    let planted = env["MY_API_KEY"].as_str().unwrap();
    assert_ne!(planted, SECRET, "the secret is shown: {planted}");
    println!("MY_API_KEY as /processes/{{pid}} shows it: {planted:?}");
    assert!(
        !one.body.contains(SECRET),
        "the secret is somewhere in {}",
        one.body
    );
    assert_eq!(env["CLRSPY_TEST_MARK"], "env-test-value");
    assert_eq!(
        curl(&url("/processes/999999999"), Some(&key), &[]).status,
        404
    );

    let started = Instant::now();
    let s = curl(&url(&format!("/stacks?pid={}", w.1)), Some(&key), &[]);
    assert_eq!(s.status, 200, "{}", s.body);
    let v = s.json();
    assert!(!v["threads"].as_array().unwrap().is_empty(), "{v}");
    println!("/stacks took {:?}", started.elapsed());

    // By runtime instance cookie, as dotnet-monitor's uid; a name three processes share is a 400
    // that names them.
    let list = curl(&url("/processes"), Some(&key), &[]).json();
    let cookie = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["pid"] == w.1)
        .unwrap()["runtime_instance_cookie"]
        .as_str()
        .unwrap()
        .to_string();
    let s = curl(&url(&format!("/stacks?uid={cookie}")), Some(&key), &[]);
    assert_eq!(s.status, 200, "{}", s.body);
    assert_eq!(s.json()["pid"], w.1);
    let s = curl(&url("/stacks?name=Workloads"), Some(&key), &[]);
    assert_eq!(s.status, 400, "{}", s.body);
    assert!(s.body.contains(&w.1.to_string()), "{}", s.body);
    let s = curl(&url("/stacks?name=NoSuchApp"), Some(&key), &[]);
    assert_eq!(s.status, 404, "{}", s.body);

    // Three snapshots of one process at once (each takes a few hundred ms): one runs, the
    // others are refused with 429 and Retry-After.
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let (u, k) = (url(&format!("/stacks?pid={}", w.1)), key.clone());
            std::thread::spawn(move || curl(&u, Some(&k), &["-D", "-"]))
        })
        .collect();
    let answers: Vec<Answer> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    let codes: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert!(codes.contains(&200) && codes.contains(&429), "{codes:?}");
    for a in answers.iter().filter(|a| a.status == 429) {
        assert!(
            a.body.to_ascii_lowercase().contains("retry-after: 1"),
            "{}",
            a.body
        );
    }

    // Nothing a client sends becomes a path; bad pids are 400.
    for bad in [
        "/processes/..".to_string(),
        "/processes/%2e%2e".to_string(),
        "/processes/..%2F..%2Fetc%2Fpasswd".to_string(),
        "/processes/%2Fetc%2Fpasswd".to_string(),
        "/processes/-1".to_string(),
        "/processes/0".to_string(),
        "/stacks?pid=../../etc/passwd".to_string(),
        "/stacks?pid=%2Fetc%2Fpasswd".to_string(),
        "/stacks?pid=abc".to_string(),
        "/stacks".to_string(),
        format!("/stacks?pid={}&file=/etc/passwd", w.1),
    ] {
        let a = curl(&url(&bad), Some(&key), &[]);
        assert_eq!(a.status, 400, "{bad}: {}", a.body);
        assert!(a.json()["error"].is_string());
    }

    // A body over the limit (64 KB by default): refused from its Content-Length, before
    // any of it is read. The client asks first (`Expect: 100-continue`, as curl does for
    // large bodies and HTTP clients do for uploads): a client that sends the whole body
    // regardless may see the connection reset under the answer, as with any server that
    // refuses early (a CI run under load got curl's send error, no status).
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b'x'; 1 << 20]).unwrap();
    let a = curl(
        &url("/processes"),
        Some(&key),
        &[
            "--data-binary",
            &format!("@{}", big.display()),
            "-H",
            "Expect: 100-continue",
        ],
    );
    assert_eq!(a.status, 413, "{}", a.body);

    // 100 slow clients, each with half a request sent, hold their connections open.
    let addr = agent.base.trim_start_matches("http://").to_string();
    let slow: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /processes HTTP/1.1\r\nHost: x\r\nAuthor")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..5 {
        let t = Instant::now();
        let h = curl(&url("/health"), None, &[]);
        assert_eq!(h.status, 200);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "/health took {:?}",
            t.elapsed()
        );
    }
    let t = Instant::now();
    assert_eq!(curl(&url("/processes"), Some(&key), &[]).status, 200);
    println!(
        "with 100 slow clients: /processes in {:?}; agent RSS {} kB",
        t.elapsed(),
        agent.rss_kb()
    );
    drop(slow);
}

#[test]
fn agent_serves_https_with_a_self_signed_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let keyf = dir.path().join("key.pem");
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&keyf, ck.signing_key.serialize_pem()).unwrap();
    let (key, hash) = new_key();
    let config = write_config(
        dir.path(),
        &format!(
            "urls = [\"https://127.0.0.1:0\"]\n[tls]\ncert = \"{}\"\nkey = \"{}\"\n[auth]\napi_key_hashes = [\"{hash}\"]\n{METRICS_OFF}",
            cert.display(),
            keyf.display()
        ),
    );
    let agent = start_agent(&["--config", &config]);
    assert!(
        agent.base.starts_with("https://127.0.0.1:"),
        "{}",
        agent.base
    );
    let ca = ["--cacert", cert.to_str().unwrap()];
    let url = |p: &str| format!("{}{p}", agent.base);
    assert_eq!(curl(&url("/health"), None, &ca).status, 200);
    assert_eq!(curl(&url("/processes"), None, &ca).status, 401);
    assert_eq!(curl(&url("/processes"), Some(&key), &ca).status, 200);
    // Without trusting the certificate, curl refuses it; plain HTTP gets no answer.
    assert_eq!(curl(&url("/health"), None, &[]).status, 0);
    let plain = agent.base.replace("https://", "http://");
    assert_eq!(curl(&format!("{plain}/health"), None, &[]).status, 0);
}

#[test]
fn agent_refuses_unsafe_starts() {
    let (_, hash) = new_key();
    let refused = |args: &[&str], why: &str| {
        let out = clrspy_command().arg("agent").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    };
    refused(
        &["--urls", "http://127.0.0.1:0"],
        "every route but /health needs credentials",
    );
    refused(
        &["--urls", "http://0.0.0.0:0", "--api-key-hash", &hash],
        "without TLS",
    );
    refused(
        &["--urls", "https://127.0.0.1:0", "--api-key-hash", &hash],
        "[tls]",
    );
    refused(&["--api-key-hash", "not-a-hash"], "64 hex digits");
    // --insecure starts, and warns.
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), METRICS_OFF);
    let agent = start_agent(&[
        "--urls",
        "http://127.0.0.1:0",
        "--insecure",
        "--config",
        &config,
    ]);
    assert_eq!(
        curl(&format!("{}/processes", agent.base), None, &[]).status,
        200
    );
}
