//! `clrspy watch` against real .NET processes: a program started after it gets its rule's
//! trace (named `<process>_<pid>_<UTC stamp>.nettrace`, logged); SIGHUP with a broken file
//! keeps the old rules; `--listen` catches a short-lived program from its first instruction; a
//! full output disk is logged and watching goes on; a rule's cooldown holds between dumps on
//! exceptions (one dump, the other exceptions logged as skipped).
//!
//! Other tests (and other people) run the same workloads on this machine: each test runs
//! Workloads.dll through a folder link of its own and matches only that path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::watch::Watch;
use common::{info, json, live, workloads};

/// Workloads.dll reached through a folder link named `name` in `dir`: its command line holds
/// a path no other test's has.
fn own_workloads(dir: &Path, name: &str) -> PathBuf {
    let link = dir.join(name);
    let folder = workloads().parent().unwrap();
    std::os::unix::fs::symlink(folder, &link).unwrap();
    link.join("Workloads.dll")
}

/// Starts `dotnet DLL ARGS`, output discarded, killed when the guard drops.
struct Program(Child);

impl Program {
    fn start(dll: &Path, args: &[&str], env: &[(&str, &str)]) -> Program {
        let mut c = Command::new("dotnet");
        c.arg(dll)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        Program(c.spawn().expect("start dotnet"))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Waits for the exit (2 minutes at most).
    fn wait(&mut self) -> std::process::ExitStatus {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(s) = self.0.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < until, "the program did not end");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// True for `<name>_<pid>_<yyyyMMdd_HHmmss>.<ext>` (or `.<n>.<ext>`, a second file of the
/// process within the same second).
fn named_per_pattern(file: &Path, name: &str, pid: u32, ext: &str) -> bool {
    let Some(f) = file.file_name().and_then(|f| f.to_str()) else {
        return false;
    };
    let f = match f.strip_suffix(&format!(".{ext}")) {
        Some(stem) => match stem.rsplit_once('.') {
            Some((head, n)) if n.parse::<u32>().is_ok_and(|n| n >= 2) => format!("{head}.{ext}"),
            _ => f.to_string(),
        },
        None => return false,
    };
    let Some(rest) = f.strip_prefix(&format!("{name}_{pid}_")) else {
        return false;
    };
    let Some(stamp) = rest.strip_suffix(&format!(".{ext}")) else {
        return false;
    };
    stamp.len() == 15
        && stamp.chars().enumerate().all(
            |(i, c)| {
                if i == 8 {
                    c == '_'
                } else {
                    c.is_ascii_digit()
                }
            },
        )
}

fn for_pid(l: &serde_json::Value, event: &str, pid: u32) -> bool {
    l["event"] == event && l["pid"] == pid
}

#[test]
fn watch_traces_a_program_started_after_it_and_sighup_with_a_broken_file_keeps_the_rules() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dll = own_workloads(dir.path(), "watch-attach-wl");
    let rules = dir.path().join("rules.json");
    let good = r#"{ "rules": [ { "name": "wl-cpu",
        "match": { "name": "Workloads", "command_line": "watch-attach-wl/" },
        "trace": { "profile": "cpu", "duration": "2s" } } ] }"#;
    std::fs::write(&rules, good).unwrap();
    let out = dir.path().join("out");
    let w = Watch::start(&rules, &out, &[]);

    let mut p = Program::start(&dll, &["cpu", "--seconds", "5"], &[]);
    let pid = p.pid();
    let matched = w.wait_for(|l| for_pid(l, "matched", pid), "matched line");
    assert_eq!(matched["rule"], "wl-cpu", "{matched}");
    assert_eq!(matched["process"], "Workloads", "{matched}");
    let (_, file) = trace_done(&w, pid, "end of the trace");
    assert_eq!(file.parent().unwrap(), out.join("wl-cpu"));
    let i = info(&file);
    assert_eq!(i["ended_cleanly"], true, "{i}");
    assert!(
        w.log().iter().any(|l| for_pid(l, "action_started", pid)),
        "{:?}",
        w.log()
    );
    p.wait();

    // A broken file on SIGHUP: the old rules stay, and the log says why, with the place.
    std::fs::write(
        &rules,
        "{ \"rules\": [ { \"name\": \"wl-cpu\",\n  \"match\": { \"name\": \"\" }, \"dump\": {} } ] }",
    )
    .unwrap();
    w.signal("HUP");
    let failed = w.wait_for(|l| l["event"] == "reload_failed", "reload_failed line");
    let why = failed["detail"].as_str().unwrap_or_default();
    assert!(why.contains("rules.json:2:"), "{why}");
    assert!(why.contains("empty pattern"), "{why}");
    assert!(why.contains("previous rules stay"), "{why}");
    let mut q = Program::start(&dll, &["cpu", "--seconds", "4"], &[]);
    let qpid = q.pid();
    let again = w.wait_for(
        |l| for_pid(l, "action_done", qpid),
        "a trace under the old rules",
    );
    assert_eq!(again["rule"], "wl-cpu", "{again}");
    q.wait();

    let status = w.stop();
    assert!(status.success(), "{status:?}");
    let log = std::fs::read_to_string(out.join("decisions.jsonl")).unwrap();
    assert!(
        log.lines().last().unwrap_or("").contains("\"stopped\""),
        "{log}"
    );
    let terminal = std::fs::read_to_string(out.with_extension("stdout")).unwrap();
    assert!(
        terminal.contains("action_done [wl-cpu] trace Workloads"),
        "{terminal}"
    );
}

#[test]
fn listen_catches_a_short_lived_program_from_its_start_and_sigterm_finishes_open_traces() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dll = own_workloads(dir.path(), "watch-listen-wl");
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        r#"[[rules]]
name = "short"
match = { command_line = "watch-listen-wl/.* exceptions" }
trace = { profile = "exceptions", sampler = "kernel" }

[[rules]]
name = "long"
match = { command_line = "watch-listen-wl/.* idle --seconds 60" }
trace = { profile = "gc-collect" }
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let sock = dir.path().join("port.sock");
    let w = Watch::start(&rules, &out, &["--listen", sock.to_str().unwrap()]);
    let ports = format!("{},connect,suspend", sock.display());
    let env = [("DOTNET_DiagnosticPorts", ports.as_str())];

    // A program no rule matches runs at once and ends well.
    let mut other = Program::start(&dll, &["idle", "--seconds", "0"], &env);
    assert!(other.wait().success());
    let seen = w.wait_for(|l| for_pid(l, "seen", other.pid()), "the unmatched program");
    assert!(seen.get("rule").is_none(), "{seen}");

    // A program that lives well under a second is traced from its first instruction.
    let mut p = Program::start(&dll, &["exceptions", "--count", "7"], &env);
    let pid = p.pid();
    assert!(p.wait().success());
    let (_, file) = trace_done(&w, pid, "end of the trace");
    let i = info(&file);
    let names: Vec<String> = i["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}", e["name"].as_str().unwrap_or(""), e["count"]))
        .collect();
    // Runtime/Start is written while the runtime starts, before any managed code: only a
    // session opened while the runtime was held sees it.
    assert!(
        names.iter().any(|n| n.starts_with("Runtime/Start ")),
        "{names:?}"
    );
    assert!(
        names.contains(&"Exception/Start 7".to_string()),
        "{names:?}"
    );
    // The rule asked for the kernel's sampler: the held runtime was sampled from its start.
    assert!(i["kernel_samples"].as_u64().unwrap_or(0) > 0, "{i}");
    let started = w.wait_for(|l| for_pid(l, "action_started", pid), "action_started");
    assert!(
        started["detail"]
            .as_str()
            .unwrap_or("")
            .contains("first instruction"),
        "{started}"
    );

    // SIGTERM while a trace is open: it is finished whole, with its rundown.
    let long = Program::start(&dll, &["idle", "--seconds", "60"], &env);
    let lpid = long.pid();
    w.wait_for(|l| for_pid(l, "action_started", lpid), "the open trace");
    let out_dir = w.out.clone();
    assert!(w.stop().success());
    let log: Vec<serde_json::Value> = std::fs::read_to_string(out_dir.join("decisions.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let stopping = log.iter().find(|l| l["event"] == "stopping").unwrap();
    assert!(
        stopping["detail"]
            .as_str()
            .unwrap_or("")
            .contains("1 open trace"),
        "{stopping}"
    );
    let done = log
        .iter()
        .find(|l| for_pid(l, "action_done", lpid))
        .unwrap_or_else(|| panic!("{log:#?}"));
    let detail = done["detail"].as_str().unwrap_or("");
    assert!(detail.contains("watch stopped"), "{done}");
    assert!(!detail.contains("without the rundown"), "{done}");
    let i = info(Path::new(done["file"].as_str().unwrap()));
    assert_eq!(i["ended_cleanly"], true, "{i}");
    drop(long);
    assert!(!sock.exists(), "the listen socket is removed at the end");
}

/// Unmounts the tmpfs when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_output_disk_is_logged_and_watching_goes_on() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&out)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        common::machine_skip(
            "a_full_output_disk_is_logged_and_watching_goes_on",
            "mounting a 2 MB tmpfs needs root (mount -t tmpfs was refused)",
        );
        return;
    }
    let _mount = Mounted(out.clone());
    let dll = own_workloads(dir.path(), "watch-full-wl");
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{ "rules": [ { "name": "fill", "match": { "command_line": "watch-full-wl/" },
             "trace": { "profile": "cpu", "duration": "30s" } } ] }"#,
    )
    .unwrap();
    // Leave about 600 KB free: the trace fills it within seconds. (The log shares the disk:
    // when other people's .NET programs fill it with lines first, the trace is refused for a
    // full disk instead of cut by one; both are the full disk logged.)
    let filler = out.join("filler");
    std::fs::write(&filler, vec![0u8; 2048 * 1024 - 600 * 1024]).unwrap();
    let w = Watch::start(&rules, &out, &[]);

    let p = Program::start(&dll, &["cpu", "--seconds", "40", "--threads", "2"], &[]);
    let pid = p.pid();
    let first = w.wait_for(
        |l| for_pid(l, "action_failed", pid) || for_pid(l, "skipped", pid),
        "the trace cut or refused by the full disk",
    );
    let why = first["detail"].as_str().unwrap_or_default();
    if first["event"] == "action_failed" {
        assert!(why.to_lowercase().contains("space"), "{first}");
        // What was written is kept, closed whole.
        if let Some(f) = first["file"].as_str() {
            let i = info(Path::new(f));
            assert_eq!(i["ended_cleanly"], true, "{i}");
        }
    } else {
        assert!(why.contains("disk is full"), "{first}");
    }
    w.wait_for(|l| l["event"] == "disk_full", "disk_full line");
    drop(p);

    // Room again: the next program gets its trace.
    std::fs::remove_file(&filler).unwrap();
    let mut q = Program::start(&dll, &["cpu", "--seconds", "3"], &[]);
    let qpid = q.pid();
    let done = w.wait_for(
        |l| for_pid(l, "action_done", qpid) || for_pid(l, "action_failed", qpid),
        "the trace after the disk had room again",
    );
    assert_eq!(done["event"], "action_done", "{done}");
    q.wait();
    assert!(w.stop().success());
}

#[test]
fn the_issue_rules_dump_on_exceptions_compressed_and_trace_a_ring_until_a_trigger() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dll = own_workloads(dir.path(), "watch-issue-wl");
    let rules = dir.path().join("rules.json");
    // The issue's file, with the matches narrowed to this test's programs.
    std::fs::write(
        &rules,
        r#"{ "rules": [
    { "name": "compiler-dumps",
      "match": { "name": "Workloads", "command_line": "watch-issue-wl/.* cast" },
      "dump": { "type": "mini", "on_exception": ["*.InvalidCastException"], "compress": "gzip",
                "analyze": true },
      "limits": { "max_actions": 2 } },
    { "name": "slow-web",
      "match": { "name": "Workloads", "command_line": "watch-issue-wl/.* throw-later" },
      "trace": { "profile": "cpu", "ring_mb": 64,
                 "stop_on": [ { "exception": "System.Net.*" }, { "gc_pause_ms": 200 } ],
                 "after_trigger": "1s" } } ] }"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let sock = dir.path().join("port.sock");
    let w = Watch::start(&rules, &out, &["--listen", sock.to_str().unwrap()]);
    let ports = format!("{},connect,suspend", sock.display());
    let env = [("DOTNET_DiagnosticPorts", ports.as_str())];

    // 30 InvalidCastExceptions, 100 ms apart: two gzip'd mini dumps, no more.
    let mut casts = Program::start(&dll, &["cast", "--count", "30", "--seconds", "1"], &env);
    let cpid = casts.pid();
    assert!(casts.wait().success());
    let ended = w.wait_for(
        |l| for_pid(l, "watching_ended", cpid),
        "the end of the exception watch",
    );
    let log = w.log();
    let dumps: Vec<&serde_json::Value> = log
        .iter()
        .filter(|l| for_pid(l, "action_done", cpid) && l["action"] == "dump")
        .collect();
    assert_eq!(dumps.len(), 2, "{log:#?}\n{ended}");
    for d in &dumps {
        let f = PathBuf::from(d["file"].as_str().unwrap());
        assert!(named_per_pattern(&f, "Workloads", cpid, "dmp.gz"), "{f:?}");
        let head = std::fs::read(&f).unwrap();
        assert_eq!(&head[..2], &[0x1f, 0x8b], "gzip magic: {f:?}");
        assert!(
            d["detail"]
                .as_str()
                .unwrap_or("")
                .contains("InvalidCastException"),
            "{d}"
        );
    }
    assert!(
        !log.iter().any(|l| for_pid(l, "action_failed", cpid)),
        "{log:#?}"
    );
    // "analyze": each dump read at once, its analysis beside it, the runtime's library too.
    let analyses: Vec<&serde_json::Value> = log
        .iter()
        .filter(|l| for_pid(l, "action_done", cpid) && l["action"] == "analysis")
        .collect();
    assert_eq!(analyses.len(), 2, "{log:#?}");
    for d in &dumps {
        let f = d["file"].as_str().unwrap();
        let a: serde_json::Value =
            serde_json::from_slice(&std::fs::read(format!("{f}.analysis.json")).unwrap()).unwrap();
        assert_eq!(a["dump"]["pid"], cpid, "{a}");
        assert!(!a["threads"].as_array().unwrap().is_empty(), "{a}");
        assert!(
            Path::new(&format!("{f}.libmscordaccore.so")).is_file(),
            "no library beside {f}"
        );
    }
    // Each dump's start names the file it ends in (issue 33, item 16: it named the worker's
    // own name, a file that never existed).
    let started: Vec<&serde_json::Value> = log
        .iter()
        .filter(|l| for_pid(l, "action_started", cpid) && l["action"] == "dump")
        .collect();
    let mut named: Vec<&str> = started.iter().filter_map(|l| l["file"].as_str()).collect();
    let mut written: Vec<&str> = dumps.iter().filter_map(|l| l["file"].as_str()).collect();
    named.sort_unstable();
    written.sort_unstable();
    assert_eq!(named, written, "{log:#?}");
    // The watch ended because the rule was used up or the program ended; watch itself was not
    // stopped.
    let why = ended["detail"].as_str().unwrap_or("");
    assert!(!why.contains("watch stopped"), "{ended}");

    // A SocketException after 2 s: the ring trace stops 1 s later, and says why.
    let mut web = Program::start(&dll, &["throw-later", "--seconds", "2"], &env);
    let wpid = web.pid();
    let (done, file) = trace_done(&w, wpid, "the end of the triggered trace");
    let why = done["detail"].as_str().unwrap_or("");
    assert!(why.contains("triggered"), "{done}");
    assert!(why.contains("SocketException"), "{done}");
    assert!(why.contains("ring"), "{done}");
    assert_eq!(info(&file)["ended_cleanly"], true);
    web.wait();
    assert!(w.stop().success());
}

#[test]
fn a_cooldown_leaves_one_dump_and_logs_the_exceptions_it_skipped() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dll = own_workloads(dir.path(), "watch-cool-wl");
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{ "rules": [
    { "name": "cooled",
      "match": { "name": "Workloads", "command_line": "watch-cool-wl/.* cast" },
      "dump": { "type": "mini", "on_exception": ["*.InvalidCastException"], "compress": "gzip" },
      "limits": { "max_actions": 5, "cooldown": "1h" } } ] }"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let w = Watch::start(&rules, &out, &[]);
    // Five InvalidCastExceptions 300 ms apart, after 3 s (time for watch to find the process
    // and open its session).
    let args = [
        "cast",
        "--count",
        "5",
        "--delay",
        "3",
        "--interval-ms",
        "300",
        "--seconds",
        "1",
    ];
    let mut p = Program::start(&dll, &args, &[]);
    let pid = p.pid();
    assert!(p.wait().success());
    let ended = w.wait_for(
        |l| for_pid(l, "watching_ended", pid),
        "the end of the exception watch",
    );
    let log = w.log();
    let mine = |event: &str| -> Vec<&serde_json::Value> {
        log.iter().filter(|l| for_pid(l, event, pid)).collect()
    };
    // One dump started, and it is the one written: none started then discarded.
    assert_eq!(mine("action_started").len(), 1, "{log:#?}");
    assert_eq!(mine("action_done").len(), 1, "{log:#?}");
    assert!(mine("action_failed").is_empty(), "{log:#?}");
    let dumps: Vec<PathBuf> = std::fs::read_dir(out.join("cooled"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".dmp.gz"))
        .collect();
    assert_eq!(dumps.len(), 1, "{dumps:?}");
    assert!(named_per_pattern(&dumps[0], "Workloads", pid, "dmp.gz"));
    // Every other InvalidCastException the session saw was skipped for the cooldown, and said so.
    let skipped = mine("skipped");
    assert!(!skipped.is_empty(), "{log:#?}");
    for l in &skipped {
        let d = l["detail"].as_str().unwrap_or("");
        assert!(d.contains("cooldown: "), "{l}");
        assert!(d.contains("InvalidCastException"), "{l}");
    }
    let watched = PathBuf::from(ended["file"].as_str().unwrap());
    let report = json(&["report", watched.to_str().unwrap(), "exceptions", "--json"]);
    let casts = report["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "System.InvalidCastException")
        .and_then(|t| t["count"].as_u64())
        .unwrap_or(0);
    assert!(casts >= 2, "the session saw {casts} casts: {report}");
    let want = format!("; {} matching exception(s) skipped", casts - 1);
    assert!(
        ended["detail"].as_str().unwrap_or("").contains(&want),
        "{ended}\n{log:#?}"
    );
    assert!(w.stop().success());
}

#[test]
fn children_a_script_matched_by_name_gets_one_whole_trace_per_dotnet_program_it_starts() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dll = own_workloads(dir.path(), "watch-tree-wl");
    // The rule names the script; the programs' own command lines do not match it.
    let script = dir.path().join("tree-start.sh");
    std::fs::write(
        &script,
        "dotnet \"$1\" startup; dotnet \"$1\" cast --count 2 --seconds 0 & \
         dotnet \"$1\" idle --seconds 1; wait\n",
    )
    .unwrap();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules":[{"name":"tree","match":{"command_line":"tree-start\\.sh"},
            "children":true,"trace":{"profile":"gc-collect"},"limits":{"max_actions":3}}]}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let sock = dir.path().join("port.sock");
    let w = Watch::start(&rules, &out, &["--listen", sock.to_str().unwrap()]);
    let ports = format!("{},connect,suspend", sock.display());
    let printed = dir.path().join("script.out");
    let mut sh = Command::new("sh")
        .arg(&script)
        .arg(&dll)
        .env("DOTNET_DiagnosticPorts", &ports)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&printed).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the script");
    let sh_pid = sh.id();
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = sh.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = sh.kill();
            panic!("the script did not end: {:#?}", w.log());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let text = std::fs::read_to_string(&printed).unwrap();
    let mut pids: Vec<u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ready pid="))
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    pids.sort();
    assert_eq!(pids.len(), 3, "{text}");
    for &pid in &pids {
        let m = w.wait_for(|l| for_pid(l, "matched", pid), "the child's match");
        let why = m["detail"].as_str().unwrap_or("");
        assert!(why.contains(&format!("via parent PID {sh_pid}")), "{m}");
        let (_, file) = trace_done(&w, pid, "the child's trace");
        assert_eq!(file.parent().unwrap(), out.join("tree"));
        let i = info(&file);
        assert_eq!(i["ended_cleanly"], true, "{file:?}: {i}");
        // Runtime/Start comes before any managed code: the trace began at the first instruction.
        let from_start = i["per_event"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "Runtime/Start");
        assert!(from_start, "{file:?} misses the runtime's start: {i}");
        let started = w.wait_for(|l| for_pid(l, "action_started", pid), "action_started");
        assert!(
            started["detail"]
                .as_str()
                .unwrap_or("")
                .contains("first instruction"),
            "{started}"
        );
    }
    assert!(w.stop().success());
    let traces = std::fs::read_dir(out.join("tree")).unwrap().count();
    assert_eq!(traces, 3, "one trace per .NET process, nothing else");
}

#[test]
fn children_a_dotnet_program_the_rule_matched_passes_it_to_the_program_it_starts() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dll = own_workloads(dir.path(), "watch-tree2-wl");
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        r#"[[rules]]
name = "parent"
match = { command_line = "watch-tree2-wl/.* spawn-later" }
children = true
trace = { profile = "gc-collect" }
limits = { max_actions = 2 }
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let sock = dir.path().join("port.sock");
    let w = Watch::start(&rules, &out, &["--listen", sock.to_str().unwrap()]);
    let ports = format!("{},connect,suspend", sock.display());
    let mut parent = Program::start(
        &dll,
        &["spawn-later", "--seconds", "1"],
        &[("DOTNET_DiagnosticPorts", ports.as_str())],
    );
    let ppid = parent.pid();
    assert!(parent.wait().success());
    let m = w.wait_for(|l| for_pid(l, "matched", ppid), "the parent's match");
    assert!(
        !m["detail"].as_str().unwrap_or("").contains("via parent"),
        "{m}"
    );
    let via = format!("via parent PID {ppid}, which the rule matched");
    let child = w.wait_for(
        |l| l["event"] == "matched" && l["detail"].as_str().is_some_and(|d| d.contains(&via)),
        "the child's match through its parent",
    );
    let cpid = u32::try_from(child["pid"].as_u64().unwrap()).unwrap();
    assert_ne!(cpid, ppid);
    for pid in [ppid, cpid] {
        let (_, file) = trace_done(&w, pid, "a trace's end");
        assert_eq!(info(&file)["ended_cleanly"], true, "{file:?}");
    }
    assert!(w.stop().success());
}

/// Waits for the end of `pid`'s trace action, checks it succeeded and that its file is
/// named `Workloads_<pid>_<stamp>.nettrace`; the log line and the file.
fn trace_done(w: &Watch, pid: u32, what: &str) -> (serde_json::Value, PathBuf) {
    let done = w.wait_for(
        |l| for_pid(l, "action_done", pid) || for_pid(l, "action_failed", pid),
        what,
    );
    assert_eq!(done["event"], "action_done", "{done}");
    let file = PathBuf::from(done["file"].as_str().unwrap());
    assert!(
        named_per_pattern(&file, "Workloads", pid, "nettrace"),
        "{file:?}"
    );
    (done, file)
}
