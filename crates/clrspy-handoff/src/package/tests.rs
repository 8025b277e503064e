//! `finish` on a small staging folder: modes, checksums, the manifest's keys, the zip's layout,
//! and failures that leave nothing behind.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::*;
use crate::facts::{SystemFacts, TargetFacts};
use crate::manifest::Redaction;
use diagnostics_client::container::Container;

/// Bytes that do not compress (a small xorshift stream), like a real `.gz` body.
pub(crate) fn noise(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

/// A manifest as `gather` fills it, with every fact known.
pub(crate) fn sample_manifest() -> Manifest {
    Manifest {
        format: 1,
        target: TargetFacts {
            pid: 4242,
            name: "Shop.Api".into(),
            runtime_version: Some("9.0.4".into()),
            command_line: "dotnet Shop.Api.dll --urls http://*:5000".into(),
            entry_assembly: Some("/app/Shop.Api.dll".into()),
            assembly_version: Some("1.2.0.0".into()),
            informational_version: Some("1.2.0+8f3c2a1".into()),
            started_utc: Some("2026-11-27T09:59:00Z".into()),
        },
        system: SystemFacts {
            os: "Linux".into(),
            kernel: "6.8.0-45-generic".into(),
            distro: Some("Ubuntu 24.04.1 LTS".into()),
            hostname: "web-7".into(),
            arch: "x86_64".into(),
            cpus: 2,
            memory_bytes: Some(8 << 30),
            container: Some(Container {
                runtime: "docker".into(),
                id: Some("3f2a9c".into()),
                image: Some("shop/api:1.2".into()),
            }),
        },
        started_utc: "2026-11-27T10:00:00Z".into(),
        ended_utc: "2026-11-27T10:01:00Z".into(),
        command: "clrspy bundle -p 4242 --duration 60s".into(),
        clrspy_version: "0.9.0".into(),
        symptom: Some("high-cpu".into()),
        profile: "cpu".into(),
        files: vec![
            FileEntry {
                path: "trace.nettrace.gz".into(),
                what: "the trace (compressed)".into(),
                ..FileEntry::default()
            },
            FileEntry {
                path: "reports/cpu.txt".into(),
                what: "CPU report (text)".into(),
                ..FileEntry::default()
            },
            FileEntry {
                path: "logs/app.log".into(),
                what: "the app's logs".into(),
                ..FileEntry::default()
            },
        ],
        redacted: vec![Redaction {
            where_: "environment: API_KEY".into(),
            what: "secret name".into(),
        }],
        notes: vec!["no heap snapshot: not asked for".into()],
        findings: vec![crate::manifest::FindingBrief {
            id: "sync-over-async".into(),
            severity: "critical".into(),
            title: "Thread-pool threads block on tasks (sync over async)".into(),
            said: "pool threads blocked on tasks for 57.9 s <in Orders.Get>".into(),
        }],
    }
}

/// A staging folder with the sample's files plus one the manifest does not name.
pub(crate) fn sample_staging(dir: &Path) -> PathBuf {
    let staging = dir.join("staging");
    create_private_dir(&staging.join("reports")).unwrap();
    create_private_dir(&staging.join("logs")).unwrap();
    fs::write(staging.join("trace.nettrace.gz"), noise(40_000, 7)).unwrap();
    let report: String = (0..400)
        .map(|i| format!("{i:>5}  12.5%  Shop.Api.Cart.Total(Item[])\n"))
        .collect();
    fs::write(staging.join("reports/cpu.txt"), report).unwrap();
    fs::write(
        staging.join("logs/app.log"),
        "info: Microsoft.Hosting.Lifetime[0] Now listening on: http://[::]:5000\n".repeat(50),
    )
    .unwrap();
    fs::write(staging.join("stacks.txt"), "Thread 1\n  Main()\n").unwrap();
    staging
}

/// A finished sample bundle: the zip and its manifest.
pub(crate) fn sample_bundle(dir: &Path) -> (PathBuf, Manifest) {
    let staging = sample_staging(dir);
    let mut m = sample_manifest();
    let zip = dir.join("out/bundle.zip");
    finish(&staging, &mut m, &zip).unwrap();
    (zip, m)
}

fn sha_hex(bytes: &[u8]) -> String {
    hash_reader(&mut &bytes[..]).unwrap().1
}

#[test]
fn the_zip_is_private_and_every_checksum_matches() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, m) = sample_bundle(dir.path());
    let mode = fs::metadata(&zip).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let folder = fs::metadata(dir.path().join("out"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(folder, 0o700);

    let paths: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "index.html",
            "logs/app.log",
            "reports/cpu.txt",
            "stacks.txt",
            "trace.nettrace.gz"
        ]
    );
    let stacks = m.files.iter().find(|f| f.path == "stacks.txt").unwrap();
    assert_eq!(stacks.what, "the threads' stacks (text)");

    let mut archive = zip::ZipArchive::new(fs::File::open(&zip).unwrap()).unwrap();
    // The files, the two manifests, and one owner-only entry per folder.
    assert_eq!(archive.len(), m.files.len() + 2 + 2);
    for folder in ["logs/", "reports/"] {
        let e = archive.by_name(folder).unwrap();
        assert!(e.is_dir());
        assert_eq!(e.unix_mode().map(|m| m & 0o777), Some(0o700), "{folder}");
    }
    for f in &m.files {
        let mut e = archive.by_name(&f.path).unwrap();
        assert_eq!(e.unix_mode().map(|m| m & 0o777), Some(0o600), "{}", f.path);
        let expected = if f.path.ends_with(".gz") {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        };
        assert_eq!(e.compression(), expected, "{}", f.path);
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, f.bytes, "{}", f.path);
        assert_eq!(sha_hex(&bytes), f.sha256, "{}", f.path);
        assert_eq!(f.sha256.len(), 64);
        if f.path != "index.html" {
            let on_disk = fs::read(dir.path().join("staging").join(&f.path)).unwrap();
            assert_eq!(bytes, on_disk, "{}", f.path);
        }
    }
    // The well-known digest of "abc", so the hex is the standard one, not just self-consistent.
    assert_eq!(
        sha_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    // Nothing but the zip in the output folder: the temporary file was renamed.
    let left: Vec<_> = fs::read_dir(dir.path().join("out")).unwrap().collect();
    assert_eq!(left.len(), 1);
}

#[test]
fn manifest_json_has_the_issue_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (zip, m) = sample_bundle(dir.path());
    let mut archive = zip::ZipArchive::new(fs::File::open(&zip).unwrap()).unwrap();
    let mut text = String::new();
    archive
        .by_name("manifest.json")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["target"]["pid"], 4242);
    assert_eq!(v["target"]["name"], "Shop.Api");
    assert_eq!(v["target"]["runtime_version"], "9.0.4");
    assert_eq!(
        v["target"]["command_line"],
        "dotnet Shop.Api.dll --urls http://*:5000"
    );
    assert_eq!(v["started_utc"], "2026-11-27T10:00:00Z");
    assert_eq!(v["ended_utc"], "2026-11-27T10:01:00Z");
    assert_eq!(v["command"], "clrspy bundle -p 4242 --duration 60s");
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), m.files.len());
    for (f, e) in files.iter().zip(&m.files) {
        assert_eq!(f["path"], e.path.as_str());
        assert_eq!(f["bytes"], e.bytes);
        assert_eq!(f["sha256"], e.sha256.as_str());
    }
    assert_eq!(v["redacted"][0]["where"], "environment: API_KEY");
    assert_eq!(v["redacted"][0]["what"], "secret name");
    // The staging copy is the zip's copy.
    let staged = fs::read_to_string(dir.path().join("staging/manifest.json")).unwrap();
    assert_eq!(staged, text);
}

#[test]
fn manifest_md_has_the_checklist_files_and_privacy_notice() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m) = sample_bundle(dir.path());
    let md = fs::read_to_string(dir.path().join("staging/MANIFEST.md")).unwrap();
    for needle in [
        "# clrspy support bundle: Shop.Api (pid 4242)",
        "- **Runtime version:** 9.0.4",
        "- **OS / kernel:** Linux 6.8.0-45-generic (x86_64)",
        "- **Distribution:** Ubuntu 24.04.1 LTS",
        "- **Container:** docker, id 3f2a9c, image shop/api:1.2",
        "- **Host name:** web-7",
        "- **Assembly version:** 1.2.0.0",
        "- **Informational version:** 1.2.0+8f3c2a1",
        "- **Window start (UTC):** 2026-11-27T10:00:00Z",
        "- **Window end (UTC):** 2026-11-27T10:01:00Z",
        "- **Target command line:** dotnet Shop.Api.dll --urls http://*:5000",
        "- **clrspy command:** clrspy bundle -p 4242 --duration 60s",
        "- **Symptom:** high-cpu",
        "- environment: API_KEY: secret name",
        "- no heap snapshot: not asked for",
        "## Privacy notice",
        "exception messages",
        "host names",
        "all of the process's memory, unredacted",
        "Share it privately",
    ] {
        assert!(md.contains(needle), "no {needle:?} in\n{md}");
    }
    for f in &m.files {
        let row = format!("| `{}` | ", f.path);
        let line = md.lines().find(|l| l.starts_with(&row)).unwrap();
        assert!(line.contains(&f.sha256) && line.contains(&format!(" {} ", f.bytes)));
    }
}

#[test]
fn missing_facts_read_unknown_and_no_redact_is_said() {
    let mut m = Manifest {
        notes: vec!["redaction was turned off (--no-redact)".into()],
        ..Manifest::default()
    };
    m.files.push(FileEntry {
        path: "dump/core.1.gz".into(),
        ..FileEntry::default()
    });
    let mut out = Vec::new();
    crate::manifest::write_markdown(&m, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(md.contains("- **Runtime version:** unknown"));
    assert!(md.contains("- **OS / kernel:** unknown"));
    assert!(md.contains("- **Container:** not in a container"));
    assert!(md.contains("- **CPUs / memory:** unknown / unknown"));
    assert!(md.contains("- redaction was turned off with --no-redact"));
    assert!(md.contains("This bundle includes a dump"));
    let plain = Manifest::default();
    let mut out = Vec::new();
    crate::manifest::write_markdown(&plain, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(md.contains("## Redacted\n\n- none\n"), "{md}");
}

#[test]
fn target_text_cannot_break_the_markdown() {
    let m = Manifest {
        target: TargetFacts {
            name: "evil|name\n# heading<script>".into(),
            ..TargetFacts::default()
        },
        ..Manifest::default()
    };
    let mut out = Vec::new();
    crate::manifest::write_markdown(&m, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(
        md.starts_with("# clrspy support bundle: evil\\|name # heading&lt;script&gt; (pid 0)\n")
    );
}

#[test]
fn a_listed_file_that_is_missing_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let staging = sample_staging(dir.path());
    fs::remove_file(staging.join("reports/cpu.txt")).unwrap();
    let mut m = sample_manifest();
    let zip = dir.path().join("b.zip");
    let err = finish(&staging, &mut m, &zip).unwrap_err().to_string();
    assert!(err.contains("reports/cpu.txt"), "{err}");
    assert!(!zip.exists());
}

#[test]
fn a_full_disk_names_the_zip_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let staging = sample_staging(dir.path());
    let tmp = dir.path().join(".b.zip.partial");
    fs::write(&tmp, b"").unwrap();
    let out = dir.path().join("b.zip");
    // /dev/full accepts the open and fails every write with ENOSPC, as a full disk does.
    let sink = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    // Larger than the write buffer, so the failure comes while adding files, not at the end.
    fs::write(staging.join("big.bin"), noise(3 << 20, 3)).unwrap();
    let mut m = sample_manifest();
    m.files = ["big.bin", "reports/cpu.txt"]
        .map(|p| FileEntry {
            path: p.into(),
            ..FileEntry::default()
        })
        .into();
    let err = pack(&staging, &mut m, sink, &tmp, &out).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}: ", out.display())), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(!tmp.exists() && !out.exists());
}

#[test]
fn an_unwritable_destination_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let staging = sample_staging(dir.path());
    // A regular file where the folder should be: creating anything under it fails, even as root.
    let blocker = dir.path().join("not-a-folder");
    fs::write(&blocker, b"x").unwrap();
    let out = blocker.join("b.zip");
    let mut m = sample_manifest();
    let err = finish(&staging, &mut m, &out).unwrap_err().to_string();
    assert!(err.contains("not-a-folder"), "{err}");
    assert_eq!(fs::read(&blocker).unwrap(), b"x");
}

#[test]
fn private_helpers_set_owner_only_modes() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b");
    create_private_dir(&nested).unwrap();
    for d in [dir.path().join("a"), nested.clone()] {
        assert_eq!(
            fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
    let f = nested.join("x");
    fs::write(&f, b"old").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    create_private(&f).unwrap();
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(fs::read(&f).unwrap(), b"");
}

#[test]
fn a_zip_time_is_the_files_modification_time_in_utc() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    fs::write(&f, b"x").unwrap();
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_000_000);
    fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_modified(t)
        .unwrap();
    let z = zip_time(&fs::metadata(&f).unwrap());
    // 1 795 000 000 s after the epoch is 2026-11-18 11:06:40 UTC.
    assert_eq!(
        (
            z.year(),
            z.month(),
            z.day(),
            z.hour(),
            z.minute(),
            z.second()
        ),
        (2026, 11, 18, 11, 6, 40)
    );
}

#[test]
fn a_file_listed_twice_is_packed_once() {
    let dir = tempfile::tempdir().unwrap();
    let staging = sample_staging(dir.path());
    let mut m = sample_manifest();
    m.files.push(FileEntry {
        path: "logs/app.log".into(),
        what: "again".into(),
        ..FileEntry::default()
    });
    let zip = dir.path().join("b.zip");
    finish(&staging, &mut m, &zip).unwrap();
    let logs: Vec<_> = m
        .files
        .iter()
        .filter(|f| f.path == "logs/app.log")
        .collect();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].what, "the app's logs");
    assert!(crate::verify::verify(&zip).unwrap().ok());
}
