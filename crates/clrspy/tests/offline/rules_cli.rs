//! `clrspy rules check|schema|example`, and `clrspy watch` refusing a bad rules file before it
//! starts (no .NET needed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::clrspy;

#[test]
fn the_examples_check_clean_and_the_schema_is_json() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, name) in [(None, "r.toml"), (Some("--json"), "r.json")] {
        let mut cmd = clrspy();
        cmd.args(["rules", "example"]);
        if let Some(f) = flag {
            cmd.arg(f);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        let path = dir.path().join(name);
        std::fs::write(&path, &out.stdout).unwrap();
        let check = clrspy()
            .args(["rules", "check", "--json"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
        assert_eq!(v["valid"], true, "{v}");
        // The example's rules: compiler dumps, crash dumps, a process tree, a web app's ring,
        // an API's support bundle.
        assert_eq!(v["rules"].as_array().unwrap().len(), 5, "{v}");
        assert!(
            v["rules"][4]["actions"][0]
                .as_str()
                .unwrap()
                .starts_with("bundle ("),
            "{v}"
        );
    }
    let schema = clrspy().args(["rules", "schema"]).output().unwrap();
    assert!(schema.status.success());
    let s: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert_eq!(s["type"], "object");
    assert!(s["$defs"]["Rule"]["properties"]["match"].is_object(), "{s}");
    assert_eq!(
        s["$defs"]["Rule"]["properties"]["children"]["type"], "boolean",
        "{s}"
    );
    assert!(
        s["$defs"]["Rule"]["properties"]["bundle"].is_object(),
        "{s}"
    );
    assert_eq!(
        s["$defs"]["BundleAction"]["properties"]["redact"]["default"], true,
        "{s}"
    );
}

#[test]
fn mistakes_are_reported_with_line_and_column_and_watch_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{ \"rules\": [\n  { \"name\": \"x\",\n    \"match\": { \"name\": \"web*\" },\n    \"trace\": { \"profile\": \"cpux\" } } ] }",
    )
    .unwrap();
    let out = clrspy()
        .args(["rules", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:4:27: unknown profile \"cpux\"", bad.display())),
        "{err}"
    );
    let json = clrspy()
        .args(["rules", "check", "--json"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"][0]["line"], 4, "{v}");
    assert_eq!(v["errors"][0]["column"], 27, "{v}");

    // watch checks first: nothing is created, exit 2.
    let out_dir = dir.path().join("out");
    let w = clrspy()
        .args(["watch", "--rules"])
        .arg(&bad)
        .arg("--out")
        .arg(&out_dir)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(w.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&w.stderr).contains("nothing was started"));
    assert!(!out_dir.exists());

    let missing = clrspy()
        .args(["rules", "check"])
        .arg(dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the rules file"));
}

#[test]
fn check_reports_every_rules_mistake_in_one_run() {
    // Issue 33, item 17: one mistake per run made a user run `rules check` once per mistake.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{ "rules": [
  { "name": "a", "match": { "name": "web*" }, "trace": { "profile": "nope" } },
  { "name": "b", "match": { "name": "x" }, "dump": { "type": "mini" } },
  { "name": "c", "match": {}, "dump": { "type": "mini" } },
  { "name": "d", "match": { "name": "y" }, "dump": { "typo": 1 } }
] }"#,
    )
    .unwrap();
    let out = clrspy()
        .args(["rules", "check"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let places: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix(path.to_str().unwrap()))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(places, [":2:69:", ":4:3:", ":5:54:"], "{err}");
}
