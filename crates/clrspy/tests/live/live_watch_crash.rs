//! `clrspy watch` with `"dump": {"on_crash": true}` against real crashing .NET programs: a
//! program started with the runtime's crash dump variables leaves its dump, which watch
//! compresses into the rule's folder with its crash report and logs with both sizes and the
//! fatal exception; a program started without them gets the line saying why no dump is
//! possible. Both for a program watch finds by its socket and for one held at `--listen`; and
//! a dump written into a tmpfs only the program's own mount namespace sees (as in a container),
//! taken after the namespace ended (needs root and `unshare`; skipped without).
//!
//! Each test runs Workloads.dll through a folder link of its own and matches only that path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::watch::Watch;
use common::{live, workloads};

fn for_pid(l: &serde_json::Value, event: &str, pid: u32) -> bool {
    l["event"] == event && l["pid"] == pid
}

/// The runtime's crash variables, removed from a program's environment.
const CRASH_VARS: [&str; 6] = [
    "DOTNET_DbgEnableMiniDump",
    "COMPlus_DbgEnableMiniDump",
    "DOTNET_DbgMiniDumpName",
    "DOTNET_EnableCrashReport",
    "DOTNET_DbgMiniDumpType",
    "DOTNET_EnableCrashReportOnly",
];

/// Runs `dotnet DLL crash --seconds S` with `env` (and none of the crash variables but those
/// given) to its end (2 minutes at most); its pid.
fn crash(dll: &Path, seconds: &str, env: &[(&str, String)]) -> u32 {
    let mut c = Command::new("dotnet");
    c.arg(dll)
        .args(["crash", "--seconds", seconds])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for k in CRASH_VARS {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("start dotnet");
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the crashing program did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !status.success(),
        "the crash scenario ended well: {status:?}"
    );
    child.id()
}

/// The rules file: crash dumps of Workloads run through `link`, gzip-compressed.
fn rules(dir: &Path, link: &str) -> PathBuf {
    let rules = dir.join("rules.json");
    std::fs::write(
        &rules,
        format!(
            r#"{{"rules":[{{"name":"crashes",
               "match":{{"name":"Workloads*","command_line":"{link}/"}},
               "dump":{{"on_crash":true,"compress":"gzip","analyze":true}}}}]}}"#
        ),
    )
    .unwrap();
    rules
}

/// Checks the crash of `pid` was taken: the log's lines, the compressed core, the report.
fn check_taken(w: &Watch, pid: u32, raw_dir: &Path) {
    let done = w.wait_for(
        |l| for_pid(l, "action_done", pid) || for_pid(l, "action_failed", pid),
        "the crash dump's end",
    );
    assert_eq!(done["event"], "action_done", "{done}");
    assert_eq!(done["rule"], "crashes", "{done}");
    let file = PathBuf::from(done["file"].as_str().unwrap());
    assert_eq!(file.parent().unwrap(), w.out.join("crashes"), "{done}");
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("Workloads_{pid}_")) && name.ends_with(".dmp.gz"),
        "{name}"
    );
    let (bytes, raw) = (
        done["bytes"].as_u64().unwrap(),
        done["raw_bytes"].as_u64().unwrap(),
    );
    assert_eq!(bytes, std::fs::metadata(&file).unwrap().len(), "{done}");
    assert!(bytes < raw, "{done}");
    let detail = done["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("raw") && detail.contains("gzip"), "{done}");
    // It decompresses to the whole ELF core the runtime wrote.
    let mut core = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap())
        .read_to_end(&mut core)
        .unwrap();
    assert_eq!(core.len() as u64, raw);
    assert_eq!(&core[..4], b"\x7fELF");
    // The runtime's own file is left where the user asked for it.
    let kept = raw_dir.join(format!("core_{pid}"));
    assert_eq!(std::fs::metadata(&kept).unwrap().len(), raw, "{kept:?}");
    // The fatal exception, from the crash report copied beside the dump.
    let crashed = w.wait_for(|l| for_pid(l, "crash", pid), "the crash line");
    let why = crashed["detail"].as_str().unwrap_or_default();
    assert!(why.contains("Workloads.CrashException"), "{crashed}");
    assert!(why.contains("Workloads.Crasher.Fail"), "{crashed}");
    // Its message, which the crash report does not have: from the exception object in the
    // (heap) dump, or from the exceptions watch kept.
    assert!(why.contains("\"workload crash 42\""), "{crashed}");
    let report = file.with_file_name(name.replace(".dmp.gz", ".crashreport.json"));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert!(r["payload"]["threads"].is_array(), "{report:?}");
    // "analyze": the crash dump read at once; the exception that ended the process in it.
    let read = w.wait_for(
        |l| l["action"] == "analysis" && l["pid"] == pid,
        "the crash dump's analysis",
    );
    assert_eq!(read["event"], "action_done", "{read}");
    let a: serde_json::Value =
        serde_json::from_slice(&std::fs::read(read["file"].as_str().unwrap()).unwrap()).unwrap();
    let thrown: Vec<String> = a["exceptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}: {}", e["type_name"], e["message"]))
        .collect();
    assert!(
        thrown
            .iter()
            .any(|e| e.contains("Workloads.CrashException") && e.contains("workload crash 42")),
        "{thrown:?}"
    );
}

/// Checks a program without the variables got the line that says why, and no dump.
fn check_refused(w: &Watch, pid: u32) {
    let no = w.wait_for(|l| for_pid(l, "skipped", pid), "the 'not possible' line");
    let why = no["detail"].as_str().unwrap_or_default();
    assert!(why.contains("crash dump not possible"), "{no}");
    assert!(why.contains("DOTNET_DbgEnableMiniDump=1"), "{no}");
}

/// No dump file of `pid` in the rule's folder.
fn no_dump_of(out: &Path, pid: u32) {
    let prefix = format!("Workloads_{pid}_");
    let any = std::fs::read_dir(out.join("crashes"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&prefix));
    assert!(!any, "a file of pid {pid} in {out:?}");
}

fn crash_env(raw_dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("DOTNET_DbgEnableMiniDump", "1".into()),
        (
            "DOTNET_DbgMiniDumpName",
            raw_dir.join("core_%p").to_string_lossy().into_owned(),
        ),
        ("DOTNET_EnableCrashReport", "1".into()),
    ]
}

#[test]
fn a_discovered_program_s_crash_dump_is_compressed_with_its_exception() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("watch-crash-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let dll = link.join("Workloads.dll");
    let raw_dir = dir.path().join("raw");
    std::fs::create_dir(&raw_dir).unwrap();
    let out = dir.path().join("out");
    let w = Watch::start(&rules(dir.path(), "watch-crash-wl"), &out, &[]);

    // Found by its socket while it sleeps two seconds, then it crashes.
    let pid = crash(&dll, "2", &crash_env(&raw_dir));
    check_taken(&w, pid, &raw_dir);

    let plain = crash(&dll, "2", &[]);
    check_refused(&w, plain);
    assert!(w.stop().success());
    no_dump_of(&out, plain);
}

#[test]
fn a_held_program_s_crash_at_its_start_is_caught() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("watch-crash-held-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let dll = link.join("Workloads.dll");
    let raw_dir = dir.path().join("raw");
    std::fs::create_dir(&raw_dir).unwrap();
    let out = dir.path().join("out");
    let sock = dir.path().join("port.sock");
    let w = Watch::start(
        &rules(dir.path(), "watch-crash-held-wl"),
        &out,
        &["--listen", sock.to_str().unwrap()],
    );
    let port = (
        "DOTNET_DiagnosticPorts",
        format!("{},connect,suspend", sock.display()),
    );

    // It crashes as soon as it runs: the watch began while it was held.
    let mut env = crash_env(&raw_dir);
    env.push(port.clone());
    let pid = crash(&dll, "0", &env);
    check_taken(&w, pid, &raw_dir);

    let plain = crash(&dll, "0", &[port]);
    check_refused(&w, plain);
    assert!(w.stop().success());
    no_dump_of(&out, plain);
}

#[test]
fn a_crash_dump_written_where_only_the_process_s_namespace_sees_is_taken_after_it_ended() {
    if !live() {
        return;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let unshare = Command::new("unshare").arg("--version").output().is_ok();
    if !root || !unshare {
        common::machine_skip(
            "a_crash_dump_written_where_only_the_process_s_namespace_sees_is_taken_after_it_ended",
            "needs root and unshare to make namespaces",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("watch-crash-ns-wl");
    std::os::unix::fs::symlink(workloads().parent().unwrap(), &link).unwrap();
    let out = dir.path().join("out");
    let w = Watch::start(&rules(dir.path(), "watch-crash-ns-wl"), &out, &[]);
    // A tmpfs mounted in the program's own mount namespace only (a container's private
    // /tmp): it is gone once the namespace ends, before watch looks for the dump.
    let base = common::repo().join("target");
    let private = tempfile::tempdir_in(&base).unwrap();
    let script = format!(
        "mount -t tmpfs tmpfs '{dir}' && DOTNET_DbgEnableMiniDump=1 DOTNET_EnableCrashReport=1 \
         DOTNET_DbgMiniDumpName='{dir}/core_%p' dotnet '{dll}' crash --seconds 2",
        dir = private.path().display(),
        dll = link.join("Workloads.dll").display()
    );
    let mut c = Command::new("unshare");
    c.args(["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"])
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for k in CRASH_VARS {
        c.env_remove(k);
    }
    let status = c.status().unwrap();
    assert!(
        !status.success(),
        "the crash scenario ended well: {status:?}"
    );
    let done = w.wait_for(
        |l| {
            (l["event"] == "action_done" || l["event"] == "action_failed") && l["rule"] == "crashes"
        },
        "the crash dump's end",
    );
    assert_eq!(done["event"], "action_done", "{done}");
    let file = PathBuf::from(done["file"].as_str().unwrap());
    let mut core = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap())
        .read_to_end(&mut core)
        .unwrap();
    assert_eq!(core.len() as u64, done["raw_bytes"].as_u64().unwrap());
    assert_eq!(&core[..4], b"\x7fELF");
    // Not on the host's disk: it was only ever in the namespace's tmpfs.
    assert_eq!(std::fs::read_dir(private.path()).unwrap().count(), 0);
    let crashed = w.wait_for(|l| l["event"] == "crash", "the crash line");
    assert!(
        crashed["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("Workloads.CrashException"),
        "{crashed}"
    );
    assert!(w.stop().success());
}

/// A watched process in its own mount and PID namespaces (a container) chooses where its
/// crash dump goes and plants something there in its dump's place, then ends; watch runs as
/// root. Every attack is refused with a logged reason, and nothing of the host's is copied into
/// the rule's folder or its text into the decisions log: a link to a host file (and to a
/// host "crash report"), a link to `/dev/zero`, a FIFO, a file of another user, a sparse file
/// far larger than the process's memory, and `..` in the dump's name.
#[test]
fn what_a_watched_process_plants_for_its_crash_dump_is_refused_and_logged() {
    if !live() {
        return;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let unshare = Command::new("unshare").arg("--version").output().is_ok();
    if !root || !unshare {
        common::machine_skip(
            "what_a_watched_process_plants_for_its_crash_dump_is_refused_and_logged",
            "needs root and unshare to make namespaces",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The process's own temporary folder (a tmpfs only its namespace sees).
    let own = dir.path().join("ctmp");
    std::fs::create_dir(&own).unwrap();
    // The host's secrets: a file, and a file that reads as a crash report.
    let host = dir.path().join("host");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("secret"), b"\x7fELF host secret HOSTSECRET").unwrap();
    std::fs::write(
        host.join("report.json"),
        br#"{"payload":{"process_name":"HOSTSECRET","threads":[{"crashed":"true","managed_exception_type":"HOSTSECRET.Exception"}]}}"#,
    )
    .unwrap();
    let wl = workloads();
    let scenarios: [(&str, String); 6] = [
        (
            "link",
            format!(
                "ln -s '{h}/secret' '{o}/core_1' && ln -s '{h}/report.json' '{o}/core_1.crashreport.json'",
                h = host.display(),
                o = own.display()
            ),
        ),
        ("zero", format!("ln -s /dev/zero '{}/core_1'", own.display())),
        ("fifo", format!("mkfifo '{}/core_1'", own.display())),
        (
            "owner",
            format!("echo x > '{o}/core_1' && chown 4242 '{o}/core_1'", o = own.display()),
        ),
        ("sparse", format!("truncate -s 1T '{}/core_1'", own.display())),
        ("parent", String::new()),
    ];
    let mut rules = Vec::new();
    for (name, _) in &scenarios {
        let link = dir.path().join(format!("attack-{name}"));
        std::os::unix::fs::symlink(wl.parent().unwrap(), &link).unwrap();
        rules.push(format!(
            r#"{{"name":"{name}","match":{{"name":"Workloads*","command_line":"attack-{name}/"}},
                "dump":{{"on_crash":true,"compress":"gzip"}}}}"#
        ));
    }
    let rules_file = dir.path().join("rules.json");
    std::fs::write(&rules_file, format!(r#"{{"rules":[{}]}}"#, rules.join(","))).unwrap();
    let out = dir.path().join("out");
    let w = Watch::start(&rules_file, &out, &[]);
    for (name, plant) in &scenarios {
        let dump_name = if *name == "parent" {
            format!("{}/../host/core_%p", own.display())
        } else {
            format!("{}/core_%p", own.display())
        };
        // Its own temporary folder (a tmpfs), and the host's folder hidden from it: what the
        // links name is not the process's to read.
        let plant = if plant.is_empty() {
            String::new()
        } else {
            format!("{plant} && ")
        };
        let script = format!(
            "mount -t tmpfs tmpfs '{o}' && mount -t tmpfs tmpfs '{h}' && {plant}\
             TMPDIR='{o}' DOTNET_DbgEnableMiniDump=1 DOTNET_EnableCrashReport=1 \
             DOTNET_DbgMiniDumpName='{dump_name}' exec dotnet '{dll}' idle --seconds 3",
            o = own.display(),
            h = host.display(),
            dll = dir
                .path()
                .join(format!("attack-{name}/Workloads.dll"))
                .display()
        );
        let mut c = Command::new("unshare");
        c.args(["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"])
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for k in CRASH_VARS {
            c.env_remove(k);
        }
        assert!(
            c.status().unwrap().success(),
            "{name}: the program did not run"
        );
    }
    let ended = |rule: &str| {
        w.wait_for(
            |l| l["rule"] == rule && (l["event"] == "watching_ended" || l["event"] == "skipped"),
            &format!("the end of {rule}'s crash watch"),
        )
    };
    let expect = [
        ("link", "symbolic link"),
        ("zero", "symbolic link"),
        ("fifo", "is a FIFO, not a regular file"),
        (
            "owner",
            "belongs to uid 4242, not to the process's user (uid 0)",
        ),
        (
            "sparse",
            "bytes allowed (twice the most memory the process had",
        ),
        ("parent", "'..'"),
    ];
    for (rule, why) in expect {
        let line = ended(rule);
        let detail = line["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(why), "{rule}: {line}");
        assert!(
            detail.contains("refused") || detail.contains("not possible"),
            "{rule}: {line}"
        );
    }
    // The host's report was refused too, and nothing took an action.
    let log = w.log();
    assert!(
        log.iter().any(|l| {
            l["rule"] == "link"
                && l["detail"].as_str().is_some_and(|d| {
                    d.contains("crash report refused") && d.contains("symbolic link")
                })
        }),
        "{log:#?}"
    );
    assert!(w.stop().success());
    let text = std::fs::read_to_string(out.join("decisions.jsonl")).unwrap_or_default()
        + &std::fs::read_to_string(out.with_extension("stdout")).unwrap_or_default();
    assert!(
        !text.contains("HOSTSECRET"),
        "the host's text reached the log:\n{text}"
    );
    for l in &log {
        assert!(
            l["event"] != "action_started" && l["event"] != "action_done",
            "an attack was acted on: {l}"
        );
    }
    let copied: Vec<_> = walk(&out);
    assert!(
        copied.iter().all(|p| !p.to_string_lossy().contains(".dmp")),
        "{copied:?}"
    );
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}
