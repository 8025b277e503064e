//! Controller actions the JIT inlined into MVC's compiled invokers, named (testapps/DiagScenarios,
//! .NET 10): recorded from the program's start, the frame that holds `/taskresult`'s action
//! reads `dynamicClass.lambda_methodN [inlines DiagScenarios.Controllers.DiagController.TaskResult…]`
//! in the waits, the just-my-code view and speedscope; recorded by attaching after the JIT
//! compiled it, the lambda keeps its name and the report says why, once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::scenarios::{diag_scenarios, start_diag};
use common::{clrspy, clrspy_command, count, info, json, live, wait_for_line};
use serde_json::Value;

/// `GET path` on 127.0.0.1:`port` (HTTP/1.0); the status.
fn get(port: u16, path: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("GET {path}: {answer:?}"))
}

/// The method names of a stack report's rows (`top_exclusive` and `top_inclusive`).
fn rows(report: &Value) -> Vec<String> {
    ["top_exclusive", "top_inclusive"]
        .iter()
        .flat_map(|k| report[*k].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["method"].as_str().map(str::to_string))
        .collect()
}

const ACTION: &str = "[inlines DiagScenarios.Controllers.DiagController.TaskResult";

#[test]
fn an_action_inlined_into_mvcs_invoker_is_named_from_the_start_and_explained_on_attach() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("launch.nettrace");
    let (out, log) = (dir.path().join("app.out"), dir.path().join("record.log"));
    let mut record = clrspy_command()
        .args(["record", "--duration", "25s", "-o"])
        .arg(&trace)
        .args(["--", "dotnet"])
        .arg(diag_scenarios())
        .args(["--urls", "http://127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start clrspy record");
    let ready = wait_for_line(&out, &["ready pid="], Duration::from_secs(90))
        .unwrap_or_else(|| panic!("no ready line: {}", std::fs::read_to_string(&log).unwrap()));
    let port: u16 = ready
        .split_whitespace()
        .find_map(|w| w.strip_prefix("port="))
        .and_then(|p| p.parse().ok())
        .unwrap();
    // Sync over async in the action: each request blocks its pool thread 300 ms.
    for _ in 0..8 {
        assert_eq!(get(port, "/api/diag/taskresult?ms=300"), 200);
    }
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = record.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "clrspy record did not end");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let path = trace.to_str().unwrap();
    assert!(count(&info(&trace), "Inlined") >= 2, "{}", info(&trace));

    let waits = json(&["report", path, "waits", "--top", "60", "--json"]);
    let named: Vec<String> = rows(&waits)
        .into_iter()
        .filter(|m| m.starts_with("dynamicClass.lambda_method") && m.contains(ACTION))
        .collect();
    assert!(!named.is_empty(), "{:#?}", rows(&waits));
    assert!(waits.get("inlining_note").is_none(), "{waits}");
    // Just my code: the lambda holding the action is the app's, not folded into MVC.
    let mine = json(&[
        "report",
        path,
        "waits",
        "--top",
        "60",
        "--just-my-code",
        "--json",
    ]);
    assert!(rows(&mine).contains(&named[0]), "{:#?}", rows(&mine));
    // Every view takes the names from the same place: speedscope's frames too.
    let speedscope = dir.path().join("launch.speedscope.json");
    let c = clrspy()
        .args(["convert", path, "--to", "speedscope", "-o"])
        .arg(&speedscope)
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&speedscope).unwrap()).unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    assert!(
        frames.iter().any(|f| f["name"] == named[0].as_str()),
        "{} not among speedscope's frames",
        named[0]
    );

    // Attached after the JIT compiled the invoker: its name is kept, and the report says why.
    let app = start_diag();
    let (status, _) = app.get("/api/diag/taskresult?ms=10", Duration::from_secs(30));
    assert_eq!(status, 200);
    let attached = dir.path().join("attach.nettrace");
    let log = dir.path().join("attach.log");
    let mut record = clrspy_command()
        .args([
            "record",
            "-p",
            &app.pid().to_string(),
            "--duration",
            "6s",
            "-o",
        ])
        .arg(&attached)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    assert!(wait_for_line(&log, &["Recording "], Duration::from_secs(30)).is_some());
    for _ in 0..6 {
        let (status, _) = app.get("/api/diag/taskresult?ms=300", Duration::from_secs(30));
        assert_eq!(status, 200);
    }
    assert!(record.wait().unwrap().success());
    let waits = json(&[
        "report",
        attached.to_str().unwrap(),
        "waits",
        "--top",
        "60",
        "--json",
    ]);
    let lambda = rows(&waits)
        .into_iter()
        .find(|m| m.starts_with("dynamicClass.lambda_method"))
        .unwrap_or_else(|| panic!("{:#?}", rows(&waits)));
    assert!(!lambda.contains("[inlines"), "{lambda}");
    let note = waits["inlining_note"].as_str().unwrap_or_default();
    assert!(
        note.contains(&lambda) && note.contains("compiled before the recording began"),
        "{waits}"
    );
}
