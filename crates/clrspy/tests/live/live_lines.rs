//! Source lines (issue 51) on testapps/Lines, whose hot loop and throw sit on lines its source
//! marks (`// line:hot`, `// line:throw`): `report cpu --lines` ranks the hot line first and
//! the exceptions report gives each throw-stack frame its line — with the PDB beside the
//! assembly, embedded in it, given with `--symbols` after it moved, and on an attach after the
//! JIT compiled the code (the rundown's maps). Without the PDB, the report names the assembly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{build_lock, clrspy, json, live, repo, try_dotnet_build_with};
use serde_json::Value;

/// The line (1-based) of testapps/Lines/Program.cs that ends with `// line:MARK`.
fn marked(mark: &str) -> u64 {
    let text = std::fs::read_to_string(repo().join("testapps/Lines/Program.cs")).unwrap();
    let at = text
        .lines()
        .position(|l| l.trim_end().ends_with(&format!("// line:{mark}")))
        .unwrap();
    at as u64 + 1
}

/// testapps/Lines built into `target/testapps/Lines-NAME` with `extra` MSBuild arguments, from
/// a copy of the project (the two builds share no obj folder); the path of Lines.dll.
fn build(name: &str, extra: &[&str]) -> PathBuf {
    let out = repo().join(format!("target/testapps/Lines-{name}"));
    let src = repo().join(format!("target/testapps/Lines-{name}-src"));
    let _guard = build_lock();
    std::fs::create_dir_all(&src).unwrap();
    for f in ["Program.cs", "Lines.csproj"] {
        std::fs::copy(repo().join("testapps/Lines").join(f), src.join(f)).unwrap();
    }
    if let Err(e) = try_dotnet_build_with(&src, &out, extra) {
        panic!("{e}");
    }
    out.join("Lines.dll")
}

/// `clrspy record -o TRACE -- dotnet DLL 3`.
fn record_launch(dll: &Path, trace: &Path) {
    let out = clrspy()
        .arg("record")
        .arg("-o")
        .arg(trace)
        .args(["--", "dotnet"])
        .arg(dll)
        .arg("3")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The hot lines of `trace` (`report cpu --lines --json`, more args after).
fn hot_lines(trace: &Path, more: &[&str]) -> Value {
    let mut args = vec![
        "report",
        trace.to_str().unwrap(),
        "cpu",
        "--lines",
        "--json",
    ];
    args.extend_from_slice(more);
    json(&args)["lines"].clone()
}

fn assert_hot_line_first(lines: &Value) {
    let top = &lines["rows"][0];
    assert!(
        top["file"]
            .as_str()
            .unwrap()
            .ends_with("testapps/Lines/Program.cs")
            && top["line"] == marked("hot")
            && top["method"] == "Lines.Program.HotLoop",
        "{lines:#}"
    );
    // The loop is most of the program's CPU (88% measured).
    assert!(top["percent"].as_f64().unwrap() > 50.0, "{lines:#}");
}

fn assert_throw_line(trace: &Path) {
    let e = json(&["report", trace.to_str().unwrap(), "exceptions", "--json"]);
    let t = e["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "System.InvalidOperationException")
        .unwrap_or_else(|| panic!("{e:#}"));
    let site = &t["throw_sites"][0];
    let frames = site["frames"].as_array().unwrap();
    let at = frames
        .iter()
        .position(|f| f == "Lines.Program.Throw")
        .unwrap_or_else(|| panic!("{site:#}"));
    let line = site["lines"][at]
        .as_str()
        .unwrap_or_else(|| panic!("{site:#}"));
    assert!(
        line.ends_with(&format!("testapps/Lines/Program.cs:{}", marked("throw"))),
        "{site:#}"
    );
}

#[test]
fn hot_lines_and_throw_lines_from_portable_and_embedded_pdbs() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, extra) in [
        ("portable", &[][..]),
        ("embedded", &["-p:DebugType=embedded"][..]),
    ] {
        let dll = build(name, extra);
        assert_eq!(dll.with_extension("pdb").exists(), name == "portable");
        let trace = dir.path().join(format!("{name}.nettrace"));
        record_launch(&dll, &trace);
        let lines = hot_lines(&trace, &[]);
        assert_hot_line_first(&lines);
        assert_throw_line(&trace);
        // The text says the same line.
        let text = clrspy()
            .args(["report", trace.to_str().unwrap(), "cpu", "--lines"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains(&format!(
                "Program.cs:{}  (Lines.Program.HotLoop)",
                marked("hot")
            )),
            "{text}"
        );
    }

    // The PDB moved away: the report names the assembly; `--symbols DIR` finds it again.
    let dll = repo().join("target/testapps/Lines-portable/Lines.dll");
    let trace = dir.path().join("portable.nettrace");
    let away = dir.path().join("symbols");
    std::fs::create_dir_all(&away).unwrap();
    std::fs::rename(dll.with_extension("pdb"), away.join("Lines.pdb")).unwrap();
    let without = hot_lines(&trace, &[]);
    let back = hot_lines(&trace, &["--symbols", away.to_str().unwrap()]);
    std::fs::rename(away.join("Lines.pdb"), dll.with_extension("pdb")).unwrap();
    assert!(
        without["missing_pdbs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "Lines.dll"),
        "{without:#}"
    );
    assert!(
        without["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["method"] != "Lines.Program.HotLoop"),
        "{without:#}"
    );
    assert_hot_line_first(&back);
}

#[test]
fn lines_after_an_attach_come_from_the_rundown() {
    if !live() {
        return;
    }
    // A build of its own: the other test moves its PDB away for a while.
    let dll = build("attach", &[]);
    let mut app = std::process::Command::new("dotnet")
        .arg(&dll)
        .arg("30")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The JIT has compiled the loop long before the recording starts.
    std::thread::sleep(Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("attach.nettrace");
    let out = clrspy()
        .args([
            "record",
            "-p",
            &app.id().to_string(),
            "--duration",
            "3s",
            "-o",
        ])
        .arg(&trace)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let _ = app.kill();
    let _ = app.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_hot_line_first(&hot_lines(&trace, &[]));
    assert_throw_line(&trace);
}
