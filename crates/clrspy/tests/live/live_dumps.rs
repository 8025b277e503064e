//! Dumps on exceptions, from `clrspy record --dump-on-exception`: a launched workload throws
//! InvalidCastException and ArgumentException five times each; the dumps asked for are written
//! compressed as createdump streams them, no more than `--max-dumps`, and each decompresses to
//! an ELF core of the workload's process. The trace stays whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};

use common::{info, launch_record, live};

/// The pid in a core's NT_PRPSINFO note (ELF64, little-endian), and its command name.
fn core_process(core: &[u8]) -> Option<(i32, String)> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(core.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(core.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(core.get(o..o + 8)?.try_into().ok()?));
    if core.get(..4)? != b"\x7fELF" || core.get(4) != Some(&2) || u16_at(16)? != 4 {
        return None; // Not a 64-bit core (e_type ET_CORE = 4).
    }
    let phoff = u64_at(0x20)? as usize;
    let (phentsize, phnum) = (u16_at(0x36)? as usize, u16_at(0x38)? as usize);
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        if u32_at(ph)? != 4 {
            continue; // PT_NOTE
        }
        let (off, size) = (u64_at(ph + 8)? as usize, u64_at(ph + 32)? as usize);
        let mut p = off;
        while p + 12 <= off + size {
            let (namesz, descsz, kind) =
                (u32_at(p)? as usize, u32_at(p + 4)? as usize, u32_at(p + 8)?);
            let desc = p + 12 + namesz.next_multiple_of(4);
            if kind == 3 {
                // NT_PRPSINFO: pr_pid at 24, pr_fname (16 bytes) at 40.
                let pid = i32::from_le_bytes(core.get(desc + 24..desc + 28)?.try_into().ok()?);
                let name = core.get(desc + 40..desc + 56)?;
                let end = name.iter().position(|&b| b == 0).unwrap_or(16);
                return Some((pid, String::from_utf8_lossy(&name[..end]).into_owned()));
            }
            p = desc + descsz.next_multiple_of(4);
        }
    }
    None
}

/// The files in `dir` whose names end with `suffix`, sorted.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// The workload's pid from its `ready pid=N` line.
fn ready_pid(stdout: &str) -> i32 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("ready pid="))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no ready line in {stdout}"))
}

/// [`launch_record`], asserting it succeeded; its stdout and stderr.
fn record_ok(trace: &Path, record_args: &[&str], scenario: &[&str]) -> (String, String) {
    let out = launch_record(trace, record_args, scenario);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn two_gzip_dumps_on_invalid_cast_exceptions() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("cast.nettrace");
    let (stdout, stderr) = record_ok(
        &trace,
        &[
            "--dump-on-exception",
            "*.InvalidCastException",
            "--max-dumps",
            "2",
            "--dump-compress",
            "gzip",
        ],
        // Dumps are written one at a time: the program stays 8 s after its throws, so it is
        // still there for the second.
        &["cast", "--count", "5", "--seconds", "8"],
    );
    assert!(stdout.contains("cast count=5 argument=5"), "{stdout}");
    let pid = ready_pid(&stdout);
    let dumps = files_ending(dir.path(), ".dmp.gz");
    assert_eq!(dumps.len(), 2, "{dumps:?}\n{stderr}");
    for (i, d) in dumps.iter().enumerate() {
        assert!(
            d.file_name().unwrap().to_string_lossy() == format!("cast_{pid}_{}.dmp.gz", i + 1),
            "{d:?}"
        );
        let mut core = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(d).unwrap())
            .read_to_end(&mut core)
            .unwrap();
        let compressed = std::fs::metadata(d).unwrap().len();
        assert!(
            compressed < core.len() as u64,
            "{compressed} vs {}",
            core.len()
        );
        assert_eq!(core_process(&core).map(|p| p.0), Some(pid), "{d:?}");
        // The log says both sizes, as the files have them.
        assert!(
            stderr.contains(&format!("Dump {}: wrote", i + 1))
                && stderr.contains("compressed as it was written"),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("first-chance System.InvalidCastException"),
        "{stderr}"
    );
    assert!(stderr.contains("after the event"), "{stderr}");
    // No FIFO or raw core is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".fifo") || n.ends_with(".raw"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let i = info(&trace);
    assert_eq!(i["ended_cleanly"], true, "{i}");
}

#[test]
fn a_zstd_dump_on_an_argument_exception_by_its_bare_name() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("arg.nettrace");
    let (stdout, stderr) = record_ok(
        &trace,
        &[
            "--dump-on-exception",
            "ArgumentException",
            "--dump-compress",
            "zstd",
        ],
        &["cast", "--count", "3", "--seconds", "4"],
    );
    let pid = ready_pid(&stdout);
    // --max-dumps defaults to 1; InvalidCastException does not match.
    let dumps = files_ending(dir.path(), ".dmp.zst");
    assert_eq!(dumps.len(), 1, "{dumps:?}\n{stderr}");
    assert!(files_ending(dir.path(), ".dmp.gz").is_empty());
    let mut core = Vec::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(&dumps[0]).unwrap())
        .unwrap()
        .read_to_end(&mut core)
        .unwrap();
    assert_eq!(core_process(&core).map(|p| p.0), Some(pid));
    // Written seekable (zstd's seekable format): the table at the end counts the core's bytes
    // in frames of 4 MiB (frames count, descriptor, magic).
    let file = std::fs::read(&dumps[0]).unwrap();
    let footer = &file[file.len() - 9..];
    assert_eq!(footer[5..], 0x8F92_EAB1u32.to_le_bytes());
    let frames = u32::from_le_bytes(footer[..4].try_into().unwrap()) as usize;
    assert_eq!(frames, core.len().div_ceil(4 << 20), "{} bytes", core.len());
    assert!(
        stderr.contains("first-chance System.ArgumentException"),
        "{stderr}"
    );
}

#[test]
fn a_crashing_launch_keeps_its_cause() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("crash.nettrace");
    let out = launch_record(
        &trace,
        &["--dump-on-crash", "--dump-compress", "gzip"],
        &["crash", "--seconds", "0.5"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The program's own end: SIGABRT, passed on as 128 + 6.
    assert_eq!(out.status.code(), Some(134), "{stdout}\n{stderr}");
    let pid = ready_pid(&stdout);
    // The message, read from the exception object in the (mini) dump: there whether or not
    // the runtime's streaming thread sent the `Exception/Start` event before createdump froze
    // the process and the abort ended it (a race the runtime decides; stop 41's CI lost it).
    assert!(
        stderr.contains(&format!(
            "Process {pid} (Workloads.dll) crashed: unhandled Workloads.CrashException: workload crash 42"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("   at Workloads.Crasher.Fail(Int32)\n   at Workloads.Crasher.Run"),
        "{stderr}"
    );
    let report = dir
        .path()
        .join(format!("crash_crash_{pid}.dmp.crashreport.json"));
    assert!(report.exists(), "{stderr}");
    let text = std::fs::read_to_string(dir.path().join("crash.nettrace.crash.txt")).unwrap();
    assert!(text.contains("workload crash 42"), "{text}");
    // The crash dump, compressed once the program was gone.
    let dumps = files_ending(dir.path(), ".dmp.gz");
    assert_eq!(dumps.len(), 1, "{dumps:?}");
    let mut core = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&dumps[0]).unwrap())
        .read_to_end(&mut core)
        .unwrap();
    assert_eq!(core_process(&core).map(|p| p.0), Some(pid));
    assert!(!dir.path().join(format!("crash_crash_{pid}.dmp")).exists());
    // The trace opens; when it holds the fatal exception (the runtime sent it while createdump
    // ran), the report has its message.
    let rep = common::clrspy()
        .args(["report"])
        .arg(&trace)
        .arg("exceptions")
        .output()
        .unwrap();
    assert!(rep.status.success(), "{rep:?}");
    let rep = String::from_utf8_lossy(&rep.stdout);
    if rep.contains("Workloads.CrashException") {
        assert!(rep.contains("workload crash 42"), "{rep}");
    } else {
        eprintln!("the runtime died before it sent the fatal exception's event");
    }
}

#[test]
fn no_crash_report_when_asked_not_to() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("crash.nettrace");
    let out = launch_record(&trace, &["--no-crash-report"], &["crash", "--seconds", "0"]);
    assert_eq!(out.status.code(), Some(134));
    assert!(files_ending(dir.path(), ".crashreport.json").is_empty());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("crashed: unhandled"));
}

/// The managed frames (method names without signatures) of every thread in a crash report.
fn report_stacks(report: &Path) -> Vec<Vec<String>> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    v["payload"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["stack_frames"]
                .as_array()
                .map(|f| {
                    f.iter()
                        .filter_map(|f| f["method_name"].as_str())
                        .map(|m| m.split('(').next().unwrap_or(m).to_string())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn the_hold_hook_keeps_the_throwing_thread_in_the_throw_while_the_dump_is_written() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hook = common::hold_hook();
    let trace = dir.path().join("held.nettrace");
    let (stdout, stderr) = record_ok(
        &trace,
        &[
            "--dump-on-exception",
            "*.InvalidCastException",
            "--max-dumps",
            "2",
            "--dump-crash-report",
            "--dump-hold-hook",
            hook.to_str().unwrap(),
        ],
        &["cast", "--count", "4", "--seconds", "0.5"],
    );
    assert!(stdout.contains("cast count=4 argument=4"), "{stdout}");
    let pid = ready_pid(&stdout);
    let dumps = files_ending(dir.path(), ".dmp.gz");
    assert_eq!(dumps.len(), 2, "{dumps:?}\n{stderr}");
    assert!(stderr.contains("thread held"), "{stderr}");
    for d in &dumps {
        let mut core = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(d).unwrap())
            .read_to_end(&mut core)
            .unwrap();
        assert_eq!(core_process(&core).map(|p| p.0), Some(pid));
        // The thread that threw is still in the throw: the cast that failed, under the hook.
        let mut report = d.as_os_str().to_owned();
        report.push(".crashreport.json");
        let stacks = report_stacks(Path::new(&report));
        let thrower = stacks
            .iter()
            .find(|s| s.iter().any(|m| m == "StartupHook.OnFirstChance"))
            .unwrap_or_else(|| panic!("no held thread: {stacks:?}"));
        let at = |name: &str| thrower.iter().position(|m| m == name);
        let (hook, cast, run) = (
            at("StartupHook.OnFirstChance"),
            at("Workloads.Caster.BadCast"),
            at("Workloads.Caster.Run"),
        );
        assert!(hook < cast && cast < run && run.is_some(), "{thrower:?}");
    }
}
