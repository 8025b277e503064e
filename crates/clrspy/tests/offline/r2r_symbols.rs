//! `--symbols DIR` and `--no-local-images` on a trace `clrspy record` made before it stored
//! ReadyToRun names (tests/data/contention-thread-cpu.nettrace.zip, .NET 10.0.12 on Linux): one
//! CPU sample lies in System.Private.CoreLib's precompiled code at file offset 0x138f5b.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{json, repo};

const CORELIB: &str =
    "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/System.Private.CoreLib.dll";

fn frames(extra: &[&str]) -> Vec<String> {
    let trace = repo().join("crates/clrspy/tests/data/contention-thread-cpu.nettrace.zip");
    let trace = trace.to_str().unwrap();
    let mut args = vec!["report", trace, "cpu", "--json", "--top", "1000"];
    args.extend_from_slice(extra);
    json(&args)["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn symbols_dir_names_precompiled_code_from_copies() {
    // From the trace alone: only an offset in the image.
    let alone = frames(&["--no-local-images"]);
    assert!(
        alone
            .iter()
            .any(|f| f == "System.Private.CoreLib.dll!+0x138f5b"),
        "{alone:?}"
    );
    assert!(!alone.iter().any(|f| f == "System.ModuleHandle.ResolveType"));
    // An empty symbols directory changes nothing.
    let empty = tempfile::tempdir().unwrap();
    let e = empty.path().to_str().unwrap();
    assert_eq!(frames(&["--no-local-images", "--symbols", e]), alone);
    if !std::path::Path::new(CORELIB).exists() {
        common::machine_skip(
            "symbols_dir_names_precompiled_code_from_copies (its copy part)",
            &format!("{CORELIB} (the trace's build) is not installed here"),
        );
        return;
    }
    // A copy of the image, elsewhere, matched by file name.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(CORELIB, dir.path().join("System.Private.CoreLib.dll")).unwrap();
    let d = dir.path().to_str().unwrap();
    let named = frames(&["--no-local-images", "--symbols", d]);
    assert!(
        named.iter().any(|f| f == "System.ModuleHandle.ResolveType"),
        "{named:?}"
    );
    assert!(!named.iter().any(|f| f.contains("!+0x")), "{named:?}");
    // The image at the recorded path does the same without any flag.
    assert!(frames(&[])
        .iter()
        .any(|f| f == "System.ModuleHandle.ResolveType"));
}
