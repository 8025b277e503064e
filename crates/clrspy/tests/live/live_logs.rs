//! `clrspy logs`: testapps/WebApp's ILogger messages, live, through its EventSource logger —
//! every message logged after the session started, with its level, category, arguments,
//! scopes and exception; `--filter` by category; a program without the logger is said plainly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{clrspy_command, live, start_template, start_web, workloads};
use serde_json::Value;

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

/// Starts `clrspy logs ARGS` and waits (up to 30 s) for its "from now on" line on stderr;
/// the child and the rest of its stderr, read on a thread.
fn logs(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = clrspy_command()
        .arg("logs")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line.contains("from now on") => return (child, rx),
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("clrspy logs never said the session started: {e}");
            }
        }
    }
}

/// The child's stdout once it ended (its --duration).
fn output(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_web_apps_messages_come_with_arguments_scopes_and_exceptions() {
    if !live() {
        return;
    }
    let web = start_web();
    let pid = web.app.1.to_string();
    let (child, _) = logs(&["-p", &pid, "--json", "--duration", "6s"]);
    for _ in 0..5 {
        assert!(get(web.port, "/log").contains("200"));
    }
    // HttpClient's 404 throws out of the handler: Kestrel logs it with the exception.
    assert!(get(web.port, "/call?path=/nope").contains("500"));
    let out = output(child);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let warnings: Vec<&Value> = lines
        .iter()
        .filter(|l| l["category"] == "WebApp.Requests")
        .collect();
    assert_eq!(warnings.len(), 5, "{out}");
    for w in &warnings {
        assert_eq!(w["level"], "Warning", "{w}");
        assert_eq!(w["message"], "slow request 42", "{w}");
        assert_eq!(w["args"]["Id"], "42", "{w}");
        assert_eq!(w["args"]["{OriginalFormat}"], "slow request {Id}", "{w}");
        let scopes = w["scopes"].as_array().unwrap();
        assert!(
            scopes
                .iter()
                .any(|s| s.as_str().unwrap().contains("RequestPath:/log")),
            "the request's scope: {w}"
        );
        assert!(w["timestamp"].as_str().unwrap().ends_with('Z'), "{w}");
    }
    let failed = lines
        .iter()
        .find(|l| l["level"] == "Error" && !l["exception"].is_null())
        .unwrap_or_else(|| panic!("no error with its exception: {out}"));
    assert_eq!(
        failed["exception"]["type"], "System.Net.Http.HttpRequestException",
        "{failed}"
    );
    assert!(
        failed["exception"]["details"]
            .as_str()
            .unwrap()
            .contains("404"),
        "{failed}"
    );
    // The hosting's own messages at Information: a start per request served (5 /log, the
    // /call, and the /nope it asked the app itself for).
    let started = lines
        .iter()
        .filter(|l| {
            l["category"] == "Microsoft.AspNetCore.Hosting.Diagnostics" && l["event_id"] == 1
        })
        .count();
    assert_eq!(started, 7, "{out}");

    // Text, Microsoft.AspNetCore at Warning: the app's warnings and no hosting messages.
    let (child, _) = logs(&[
        "-p",
        &pid,
        "--filter",
        "Microsoft.AspNetCore:Warning",
        "--duration",
        "4s",
    ]);
    for _ in 0..3 {
        get(web.port, "/log");
    }
    let text = output(child);
    assert_eq!(
        text.matches("warn: WebApp.Requests[0]").count(),
        3,
        "{text}"
    );
    assert!(text.contains("      slow request 42"), "{text}");
    assert!(!text.contains("Microsoft.AspNetCore.Hosting"), "{text}");
}

/// The `dotnet new web` template as it is (its default logging): the hosting's request lines.
#[test]
fn the_web_templates_request_lines_come_with_their_categories() {
    if !live() {
        return;
    }
    let (app, port) = start_template();
    let pid = app.1.to_string();
    let (child, _) = logs(&["-p", &pid, "--duration", "4s"]);
    for _ in 0..3 {
        assert!(get(port, "/").contains("200"));
    }
    let text = output(child);
    let starting = "info: Microsoft.AspNetCore.Hosting.Diagnostics[1]";
    assert_eq!(text.matches(starting).count(), 3, "{text}");
    assert_eq!(
        text.matches("info: Microsoft.AspNetCore.Hosting.Diagnostics[2]")
            .count(),
        3,
        "{text}"
    );
    assert!(
        text.contains("      Request starting HTTP/1.1 GET http://127.0.0.1"),
        "{text}"
    );
    assert!(text.contains("Executed endpoint 'HTTP: GET /'"), "{text}");
}

#[test]
fn a_program_without_the_eventsource_logger_is_said_plainly() {
    if !live() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_clrspy"))
        .args(["logs", "--", "dotnet"])
        .arg(workloads())
        .args(["idle", "--seconds", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(err.contains("no EventSource logger"), "{err}");
    assert!(err.contains("AddEventSourceLogger"), "{err}");
}

#[test]
fn bad_levels_and_filters_are_refused() {
    for args in [
        ["logs", "--level", "loud", "-p", "1"],
        ["logs", "--filter", "A:Loud", "-p", "1"],
    ] {
        let out = clrspy_command().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Loud") || err.contains("loud"), "{err}");
    }
}
