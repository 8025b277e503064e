//! Names for ReadyToRun code, live: the names clrspy's image reader gives precompiled code
//! agree with the runtime's own `Method/R2RGetEntryPoint` events (a second, independent route:
//! the runtime says which method starts at which address), and on an ASP.NET Core app under
//! `ab` load almost no CPU is left on unnamed frames — from the trace alone
//! (`--no-local-images`: the names the recording stored), and with the images read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    clrspy, clrspy_command, live, needs, ok_stdout, run_bounded, start_web, web_app, Need,
};
use serde_json::Value;

/// The events of `name` in `trace`, as JSON objects.
fn events(trace: &std::path::Path, name: &str) -> Vec<Value> {
    let out = clrspy()
        .arg("events")
        .arg(trace)
        .args(["--event", name, "--json"])
        .output()
        .expect("clrspy events");
    ok_stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

struct Map {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

fn maps(trace: &std::path::Path) -> Vec<Map> {
    events(trace, "ModuleMap")
        .iter()
        .map(|e| {
            let f = &e["fields"];
            Map {
                start: f["Start"].as_u64().unwrap(),
                end: f["End"].as_u64().unwrap(),
                offset: f["Offset"].as_u64().unwrap(),
                path: f["Path"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

/// `System.Collections.Generic.Dictionary`2[System.__Canon,System.Int32]` → without the
/// type arguments (clrspy names the generic definition).
fn strip_instantiation(ns: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in ns.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn image_names_agree_with_the_runtimes_entry_points() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("entry.nettrace");
    // CompilationDiagnostic (0x2000000000), verbose: an R2RGetEntryPoint event for every
    // precompiled method the app starts using.
    let mut cmd = clrspy_command();
    cmd.arg("record")
        .arg("-o")
        .arg(&trace)
        .args([
            "--duration",
            "6s",
            "--providers",
            "Microsoft-Windows-DotNETRuntime:0x2000000000:5",
            "--",
            "dotnet",
        ])
        .arg(web_app());
    let run = run_bounded(cmd, dir.path(), Duration::from_secs(90));
    assert!(
        run.status.is_some(),
        "clrspy record did not end: {}",
        run.stderr
    );
    let maps = maps(&trace);
    assert!(!maps.is_empty(), "the recording has a module map");
    let mut images: HashMap<String, Option<readytorun::Image>> = HashMap::new();
    let (mut checked, mut bad) = (0, Vec::new());
    for e in events(&trace, "Method/R2RGetEntryPoint") {
        let f = &e["fields"];
        let ep = f["EntryPoint"].as_u64().unwrap();
        let Some(m) = maps.iter().find(|m| ep >= m.start && ep < m.end) else {
            continue;
        };
        if !m.path.ends_with(".dll") {
            continue;
        }
        let img = images
            .entry(m.path.clone())
            .or_insert_with(|| readytorun::Image::parse(&std::fs::read(&m.path).ok()?).ok());
        let Some(img) = img else { continue };
        let expected = format!(
            "{}.{}",
            strip_instantiation(f["MethodNamespace"].as_str().unwrap()),
            f["MethodName"].as_str().unwrap()
        );
        let off = ep - m.start + m.offset;
        let got = img
            .rva_of_file_offset(off)
            .and_then(|rva| Some((rva, img.function_at(rva)?)));
        checked += 1;
        match got {
            Some((rva, func)) if func.start == rva && img.name(func) == expected => {}
            Some((rva, func)) => bad.push(format!(
                "{expected} at rva {rva:#x}: {} [{:#x}, {:#x})",
                img.name(func),
                func.start,
                func.end
            )),
            None => bad.push(format!("{expected} at offset {off:#x}: no function")),
        }
    }
    eprintln!("{checked} entry points checked in {} images", images.len());
    assert!(checked > 500, "only {checked} entry points in images");
    assert!(
        bad.is_empty(),
        "{} of {checked} entry points disagree:\n{}",
        bad.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// The share of the folded stacks' weight whose leaf frame has no method name
/// (`module!+0x…`, `[unknown …]`, `[native]`), and the unnamed leaves by weight.
fn unnamed_share(trace: &std::path::Path, extra: &[&str]) -> (f64, Vec<(String, f64)>) {
    let out = clrspy()
        .arg("convert")
        .arg(trace)
        .args(["--to", "folded", "-o", "-"])
        .args(extra)
        .output()
        .expect("clrspy convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut total, mut unnamed) = (0.0, 0.0);
    let mut leaves: HashMap<String, f64> = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((stack, w)) = line.rsplit_once(' ') else {
            continue;
        };
        let w: f64 = w.parse().unwrap_or(0.0);
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        total += w;
        // A .NET image's code by offset is unnamed; a native library's (`libclrjit.so!+0x…`:
        // no exported name before it, its symbols stripped) is named as well as the library
        // allows, the kernel sampler's rule.
        let image_offset = leaf.contains(".dll!+0x") || leaf.contains(".exe!+0x");
        if image_offset || leaf.starts_with("[unknown") || leaf == "[native]" {
            unnamed += w;
            *leaves.entry(leaf.to_string()).or_default() += w;
        }
    }
    assert!(total > 0.0, "no samples in {}", trace.display());
    let mut leaves: Vec<_> = leaves.into_iter().map(|(k, v)| (k, v / total)).collect();
    leaves.sort_by(|a, b| b.1.total_cmp(&a.1));
    (unnamed / total, leaves)
}

#[test]
fn web_app_under_load_has_almost_no_unnamed_cpu() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let web = start_web();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("web.nettrace");
    // ab: 16 connections, at most 30 s and bounded in requests; killed after 45 s.
    let url = format!("http://127.0.0.1:{}/", web.port);
    let ab_out = std::fs::File::create(dir.path().join("ab.out")).unwrap();
    let mut ab = Command::new(Need::Ab.path())
        .args(["-q", "-c", "16", "-t", "30", "-n", "5000000", &url])
        .stdout(ab_out)
        .stderr(Stdio::null())
        .spawn()
        .expect("ab runs");
    std::thread::sleep(Duration::from_secs(2));
    let mut cmd = clrspy_command();
    cmd.arg("record")
        .args(["-p", &web.app.1.to_string(), "--duration", "8s", "-o"])
        .arg(&trace);
    let run = run_bounded(cmd, dir.path(), Duration::from_secs(60));
    let _ = ab.kill();
    let _ = ab.wait();
    assert!(run.status.is_some_and(|s| s.success()), "{}", run.stderr);
    // From the trace alone (the names the recording stored), then with the images read.
    let (stored, leaves) = unnamed_share(&trace, &["--no-local-images"]);
    let (with_images, _) = unnamed_share(&trace, &[]);
    eprintln!(
        "unnamed leaf share: {:.3}% from the trace alone, {:.3}% with the images; top: {:?}",
        stored * 100.0,
        with_images * 100.0,
        &leaves[..leaves.len().min(5)]
    );
    assert!(stored < 0.01, "{:.2}% unnamed: {leaves:?}", stored * 100.0);
    assert!(with_images <= stored + 1e-9);
    // Names come from precompiled code indeed: the epoll loop's wait (a P/Invoke stub in
    // System.Net.Sockets.dll, `System.Net.Sockets.dll!+0x…` without them) is named
    // `Interop+Sys.WaitForSocketEvents`, which is what tells the sockets thread is idle.
    let out = clrspy()
        .arg("report")
        .arg(&trace)
        .args(["threads", "--top", "50", "--no-local-images"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[idle: sockets waiting for events]"),
        "{text}"
    );
}
