//! `clrspy record -- command` (launch suspended, trace from the first instruction) and
//! `clrspy dump`, against real .NET processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read;

use common::{clrspy, json, launch_record, live, start, workloads};

#[test]
fn launch_records_from_before_main_and_passes_output_and_exit_code_through() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("launch.nettrace");
    let out = clrspy()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--profile", "exceptions", "--"])
        .arg("dotnet")
        .arg(workloads())
        .args(["exceptions", "--count", "37"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Named as `ps` and attach name it: the app, not `dotnet`.
    assert!(stderr.contains("Recording Workloads (pid "), "{stderr}");
    // The child's output reaches our stdout.
    assert!(stdout.contains("ready pid="), "{stdout}");
    assert!(stdout.contains("thrown=37"), "{stdout}");
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info["ended_cleanly"], true, "{info}");
    let names: Vec<String> = info["per_event"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}", e["name"].as_str().unwrap_or(""), e["count"]))
        .collect();
    // Runtime/Start is written while the runtime starts, before any managed code runs: only a
    // session opened while the runtime waited suspended sees it.
    assert!(
        names.iter().any(|n| n.starts_with("Runtime/Start ")),
        "{names:?}"
    );
    assert!(
        names.contains(&"Exception/Start 37".to_string()),
        "{names:?}"
    );

    // A failing program's exit code comes back.
    let status = clrspy()
        .arg("record")
        .arg("-o")
        .arg(dir.path().join("fail.nettrace"))
        .args(["--profile", "gc-collect", "--"])
        .arg("dotnet")
        .arg(workloads())
        .arg("no-such-scenario")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2), "{status:?}");
}

#[test]
fn launch_of_a_missing_or_non_dotnet_program_is_one_clear_error() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("x.nettrace");
    let out = clrspy()
        .arg("record")
        .arg("-o")
        .arg(&o)
        .args(["--", "/no/such/program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start '/no/such/program'"), "{err}");
    assert!(!o.exists(), "a failed launch leaves no empty trace");
    let out = clrspy()
        .arg("record")
        .arg("-o")
        .arg(&o)
        .args(["--", "sh", "-c", "exit 0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("before a .NET runtime connected"), "{err}");
    assert!(
        !o.exists(),
        "a program that is not .NET leaves no empty trace"
    );
}

#[test]
fn dump_writes_an_elf_core_and_refuses_bad_input() {
    if !live() {
        return;
    }
    let w = start("idle", &["--seconds", "60"]);
    let dir = tempfile::tempdir().unwrap();
    let core = dir.path().join("w.core");
    let out = clrspy()
        .args(["dump", "-p", &w.1.to_string(), "--type", "mini", "-o"])
        .arg(&core)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // Compressed by default, and the name says so (issue 33, item 18: a raw core of hundreds
    // of MB, or zstd data named mini.dmp).
    let zst = dir.path().join("w.core.zst");
    assert!(!core.exists() && zst.exists(), "{said}");
    assert!(said.contains("zstd -d"), "{said}");
    let mut magic = [0u8; 4];
    zstd::Decoder::new(std::fs::File::open(&zst).unwrap())
        .unwrap()
        .read_exact(&mut magic)
        .unwrap();
    assert_eq!(&magic, b"\x7fELF");

    // With --crash-report, clrspy says where the runtime put the report.
    let core2 = dir.path().join("w2.core");
    let out = clrspy()
        .args([
            "dump",
            "-p",
            &w.1.to_string(),
            "--type",
            "mini",
            "--crash-report",
            "--compress",
            "none",
            "-o",
        ])
        .arg(&core2)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let report = dir.path().join("w2.core.crashreport.json");
    assert!(report.exists(), "{err}");
    assert!(
        err.contains(&format!("Crash report: {}", report.display())),
        "{err}"
    );

    let out = clrspy()
        .args(["dump", "-p", &w.1.to_string(), "--type", "huge"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = clrspy()
        .args(["dump", "-p", "1", "--type", "mini"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no .NET diagnostics endpoint"), "{err}");
}

#[test]
fn a_full_disk_is_one_clear_error_and_keeps_what_fit() {
    if !live() {
        return;
    }
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !is_root {
        common::machine_skip(
            "a_full_disk_is_one_clear_error_and_keeps_what_fit",
            "needs root to mount a tiny tmpfs",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        common::machine_skip(
            "a_full_disk_is_one_clear_error_and_keeps_what_fit",
            "cannot mount a tmpfs here",
        );
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(dir.path().to_path_buf());
    let trace = dir.path().join("t.nettrace");
    let out = launch_record(&trace, &[], &["cpu", "--seconds", "20"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("hint: free some disk space"), "{err}");
    // What fit is readable, and the file is closed as a whole trace (the partial block is cut
    // and the end marker written in the room that frees).
    let info = json(&["info", trace.to_str().unwrap(), "--json"]);
    assert!(info["events"].as_u64().unwrap() > 0, "{info}");
    assert_eq!(info["truncated"], false, "{info}");
    assert!(info["error"].is_null(), "{info}");
}
