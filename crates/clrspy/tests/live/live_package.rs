//! `clrspy bundle`'s packaging on a real process: the zip is owner-only, every checksum in its
//! manifest is the one `sha256sum` computes over the unpacked files, `bundle verify` passes and
//! then fails on one flipped byte naming the file, and the unpacked `index.html` opens in
//! headless Chromium with no console message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{clrspy_command, live, start};

/// The offset of an entry's data, through its local header.
fn data_offset(zip: &Path, name: &str) -> (usize, u64) {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    let entry = archive.by_name(name).unwrap();
    let (header, len) = (entry.header_start() as usize, entry.compressed_size());
    drop(entry);
    let raw = std::fs::read(zip).unwrap();
    assert_eq!(&raw[header..header + 4], b"PK\x03\x04");
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([raw[o], raw[o + 1]]));
    (header + 30 + u16_at(header + 26) + u16_at(header + 28), len)
}

fn verify(zip: &Path) -> (i32, String) {
    let out = clrspy_command()
        .args(["bundle", "verify"])
        .arg(zip)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_bundle_is_private_verifiable_and_opens_offline() {
    if !live() {
        return;
    }
    let app = start("cpu", &["--threads", "1", "--seconds", "60"]);
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("out/b.zip");
    let out = clrspy_command()
        .args(["bundle", "-p", &app.1.to_string(), "--duration", "4s", "-o"])
        .arg(&zip)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    drop(app);
    assert_eq!(
        std::fs::metadata(&zip).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let left: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("b.zip")],
        "only the zip is left"
    );

    let (code, text) = verify(&zip);
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("files checked, all match\n"), "{text}");

    // The manifest's sums are the ones another implementation computes over the unpacked files.
    let unpacked = dir.path().join("unpacked");
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap()).unwrap();
    archive.extract(&unpacked).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(unpacked.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    for needed in [
        "trace.nettrace",
        "report.html",
        "index.html",
        "metrics/metrics.csv",
    ] {
        assert!(paths.contains(&needed), "{needed} not in {paths:?}");
    }
    let sums = Command::new("sha256sum")
        .args(&paths)
        .current_dir(&unpacked)
        .output()
        .unwrap();
    let sums = String::from_utf8(sums.stdout).unwrap();
    for (f, line) in files.iter().zip(sums.lines()) {
        let (sum, path) = line.split_once("  ").unwrap();
        assert_eq!(path, f["path"].as_str().unwrap());
        assert_eq!(sum, f["sha256"].as_str().unwrap(), "{path}");
        let len = std::fs::metadata(unpacked.join(path)).unwrap().len();
        assert_eq!(serde_json::Value::from(len), f["bytes"], "{path}");
    }

    // One byte flipped inside the trace's compressed data: verify names it and exits 1.
    let damaged = dir.path().join("damaged.zip");
    let mut raw = std::fs::read(&zip).unwrap();
    let (at, len) = data_offset(&zip, "trace.nettrace");
    raw[at + len as usize / 2] ^= 0x01;
    std::fs::write(&damaged, raw).unwrap();
    let (code, text) = verify(&damaged);
    assert_eq!(code, 1, "{text}");
    let problems: Vec<&str> = text.lines().filter(|l| !l.contains("checked")).collect();
    assert_eq!(problems.len(), 1, "{text}");
    assert!(problems[0].starts_with("trace.nettrace: "), "{text}");

    common::chromium_screenshot(
        &unpacked.join("index.html"),
        &dir.path().join("index.png"),
        "1100,2400",
    );
}
