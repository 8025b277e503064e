//! The `loader` report on the `loadfail` scenario's traces (clrspy's and dotnet-trace's, see
//! crates/clrspy/tests/data/README.md), and what it says on a trace without its events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};

use clrspy_analysis::r2r::ImageSources;
use clrspy_analysis::{Analysis, Options};
use clrspy_export::report::{self, ReportKind, ReportOptions, TextStyle};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data")
        .join(name)
}

fn analyse(p: &Path) -> Analysis {
    let raw = std::fs::read(p).unwrap();
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
    let mut bytes = Vec::new();
    z.by_index(0).unwrap().read_to_end(&mut bytes).unwrap();
    let mut r = nettrace::StreamReader::from_read(std::io::Cursor::new(bytes)).unwrap();
    let options = Options {
        images: ImageSources {
            dirs: Vec::new(),
            original_paths: false,
        },
        ..Options::default()
    };
    Analysis::run(&mut r, options, &mut |_| ()).unwrap()
}

fn options() -> ReportOptions {
    ReportOptions {
        trace: "t".into(),
        ..ReportOptions::default()
    }
}

fn text(kind: ReportKind, a: &Analysis) -> String {
    let mut out = Vec::new();
    report::build(kind, a, &options())
        .write_text(
            &mut out,
            &TextStyle {
                width: 100,
                bold: false,
            },
        )
        .unwrap();
    String::from_utf8(out).unwrap()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect()
}

#[test]
fn failed_loads_probed_paths_and_duplicates_from_both_recorders() {
    for file in [
        "loadfail.nettrace.zip",
        "loadfail-dotnet-trace.nettrace.zip",
    ] {
        let a = analyse(&data(file));
        let j = report::build(ReportKind::Loader, &a, &options()).json();
        assert_eq!(j["requested"], 31, "{file}");
        assert_eq!(j["failed"], 2, "{file}");
        assert_eq!(j["probes"], 15, "{file}");
        // Every start ended: loaded, found loaded, or failed.
        let (loaded, reused) = (j["loaded"].as_u64().unwrap(), j["reused"].as_u64().unwrap());
        assert_eq!(loaded + reused + 2, 31, "{file}");
        assert!(j.get("missing").is_none());

        let f = j["failures"].as_array().unwrap();
        assert_eq!(
            f[0]["assembly"],
            "Missing.Assembly, Version=1.2.3.4, Culture=neutral, PublicKeyToken=null"
        );
        assert_eq!(f[0]["context"], "Default");
        assert_eq!(f[0]["stage"], "AppDomainAssemblyResolveEvent");
        assert_eq!(
            f[0]["reason"],
            "not found in any stage (Could not locate assembly)"
        );
        assert!(f[0]["probed"].as_array().unwrap().is_empty());
        assert_eq!(f[0]["attempts"].as_array().unwrap().len(), 3);
        assert_eq!(
            f[1]["assembly"],
            "Workloads.Plugin.Dependency, Culture=neutral, PublicKeyToken=null"
        );
        let probed = strs(&f[1]["probed"]);
        assert_eq!(probed.len(), 1);
        assert!(probed[0].starts_with("/tmp/clrspy-loadfail-"));
        assert!(probed[0].ends_with("/Workloads.Plugin.Dependency.dll"));
        assert!(f[1]["requested_by"]
            .as_str()
            .unwrap()
            .starts_with("Workloads.Plugin, Version=1.0.0.0"));

        let d = j["duplicates"].as_array().unwrap();
        assert_eq!(d.len(), 2, "{file}: {d:?}");
        assert_eq!(d[0]["assembly"], "Workloads");
        assert_eq!(strs(&d[0]["versions"]), ["1.0.0.0"]);
        assert_eq!(d[0]["contexts"].as_array().unwrap().len(), 2);
        assert_eq!(d[1]["assembly"], "Workloads.Plugin");
        assert_eq!(strs(&d[1]["versions"]), ["1.0.0.0", "2.0.0.0"]);
        assert_eq!(d[1]["loads"], 3);

        let ctx: Vec<(&str, u64)> = j["contexts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["context"].as_str().unwrap(), c["loads"].as_u64().unwrap()))
            .collect();
        assert_eq!(ctx.len(), 4);
        assert_eq!(ctx[0].0, "Default");
        assert_eq!(ctx.iter().map(|c| c.1).sum::<u64>(), loaded);
        // The plugin's second version came from the context's Resolving handler.
        let v2 = j["loads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == "Workloads.Plugin" && l["version"] == "2.0.0.0")
            .unwrap();
        assert_eq!(v2["handler"], "<Run>b__0");

        let t = text(ReportKind::Loader, &a);
        assert!(t.contains("Missing.Assembly, Version=1.2.3.4"), "{t}");
        assert!(t.contains("probed: /tmp/clrspy-loadfail-"), "{t}");
        assert!(
            t.contains("Workloads.Plugin  3 loads, versions 1.0.0.0, 2.0.0.0"),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");

        // The summary names them and points to the report.
        let s = report::build(ReportKind::Summary, &a, &options()).json();
        assert_eq!(s["loader"]["failed"], 2);
        assert!(strs(&s["next"])
            .iter()
            .any(|n| n.starts_with("clrspy report t loader")));
        let st = text(ReportKind::Summary, &a);
        assert!(
            st.contains("Assembly loading: 2 failed, 2 loaded twice"),
            "{st}"
        );
    }
}

#[test]
fn a_trace_without_assembly_loader_events_says_what_records_them() {
    // Recorded with the GC keyword and the always-on Loader keyword: assemblies, no contexts.
    let a = analyse(&data("gc-no-samples.nettrace.zip"));
    let j = report::build(ReportKind::Loader, &a, &options()).json();
    assert_eq!(j["requested"], 0);
    assert!(j["failures"].as_array().unwrap().is_empty());
    let missing = j["missing"].as_str().unwrap();
    assert!(
        missing.contains("clrspy record --profile loader"),
        "{missing}"
    );
    // Nothing to say in the summary: no key, no line.
    let s = report::build(ReportKind::Summary, &a, &options()).json();
    assert!(s.get("loader").is_none());
    assert!(!text(ReportKind::Summary, &a).contains("Assembly loading"));
}

#[test]
fn the_html_report_gains_the_table_only_with_something_to_show() {
    use clrspy_analysis::StackFilter;
    use clrspy_export::report::sections::HtmlInput;
    let html = |file: &str| {
        let a = analyse(&data(file));
        let filter = StackFilter::default();
        let i = HtmlInput {
            a: &a,
            filter: &filter,
        };
        (ReportKind::Loader.def().html.unwrap().build)(&i)
    };
    let s = html("loadfail.nettrace.zip");
    assert_eq!(s.facts[0].value, "2");
    assert_eq!(s.parts[0].order, 86);
    assert!(s.parts[0]
        .html
        .contains("Missing.Assembly, Version=1.2.3.4"));
    assert!(s.parts[0].html.contains("/Workloads.Plugin.Dependency.dll"));
    assert!(s.parts[0]
        .html
        .contains("loaded 3 times, versions 1.0.0.0, 2.0.0.0"));
    // Loads without failures or duplicates: nothing added to the page.
    let s = html("contention-thread-cpu.nettrace.zip");
    assert!(s.facts.is_empty() && s.parts.is_empty());
}

#[test]
fn the_loader_profile_records_what_the_report_needs() {
    let needs = ReportKind::Loader.needs();
    assert_eq!(needs.profile, Some("loader"));
    let p = clr_events::profiles::find_profile("loader").unwrap();
    let specs = clr_events::provider_spec::parse_providers(p.providers).unwrap();
    let rt = specs
        .iter()
        .find(|s| s.name == clr_events::RUNTIME_PROVIDER)
        .unwrap();
    assert_eq!(rt.keywords & needs.runtime_keywords, needs.runtime_keywords);
    assert!(rt.level >= needs.runtime_level);
}

#[test]
fn top_limits_the_text_rows_of_each_context_not_the_json() {
    let a = analyse(&data("loadfail.nettrace.zip"));
    let o = ReportOptions {
        top: 3,
        ..options()
    };
    let r = report::build(ReportKind::Loader, &a, &o);
    assert_eq!(r.json()["loads"].as_array().unwrap().len(), 19);
    let mut out = Vec::new();
    r.write_text(&mut out, &TextStyle::default()).unwrap();
    let t = String::from_utf8(out).unwrap();
    // Default holds 16 assemblies: 3 shown, 13 said.
    assert!(
        t.contains("  … 13 more (--top N, or --json for all)"),
        "{t}"
    );
    assert_eq!(t.matches(" more (--top N").count(), 1, "{t}");
}
