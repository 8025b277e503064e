//! Live: testapps/Workloads `heap` holds exactly 12,345 `Workloads.HeapOrder` in a static
//! list. `clrspy gcdump -p` snapshots it: the `.gcdump` has exactly that many, their shortest
//! path from the roots names the static field `Orders`, and the list retains at least what
//! its orders weigh. After `grow 20000`, a second snapshot and `heap diff` show exactly
//! +20,000 orders as the top growing type.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::heap_workload::Workload;
use common::{clrspy, live};

fn heap_json(args: &[&str]) -> serde_json::Value {
    let out = clrspy().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "clrspy {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const ORDER: &str = "Workloads.HeapOrder";
const LIST: &str = "System.Collections.Generic.List<Workloads.HeapOrder>";

#[test]
fn snapshots_count_exactly_and_diff_shows_the_growth() {
    if !live() {
        return;
    }
    let mut w = Workload::start();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.gcdump");
    let b = dir.path().join("b.gcdump");
    let pid = w.pid.to_string();
    let out = clrspy()
        .args(["gcdump", "-p", &pid, "-o"])
        .arg(&a)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gcdump: {err}");
    assert!(err.contains("full, blocking GC"), "{err}");

    let a_s = a.to_str().unwrap();
    let v = heap_json(&["heap", a_s, "--json", "--top", "100000", "--type", ORDER]);
    let types = v["types"].as_array().unwrap();
    let find = |name: &str| types.iter().find(|t| t["type"] == name).unwrap().clone();
    let order = find(ORDER);
    assert_eq!(order["count"], 12_345);
    let list = find(LIST);
    assert_eq!(list["count"], 1);
    assert!(
        list["retained_bytes"].as_u64().unwrap() >= order["bytes"].as_u64().unwrap(),
        "{list} {order}"
    );
    let paths = v["type"]["paths"].as_array().unwrap();
    let steps: Vec<&str> = paths[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(paths[0]["objects"], 12_345);
    // The static is named after the class that declares it (read from Workloads.dll), not
    // after the list it holds; and the path starts at it (the root credited with the list).
    assert!(
        steps.contains(&"[static var Workloads.HeapHolder.Orders]"),
        "{steps:?}"
    );
    assert_eq!(steps.last(), Some(&ORDER));
    // The static field's root holds the list, its array and every order.
    let roots = v["roots"].as_array().unwrap();
    let holder = roots
        .iter()
        .find(|r| r["kind"] == "static" && r["name"].as_str().unwrap().ends_with(".Orders]"))
        .unwrap_or_else(|| panic!("no static root for Orders: {roots:?}"));
    assert!(
        holder["held_bytes"].as_u64().unwrap()
            >= order["bytes"].as_u64().unwrap() + list["bytes"].as_u64().unwrap(),
        "{holder}"
    );

    assert_eq!(w.grow(20_000), 32_345);
    let out = clrspy()
        .args(["gcdump", "-p", &pid, "-o"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = heap_json(&["heap", "diff", a_s, b.to_str().unwrap(), "--json"]);
    let top = &d["types"][0];
    assert_eq!(top["type"], ORDER, "{d}");
    assert_eq!(top["count_old"], 12_345);
    assert_eq!(top["count_new"], 32_345);
    assert_eq!(top["count_delta"], 20_000);
    let per = order["bytes"].as_i64().unwrap() / 12_345;
    assert_eq!(top["bytes_delta"].as_i64().unwrap(), per * 20_000);

    // A trace recorded with the heap dump keywords is read the same way (`heap TRACE`,
    // `gcdump --from TRACE`).
    let trace = dir.path().join("t.nettrace");
    let out = clrspy()
        .args(["record", "-p", &pid, "--duration", "3s", "--providers"])
        .arg("Microsoft-Windows-DotNETRuntime:0x1980001:5")
        .arg("-o")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = dir.path().join("c.gcdump");
    let out = clrspy()
        .args(["gcdump", "--from"])
        .arg(&trace)
        .arg("-o")
        .arg(&c)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [&trace, &c] {
        let v = heap_json(&["heap", f.to_str().unwrap(), "--json", "--top", "100000"]);
        let t = v["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == ORDER)
            .unwrap()
            .clone();
        assert_eq!(t["count"], 32_345, "{}", f.display());
    }

    let text = clrspy()
        .args(["heap", a_s, "--type", ORDER])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("12,345 objects"), "{text}");
    assert!(text.contains(".Orders]"), "{text}");
}
