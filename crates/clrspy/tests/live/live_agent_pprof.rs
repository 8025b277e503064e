//! `clrspy agent`'s continuous-profiling pull routes against real .NET processes, read by a
//! real pprof reader (the npm package `pprof-format`, installed into bench/out by `.ci/setup`):
//! `/debug/pprof/profile` of the CPU workload has its hot method on top by samples, and
//! `/debug/pprof/allocs` of the allocating workload its allocated type (under the method that
//! allocates it) on top by bytes. Without the key both are 401; bad seconds 400; an unknown
//! pid 404; no pid with several processes visible 400; a client that leaves early stops the
//! recording (the temporary trace goes and the process can be profiled again at once); the
//! agent's folder is empty after each pull.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::agent::{new_key, start_agent};
use common::{live, start, Need};
use serde_json::Value;

/// Reads a gzip pprof with `pprof-format` and prints, as JSON, the sample types, and the
/// functions on top by the named sample type: `flat` (the leaf) and `cum` (anywhere on the
/// stack), eight each, largest first.
const TOP_JS: &str = r#"
const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require(process.argv[2]);
const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[3])));
const s = p.stringTable.strings;
const types = p.sampleType.map(t => `${s[Number(t.type)]}/${s[Number(t.unit)]}`);
const idx = types.findIndex(t => t.split('/')[0] === process.argv[4]);
if (idx < 0) { console.error(`no sample type ${process.argv[4]} in ${types}`); process.exit(3); }
const fname = new Map(p.function.map(f => [Number(f.id), s[Number(f.name)]]));
const floc = new Map(p.location.map(l => [Number(l.id), fname.get(Number(l.line[0].functionId))]));
const flat = new Map();
const cum = new Map();
for (const smp of p.sample) {
  const v = Number(smp.value[idx]);
  const names = smp.locationId.map(id => floc.get(Number(id)));
  flat.set(names[0], (flat.get(names[0]) || 0) + v);
  for (const n of new Set(names)) cum.set(n, (cum.get(n) || 0) + v);
}
const top = m => [...m].sort((a, b) => b[1] - a[1]).slice(0, 8);
console.log(JSON.stringify({ types, samples: p.sample.length, flat: top(flat), cum: top(cum) }));
"#;

/// The reader: `pprof-format`'s folder ([`Need::PprofFormat`]) and [`TOP_JS`] written into
/// `dir`, as a script; None when it is missing and CLRSPY_ALLOW_SKIP=1.
fn pprof_reader(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let module = common::need(Need::PprofFormat)?;
    let script = dir.join("top.cjs");
    std::fs::write(&script, TOP_JS).unwrap();
    Some((module, script))
}

/// The top of `profile` by `sample_type`, as [`TOP_JS`] prints it.
fn top(reader: &(PathBuf, PathBuf), profile: &Path, sample_type: &str) -> Value {
    let (module, script) = reader;
    let out = Command::new("node")
        .arg(script)
        .arg(module)
        .arg(profile)
        .arg(sample_type)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pprof-format could not read {}: {}",
        profile.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// GET `url` into `out`: the status and the content type.
fn get(url: &str, key: Option<&str>, out: &Path, max_time: u32) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--max-time", &max_time.to_string(), "-o"])
        .arg(out)
        .args(["-w", "%{http_code} %{content_type}"]);
    if let Some(k) = key {
        cmd.args(["-H", &format!("Authorization: Bearer {k}")]);
    }
    let o = cmd.arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let (code, ctype) = text.split_once(' ').unwrap_or((&text, ""));
    (code.parse().unwrap_or(0), ctype.to_string())
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .all(|e| e.file_name() == "audit.jsonl")
}

#[test]
fn pprof_pulls_read_by_a_real_pprof_reader() {
    if !live() {
        return;
    }
    let scripts = tempfile::tempdir().unwrap();
    let Some(reader) = pprof_reader(scripts.path()) else {
        return;
    };
    let cpu = start("cpu", &["--seconds", "90", "--threads", "1"]);
    let alloc = start("alloc", &["--seconds", "90"]);
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("agent-folder");
    let (key, hash) = new_key();
    let config = dir.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "folder = {:?}\n[auth]\napi_key_hashes = [{hash:?}]\n[metrics]\nenabled = false\n",
            folder.to_str().unwrap()
        ),
    )
    .unwrap();
    let agent = start_agent(&[
        "--urls",
        "http://127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ]);
    let b = &agent.base;
    let out = dir.path().join("out.pb.gz");

    // CPU: the burner's method on top by samples; CPU and samples are the sample types.
    let (s, ctype) = get(
        &format!("{b}/debug/pprof/profile?seconds=3&pid={}", cpu.1),
        Some(&key),
        &out,
        60,
    );
    assert_eq!(
        (s, ctype.as_str()),
        (200, "application/octet-stream"),
        "{}",
        String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default())
    );
    let t = top(&reader, &out, "samples");
    eprintln!("profile: {t}");
    assert_eq!(
        t["types"],
        serde_json::json!(["samples/count", "cpu/nanoseconds"])
    );
    assert_eq!(t["flat"][0][0], "Workloads.Cpu.Burn", "{t}");
    // Three seconds of one busy thread: hundreds of 1 ms samples on it even on a loaded machine.
    assert!(t["flat"][0][1].as_f64().unwrap() > 300.0, "{t}");
    assert!(empty(&folder), "the temporary trace is left");

    // Allocations: the allocated type on top by bytes and by objects, under its method.
    let (s, _) = get(
        &format!("{b}/debug/pprof/allocs?seconds=3&pid={}", alloc.1),
        Some(&key),
        &out,
        60,
    );
    assert_eq!(s, 200);
    for sample_type in ["alloc_space", "alloc_objects"] {
        let t = top(&reader, &out, sample_type);
        eprintln!("allocs by {sample_type}: {t}");
        assert_eq!(
            t["types"],
            serde_json::json!(["alloc_objects/count", "alloc_space/bytes"])
        );
        assert_eq!(t["flat"][0][0], "[type] Workloads.AllocatedThing", "{t}");
        let cum: Vec<&str> = t["cum"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e[0].as_str())
            .collect();
        assert!(cum.contains(&"Workloads.Alloc.MakeThing"), "{t}");
    }
    assert!(empty(&folder));

    // Refusals, before anything is recorded.
    let routes = ["profile", "allocs"];
    for r in routes {
        let url = format!("{b}/debug/pprof/{r}?seconds=1&pid={}", cpu.1);
        assert_eq!(get(&url, None, &out, 10).0, 401, "{r}");
        assert_eq!(get(&url, Some("wrong-key"), &out, 10).0, 401, "{r}");
        for (q, want) in [
            ("seconds=0", 400),
            ("seconds=301", 400),
            ("seconds=1&pid=..%2F1", 400),
            ("seconds=1&pid=4294967295", 404),
            // Two workloads (at least) are visible: which one must be said.
            ("seconds=1", 400),
        ] {
            let (s, ctype) = get(&format!("{b}/debug/pprof/{r}?{q}"), Some(&key), &out, 10);
            assert_eq!(s, want, "{r}?{q}");
            assert!(ctype.starts_with("application/json"), "{r}?{q}: {ctype}");
        }
    }

    // A client that leaves after a second: the 30 s recording stops, its trace goes, and the
    // process can be profiled again straight away (its permit was given back).
    let url = format!("{b}/debug/pprof/profile?seconds=30&pid={}", cpu.1);
    let (s, _) = get(&url, Some(&key), &out, 1);
    assert_eq!(s, 0, "curl gave up");
    let t0 = Instant::now();
    while !empty(&folder) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        empty(&folder),
        "the recording went on after its client left"
    );
    eprintln!(
        "stopped and cleaned up {:?} after the client left",
        t0.elapsed()
    );
    // (The permit is given back just after the trace is removed: a 429 may come first.)
    let again = format!("{b}/debug/pprof/profile?seconds=1&pid={}", cpu.1);
    let mut s = get(&again, Some(&key), &out, 30).0;
    for _ in 0..10 {
        if s != 429 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        s = get(&again, Some(&key), &out, 30).0;
    }
    assert_eq!(s, 200);
    assert!(empty(&folder));
}
