//! The redactor's tests: environment, command lines, text, log files, and traces (made here
//! and recorded from the WebApp).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::trace;
use super::*;
use crate::manifest::Redaction;

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn red(where_: &str, what: &str) -> Redaction {
    Redaction {
        where_: where_.into(),
        what: what.into(),
    }
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn environment_masks_secret_names_and_learns_their_values() {
    let mut r = Redactor::new(true);
    let shown = r.env(
        &pairs(&[
            ("PATH", "/usr/bin:/bin"),
            ("MYAPP_API_KEY", "k-93fa77c1d2"),
            (
                "ConnectionStrings__Db",
                "Server=db;User Id=app;Password=Tr0ub4dor&3x;",
            ),
            ("ECHO", "the key is k-93fa77c1d2 and Tr0ub4dor"),
            ("SHORT_TOKEN", "abc"),
        ]),
        "environment",
    );
    assert_eq!(
        shown,
        pairs(&[
            ("PATH", "/usr/bin:/bin"),
            ("MYAPP_API_KEY", MASK),
            ("ConnectionStrings__Db", MASK),
            ("ECHO", "the key is [redacted] and [redacted]"),
            ("SHORT_TOKEN", MASK),
        ])
    );
    // The connection string's password was learned on its own (up to its `&`, as the pattern
    // reads it), and masks it where no pattern would.
    assert_eq!(
        r.text("logged Tr0ub4dor here", "log"),
        "logged [redacted] here"
    );
    // A value shorter than a literal is masked by name but not learned.
    assert_eq!(r.text("abc abc", "log"), "abc abc");
    assert_eq!(
        r.redactions(),
        [
            red("environment: MYAPP_API_KEY", "secret name"),
            red("environment: ConnectionStrings__Db", "secret name"),
            red("environment: ECHO", "known secret value (2×)"),
            red("environment: SHORT_TOKEN", "secret name"),
            red("log", "known secret value"),
        ]
    );
}

#[test]
fn arguments_mask_options_pairs_and_credentials() {
    let mut r = Redactor::new(true);
    let shown = r.args(
        &strings(&[
            "dotnet",
            "app.dll",
            "--password",
            "hunter2-long",
            "--token=t0k3n-value",
            "--Db:Password=p4ss-w0rd!",
            "Server=x;Password=conn-secret;Encrypt=true",
            "https://bob:bobs-secret@api.example.com/x",
            "--port",
            "8080",
            "/p:ApiKey=a&b+c;d e",
        ]),
        "command line",
    );
    assert_eq!(
        shown,
        strings(&[
            "dotnet",
            "app.dll",
            "--password",
            MASK,
            "--token=[redacted]",
            "--Db:Password=[redacted]",
            "Server=x;Password=[redacted];Encrypt=true",
            "https://bob:[redacted]@api.example.com/x",
            "--port",
            "8080",
            "/p:ApiKey=[redacted]",
        ])
    );
    assert_eq!(
        r.redactions(),
        [
            red("command line (argument 3)", "secret option"),
            red("command line (argument 4)", "secret value"),
            red("command line (argument 5)", "secret value"),
            red("command line (argument 6)", "secret value"),
            red("command line (argument 7)", "url credentials"),
            red("command line (argument 10)", "secret value"),
        ]
    );
    // Every value was learned.
    let logged = "hunter2-long t0k3n-value p4ss-w0rd! conn-secret bobs-secret";
    let masked = r.text(logged, "log");
    assert_eq!(masked, ["[redacted]"; 5].join(" "));
    assert_eq!(r.redactions()[6], red("log", "known secret value (5×)"));
    assert_eq!(r.text("got a&b+c;d e!", "log"), "got [redacted]!");
}

#[test]
fn learned_values_are_found_escaped_as_json_and_urls_write_them() {
    let mut r = Redactor::new(true);
    r.env(
        &pairs(&[("DB_PASSWORD", "pa&ss+w\u{f6}rd\"1\\")]),
        "environment",
    );
    for (written, want) in [
        // System.Text.Json's default encoder (the logging provider's MessageJson).
        (
            r#"{"Value":"pa\u0026ss\u002Bw\u00F6rd\u00221\\"}"#,
            r#"{"Value":"[redacted]"}"#,
        ),
        // Standard JSON escapes.
        (
            "{\"v\":\"pa&ss+w\u{f6}rd\\\"1\\\\\"}",
            r#"{"v":"[redacted]"}"#,
        ),
        // Percent-encoded in a query string.
        (
            "GET /x?p=pa%26ss%2Bw%C3%B6rd%221%5C HTTP/1.1",
            "GET /x?p=[redacted] HTTP/1.1",
        ),
    ] {
        assert_eq!(r.text(written, "log"), want, "{written}");
    }
}

#[test]
fn disabled_keeps_everything_and_records_nothing() {
    let mut r = Redactor::new(false);
    let env = pairs(&[("API_KEY", "k-93fa77c1d2")]);
    assert_eq!(r.env(&env, "environment"), env);
    let args = strings(&["--password", "hunter2-long"]);
    assert_eq!(r.args(&args, "command line"), args);
    assert_eq!(
        r.text("Bearer abc hunter2-long", "log"),
        "Bearer abc hunter2-long"
    );
    assert!(r.redactions().is_empty());
}

#[test]
fn log_files_are_copied_line_by_line_keeping_other_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("app.log");
    let dst = dir.path().join("out.log");
    let mut input = Vec::new();
    input.extend_from_slice(b"start Password=s3cr3t-pw; ok\n");
    input.extend_from_slice(b"bad \xff\xfe bytes then the-literal-1 end\n");
    input.extend_from_slice(b"plain line\n");
    input.extend_from_slice(b"no newline at the end Bearer xyz");
    std::fs::write(&src, &input).unwrap();
    let mut r = Redactor::new(true);
    r.env(&pairs(&[("SOME_SECRET", "the-literal-1")]), "environment");
    let n = r.copy_file(&src, &dst, "logs/app.log").unwrap();
    let out = std::fs::read(&dst).unwrap();
    assert_eq!(n, out.len() as u64);
    let mut want = Vec::new();
    want.extend_from_slice(b"start Password=[redacted]; ok\n");
    want.extend_from_slice(b"bad \xff\xfe bytes then [redacted] end\n");
    want.extend_from_slice(b"plain line\n");
    want.extend_from_slice(b"no newline at the end Bearer [redacted]");
    assert_eq!(out, want);
    assert_eq!(
        &r.redactions()[1..],
        [
            red("logs/app.log", "secret value"),
            red("logs/app.log", "known secret value"),
            red("logs/app.log", "authorization"),
        ]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dst).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(r.copy_file(&dir.path().join("missing"), &dst, "x").is_err());
}

#[test]
fn a_line_longer_than_the_buffer_is_copied_whole() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.log");
    let dst = dir.path().join("big.out");
    let line = "x".repeat(3 << 20) + " Password=abcdefg\n";
    std::fs::write(&src, &line).unwrap();
    let mut r = Redactor::new(true);
    r.copy_file(&src, &dst, "big").unwrap();
    let out = std::fs::read_to_string(&dst).unwrap();
    assert_eq!(out.len(), line.len() - "abcdefg".len() + MASK.len());
    assert!(!out.contains("abcdefg"));
}

#[test]
fn trace_bytes_are_masked_in_both_encodings_at_any_offset() {
    let spans = |t: &str| {
        let mut r = Redactor::new(true);
        r.learn("lit3ral-v4lue");
        r.spans(t)
    };
    for pad in 0..3 {
        let mut data = vec![0u8; pad];
        data.extend_from_slice(&[1, 2, 0, 0]);
        data.extend(utf16("GET https://bob:pa55word@h/x and lit3ral-v4lue"));
        data.extend_from_slice(&[0, 0, 7, 0xff, 0]);
        data.extend_from_slice(b"utf8 Password=zzz9 lit3ral-v4lue");
        data.extend_from_slice(&[0, 0x80, 0x81]);
        let before = data.clone();
        let edits = trace::find(&data, &spans);
        assert_eq!(edits.len(), 4, "{pad}: {edits:?}");
        trace::apply(&mut data, &edits);
        assert_eq!(data.len(), before.len());
        for secret in ["pa55word", "lit3ral-v4lue", "zzz9"] {
            assert!(!contains(&data, secret.as_bytes()), "{pad} {secret}");
            assert!(!contains(&data, &utf16(secret)), "{pad} {secret}");
        }
        assert!(contains(
            &data,
            &utf16("GET https://bob:********@h/x and *************")
        ));
        assert!(contains(&data, b"utf8 Password=**** *************"));
        // Only the secrets' bytes changed.
        let changed = data.iter().zip(&before).filter(|(a, b)| a != b).count();
        assert_eq!(changed, 8 + 13 + 4 + 13, "{pad}");
        // Masked twice: nothing more.
        assert!(trace::find(&data, &spans).is_empty());
    }
}

#[test]
fn characters_beyond_the_basic_plane_stay_in_the_run() {
    let spans = |t: &str| redact::secret_spans(t);
    let mut data = vec![0u8, 0];
    data.extend(utf16("\u{1F980} deploy token=\u{1F980}v4lue\u{1F980} done"));
    data.extend_from_slice(&[0, 0]);
    let edits = trace::find(&data, &spans);
    trace::apply(&mut data, &edits);
    let mut want = vec![0u8, 0];
    want.extend(utf16("\u{1F980} deploy token=********* done"));
    want.extend_from_slice(&[0, 0]);
    assert_eq!(data, want);
}

/// A V6 trace with two events whose payloads carry UTF-16 strings.
fn written_trace() -> Vec<u8> {
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};
    let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
    let id = w
        .define(&EventMetadata {
            provider: "My-Source".into(),
            event_id: 3,
            event_name: "Message".into(),
            ..Default::default()
        })
        .unwrap();
    for (t, text) in [
        (1_000, "calling https://svc:sv-pa55w0rd@api/x"),
        (2_000, "nothing to see in this one"),
    ] {
        let mut payload = vec![5, 0, 0, 0];
        payload.extend(utf16(text));
        payload.extend_from_slice(&[0, 0]);
        w.write(&EventRecord {
            metadata_id: id,
            thread_id: 7,
            capture_thread_id: 7,
            timestamp: t,
            payload: &payload,
            ..Default::default()
        })
        .unwrap();
    }
    w.finish().unwrap()
}

fn event_count(path: &Path) -> (u64, Vec<Vec<u8>>) {
    let file = nettrace::TraceFile::open(path).unwrap();
    let mut reader = file.reader().unwrap();
    let mut n = 0;
    let mut payloads = Vec::new();
    while let Some(ev) = reader.next_event().unwrap() {
        n += 1;
        payloads.push(ev.payload.to_vec());
    }
    assert!(reader.stats().ended_cleanly);
    (n, payloads)
}

#[test]
fn a_written_trace_stays_readable_and_names_the_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.nettrace");
    std::fs::write(&path, written_trace()).unwrap();
    let (n, before) = event_count(&path);
    let mut r = Redactor::new(true);
    let done = r.trace_in_place(&path).unwrap();
    assert_eq!(
        done,
        TraceScrub {
            secrets: 1,
            bytes: 2 * "sv-pa55w0rd".len() as u64,
            events: 2,
        }
    );
    let (m, after) = event_count(&path);
    assert_eq!(n, m);
    assert_eq!(before[1], after[1]);
    assert!(contains(&after[0], &utf16("https://svc:***********@api/x")));
    assert_eq!(
        r.redactions(),
        [red("trace (My-Source/Message)", "url credentials")]
    );
    // Again: nothing left to do.
    assert_eq!(r.trace_in_place(&path).unwrap(), TraceScrub::default());
}

/// The repository's test traces.
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data")
        .join(name)
}

fn unzip_trace(zip: &Path, dir: &Path) -> PathBuf {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    let mut entry = archive.by_index(0).unwrap();
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).unwrap();
    let path = dir.join("trace.nettrace");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_recorded_trace_loses_a_learned_literal_and_keeps_every_event() {
    // The WebApp's request log lines hold its address; say it was a secret's value.
    let dir = tempfile::tempdir().unwrap();
    let path = unzip_trace(&data("webapp-logs-both.nettrace.zip"), dir.path());
    let secret = "127.0.0.1:39575";
    let original = std::fs::read(&path).unwrap();
    assert!(contains(&original, &utf16(secret)), "the test's premise");
    let (n, _) = event_count(&path);
    let mut r = Redactor::new(true);
    r.env(&pairs(&[("UPSTREAM_TOKEN", secret)]), "environment");
    let done = r.trace_in_place(&path).unwrap();
    let scrubbed = std::fs::read(&path).unwrap();
    assert_eq!(scrubbed.len(), original.len());
    assert!(!contains(&scrubbed, &utf16(secret)));
    assert!(!contains(&scrubbed, secret.as_bytes()));
    assert!(done.secrets >= 2, "{done:?}");
    assert_eq!(done.bytes, done.secrets * 2 * secret.len() as u64);
    let (m, _) = event_count(&path);
    assert_eq!(n, m);
    assert_eq!(done.events, n);
    // Every secret was in a logging event's payload.
    let places: Vec<&Redaction> = r.redactions()[1..].iter().collect();
    assert!(!places.is_empty());
    for p in places {
        assert!(
            p.where_.starts_with("trace (Microsoft-Extensions-Logging/"),
            "{p:?}"
        );
    }
    // Nothing but the secret's bytes changed.
    let changed = original
        .iter()
        .zip(&scrubbed)
        .filter(|(a, b)| a != b)
        .count() as u64;
    assert!(changed <= done.bytes);
}

#[test]
fn traces_without_secrets_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = unzip_trace(&data("httpclient-net.nettrace.zip"), dir.path());
    let original = std::fs::read(&path).unwrap();
    let mut r = Redactor::new(true);
    assert_eq!(r.trace_in_place(&path).unwrap(), TraceScrub::default());
    assert_eq!(std::fs::read(&path).unwrap(), original);
    assert!(r.redactions().is_empty());
    assert!(r.trace_in_place(&dir.path().join("missing")).is_err());
}
