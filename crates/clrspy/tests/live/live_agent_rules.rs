//! `clrspy agent` with a rules file: the watcher runs inside the agent and `/rules` shows it.
//! A rule that traces a workload (by name and this test's own path) acts once and is
//! `finished` with its trace on disk; a rule whose match holds for nothing stays `running`
//! with 0 matches and a log that names the processes it did not match. `/reports` of the CPU
//! workload names its hot method on top of the `cpu` report. A bad rules file stops the agent
//! from starting (exit 2, naming the mistake); a reload is 202 and, like the reports, has
//! its line in the audit log; SIGTERM stops the watcher cleanly.
//!
//! Other tests run the same workloads on this machine: this one runs Workloads.dll through a
//! folder link of its own and its rule matches only that path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::agent::{audit_lines, new_key, start_agent};
use common::{clrspy_command, live, workloads};
use serde_json::Value;

/// Killed when dropped.
struct Program(Child);

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET (or POST) `url` with the key: the status and the JSON body.
fn call(method: &str, url: &str, key: &str, max_time: u32) -> (u16, Value) {
    let o = Command::new("curl")
        .args(["-s", "--path-as-is", "-X", method])
        .args(["--max-time", &max_time.to_string()])
        .args(["-H", &format!("Authorization: Bearer {key}")])
        .args(["-w", "\n%{http_code}"])
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// Asks `url` until `ok` holds of its answer (`limit` at most): the last answer.
/// The `action_done` decision about process `pid` in a rule's log at `url`.
fn action_done(url: &str, key: &str, pid: u32) -> Value {
    let log = call("GET", url, key, 10).1;
    log["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["pid"] == pid && d["event"] == "action_done")
        .cloned()
        .unwrap_or_else(|| panic!("no action_done for {pid}: {log}"))
}

fn wait_for(url: &str, key: &str, limit: Duration, ok: impl Fn(&Value) -> bool) -> Value {
    let until = Instant::now() + limit;
    loop {
        let (s, v) = call("GET", url, key, 10);
        if s == 200 && ok(&v) {
            return v;
        }
        assert!(Instant::now() < until, "{url}: still {s} {v}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn config(dir: &Path, hash: &str, rules: &Path, out: &Path) -> std::path::PathBuf {
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "folder = {:?}\n[auth]\napi_key_hashes = [{hash:?}]\n[metrics]\nenabled = false\n\
             [rules]\nfile = {:?}\noutput = {:?}\n",
            dir.join("agent-folder").to_str().unwrap(),
            rules.to_str().unwrap(),
            out.to_str().unwrap()
        ),
    )
    .unwrap();
    config
}

#[test]
fn rules_inside_the_agent_and_reports() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("agent-rules-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let (key, hash) = new_key();
    let rules = dir.path().join("rules.json");
    let out = dir.path().join("rules-out");

    // A bad rules file: the agent does not start, and says where the mistake is.
    std::fs::write(
        &rules,
        "{ \"rules\": [ { \"name\": \"x\",\n \"match\": { \"name\": \"\" }, \"dump\": {} } ] }",
    )
    .unwrap();
    let cfg = config(dir.path(), &hash, &rules, &out);
    let bad = clrspy_command()
        .args(["agent", "--urls", "http://127.0.0.1:0", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("rules.json:2:"), "{err}");

    std::fs::write(
        &rules,
        r#"{ "rules": [
          { "name": "wl-cpu", "match": { "name": "Workloads", "command_line": "agent-rules-wl/" },
            "trace": { "profile": "cpu", "duration": "2s" }, "limits": { "max_actions": 1 } },
          { "name": "never", "match": { "name": "no-such-program-4711" }, "dump": {} } ] }"#,
    )
    .unwrap();
    let agent = start_agent(&[
        "--urls",
        "http://127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let b = &agent.base;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");

    let all = wait_for(&format!("{b}/rules"), &key, Duration::from_secs(10), |v| {
        v["watching"] == true
    });
    assert_eq!(all["enabled"], true, "{all}");
    let names: Vec<&str> = all["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["wl-cpu", "never"], "{all}");

    let prog = Program(
        Command::new("dotnet")
            .arg(link.join("Workloads.dll"))
            .args(["cpu", "--seconds", "90", "--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = prog.0.id();

    // The tracing rule acts once and is finished, its trace on disk.
    let t = wait_for(
        &format!("{b}/rules/wl-cpu"),
        &key,
        Duration::from_secs(90),
        |v| v["state"] == "finished",
    );
    eprintln!("wl-cpu: {t}");
    assert_eq!(t["counts"]["started"], 1, "{t}");
    assert_eq!(t["counts"]["done"], 1, "{t}");
    assert_eq!(t["counts"]["matched"], 1, "{t}");
    assert_eq!(t["actions"], serde_json::json!(["trace"]));
    let last = action_done(&format!("{b}/rules/wl-cpu/log?limit=200"), &key, pid);
    let file = Path::new(last["file"].as_str().unwrap());
    assert_eq!(file.parent().unwrap(), out.join("wl-cpu"));
    assert!(std::fs::metadata(file).unwrap().len() > 1000, "{t}");
    let log = call("GET", &format!("{b}/rules/wl-cpu/log"), &key, 10).1;
    let events: Vec<&str> = log["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["pid"] == pid)
        .filter_map(|d| d["event"].as_str())
        .collect();
    assert_eq!(
        events,
        ["matched", "action_started", "action_done"],
        "{log}"
    );

    // The same in /metrics: the agent's own figures count the rules' actions.
    let text = Command::new("curl")
        .args(["-s", "--max-time", "10", "-H"])
        .arg(format!("Authorization: Bearer {key}"))
        .arg(format!("{b}/metrics"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    for line in [
        "clrspy_agent_rule_actions_total{rule=\"wl-cpu\",outcome=\"done\"} 1\n",
        "clrspy_agent_rule_state{rule=\"wl-cpu\",state=\"finished\"} 1\n",
        "clrspy_agent_rule_matched_total{rule=\"never\"} 0\n",
    ] {
        assert!(text.contains(line), "{line}{text}");
    }

    // The rule nothing matches: running, 0 matches, and its log says why for our process.
    let n = call("GET", &format!("{b}/rules/never"), &key, 10).1;
    eprintln!("never: {n}");
    assert_eq!(n["state"], "running", "{n}");
    assert_eq!(n["counts"]["matched"], 0, "{n}");
    assert!(n["counts"]["looked_at"].as_u64().unwrap() >= 1, "{n}");
    assert!(
        n["reason"].as_str().unwrap().contains("no process matched"),
        "{n}"
    );
    let log = call("GET", &format!("{b}/rules/never/log?limit=200"), &key, 10).1;
    let ours = log["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["pid"] == pid)
        .unwrap_or_else(|| panic!("{log}"))
        .clone();
    assert_eq!(ours["rule"], "never");
    assert!(
        ours["detail"].as_str().unwrap().contains("does not hold"),
        "{ours}"
    );
    assert_eq!(call("GET", &format!("{b}/rules/nope"), &key, 10).0, 404);
    assert_eq!(call("GET", &format!("{b}/rules/.."), &key, 10).0, 400);

    // /reports: three seconds of the CPU workload, its hot method on top.
    let (s, r) = call(
        "GET",
        &format!("{b}/reports?pid={pid}&kind=cpu&seconds=3"),
        &key,
        120,
    );
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        (r["pid"].as_u64(), r["seconds"].as_u64()),
        (Some(pid as u64), Some(3))
    );
    let cpu = &r["reports"]["cpu"];
    assert_eq!(
        cpu["top_exclusive"][0]["method"], "Workloads.Cpu.Burn",
        "{cpu}"
    );
    let (s, e) = call("GET", &format!("{b}/reports?pid={pid}&kind=nope"), &key, 10);
    assert_eq!(s, 400);
    assert!(e["error"].as_str().unwrap().contains("cpu"), "{e}");
    let left: Vec<_> = std::fs::read_dir(dir.path().join("agent-folder"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["audit.jsonl"], "the temporary trace is left");

    // A reload: 202, and the audit log names who asked, as it does the reports.
    let (s, v) = call("POST", &format!("{b}/rules/reload"), &key, 10);
    assert_eq!(s, 202, "{v}");
    let lines = audit_lines(&dir.path().join("agent-folder/audit.jsonl"));
    let routes: Vec<(&str, &str, u64)> = lines
        .iter()
        .map(|l| {
            assert_eq!(l["credential"], format!("key:{}", &hash[..12]), "{l}");
            (
                l["route"].as_str().unwrap(),
                l["outcome"].as_str().unwrap(),
                l["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("/reports", "complete", 200),
            ("/reports", "refused", 400),
            ("/rules/reload", "complete", 202)
        ],
        "{lines:#?}"
    );
    assert_eq!(lines[0]["process"], pid);

    // SIGTERM: the watcher stops and says so in its log.
    let st = Command::new("kill")
        .args(["-TERM", &agent.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let until = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = std::fs::read_to_string(out.join("decisions.jsonl")).unwrap();
        if text.lines().last().unwrap_or("").contains("\"stopped\"") {
            break text;
        }
        assert!(Instant::now() < until, "{text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(text.contains("\"action_done\""), "{text}");
    drop(agent);
}

/// `[rules] listen`: the agent's watcher holds a reverse diagnostic port; a program started
/// with `DOTNET_DiagnosticPorts=SOCKET,connect,suspend` waits there, is traced from its first
/// instruction (the trace has the runtime's start) and let go. A socket that cannot be made
/// stops the agent from starting.
#[test]
fn startup_rules_through_the_agents_listen_port() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("agent-listen-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let (key, hash) = new_key();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{ "rules": [ { "name": "start",
            "match": { "command_line": "agent-listen-wl/.* exceptions" },
            "trace": { "profile": "exceptions" } } ] }"#,
    )
    .unwrap();
    let out = dir.path().join("rules-out");
    let base = config(dir.path(), &hash, &rules, &out);
    let with_listen = |sock: &Path| {
        let text = std::fs::read_to_string(&base).unwrap();
        let cfg = dir.path().join("listen.toml");
        std::fs::write(
            &cfg,
            format!("{text}listen = {:?}\n", sock.to_str().unwrap()),
        )
        .unwrap();
        cfg
    };

    let bad = with_listen(&dir.path().join("no-such-folder/port.sock"));
    let o = clrspy_command()
        .args(["agent", "--urls", "http://127.0.0.1:0", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-folder/port.sock"), "{err}");

    let sock = dir.path().join("port.sock");
    let cfg = with_listen(&sock);
    let agent = start_agent(&[
        "--urls",
        "http://127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let b = &agent.base;
    wait_for(&format!("{b}/rules"), &key, Duration::from_secs(10), |v| {
        v["watching"] == true
    });
    let mut prog = Program(
        Command::new("dotnet")
            .arg(link.join("Workloads.dll"))
            .args(["exceptions", "--count", "7"])
            .env(
                "DOTNET_DiagnosticPorts",
                format!("{},connect,suspend", sock.display()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = prog.0.id();
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = prog.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "the held program was never let go");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    wait_for(
        &format!("{b}/rules/start"),
        &key,
        Duration::from_secs(30),
        |v| v["counts"]["done"] == 1,
    );
    // The rule's last decision may be about another .NET process seen since (another test's):
    // this program's comes from the rule's log.
    let last = action_done(&format!("{b}/rules/start/log?limit=200"), &key, pid);
    let file = last["file"].as_str().unwrap();
    let info = clrspy_command()
        .args(["info", file, "--json"])
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&info.stdout).unwrap();
    let count = |name: &str| {
        info["per_event"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == name)
            .filter_map(|e| e["count"].as_u64())
            .sum::<u64>()
    };
    // Runtime/Start is written while the runtime starts, before any managed code: only a
    // session opened while it was held sees it.
    assert!(count("Runtime/Start") >= 1, "{info}");
    assert_eq!(count("Exception/Start"), 7, "{info}");
}
