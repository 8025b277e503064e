//! `verify` on a sample bundle, then on damaged, truncated, foreign and edited zips.

use std::fs;
use std::io::Write;
use std::path::Path;

use super::*;
use crate::package::tests::{noise, sample_bundle};

/// The offset of an entry's data: its local header's offset (from the central directory) plus
/// the header's 30 fixed bytes, its name and its extra field.
fn data_offset(zip: &Path, name: &str) -> (usize, u64, zip::CompressionMethod) {
    let mut archive = zip::ZipArchive::new(fs::File::open(zip).unwrap()).unwrap();
    let entry = archive.by_name(name).unwrap();
    let header = entry.header_start() as usize;
    let (compressed, method) = (entry.compressed_size(), entry.compression());
    drop(entry);
    let raw = fs::read(zip).unwrap();
    assert_eq!(&raw[header..header + 4], b"PK\x03\x04");
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([raw[o], raw[o + 1]]));
    (
        header + 30 + u16_at(header + 26) + u16_at(header + 28),
        compressed,
        method,
    )
}

fn flip(zip: &Path, offset: usize) {
    let mut raw = fs::read(zip).unwrap();
    raw[offset] ^= 0x5a;
    fs::write(zip, raw).unwrap();
}

fn text(r: &VerifyReport) -> String {
    let mut out = Vec::new();
    r.write_text(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_fresh_bundle_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, m) = sample_bundle(dir.path());
    let r = verify(&zip).unwrap();
    assert!(r.ok(), "{:?}", r.problems);
    assert_eq!(r.checked, m.files.len());
    assert_eq!(text(&r), "5 files checked, all match\n");
}

#[test]
fn one_flipped_byte_in_a_stored_entry_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, _) = sample_bundle(dir.path());
    let (at, len, method) = data_offset(&zip, "trace.nettrace.gz");
    assert_eq!(method, zip::CompressionMethod::Stored);
    flip(&zip, at + len as usize / 2);
    let r = verify(&zip).unwrap();
    assert!(!r.ok());
    assert_eq!(
        r.problems,
        ["trace.nettrace.gz: damaged in the zip (Invalid checksum)"]
    );
    let t = text(&r);
    assert!(t.ends_with("5 files checked, 1 problem\n"), "{t}");
}

#[test]
fn one_flipped_byte_in_a_deflated_entry_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, _) = sample_bundle(dir.path());
    let (at, len, method) = data_offset(&zip, "reports/cpu.txt");
    assert_eq!(method, zip::CompressionMethod::Deflated);
    flip(&zip, at + len as usize / 2);
    let r = verify(&zip).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(
        r.problems[0].starts_with("reports/cpu.txt: "),
        "{:?}",
        r.problems
    );
}

#[test]
fn truncated_foreign_and_manifestless_zips_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, _) = sample_bundle(dir.path());
    let raw = fs::read(&zip).unwrap();
    for cut in [raw.len() - 10, raw.len() / 2, 3, 0] {
        let short = dir.path().join(format!("cut{cut}.zip"));
        fs::write(&short, &raw[..cut]).unwrap();
        let err = verify(&short).unwrap_err().to_string();
        assert!(err.contains("not a readable zip file"), "{cut}: {err}");
    }
    let text_file = dir.path().join("notes.zip");
    fs::write(&text_file, noise(5000, 11)).unwrap();
    assert!(verify(&text_file).is_err());
    let missing = verify(&dir.path().join("nowhere.zip"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("nowhere.zip"), "{missing}");

    let plain = dir.path().join("plain.zip");
    let mut w = zip::ZipWriter::new(fs::File::create(&plain).unwrap());
    w.start_file("readme.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    w.write_all(b"hello").unwrap();
    w.finish().unwrap();
    let err = verify(&plain).unwrap_err().to_string();
    assert!(err.contains("no manifest.json"), "{err}");
}

/// Rewrites the sample bundle without `drop` and with `add`, keeping the manifest as it was.
fn rewrite(zip: &Path, out: &Path, drop: &str, add: Option<(&str, &[u8])>) {
    let mut src = zip::ZipArchive::new(fs::File::open(zip).unwrap()).unwrap();
    let mut w = zip::ZipWriter::new(fs::File::create(out).unwrap());
    for i in 0..src.len() {
        let e = src.by_index_raw(i).unwrap();
        if e.name_raw() != drop.as_bytes() {
            w.raw_copy_file(e).unwrap();
        }
    }
    if let Some((name, bytes)) = add {
        w.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn missing_changed_and_unlisted_entries_are_problems() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, _) = sample_bundle(dir.path());
    let edited = dir.path().join("edited.zip");
    rewrite(
        &zip,
        &edited,
        "stacks.txt",
        Some(("extra/secret.txt", b"x")),
    );
    let r = verify(&edited).unwrap();
    assert_eq!(
        r.problems,
        [
            "stacks.txt: missing",
            "extra/secret.txt: in the zip but not in the manifest"
        ]
    );
    // Same name, other content (a sound entry with its own right CRC): the size or SHA differs.
    let longer = dir.path().join("longer.zip");
    let body: &[u8] = b"Thread 1\n  Main()\n\n";
    rewrite(&zip, &longer, "stacks.txt", Some(("stacks.txt", body)));
    let r = verify(&longer).unwrap();
    assert_eq!(r.problems, ["stacks.txt: 19 bytes, the manifest says 18"]);
    let same_size = dir.path().join("same-size.zip");
    let body: &[u8] = b"Thread 2\n  Main()\n";
    rewrite(&zip, &same_size, "stacks.txt", Some(("stacks.txt", body)));
    let r = verify(&same_size).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(
        r.problems[0].starts_with("stacks.txt: SHA-256 "),
        "{:?}",
        r.problems
    );
}
