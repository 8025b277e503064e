//! The call views on a live Razor Pages app (testapps/RazorApp, see testapps/README.md): a page
//! that renders a partial with tag helpers 40 times, whose tag helper ranks readings through
//! the app's `Ranker`2` and compiles an expression on every call. Recorded under load with
//! `clrspy record -p PID`, the trace's stacks are 60+ frames deep, and:
//! - `report cpu --callers CreateDelegate --json` names `DynamicMethod.CreateDelegate` and
//!   reaches the app's `Ranker`2.CompileSelector`, `ScoreTagHelper.ProcessAsync` and the
//!   partial's `ExecuteAsync` among its callers;
//! - `convert --to folded --just-my-code` has no two framework frames in a row and keeps the
//!   app's frames;
//! - `report cpu --tree` collapses framework chains.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_analysis::JustMyCode;
use common::{clrspy_command, live, repo, run_bounded, Running};

/// Builds testapps/RazorApp; returns RazorApp.dll.
fn razor_app() -> PathBuf {
    let out = repo().join("target/testapps/RazorApp");
    common::dotnet_build(&repo().join("testapps/RazorApp"), &out);
    out.join("RazorApp.dll")
}

/// One `GET /`, its body's length (0 on any failure).
fn get(port: u16) -> usize {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    if s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return 0;
    }
    let mut body = Vec::new();
    let _ = s.read_to_end(&mut body);
    body.len()
}

fn deep_json(s: &str) -> serde_json::Value {
    let mut d = serde_json::Deserializer::from_str(s);
    d.disable_recursion_limit();
    d.into_iter::<serde_json::Value>().next().unwrap().unwrap()
}

/// Every frame name of a caller tree.
fn frames(callers: &serde_json::Value, out: &mut Vec<String>) {
    for c in callers.as_array().into_iter().flatten() {
        if let Some(f) = c["frame"].as_str() {
            out.push(f.to_string());
        }
        frames(&c["callers"], out);
    }
}

fn run(args: &[&str]) -> String {
    let out = clrspy_command().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn razor_page_callers_and_just_my_code() {
    if !live() {
        return;
    }
    let dll = razor_app();
    let mut child = Command::new("dotnet")
        .arg(&dll)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start RazorApp");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse::<u32>().ok())
    };
    let (Some(pid), Some(port)) = (field("pid="), field("port=")) else {
        let _ = child.kill();
        panic!("unexpected first line from RazorApp: {line:?}");
    };
    let _app = Running(child, pid);
    let port = u16::try_from(port).unwrap();
    // Warm up (tiering, the views' compilation), then load for longer than the recording.
    for _ in 0..30 {
        assert!(get(port) > 1000, "GET / failed");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let until = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    get(port);
                }
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("razor.nettrace");
    let mut rec = clrspy_command();
    rec.args(["record", "-p", &pid.to_string(), "--duration", "2s", "-o"])
        .arg(&trace);
    let r = run_bounded(rec, dir.path(), Duration::from_secs(90));
    stop.store(true, Ordering::Relaxed);
    for l in load {
        let _ = l.join();
    }
    assert!(r.status.is_some_and(|s| s.success()), "{}", r.stderr);
    let t = trace.to_str().unwrap();

    // The stacks are as deep as the issue's.
    let folded = run(&["convert", t, "--to", "folded", "-o", "-"]);
    let deepest = folded
        .lines()
        .map(|l| {
            l.rsplit_once(' ')
                .map_or(0, |(s, _)| s.split(';').count() - 1)
        })
        .max()
        .unwrap_or(0);
    assert!(deepest >= 60, "deepest stack {deepest} frames");

    // The callers of the hot framework method reach the app's frames.
    let v = deep_json(&run(&[
        "report",
        t,
        "cpu",
        "--callers",
        "CreateDelegate",
        "--json",
    ]));
    assert_eq!(
        v["method"], "System.Reflection.Emit.DynamicMethod.CreateDelegate",
        "{v}"
    );
    assert!(v["samples"].as_f64().unwrap() > 0.0);
    let mut names = Vec::new();
    frames(&v["callers"], &mut names);
    for want in [
        "RazorApp.Scoring.Ranker`2[System.__Canon,System.__Canon].CompileSelector",
        "RazorApp.TagHelpers.ScoreTagHelper.ProcessAsync",
        "RazorApp.Pages.Shared.Pages_Shared__Row.ExecuteAsync",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} not among the callers"
        );
    }

    // Just my code: no two framework frames in a row, the app's frames kept.
    let rule = JustMyCode::default();
    let mine = run(&["convert", t, "--to", "folded", "-o", "-", "--just-my-code"]);
    for line in mine.lines() {
        let (stack, _) = line.rsplit_once(' ').unwrap();
        let fr: Vec<&str> = stack.split(';').skip(1).collect();
        assert!(
            !fr.windows(2)
                .any(|w| rule.is_framework_name(w[0]) && rule.is_framework_name(w[1])),
            "{line}"
        );
    }
    assert!(mine.contains(";RazorApp.Scoring.Ranker`2[System.__Canon,System.__Canon].Rank;"));

    // The tree collapses the framework's chains.
    let tree = run(&["report", t, "cpu", "--tree", "--depth", "200"]);
    assert!(tree.contains(" frames…] → "), "{tree}");
}
