//! The app's own code found by assembly, and call trees that say what they cut, on real
//! recordings (crates/clrspy/tests/data; testapps/README.md says how each was made):
//! `razorshop-microsoft-namespace` is testapps/MsRazorShop, a Razor Pages app whose own code is
//! under `Microsoft.Samples.RazorShop` (assembly `RazorShop`), recorded under `ab` load.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, json, repo};

const SHOP: &str = "crates/clrspy/tests/data/razorshop-microsoft-namespace.nettrace.zip";
const RAZOR: &str = "crates/clrspy/tests/data/razor-pages-cpu.nettrace.zip";
const APP: &str = "Microsoft.Samples.RazorShop.";

fn path(p: &str) -> String {
    repo().join(p).display().to_string()
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

fn methods(report: &serde_json::Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn just_my_code_knows_a_microsoft_namespaced_app_by_its_assembly() {
    let t = path(SHOP);
    let r = json(&[
        "report",
        &t,
        "cpu",
        "--just-my-code",
        "--json",
        "--top",
        "10",
    ]);
    let incl = methods(&r, "top_inclusive");
    // The app's page and tag helper are its own code, not folded into Kestrel's frames.
    assert!(
        incl.iter().any(|m| m.starts_with(APP)),
        "no app frame among {incl:?}"
    );
    let excl = methods(&r, "top_exclusive");
    assert!(
        !excl.iter().any(|m| m.contains("HttpsRedirection")
            || m.starts_with("Microsoft.AspNetCore.Server.Kestrel")),
        "Kestrel's frames stand for the app's work: {excl:?}"
    );
    // --just-my-code=PATTERN still decides: none of the app's frames are then its code.
    let r = json(&[
        "report",
        &t,
        "cpu",
        "--just-my-code=Contoso.*",
        "--json",
        "--top",
        "10",
    ]);
    assert!(
        !methods(&r, "top_inclusive")
            .iter()
            .any(|m| m.starts_with(APP) && !m.contains(".Pages_Index.")),
        "{r}"
    );
    // Every view groups alike: the folded stacks keep the app's frames.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shop.folded.txt");
    run(&[
        "convert",
        &t,
        "--to",
        "folded",
        "--just-my-code",
        "-o",
        &out.display().to_string(),
    ]);
    let folded = std::fs::read_to_string(&out).unwrap();
    assert!(
        folded.contains("Microsoft.Samples.RazorShop.Scoring.Ranker`2"),
        "{}",
        &folded[..folded.len().min(2000)]
    );
}

#[test]
fn text_callers_name_the_apps_partial_as_the_html_does() {
    let t = path(SHOP);
    let text = run(&[
        "report",
        &t,
        "cpu",
        "--callers",
        "CreateDelegate",
        "--depth",
        "200",
    ]);
    assert!(
        text.contains("Microsoft.Samples.RazorShop.Pages.Shared.Pages_Shared__Row.ExecuteAsync"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shop.html");
    run(&[
        "convert",
        &t,
        "--to",
        "html",
        "-o",
        &out.display().to_string(),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("Pages_Shared__Row.ExecuteAsync"));
}

#[test]
fn the_default_tree_marks_its_cuts_and_the_summary_offers_the_callers() {
    let t = path(RAZOR);
    let tree = run(&["report", &t, "cpu", "--tree"]);
    let marks: Vec<&str> = tree
        .lines()
        .filter(|l| l.contains(" more level") && l.contains(": --depth "))
        .collect();
    assert!(!marks.is_empty(), "no cut is marked:\n{tree}");
    // The hottest path goes past the default depth of 30 to its leaf: frames an explicit
    // --depth 30 leaves out.
    let thirty = run(&["report", &t, "cpu", "--tree", "--depth", "30"]);
    let frame_lines = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .map(str::to_string)
            .collect()
    };
    let cut = frame_lines(&thirty);
    let beyond: Vec<String> = frame_lines(&tree)
        .into_iter()
        .filter(|l| !cut.contains(l))
        .collect();
    assert!(!beyond.is_empty(), "nothing past depth 30:\n{tree}");
    // An explicit --depth is honoured, and says what it cut.
    let shallow = run(&["report", &t, "cpu", "--tree", "--depth", "5"]);
    assert!(shallow.contains("more levels: --depth "), "{shallow}");

    let summary = run(&["report", &t]);
    let line = summary
        .lines()
        .find(|l| l.contains(" cpu --callers "))
        .unwrap_or_else(|| panic!("no --callers in Next:\n{summary}"));
    assert!(
        line.contains("System.Reflection.Emit.DynamicMethod.CreateDelegate"),
        "{line}"
    );
}

#[test]
fn the_html_flame_graph_has_a_by_leaf_view_and_a_labelled_root() {
    let t = path(SHOP);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shop.html");
    run(&[
        "convert",
        &t,
        "--to",
        "html",
        "-o",
        &out.display().to_string(),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    // Two graphs, each at most 900 px tall in the page (a taller one scrolls in its frame).
    for id in ["flamegraph", "flamegraph-by-leaf"] {
        let at = html
            .find(&format!("<iframe id={id} "))
            .unwrap_or_else(|| panic!("no {id}"));
        let style = &html[at..at + 200];
        let h: u32 = style
            .split("height:")
            .nth(1)
            .and_then(|s| s.split("px").next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        assert!(h <= 900, "{id}: {h} px");
    }
    assert!(
        html.contains("all threads: CPU, "),
        "the root is not labelled"
    );
    // By leaf, every stack ending in the hottest method is one bar: as wide as its
    // exclusive share in the report.
    let r = json(&["report", &t, "cpu", "--json"]);
    let hot = &r["top_exclusive"][0];
    let method = hot["method"].as_str().unwrap();
    let pct = hot["percent"].as_f64().unwrap();
    let leaf = &html[html.find("<iframe id=flamegraph-by-leaf ").unwrap()..];
    let key = format!("&lt;title&gt;{method} (");
    let bar = leaf.find(&key).unwrap_or_else(|| panic!("no {method} bar"));
    let title = &leaf[bar + key.len()..bar + key.len() + 80];
    let shown: f64 = title
        .split(", ")
        .nth(1)
        .and_then(|s| s.split('%').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{title}"));
    assert!(
        (shown - pct).abs() < 0.2,
        "{method}: {shown}% by leaf, {pct}% exclusive"
    );
}
