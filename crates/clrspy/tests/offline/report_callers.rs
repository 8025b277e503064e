//! The call-view flags on the command line, on the Razor Pages trace of
//! crates/clrspy/tests/data (see testapps/README.md, "RazorApp"): `report cpu --callers`
//! (text and JSON), `--focus` with `--tree`, and `--just-my-code[=PREFIXES]`/`--framework` in
//! `report` and `convert`. The views themselves are snapshot-tested in
//! crates/clrspy-export/tests/integration/call_views.rs; the CLI must print exactly those.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, repo};

const TRACE: &str = "crates/clrspy/tests/data/razor-pages-cpu.nettrace.zip";

fn trace() -> String {
    repo().join(TRACE).display().to_string()
}

fn snapshot(name: &str) -> String {
    let p = repo()
        .join("crates/clrspy-export/tests/snapshots/razor-pages-cpu")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn run(args: &[&str]) -> String {
    let out = clrspy().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Parses JSON nested deeper than serde_json's default limit (100-frame caller trees).
fn deep_json(s: &str) -> serde_json::Value {
    let mut d = serde_json::Deserializer::from_str(s);
    d.disable_recursion_limit();
    d.into_iter::<serde_json::Value>().next().unwrap().unwrap()
}

fn prune(callers: &mut serde_json::Value, levels: usize) {
    for c in callers.as_array_mut().into_iter().flatten() {
        if levels <= 1 {
            c["callers"] = serde_json::json!([]);
        } else {
            prune(&mut c["callers"], levels - 1);
        }
    }
}

#[test]
fn callers_json_and_text() {
    let t = trace();
    let out = run(&[
        "report",
        &t,
        "cpu",
        "--callers",
        "CreateDelegate",
        "--json",
        "--no-local-images",
    ]);
    let mut v = deep_json(&out);
    assert_eq!(
        v["method"],
        "System.Reflection.Emit.DynamicMethod.CreateDelegate"
    );
    let first = &v["callers"][0];
    assert_eq!(
        first["frame"],
        "System.Linq.Expressions.Expression`1[System.__Canon].Compile"
    );
    assert!(first["samples"].as_f64().unwrap() > 0.0 && first["callers"].is_array());
    prune(&mut v["callers"], 8);
    let want: serde_json::Value = serde_json::from_str(&snapshot("callers.json")).unwrap();
    assert_eq!(v, want, "differs from the snapshot of call_views.rs");

    // Piped: names whole, the app's frames on their own lines.
    let text = run(&["report", &t, "cpu", "--callers", "CreateDelegate"]);
    let unmarked = text.replace("[…", "[").replace("frames…]", "frames]");
    assert!(!unmarked.contains('…'), "a name was shortened: {text}");
    assert!(
        text.lines().any(|l| l
            .trim_end()
            .ends_with("RazorApp.TagHelpers.ScoreTagHelper.ProcessAsync")),
        "{text}"
    );
    // A method no stack has: said so, not an error.
    let none = run(&["report", &t, "cpu", "--callers", "NoSuchMethod"]);
    assert!(
        none.contains("no CPU stack has a frame containing 'NoSuchMethod'"),
        "{none}"
    );
}

#[test]
fn focus_shows_the_path_above_the_subtree() {
    let t = trace();
    // The default depth (30 frames) counts from the focus down: the 50-frame path above
    // does not use it up.
    let text = run(&["report", &t, "cpu", "--tree", "--focus", "CreateDelegate"]);
    let tree = &text[text.find("Call tree").unwrap()..];
    let path = tree.find("RazorApp.Scoring.Ranker`2").unwrap();
    let method = tree
        .find("System.Reflection.Emit.DynamicMethod.CreateDelegate")
        .unwrap();
    assert!(tree.contains("heaviest path") && path < method, "{tree}");
    assert!(
        tree.contains("System.ModuleHandle.GetDynamicMethod"),
        "{tree}"
    );
    let json = run(&[
        "report",
        &t,
        "cpu",
        "--tree",
        "--focus",
        "CreateDelegate",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let frames: Vec<&str> = v["focus_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["frame"].as_str().unwrap())
        .collect();
    assert_eq!(
        frames.last(),
        Some(&"System.Linq.Expressions.Expression`1[System.__Canon].Compile")
    );
}

#[test]
fn just_my_code_in_convert_and_report() {
    let t = trace();
    // The default rule: exactly the export's snapshot.
    let folded = run(&[
        "convert",
        &t,
        "--to",
        "folded",
        "-o",
        "-",
        "--just-my-code",
        "--no-local-images",
    ]);
    assert!(
        folded == snapshot("just-my-code.folded.txt"),
        "differs from the snapshot"
    );
    // Only RazorApp.* is mine: no two other managed frames in a row.
    let mine = run(&[
        "convert",
        &t,
        "--to",
        "folded",
        "-o",
        "-",
        "--just-my-code=RazorApp.*",
    ]);
    let other = |f: &str| !f.starts_with("RazorApp.") && !f.starts_with('[');
    for line in mine.lines() {
        let (stack, _) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        assert!(
            !frames.windows(2).any(|w| other(w[0]) && other(w[1])),
            "{line}"
        );
    }
    // --framework adds a prefix: the Ranker's own frames fold into its entry.
    let fw = run(&[
        "convert",
        &t,
        "--to",
        "folded",
        "-o",
        "-",
        "--framework",
        "RazorApp.Scoring.",
    ]);
    assert!(fw.contains(";RazorApp.Scoring.Ranker`2[System.__Canon,System.__Canon].Rank"));
    assert!(
        !fw.contains("CompileSelector"),
        "CompileSelector was not folded"
    );
    // The Chromium timeline's sample stacks too.
    let chromium = |extra: &[&str]| {
        let mut args = vec!["convert", &t, "--to", "chromium", "-o", "-"];
        args.extend_from_slice(extra);
        run(&args)
    };
    let whole = chromium(&[]);
    let grouped = chromium(&["--just-my-code"]);
    assert!(whole.contains("LambdaCompiler") && whole.contains("CompileSelector"));
    assert!(!grouped.contains("LambdaCompiler") && grouped.contains("CompileSelector"));
    // The report's tables fold too.
    let json = run(&["report", &t, "cpu", "--just-my-code", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let top: Vec<&str> = v["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert!(
        top.contains(&"System.Linq.Expressions.Expression`1[System.__Canon].Compile")
            && !top.contains(&"System.Reflection.Emit.DynamicMethod.CreateDelegate"),
        "{top:?}"
    );
}
