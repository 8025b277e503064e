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

/// The leak scenario on an ASP.NET Core app (server GC, so one GC thread writes `GC/Start`
/// and another walks the heap): each snapshot ends when the walk does, not at the timeout,
/// and the diff names the type that grew and the static that holds it.
#[test]
fn a_web_apps_leak_is_snapshotted_whole_and_its_holder_named() {
    if !live() {
        return;
    }
    let app = common::scenarios::start_diag();
    let dir = tempfile::tempdir().unwrap();
    let pid = app.pid().to_string();
    let t = std::time::Duration::from_secs(30);
    let snapshot = |name: &str| {
        let path = dir.path().join(name);
        let out = clrspy()
            .args(["gcdump", "-p", &pid, "-o"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "gcdump: {err}");
        // The walk's end was seen as it came (a 30 s wait otherwise, then the file decides).
        assert!(
            !err.contains("did not complete on the live stream"),
            "{err}"
        );
        path
    };
    // A heap of tens of MB: the walk fills the walking thread's buffers before the other
    // GC thread's start is written, which is what put the start last in the file.
    for _ in 0..20 {
        assert_eq!(app.get("/api/diag/leak/100", t).0, 200);
    }
    let before = snapshot("before.gcdump");
    for _ in 0..300 {
        assert_eq!(app.get("/api/diag/leak/100", t).0, 200);
    }
    let after = snapshot("after.gcdump");
    let d = heap_json(&[
        "heap",
        "diff",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
        "--json",
        "--top",
        "1000",
    ]);
    let customer = d["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "DiagScenarios.Customer")
        .unwrap_or_else(|| panic!("{d}"));
    assert_eq!(customer["count_old"], 20, "{customer}");
    assert_eq!(customer["count_new"], 320, "{customer}");
    let v = heap_json(&[
        "heap",
        after.to_str().unwrap(),
        "--json",
        "--type",
        "DiagScenarios.Customer",
    ]);
    let steps = v["type"]["paths"][0]["steps"].to_string();
    assert!(
        steps.contains("[static var DiagScenarios.Processor.Cache]"),
        "{v}"
    );
}
