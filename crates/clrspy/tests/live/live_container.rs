//! .NET processes in their own PID and mount namespaces (what a container is to the kernel),
//! with a temporary folder of their own (a tmpfs only their namespace sees, where their runtime
//! puts the diagnostics socket): `ps` finds them through /proc/<pid>/root and `record` attaches;
//! `watch` tells them from the host's processes (`container.inside`), traces them, and dumps
//! them at once and on exceptions; `dump` reaches them too. The runtime runs createdump inside
//! the namespace, where the output folder (covered by an empty tmpfs there) does not exist: the
//! dump streams out through the program's own temporary folder and nothing is left there.
//! Needs root and `unshare`; skipped (with a message) without them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::watch::Watch;
use common::{clrspy, info, json, live, workloads, Running};

#[test]
fn ps_and_record_reach_a_process_in_other_namespaces() {
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
            "ps_and_record_reach_a_process_in_other_namespaces",
            "needs root and unshare to make namespaces",
        );
        return;
    }
    let wl = workloads();
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let private = tempfile::tempdir_in(&base).unwrap();
    let script = format!(
        "mount -t tmpfs tmpfs '{dir}' && TMPDIR='{dir}' exec dotnet '{}' cpu --seconds 29.25",
        wl.display(),
        dir = private.path().display()
    );
    let mut child = Command::new("unshare")
        .args([
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // Inside its namespace the program is pid 1.
    assert_eq!(line.trim(), "ready pid=1");
    let unshare_pid = child.id();
    let _guard = Running(child, unshare_pid);
    let list = json(&["ps", "--json"]);
    let found = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["command_line"]
                .as_str()
                .is_some_and(|c| c.contains("Workloads.dll cpu --seconds 29.25"))
        })
        .unwrap_or_else(|| panic!("the namespaced process is not listed: {list}"));
    let host_pid = found["pid"].as_u64().unwrap();
    assert_ne!(host_pid, 1);
    let status = std::fs::read_to_string(format!("/proc/{host_pid}/status")).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1")),
        "{status}"
    );

    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ns.nettrace");
    clrspy()
        .args([
            "record",
            "-p",
            &host_pid.to_string(),
            "--duration",
            "2s",
            "-o",
        ])
        .arg(&trace)
        .assert()
        .success();
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true);
    assert_eq!(info["process_id"], 1);
    assert!(info["events"].as_u64().unwrap() > 100, "{info}");
}

/// Skips (with the reason) unless this machine lets the test make namespaces: root and a
/// working `unshare`.
fn namespaces_allowed(test: &str) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let unshare = Command::new("unshare")
        .args(["--mount", "--pid", "--fork", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !root || !unshare {
        common::machine_skip(
            test,
            "needs root and unshare to make PID and mount namespaces",
        );
    }
    root && unshare
}

/// How a namespaced program's temporary folder differs from ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Temp {
    /// Its `/tmp` is a tmpfs of its own (a container's; systemd's `PrivateTmp=yes`). Needs a
    /// checkout outside /tmp (the program must still reach the workload there).
    Own,
    /// Its `/tmp` is ours; its `TMPDIR` is a private tmpfs folder beside `hidden` (named
    /// through a `..`), so the only folder of ours it does not see is `hidden` (and clrspy must
    /// not judge by `/tmp`).
    Shared,
}

impl Temp {
    /// [`Temp::Own`] where the checkout allows it, else [`Temp::Shared`] (said): the tests that
    /// take this depend on where the checkout is; `dump_record_and_watch_reach_a_program_that_sees_all_but_the_output_folder`
    /// covers `Shared` from every checkout.
    fn by_checkout() -> Temp {
        let repo = std::fs::canonicalize(common::repo()).unwrap();
        if repo.starts_with("/tmp") {
            eprintln!(
                "the checkout is under /tmp: the program keeps our /tmp (its TMPDIR is private)"
            );
            Temp::Shared
        } else {
            Temp::Own
        }
    }
}

/// A .NET program in its own PID and mount namespaces, killed (with its namespace) when
/// dropped. Its temporary folder is its own (see [`Temp`]), and `hidden` is covered by an
/// empty tmpfs inside: paths there mean nothing to the program. With `user`, the program runs
/// as that uid and gid (as .NET's container images run theirs, not as root).
struct Container {
    _unshare: Running,
    /// The program's pid here.
    pid: u32,
    /// Its temporary folder reached from here.
    temp: PathBuf,
    /// When it was started.
    started: Instant,
}

impl Container {
    fn start(
        hidden: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        user: Option<u32>,
        temp: Temp,
    ) -> Container {
        let (temp_mount, temp_env) = match temp {
            Temp::Shared => {
                let private = hidden.with_extension("tmp");
                std::fs::create_dir_all(&private).unwrap();
                // Named with a `..`, as a checkout's relative paths can make it (the case
                // where clrspy once judged the program not apart and dumped nothing).
                let p = format!(
                    "{}/../{}",
                    hidden.display(),
                    private.file_name().unwrap().to_string_lossy()
                );
                (p.clone(), format!("export TMPDIR='{p}' &&"))
            }
            Temp::Own => ("/tmp".to_string(), "unset TMPDIR &&".to_string()),
        };
        let as_user = match user {
            Some(u) => {
                format!("export HOME='{temp_mount}' && exec setpriv --reuid {u} --regid {u} --clear-groups")
            }
            None => "exec".to_string(),
        };
        let script = format!(
            "mount -t tmpfs tmpfs '{hidden}' && mount -t tmpfs tmpfs '{temp_mount}' && \
             {temp_env} {as_user} dotnet '{dll}' {args}",
            hidden = hidden.display(),
            dll = workloads().display(),
            args = args.join(" ")
        );
        let started = Instant::now();
        let mut child = Command::new("unshare")
            .args(["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"])
            .args(["sh", "-c", &script])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let unshare_pid = child.id();
        let stdout = child.stdout.take().unwrap();
        let guard = Running(child, unshare_pid);
        // Bounded: a runtime held at a diagnostic port says nothing until it is resumed. The
        // createdump a dump starts writes to the program's output too (maybe first); the rest
        // of the output is read to its end, so that the program can always write.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut ready = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("ready") {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(line);
                    }
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the program's ready line within 2 minutes");
        assert_eq!(
            line.trim(),
            "ready pid=1",
            "inside its namespace it is pid 1"
        );
        // unshare --fork: the program is unshare's one child.
        let children =
            std::fs::read_to_string(format!("/proc/{unshare_pid}/task/{unshare_pid}/children"))
                .unwrap();
        let pid: u32 = children.trim().parse().unwrap();
        let inside = Path::new(&temp_mount);
        let temp = Path::new(&format!("/proc/{pid}/root")).join(inside.strip_prefix("/").unwrap());
        Container {
            _unshare: guard,
            pid,
            temp,
            started,
        }
    }

    /// The files of its temporary folder other than its runtime's socket.
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(&self.temp)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| !n.starts_with("dotnet-diagnostic-") && !n.starts_with("clr-debug-pipe"))
            .collect()
    }
}

/// A file removed when dropped.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The first bytes of a gzip'd file once decompressed.
fn gunzip_head(file: &Path) -> Vec<u8> {
    let mut head = vec![0u8; 4];
    flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap())
        .read_exact(&mut head)
        .unwrap_or_else(|e| panic!("{file:?}: {e}"));
    head
}

#[test]
fn watch_traces_and_dumps_a_process_in_a_container_and_dump_reaches_it() {
    if !live() || !namespaces_allowed("watch_traces_and_dumps_a_process_in_a_container") {
        return;
    }
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    // Everything clrspy writes goes under `hidden`, which the program does not see.
    let hidden = dir.path().join("hidden");
    let out = hidden.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let rules = hidden.join("rules.json");
    // Long enough to outlive the checks below on a loaded machine (the guard kills it at the end).
    let tag = "cpu --seconds 87.75";
    std::fs::write(
        &rules,
        format!(
            r#"{{ "rules": [
  {{ "name": "host", "match": {{ "name": "Workloads*", "command_line": "{tag}",
     "container": {{ "inside": false }} }}, "trace": {{ "profile": "cpu", "duration": "3s" }} }},
  {{ "name": "ctr", "match": {{ "name": "Workloads*", "command_line": "{tag}",
     "container": {{ "inside": true }} }}, "trace": {{ "profile": "cpu", "duration": "3s" }} }},
  {{ "name": "ctr-dump", "match": {{ "command_line": "{tag}", "container": {{ "inside": true }} }},
     "dump": {{ "type": "mini", "compress": "gzip" }} }} ] }}"#
        ),
    )
    .unwrap();
    // The program runs as nobody: createdump, run by its runtime as nobody, must be able to
    // open what clrspy (root) made for it.
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !setpriv {
        eprintln!("no setpriv: the program runs as root");
    }
    let nobody = setpriv.then_some(65534);
    let w = Watch::start(&rules, &out, &[]);
    let c = Container::start(
        &hidden,
        &tag.split(' ').collect::<Vec<_>>(),
        &[],
        nobody,
        Temp::by_checkout(),
    );
    let pid = c.pid;

    let matched = w.wait_for(
        |l| l["event"] == "matched" && l["pid"] == pid && l["rule"] == "ctr",
        "the container rule's match",
    );
    let seen_after = c.started.elapsed();
    let seen_at = std::time::SystemTime::now();
    let why = matched["detail"].as_str().unwrap_or("");
    assert!(why.contains("in a container (pid namespace "), "{matched}");
    let started = w.wait_for(
        |l| l["event"] == "action_started" && l["pid"] == pid && l["rule"] == "ctr",
        "the container rule's trace start",
    );
    // From the runtime's socket to the decision, as this test saw it (its log polling adds up
    // to 50 ms).
    let socket_made = std::fs::read_dir(&c.temp)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("dotnet-diagnostic-1-")
        })
        .and_then(|e| e.metadata().ok()?.modified().ok())
        .expect("the program's socket in its own temporary folder");
    eprintln!(
        "container process: matched at age {} ms (seen here {} ms after unshare started, {} ms after its socket was made), trace started at age {} ms",
        matched["age_ms"],
        seen_after.as_millis(),
        seen_at.duration_since(socket_made).unwrap_or_default().as_millis(),
        started["age_ms"]
    );

    let traced = w.done("ctr", pid);
    let trace = PathBuf::from(traced["file"].as_str().unwrap());
    assert!(trace.starts_with(out.join("ctr")), "{trace:?}");
    let i = info(&trace);
    assert_eq!(i["ended_cleanly"], true, "{i}");
    assert_eq!(
        i["process_id"], 1,
        "the runtime names itself by its pid inside"
    );
    assert!(i["events"].as_u64().unwrap() > 100, "{i}");
    if let Some(h) = common::harness() {
        let te = Command::new("dotnet")
            .arg(&h)
            .arg("counts")
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            te.status.success(),
            "{}",
            String::from_utf8_lossy(&te.stderr)
        );
        let te: serde_json::Value = serde_json::from_slice(&te.stdout).unwrap();
        assert_eq!(te["events"], i["events"], "TraceEvent: {te}");
    }

    // The dump: createdump runs inside, the file lands here, nothing stays inside.
    let dumped = w.done("ctr-dump", pid);
    let dump = PathBuf::from(dumped["file"].as_str().unwrap());
    assert!(dump.starts_with(out.join("ctr-dump")), "{dump:?}");
    assert!(dump.to_string_lossy().ends_with(".dmp.gz"), "{dump:?}");
    assert_eq!(gunzip_head(&dump), b"\x7fELF");
    assert_eq!(c.leftovers(), Vec::<String>::new());

    // `clrspy dump` the same way: gzip'd with a crash report, and raw. A socket left behind in
    // our temporary folder by an earlier process of the same number (killed before it could
    // remove it) must not stand for the program's own.
    let left = std::env::temp_dir().join(format!("dotnet-diagnostic-{pid}-1-socket"));
    std::fs::write(&left, b"").unwrap();
    let _left = Removed(left);
    let gz = out.join("by-hand.dmp.gz");
    let p = pid.to_string();
    let by_hand = clrspy()
        .args([
            "dump",
            "-p",
            &p,
            "--type",
            "mini",
            "--compress",
            "gzip",
            "--crash-report",
            "-o",
        ])
        .arg(&gz)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let said = String::from_utf8_lossy(&by_hand.get_output().stderr).into_owned();
    assert!(said.contains("compressed as it was written"), "{said}");
    assert_eq!(gunzip_head(&gz), b"\x7fELF");
    let report = std::fs::read_to_string(out.join("by-hand.dmp.gz.crashreport.json")).unwrap();
    assert!(report.contains("\"payload\""), "{report}");
    let raw = out.join("by-hand.dmp");
    clrspy()
        .args([
            "dump",
            "-p",
            &p,
            "--type",
            "mini",
            "--compress",
            "none",
            "-o",
        ])
        .arg(&raw)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let head = std::fs::read(&raw).unwrap();
    assert_eq!(&head[..4], b"\x7fELF");
    assert_eq!(c.leftovers(), Vec::<String>::new());

    let log = w.stop_with_log();
    assert!(
        !log.iter().any(|l| l["pid"] == pid && l["rule"] == "host"),
        "the host rule matched a process in a container: {log:#?}"
    );
    assert!(
        !log.iter().any(|l| l["event"] == "action_failed"),
        "{log:#?}"
    );
}

#[test]
fn watch_and_record_dump_a_process_in_a_container_on_its_exceptions() {
    if !live()
        || !namespaces_allowed("watch_and_record_dump_a_process_in_a_container_on_its_exceptions")
    {
        return;
    }
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let hidden = dir.path().join("hidden");
    let out = hidden.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let rules = hidden.join("rules.json");
    // 60 InvalidCastExceptions 100 ms apart: plenty after watch has found the program.
    std::fs::write(
        &rules,
        r#"{ "rules": [ { "name": "casts",
  "match": { "command_line": "cast --count 60 --seconds 0.25", "container": { "inside": true } },
  "dump": { "type": "mini", "compress": "gzip", "on_exception": ["*.InvalidCastException"] },
  "limits": { "max_actions": 1 } } ] }"#,
    )
    .unwrap();
    let w = Watch::start(&rules, &out, &[]);
    let c = Container::start(
        &hidden,
        &["cast", "--count", "60", "--seconds", "0.25"],
        &[],
        None,
        Temp::by_checkout(),
    );
    let pid = c.pid;
    // `record -p` with exception dumps at the same time: the trace names the process by its
    // pid inside, the dump must still be of this one.
    let rec = out.join("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let recorded = clrspy()
        .args(["record", "-p", &pid.to_string(), "--duration", "3s"])
        .args(["--dump-on-exception", "InvalidCastException", "--dump-dir"])
        .arg(&rec)
        .arg("-o")
        .arg(rec.join("casts.nettrace"))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        recorded.status.success(),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let dumps: Vec<PathBuf> = std::fs::read_dir(&rec)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.to_string_lossy().ends_with(".dmp.gz"))
        .collect();
    assert_eq!(
        dumps.len(),
        1,
        "{dumps:?}\n{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    assert_eq!(gunzip_head(&dumps[0]), b"\x7fELF");
    assert_eq!(info(&rec.join("casts.nettrace"))["ended_cleanly"], true);

    let done = w.wait_for(
        |l| {
            (l["event"] == "action_done" || l["event"] == "action_failed")
                && l["pid"] == pid
                && l["action"] == "dump"
        },
        "the dump on an exception",
    );
    assert_eq!(done["event"], "action_done", "{done}");
    assert!(
        done["detail"]
            .as_str()
            .unwrap_or("")
            .contains("InvalidCastException"),
        "{done}"
    );
    let dump = PathBuf::from(done["file"].as_str().unwrap());
    assert_eq!(gunzip_head(&dump), b"\x7fELF");
    assert_eq!(c.leftovers(), Vec::<String>::new());
    drop(c);
    let log = w.stop_with_log();
    assert!(
        !log.iter().any(|l| l["event"] == "action_failed"),
        "{log:#?}"
    );
}

/// The case of a checkout under /tmp, from any checkout: the program shares our root and our
/// `/tmp`, and one mount of its namespace covers exactly the output folder (its `TMPDIR` is a
/// private folder). It does not see the output folder, so `dump`, `record --dump-on-exception`
/// and a `watch` rule all stream through its own temporary folder, and nothing stays there.
#[test]
fn dump_record_and_watch_reach_a_program_that_sees_all_but_the_output_folder() {
    if !live() || !namespaces_allowed("dump_record_and_watch_reach_a_program_that_sees_all_but") {
        return;
    }
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let hidden = dir.path().join("hidden");
    let out = hidden.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let rules = hidden.join("rules.json");
    let tag = "cast --count 150 --seconds 0.5";
    std::fs::write(
        &rules,
        format!(
            r#"{{ "rules": [
  {{ "name": "now", "match": {{ "command_line": "{tag}", "container": {{ "inside": true }} }},
     "dump": {{ "type": "mini", "compress": "zstd" }} }},
  {{ "name": "casts", "match": {{ "command_line": "{tag}", "container": {{ "inside": true }} }},
     "dump": {{ "type": "mini", "compress": "gzip", "on_exception": ["*.InvalidCastException"] }},
     "limits": {{ "max_actions": 1 }} }} ] }}"#
        ),
    )
    .unwrap();
    let w = Watch::start(&rules, &out, &[]);
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    let c = Container::start(
        &hidden,
        &tag.split(' ').collect::<Vec<_>>(),
        &[],
        setpriv.then_some(65534),
        Temp::Shared,
    );
    let pid = c.pid;
    let p = pid.to_string();
    // `clrspy dump`, compressed and raw: neither path means anything to the program.
    for (name, compress) in [("by-hand.dmp.gz", "gzip"), ("by-hand.dmp", "none")] {
        let file = out.join(name);
        let r = clrspy()
            .args([
                "dump",
                "-p",
                &p,
                "--type",
                "mini",
                "--compress",
                compress,
                "-o",
            ])
            .arg(&file)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let head = if compress == "gzip" {
            gunzip_head(&file)
        } else {
            std::fs::read(&file).unwrap()[..4].to_vec()
        };
        assert_eq!(head, b"\x7fELF", "{name}");
    }
    // `record --dump-on-exception`.
    let rec = out.join("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let recorded = clrspy()
        .args(["record", "-p", &p, "--duration", "3s"])
        .args(["--dump-on-exception", "InvalidCastException", "--dump-dir"])
        .arg(&rec)
        .arg("-o")
        .arg(rec.join("casts.nettrace"))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&recorded.stderr).into_owned();
    assert!(recorded.status.success(), "{said}");
    let dumps: Vec<PathBuf> = std::fs::read_dir(&rec)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.to_string_lossy().ends_with(".dmp.gz"))
        .collect();
    assert_eq!(dumps.len(), 1, "{dumps:?}\n{said}");
    assert_eq!(gunzip_head(&dumps[0]), b"\x7fELF");
    // The watch rules: a dump at once, and one on an exception.
    for rule in ["now", "casts"] {
        let done = w.wait_for(
            |l| {
                (l["event"] == "action_done" || l["event"] == "action_failed")
                    && l["pid"] == pid
                    && l["rule"] == rule
            },
            &format!("rule {rule}'s dump"),
        );
        assert_eq!(done["event"], "action_done", "{done}");
        let file = PathBuf::from(done["file"].as_str().unwrap());
        assert!(file.starts_with(out.join(rule)), "{file:?}");
    }
    assert_eq!(c.leftovers(), Vec::<String>::new());
    drop(c);
    let log = w.stop_with_log();
    assert!(
        !log.iter().any(|l| l["event"] == "action_failed"),
        "{log:#?}"
    );
}

#[test]
fn listen_holds_a_program_in_a_container_and_traces_it_from_its_first_instruction() {
    if !live() || !namespaces_allowed("listen_holds_a_program_in_a_container") {
        return;
    }
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let hidden = dir.path().join("hidden");
    let out = hidden.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // The socket's folder is shared with the program (a volume, in a container's terms).
    let sock = dir.path().join("port.sock");
    let rules = hidden.join("rules.json");
    std::fs::write(
        &rules,
        r#"{ "rules": [ { "name": "held",
  "match": { "command_line": "idle --seconds 2.75", "container": { "inside": true } },
  "trace": { "profile": "gc-collect" } } ] }"#,
    )
    .unwrap();
    let w = Watch::start(&rules, &out, &["--listen", sock.to_str().unwrap()]);
    let ports = format!("{},connect,suspend", sock.display());
    let c = Container::start(
        &hidden,
        &["idle", "--seconds", "2.75"],
        &[("DOTNET_DiagnosticPorts", ports.as_str())],
        None,
        Temp::by_checkout(),
    );
    let pid = c.pid;
    // The runtime says it is pid 1; the socket's peer is the process here.
    let matched = w.wait_for(
        |l| l["event"] == "matched" && l["rule"] == "held",
        "the held program's match",
    );
    assert_eq!(matched["pid"], pid, "{matched}");
    assert!(
        matched["detail"]
            .as_str()
            .unwrap_or("")
            .contains("in a container"),
        "{matched}"
    );
    let started = w.wait_for(
        |l| l["event"] == "action_started" && l["pid"] == pid,
        "the trace's start",
    );
    assert!(
        started["detail"]
            .as_str()
            .unwrap_or("")
            .contains("first instruction"),
        "{started}"
    );
    let done = w.done("held", pid);
    let i = info(Path::new(done["file"].as_str().unwrap()));
    assert_eq!(i["ended_cleanly"], true, "{i}");
    assert_eq!(i["process_id"], 1, "{i}");
    // Runtime/Start is written before any managed code: the trace began at the first
    // instruction.
    assert!(common::count(&i, "Runtime/Start") > 0, "{i}");
    drop(c);
    let log = w.stop_with_log();
    assert!(
        !log.iter().any(|l| l["event"] == "action_failed"),
        "{log:#?}"
    );
}

/// A process watch saw in its own mount namespace that then enters a new one (as `docker exec`
/// or `nsenter` do just after the process appeared) and starts a runtime with a `TMPDIR` only
/// that namespace sees: watch reads the young pid's namespace and temporary folder again, finds
/// its runtime and applies the rule.
#[test]
fn a_process_that_enters_a_mount_namespace_after_watch_saw_it_is_found() {
    if !live() || !namespaces_allowed("a_process_that_enters_a_mount_namespace_after_watch_saw_it")
    {
        return;
    }
    let base = common::repo().join("target");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let out = dir.path().join("out");
    let private = dir.path().join("private");
    std::fs::create_dir_all(&private).unwrap();
    let rules = dir.path().join("rules.json");
    let tag = "cpu --seconds 9.25";
    std::fs::write(
        &rules,
        format!(
            r#"{{ "rules": [ {{ "name": "late", "match": {{ "command_line": "{tag}" }},
               "trace": {{ "profile": "cpu", "duration": "2s" }} }} ] }}"#
        ),
    )
    .unwrap();
    let w = Watch::start(&rules, &out, &[]);
    // The shell is seen in our namespace first (watch polls four times a second); after 1.5 s
    // the same pid leaves it and execs the runtime with its temporary folder a private tmpfs.
    let script = format!(
        "sleep 1.5; exec unshare --mount sh -c \"mount -t tmpfs tmpfs '{p}' && TMPDIR='{p}' exec dotnet '{dll}' {tag}\"",
        p = private.display(),
        dll = workloads().display(),
    );
    let child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _guard = Running(child, pid);
    let traced = w.done("late", pid);
    let trace = PathBuf::from(traced["file"].as_str().unwrap());
    let i = info(&trace);
    assert_eq!(i["ended_cleanly"], true, "{i}");
    assert_eq!(i["process_id"], pid, "{i}");
    assert!(i["events"].as_u64().unwrap() > 100, "{i}");
    let empty = std::fs::read_dir(&private).unwrap().next().is_none();
    assert!(
        empty,
        "the runtime's socket was in its namespace's tmpfs only"
    );
}
