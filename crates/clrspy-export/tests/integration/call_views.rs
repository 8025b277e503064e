//! The call views at ASP.NET depth, on a real trace of testapps/RazorApp (a Razor page that
//! renders a partial with tag helpers 40 times; stacks 60 to 100 frames deep, the CPU in
//! `RazorApp.Scoring.Ranker`2.Rank` and the `DynamicMethod.CreateDelegate` it reaches
//! through `Expression.Compile`): `--callers`, `--focus` with its path, `--tree` at depth,
//! `--just-my-code` in the tables, the tree, the callers and the folded and speedscope views,
//! and names at a fixed width and piped. The views are compared with snapshots in
//! tests/snapshots/razor-pages-cpu/ (regenerate with `CLRSPY_UPDATE_SNAPSHOTS=1 cargo test -p
//! clrspy-export --test integration -- call_views::` and review the diff); the invariants
//! below hold whatever the snapshots say.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::PathBuf;

use clrspy_analysis::r2r::ImageSources;
use clrspy_analysis::{Analysis, JustMyCode, Metric, Options, StackFilter};
use clrspy_export::report::{self, ReportKind, ReportOptions, TextStyle, TreeOptions};
use clrspy_export::{export, ExportOptions, Format};

const TRACE: &str = "razor-pages-cpu.nettrace.zip";
const METHOD: &str = "System.Reflection.Emit.DynamicMethod.CreateDelegate";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bytes() -> Vec<u8> {
    let raw = std::fs::read(repo().join("crates/clrspy/tests/data").join(TRACE)).unwrap();
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
    let mut f = z.by_index(0).unwrap();
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    out
}

/// The analysis, named from the trace alone (no image files of this machine).
fn analyse() -> Analysis {
    let b = bytes();
    let mut r = nettrace::StreamReader::from_read(std::io::Cursor::new(b)).unwrap();
    let options = Options {
        images: ImageSources {
            dirs: Vec::new(),
            original_paths: false,
        },
        ..Options::default()
    };
    Analysis::run(&mut r, options, &mut |_| ()).unwrap()
}

const NARROW: TextStyle = TextStyle {
    width: 100,
    bold: false,
};

fn text(a: &Analysis, o: &ReportOptions, style: &TextStyle) -> String {
    let mut out = Vec::new();
    report::build(ReportKind::Cpu, a, o)
        .write_text(&mut out, style)
        .unwrap();
    String::from_utf8(out).unwrap()
}

fn options(filter: StackFilter, tree: Option<TreeOptions>, callers: Option<&str>) -> ReportOptions {
    ReportOptions {
        top: 10,
        filter,
        tree,
        callers: callers.map(str::to_string),
        trace: TRACE.into(),
        ..ReportOptions::default()
    }
}

fn deep(depth: usize) -> Option<TreeOptions> {
    Some(TreeOptions {
        depth,
        ..TreeOptions::default()
    })
}

fn jmc() -> StackFilter {
    StackFilter {
        just_my_code: Some(JustMyCode::default()),
        ..StackFilter::default()
    }
}

fn converted(a: &Analysis, format: Format, filter: StackFilter) -> String {
    let o = ExportOptions {
        metric: Metric::Cpu,
        filter,
        title: TRACE.into(),
        start_unix_ns: None,
    };
    let mut out = Vec::new();
    let never = || -> std::io::Result<nettrace::Reader<nettrace::SliceSource<'static>>> {
        Err(std::io::Error::other("not read again"))
    };
    export(format, a, &o, never, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn check(name: &str, got: &str, failures: &mut Vec<String>) {
    let path = repo()
        .join("crates/clrspy-export/tests/snapshots/razor-pages-cpu")
        .join(name);
    if std::env::var("CLRSPY_UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    match std::fs::read_to_string(&path) {
        Ok(want) if want == got => {}
        Ok(_) => failures.push(format!("differs from {}", path.display())),
        Err(e) => failures.push(format!("no snapshot at {} ({e})", path.display())),
    }
}

/// Every shown frame name of a text view: nothing is cut from the left.
fn assert_never_cut_from_the_left(t: &str) {
    for line in t.lines() {
        for part in line.split(" → ") {
            let name = part.trim_start_matches(|c: char| {
                c.is_ascii_digit() || c == '.' || c == '%' || c == ' '
            });
            assert!(!name.starts_with('…'), "cut from the left: {line}");
        }
    }
}

/// Drops the callers below `levels`.
fn prune(callers: &mut serde_json::Value, levels: usize) {
    for c in callers.as_array_mut().into_iter().flatten() {
        if levels <= 1 {
            c["callers"] = serde_json::json!([]);
        } else {
            prune(&mut c["callers"], levels - 1);
        }
    }
}

fn is_framework(name: &str) -> bool {
    JustMyCode::default().is_framework_name(name)
}

#[test]
fn call_views_of_a_razor_page_match_their_snapshots() {
    let a = analyse();
    // The trace is what these tests are about: 60+ frame stacks.
    let profile = a.profile(&StackFilter::default());
    let deepest = profile.rows.iter().map(|r| r.frames.len()).max().unwrap();
    assert!(deepest >= 60, "deepest stack {deepest} frames");
    let mut failures = Vec::new();

    // --callers: the text and the JSON.
    let o = options(StackFilter::default(), None, Some("CreateDelegate"));
    let callers = text(&a, &o, &NARROW);
    assert_never_cut_from_the_left(&callers);
    for app in [
        "RazorApp.Scoring.Ranker`2[System.__Canon,System.__Canon].CompileSelector",
        "RazorApp.TagHelpers.ScoreTagHelper.ProcessAsync",
        // At 100 columns, never cut at its ends.
        "Pages_Shared__Row.ExecuteAsync",
    ] {
        assert!(callers.contains(app), "{app} not shown:\n{callers}");
    }
    check("callers.txt", &callers, &mut failures);
    let json = report::build(ReportKind::Cpu, &a, &o).json();
    assert_eq!(json["method"], METHOD);
    let samples = json["samples"].as_f64().unwrap();
    let direct: f64 = json["callers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["samples"].as_f64().unwrap())
        .sum();
    assert!(
        samples > 10.0 && (direct - samples).abs() < 0.5,
        "{samples} {direct}"
    );
    // The snapshot keeps the callers 8 levels deep (the whole tree is 400 KB).
    let mut json = json;
    prune(&mut json["callers"], 8);
    check(
        "callers.json",
        &(serde_json::to_string_pretty(&json).unwrap() + "\n"),
        &mut failures,
    );

    // --focus: the path to the method, collapsed, above its subtree.
    let focus = StackFilter {
        focus: Some("CreateDelegate".into()),
        ..StackFilter::default()
    };
    let t = text(&a, &options(focus, deep(120), None), &NARROW);
    let tree = &t[t.find("Call tree").unwrap()..];
    assert!(
        tree.contains("heaviest path") && tree.contains("frames…]"),
        "{tree}"
    );
    let path_line = tree.lines().position(|l| l.contains("Ranker`2")).unwrap();
    let method_line = tree
        .lines()
        .position(|l| l.contains("DynamicMethod.CreateDelegate"))
        .unwrap();
    assert!(path_line < method_line, "{tree}");
    check("focus.txt", tree, &mut failures);

    // --tree at depth 120: chains collapse, indentation stops growing.
    let t = text(
        &a,
        &options(StackFilter::default(), deep(120), None),
        &NARROW,
    );
    let tree = &t[t.find("Call tree").unwrap()..];
    assert_never_cut_from_the_left(tree);
    assert!(tree.contains("frames…] →"), "{tree}");
    let widest_indent = tree
        .lines()
        .map(|l| l.len() - l.trim_start().len())
        .max()
        .unwrap();
    assert!(widest_indent <= 17 + 2 * 16 + 2, "{widest_indent}");
    check("tree.txt", tree, &mut failures);

    // --just-my-code: the tables, the tree and the callers.
    let mut t = text(&a, &options(jmc(), deep(120), None), &NARROW);
    t.push('\n');
    t.push_str(&text(
        &a,
        &options(jmc(), None, Some("CreateDelegate")),
        &NARROW,
    ));
    assert!(t.contains("Callers of System.Reflection.Emit.DynamicMethod.CreateDelegate"));
    check("just-my-code.txt", &t, &mut failures);

    // Names at 100 columns and piped (whole).
    let narrow = text(&a, &options(StackFilter::default(), None, None), &NARROW);
    let piped = text(
        &a,
        &options(StackFilter::default(), None, None),
        &TextStyle::default(),
    );
    assert!(narrow.contains('…'), "nothing was shortened at 100 columns");
    for l in narrow.lines().filter(|l| l.contains('…')) {
        assert!(l.chars().count() <= 100, "shortened, yet too long: {l}");
    }
    assert_never_cut_from_the_left(&narrow);
    assert!(!piped.contains('…'), "piped output shortened a name");
    check("names-100-columns.txt", &narrow, &mut failures);
    check("names-piped.txt", &piped, &mut failures);

    assert!(
        failures.is_empty(),
        "{}\n(regenerate with CLRSPY_UPDATE_SNAPSHOTS=1 after checking the change)",
        failures.join("\n")
    );
}

#[test]
fn just_my_code_folds_every_stack_view() {
    let a = analyse();
    let mut failures = Vec::new();
    // Folded: no two framework frames in a row (after the thread's label), same total.
    let all = converted(&a, Format::Folded, StackFilter::default());
    let mine = converted(&a, Format::Folded, jmc());
    let total = |s: &str| -> u64 {
        s.lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let diff = total(&all).abs_diff(total(&mine));
    assert!(diff <= all.lines().count() as u64, "{diff}");
    assert!(mine.lines().count() < all.lines().count());
    for line in mine.lines() {
        let (stack, _) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        for w in frames.windows(2) {
            assert!(
                !(is_framework(w[0]) && is_framework(w[1])),
                "two framework frames in a row: {line}"
            );
        }
    }
    assert!(mine.contains(";RazorApp.Scoring.Ranker`2[System.__Canon,System.__Canon].CompileSelector;System.Linq.Expressions.Expression`1[System.__Canon].Compile "));
    check("just-my-code.folded.txt", &mine, &mut failures);
    // Speedscope: the same stacks.
    let s = converted(&a, Format::Speedscope, jmc());
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    let frames = v["shared"]["frames"].as_array().unwrap();
    let name = |i: &serde_json::Value| {
        frames[i.as_u64().unwrap() as usize]["name"]
            .as_str()
            .unwrap()
    };
    for sample in v["profiles"][0]["samples"].as_array().unwrap() {
        let names: Vec<&str> = sample.as_array().unwrap().iter().map(name).collect();
        for w in names.windows(2) {
            assert!(!(is_framework(w[0]) && is_framework(w[1])), "{names:?}");
        }
    }
    // The HTML report: the callers and callees of its hottest methods, grouped too.
    let html = converted(&a, Format::Html, StackFilter::default());
    let at = html
        .find("Callers and callees of the hottest methods")
        .unwrap();
    let section = &html[at..];
    let first = section.find("<details class=links>").unwrap();
    assert!(section[first..].starts_with(
        "<details class=links><summary>System.Reflection.Emit.DynamicMethod.CreateDelegate — "
    ));
    assert!(section
        .contains("RazorApp.Scoring.Ranker`2[System.__Canon,System.__Canon].CompileSelector"));
    assert!(section.contains("more framework frames</summary>"));
    let grouped = converted(&a, Format::Html, jmc());
    assert!(!grouped.contains(
        "<details class=links><summary>System.Reflection.Emit.DynamicMethod.CreateDelegate"
    ));
    let mut v = v;
    v["exporter"] = serde_json::Value::Null;
    check(
        "just-my-code.speedscope.json",
        &(serde_json::to_string_pretty(&v).unwrap() + "\n"),
        &mut failures,
    );
    assert!(
        failures.is_empty(),
        "{}\n(regenerate with CLRSPY_UPDATE_SNAPSHOTS=1 after checking the change)",
        failures.join("\n")
    );
}
