//! The bundle's redaction on a live app: testapps/WebApp started with a secret in its
//! environment, two on its command line (an option and a connection string), and made to log
//! them; recorded with the logging provider; its environment and command line read from /proc
//! and passed through the `Redactor` as the bundle does, then the trace scrubbed in place: no
//! secret is left in any encoding, every event is still read, and the records say where each
//! secret was.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clrspy_handoff::scrub::Redactor;
use common::{clrspy_command, info, live, web_app, Running};

const API_KEY: &str = "ak-live-5f3c9e1b7d";
const DB_PASSWORD: &str = "pw-Zq8!vT3+kL&m2";
/// The password as the logging provider's MessageJson writes it (System.Text.Json's encoder).
const DB_PASSWORD_JSON: &str = "pw-Zq8!vT3\\u002BkL\\u0026m2";
const CONN_PASSWORD: &str = "cs-9hG2kQ7wXe";

/// `GET path` on 127.0.0.1:port; the response's status line.
fn get(port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
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

/// WebApp with the secrets planted; the process and its port.
fn start_with_secrets() -> (Running, u16) {
    let mut child = Command::new("dotnet")
        .arg(web_app())
        .arg(format!("--Db:Password={DB_PASSWORD}"))
        .arg(format!(
            "--ConnectionStrings:Main=Server=db;User Id=app;Password={CONN_PASSWORD};"
        ))
        .env("MYAPP_API_KEY", API_KEY)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start WebApp");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.parse::<u32>().ok())
    };
    match (field("pid="), field("port=")) {
        (Some(pid), Some(port)) => (Running(child, pid), port as u16),
        _ => {
            let _ = child.kill();
            panic!("unexpected first line from WebApp: {line:?}")
        }
    }
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn holds(hay: &[u8], secret: &str) -> bool {
    let wide = utf16(secret);
    hay.windows(secret.len()).any(|w| w == secret.as_bytes())
        || hay.windows(wide.len()).any(|w| w == wide)
}

fn total_events(path: &std::path::Path) -> u64 {
    let i = info(path);
    i["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["count"].as_u64())
        .sum()
}

#[test]
fn secrets_planted_in_a_web_app_are_nowhere_in_its_scrubbed_trace() {
    if !live() {
        return;
    }
    let (web, port) = start_with_secrets();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("app.nettrace");
    let mut record = clrspy_command()
        .args(["record", "-p", &web.1.to_string(), "--profile", "cpu"])
        .args(["--providers", "Microsoft-Extensions-Logging:0xE:4"])
        .args(["--duration", "8s", "-o"])
        .arg(&trace)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ask for the secrets to be logged all through the window.
    let started = Instant::now();
    let mut served = 0;
    while record.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(60) {
        for key in ["MYAPP_API_KEY", "Db:Password", "ConnectionStrings:Main"] {
            served += usize::from(get(port, &format!("/logconfig?key={key}")).contains("200"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = record.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(served > 0, "WebApp served no /logconfig");
    let original = std::fs::read(&trace).unwrap();
    for secret in [API_KEY, DB_PASSWORD, CONN_PASSWORD, DB_PASSWORD_JSON] {
        assert!(holds(&original, secret), "the app never logged {secret}");
    }
    let events = total_events(&trace);

    // As the bundle does: the environment and command line first, then the trace.
    let mut redactor = Redactor::new(true);
    let environ = diagnostics_client::procfs::environ(web.1).unwrap().pairs();
    let shown_env = redactor.env(&environ, "environment");
    let cmdline = diagnostics_client::procfs::cmdline(web.1).unwrap();
    let shown_args = redactor.args(&cmdline, "command line");
    let done = redactor.trace_in_place(&trace).unwrap();

    eprintln!("scrubbed {events} events: {done:?}");
    // To read the scrubbed trace with other tools (TraceEvent's harness): keep a copy.
    if let Some(keep) = std::env::var_os("CLRSPY_SCRUB_KEEP") {
        std::fs::copy(&trace, keep).unwrap();
    }
    let scrubbed = std::fs::read(&trace).unwrap();
    assert_eq!(scrubbed.len(), original.len());
    let shown = format!("{shown_env:?} {shown_args:?}");
    for secret in [API_KEY, DB_PASSWORD, CONN_PASSWORD, DB_PASSWORD_JSON] {
        assert!(!holds(&scrubbed, secret), "{secret} left in the trace");
        assert!(!shown.contains(secret), "{secret} left in {shown}");
    }
    assert_eq!(total_events(&trace), events, "every event still read");
    assert!(done.secrets >= 3, "{done:?}");
    let places: Vec<String> = redactor
        .redactions()
        .iter()
        .map(|r| format!("{} = {}", r.where_, r.what))
        .collect();
    let said = |prefix: &str| places.iter().any(|p| p.starts_with(prefix));
    assert!(
        said("environment: MYAPP_API_KEY = secret name"),
        "{places:?}"
    );
    assert!(said("command line (argument 2)"), "{places:?}");
    assert!(said("command line (argument 3)"), "{places:?}");
    assert!(
        said("trace (Microsoft-Extensions-Logging/FormattedMessage)"),
        "{places:?}"
    );
    eprintln!("{}", places.join("\n"));
    // The records name places and kinds, never the values.
    for secret in [API_KEY, DB_PASSWORD, CONN_PASSWORD] {
        assert!(!places.iter().any(|p| p.contains(secret)), "{places:?}");
    }
    drop(web);
}

/// Every entry of a zip, decompressed: name → bytes.
fn zip_entries(zip: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    (0..z.len())
        .map(|i| {
            let mut e = z.by_index(i).unwrap();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (e.name().unwrap().to_string(), b)
        })
        .collect()
}

/// The proof, end to end: `clrspy bundle` of the app while it logs the secrets it was
/// given; no secret in any form is in any entry of the zip (each read decompressed: the trace,
/// reports, logs, environment, manifests, index), and the manifest names where each was.
#[test]
fn a_bundle_holds_no_planted_secret_and_says_where_they_were() {
    if !live() {
        return;
    }
    let (web, port) = start_with_secrets();
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("b.zip");
    let mut bundle = clrspy_command()
        .args(["bundle", "-p", &web.1.to_string(), "--duration", "6s", "-o"])
        .arg(&zip)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut served = 0;
    while bundle.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(90) {
        for key in ["MYAPP_API_KEY", "Db:Password", "ConnectionStrings:Main"] {
            served += usize::from(get(port, &format!("/logconfig?key={key}")).contains("200"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = bundle.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(served > 0, "WebApp served no /logconfig");
    let entries = zip_entries(&zip);
    assert!(entries.iter().any(|(n, _)| n == "trace.nettrace"));
    let log = entries
        .iter()
        .find(|(n, _)| n == "logs/app.log")
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap();
    assert!(
        log.contains("WebApp.Config"),
        "the app's log lines: {log:.2000}"
    );
    for (name, bytes) in &entries {
        for secret in [API_KEY, DB_PASSWORD, CONN_PASSWORD, DB_PASSWORD_JSON] {
            assert!(!holds(bytes, secret), "{secret} is in {name}");
        }
    }
    let manifest: serde_json::Value = serde_json::from_slice(
        &entries
            .iter()
            .find(|(n, _)| n == "manifest.json")
            .unwrap()
            .1,
    )
    .unwrap();
    let wheres: Vec<String> = manifest["redacted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["where"].as_str().unwrap().to_string())
        .collect();
    for place in ["environment", "command line", "trace"] {
        assert!(
            wheres.iter().any(|w| w.contains(place)),
            "no redaction in {place}: {wheres:?}"
        );
    }
    assert!(
        wheres.iter().any(|w| w.contains("MYAPP_API_KEY")),
        "{wheres:?}"
    );
}
