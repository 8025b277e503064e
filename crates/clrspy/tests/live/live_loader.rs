//! Live: the Workloads `loadfail` scenario recorded from its start with `clrspy record
//! --profile loader`, then `clrspy report TRACE loader` as a user runs it: the missing
//! assembly and the dependency the LoadFrom handler probed for are named with their stages and
//! probed file, and the assemblies loaded twice (another context, another version) are found.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, json, launch_record, live, workloads};

#[test]
fn report_loader_names_the_failed_loads_and_the_duplicates() {
    if !live() {
        return;
    }
    workloads();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("loadfail.nettrace");
    let out = launch_record(&trace, &["--profile", "loader"], &["loadfail"]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The file the workload says the LoadFrom handler looked for.
    let probed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("dependency=FileNotFoundException probed="))
        .unwrap_or_else(|| panic!("no dependency line in {stdout}"))
        .to_string();
    assert!(stdout.contains("missing=FileNotFoundException"), "{stdout}");

    let t = trace.to_str().unwrap();
    let r = json(&["report", t, "loader", "--json"]);
    let failures = r["failures"].as_array().unwrap();
    let failed: Vec<&str> = failures
        .iter()
        .map(|f| f["assembly"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "Missing.Assembly, Version=1.2.3.4, Culture=neutral, PublicKeyToken=null",
            "Workloads.Plugin.Dependency, Culture=neutral, PublicKeyToken=null"
        ],
        "{r}"
    );
    let stages: Vec<&str> = failures[0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "FindInLoadContext",
            "ApplicationAssemblies",
            "AppDomainAssemblyResolveEvent"
        ]
    );
    assert_eq!(failures[1]["probed"], serde_json::json!([probed]));

    let dup: Vec<(&str, usize, usize)> = r["duplicates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["assembly"].as_str().unwrap(),
                d["contexts"].as_array().unwrap().len(),
                d["versions"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        dup,
        [("Workloads", 2, 1), ("Workloads.Plugin", 3, 2)],
        "{r}"
    );

    // The text a user reads: the missing name, the probed file, and the summary's pointer.
    let text = clrspy().args(["report", t, "loader"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Missing.Assembly, Version=1.2.3.4"), "{text}");
    assert!(text.contains(&format!("probed: {probed}")), "{text}");
    let summary = clrspy().args(["report", t]).output().unwrap();
    let summary = String::from_utf8_lossy(&summary.stdout);
    assert!(
        summary.contains("Assembly loading: 2 failed, 2 loaded twice"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("clrspy report {t} loader")),
        "{summary}"
    );
}
