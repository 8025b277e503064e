//! The CLI on the real traces in crates/nettrace/tests/data, as a user runs it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{clrspy, data, json};
use predicates::prelude::*;

#[test]
fn info_json_has_the_stable_keys() {
    let v = json(&["info", "--json", data("perf.nettrace").to_str().unwrap()]);
    assert_eq!(v["format_version"], 4);
    assert_eq!(v["pointer_size"], 8);
    assert_eq!(v["process_id"], 502_728);
    assert_eq!(v["truncated"], false);
    assert_eq!(v["events"], 1540);
    let per_event = v["per_event"].as_array().unwrap();
    let total: u64 = per_event.iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 1540);
    let dcend = per_event
        .iter()
        .find(|e| e["event_id"] == 144 && e["version"] == 1)
        .unwrap();
    assert_eq!(dcend["provider"], "Microsoft-Windows-DotNETRuntimeRundown");
    assert_eq!(dcend["name"], "Method/DCStopVerbose");
    assert_eq!(dcend["count"], 1253);
    for key in [
        "start_time_utc",
        "duration_ns",
        "cpu_count",
        "stacks",
        "bytes_read",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["start_time_utc"], "2024-12-01T20:18:05.940000Z");
    // The command line of the ProcessInfo event tells a build's many traces apart (issue 33).
    assert_eq!(
        v["command_line"],
        "/home/cube/progs/nettrace/profileme/bin/Debug/net8.0/profileme /home/cube/progs/nettrace/profileme/bin/Debug/net8.0/profileme.dll"
    );
}

#[test]
fn info_reads_zip_and_reports_v5() {
    let v = json(&[
        "info",
        "--json",
        data("eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(v["format_version"], 5);
    assert_eq!(v["events"], 1970);
}

#[test]
fn info_reports_truncation_with_offset() {
    let v = json(&["info", "--json", data("trace.nettrace").to_str().unwrap()]);
    assert_eq!(v["truncated"], true);
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("byte offset 4170673"), "{err}");
    assert!(err.contains("EventBlock"), "{err}");
    assert!(v["events"].as_u64().unwrap() > 19_000);
    clrspy()
        .args(["info", data("trace.nettrace").to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("DAMAGED"))
        .stderr(predicate::str::contains("truncated"));
}

#[test]
fn clrspys_own_events_are_on_no_thread_in_text() {
    let trace = common::repo().join("crates/clrspy/tests/data/gc-no-samples.nettrace.zip");
    let out = clrspy()
        .args(["events", "--provider", "clrspy", "--limit", "5"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().count() >= 5, "{text}");
    for l in text.lines().take(5) {
        assert!(l.contains("  tid clrspy  clrspy/"), "{l}");
    }
    assert!(!text.contains("18446744073709551615"), "{text}");
}

#[test]
fn events_json_lines_have_stable_keys_and_decoded_fields() {
    let out = clrspy()
        .args([
            "events",
            "--json",
            "--event",
            "Method/DCStopVerbose",
            "--limit",
            "3",
            data("perf.nettrace").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for e in &lines {
        for key in [
            "provider",
            "event_id",
            "version",
            "name",
            "timestamp_ns",
            "thread_id",
            "stack",
            "fields",
        ] {
            assert!(e.get(key).is_some(), "missing {key} in {e}");
        }
        assert_eq!(e["name"], "Method/DCStopVerbose");
        assert!(e["fields"]["MethodNamespace"].is_string(), "{e}");
        assert!(e["fields"]["MethodStartAddress"].is_u64(), "{e}");
    }
}

#[test]
fn events_filters_by_provider_and_decodes_eventsource_fields() {
    let out = clrspy()
        .args([
            "events",
            "--provider",
            "profileme",
            data("perf.nettrace").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 21, "{text}");
    assert!(text.lines().all(|l| l.contains("ProfileMe/")));
}

#[test]
fn events_on_truncated_trace_lists_then_fails_with_offset() {
    clrspy()
        .args([
            "events",
            "--no-stacks",
            data("trace.nettrace").to_str().unwrap(),
        ])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("4170673"));
}

#[test]
fn bad_inputs_give_one_clear_line() {
    clrspy()
        .args(["info", "/nonexistent/x.nettrace"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot open /nonexistent/x.nettrace",
        ));
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.nettrace");
    std::fs::write(&junk, b"this is not a trace at all, just some text").unwrap();
    clrspy()
        .args(["info", junk.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a NetTrace/NetPerf trace"));
    let empty = dir.path().join("empty.nettrace");
    std::fs::write(&empty, b"").unwrap();
    clrspy()
        .args(["info", empty.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("empty.nettrace"));
    clrspy().args(["info"]).assert().code(2);
    clrspy()
        .args(["info", dir.path().to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is a directory"));
}

#[test]
fn events_come_in_timestamp_order_unless_file_order_is_asked() {
    let trace = data("only_managed_samples.nettrace.zip");
    let times = |extra: &[&str]| -> Vec<i64> {
        let out = clrspy()
            .args(["events", "--json"])
            .args(extra)
            .arg(&trace)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["timestamp_ns"]
                    .as_i64()
                    .unwrap()
            })
            .collect()
    };
    let sorted = times(&[]);
    assert_eq!(sorted.len(), 37_603);
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "not in time order");
    let file = times(&["--file-order"]);
    assert_eq!(file.len(), sorted.len());
    assert!(
        file.windows(2).any(|w| w[0] > w[1]),
        "the file itself is interleaved"
    );
}

#[test]
fn events_name_clrspys_own_events_as_clrspys_not_as_a_thread() {
    let trace = common::repo().join("crates/clrspy/tests/data/webapp-ring-trigger.nettrace.zip");
    let text = clrspy()
        .args(["events", "--no-stacks", "--provider", "clrspy"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.lines().count() > 100, "{text}");
    assert!(text.lines().all(|l| l.contains(" tid clrspy ")), "{text}");
    assert!(!text.contains(&u64::MAX.to_string()), "{text}");
    let json = clrspy()
        .args(["events", "--json", "--no-stacks"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(json.status.success());
    let (mut ours, mut threads) = (0, 0);
    for l in String::from_utf8(json.stdout).unwrap().lines() {
        let e: serde_json::Value = serde_json::from_str(l).unwrap();
        if e["provider"] == "clrspy" {
            assert!(e["thread_id"].is_null(), "{e}");
            ours += 1;
        } else {
            assert!(e["thread_id"].is_u64(), "{e}");
            threads += 1;
        }
    }
    assert!(ours > 100 && threads > 1000, "{ours} {threads}");
}

/// Text of `clrspy report` on a fixture of crates/clrspy/tests/data.
fn report_text(fixture: &str, args: &[&str]) -> String {
    let out = clrspy()
        .arg("report")
        .arg(
            common::repo()
                .join("crates/clrspy/tests/data")
                .join(fixture),
        )
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_report_says_its_window_and_what_its_columns_and_marker_frames_are() {
    let fixture = "razor-pages-cpu.nettrace.zip";
    // The window is named first; without one, nothing is added.
    let t = report_text(fixture, &["cpu", "--from", "1s", "--to", "2.5s"]);
    assert!(
        t.starts_with("Window: from 1s (1.000 s) to 2.5s (2.500 s) of the trace"),
        "{t}"
    );
    let t = report_text(fixture, &["threads", "--from", "1s"]);
    assert!(
        t.starts_with("Window: from 1s (1.000 s) to the trace's end"),
        "{t}"
    );
    let t = report_text(fixture, &["cpu"]);
    assert!(t.starts_with("CPU time: "), "{t}");
    // --callers says which column is time-weighted and which is a raw count.
    let t = report_text(
        fixture,
        &["cpu", "--callers", "CreateDelegate", "--depth", "2"],
    );
    assert!(t.contains("(41 raw samples)"), "{t}");
    assert!(
        t.contains("% = share of all CPU time, each sample weighted by its thread's measured time; samples = raw sample count (not weighted)"),
        "{t}"
    );
    // [unsampled] is explained under the tables that list it, and only there.
    let t = report_text(fixture, &["cpu", "--top", "1000"]);
    assert!(
        t.contains("  [unsampled]: CPU a thread's readings measured"),
        "{t}"
    );
    let t = report_text(fixture, &["cpu", "--top", "5"]);
    assert!(!t.contains("[unsampled]"), "{t}");
}

#[test]
fn threads_parked_the_whole_window_are_left_out_of_most_waited_in() {
    // The razor page app's main thread (in its host's wait), Kestrel's timer and the file
    // watcher wait the whole trace: the work's waiting is the other threads'.
    let fixture = "razor-pages-cpu.nettrace.zip";
    let t = report_text(fixture, &["summary"]);
    assert!(
        t.contains("  most waited in: System.Threading.Monitor.Enter_Slowpath (7.2% of the other threads' waiting; 3 threads parked the whole window left out: dotnet, Kestrel Timer, .NET File Watcher)"),
        "{t}"
    );
    let t = report_text(fixture, &["waits"]);
    assert!(
        t.contains("  6.1 s of it by 3 threads parked the whole window, never caught running work (dotnet, Kestrel Timer, .NET File Watcher)"),
        "{t}"
    );
    // A trace where every waiting thread ran work says it as before.
    let t = report_text("contention-thread-cpu.nettrace.zip", &["summary"]);
    assert!(
        t.contains("  most waited in: System.Threading.Monitor.Enter_Slowpath (55.6% of waiting)"),
        "{t}"
    );
}

#[test]
fn a_trace_without_samples_does_not_call_the_app_threads_runtime_native() {
    // 1.64 s of the allocation workload's CPU is on its main thread: no sample says where,
    // which makes it neither the runtime's nor native.
    let fixture = "gc-no-samples.nettrace.zip";
    let t = report_text(fixture, &["summary"]);
    assert!(!t.contains("native 1.7 s"), "{t}");
    assert!(
        t.contains("  runtime threads: tiered JIT 4 ms, finalizer 2 ms, EventPipe 0 ms, signal handler 0 ms\n"),
        "{t}"
    );
    let threads = json(&[
        "report",
        common::repo()
            .join("crates/clrspy/tests/data")
            .join(fixture)
            .to_str()
            .unwrap(),
        "threads",
        "--json",
    ]);
    let rows = threads["threads"].as_array().unwrap();
    let main = rows.iter().find(|r| r["thread"] == 5579).unwrap();
    assert_eq!(main["role"], "managed", "{main}");
    assert_eq!(main["top_frame"], "[unsampled]", "{main}");
    assert!(rows.iter().all(|r| r["role"] != "native"), "{threads}");
}

#[test]
fn the_summary_says_whose_load_kept_threads_waiting_for_a_cpu() {
    // 1.66 s of CPU in a 2.04 s window on 2 CPUs, 430 ms run-queue: the process did not fill
    // its CPUs, so the wait was others' load, not the process being CPU-bound.
    let t = report_text("gc-no-samples.nettrace.zip", &["summary"]);
    assert!(
        t.contains("  the process used 0.82 of 2 CPUs: other processes (or the CPU limit) kept its ready threads waiting"),
        "{t}"
    );
    assert!(!t.contains("CPU-bound"), "{t}");
}

#[test]
fn a_folder_of_traces_reports_the_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = common::repo().join("crates/clrspy/tests/data");
    for f in ["razor-pages-cpu.nettrace.zip", "gc-no-samples.nettrace.zip"] {
        std::fs::copy(fixtures.join(f), dir.path().join(f)).unwrap();
    }
    // One that is no trace: said, the others reported.
    std::fs::write(dir.path().join("broken.nettrace"), b"not a trace").unwrap();
    let d = dir.path().to_str().unwrap();
    let tree = json(&["report", d, "--json"]);
    let procs = tree["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{tree}");
    // Each process's CPU is its own report's.
    for p in procs {
        let one = json(&[
            "report",
            dir.path()
                .join(p["trace"].as_str().unwrap())
                .to_str()
                .unwrap(),
            "threads",
            "--json",
        ]);
        assert_eq!(p["cpu_ms"], one["process"]["cpu_ms"], "{p}");
    }
    let sum: f64 = procs.iter().map(|p| p["cpu_ms"].as_f64().unwrap()).sum();
    assert!((sum - tree["total_cpu_ms"].as_f64().unwrap()).abs() < 0.2);
    // Busiest first; the sampled one names its hottest method, the unsampled one none.
    assert!(procs[0]["cpu_ms"].as_f64() >= procs[1]["cpu_ms"].as_f64());
    let sampled = procs
        .iter()
        .find(|p| p["trace"] == "razor-pages-cpu.nettrace.zip")
        .unwrap();
    assert!(sampled["hottest"]["method"].is_string(), "{sampled}");
    let unsampled = procs
        .iter()
        .find(|p| p["trace"] == "gc-no-samples.nettrace.zip")
        .unwrap();
    assert!(unsampled["hottest"].is_null(), "{unsampled}");
    assert_eq!(tree["unreadable"][0]["trace"], "broken.nettrace", "{tree}");
    let top = tree["top_exclusive"].as_array().unwrap();
    assert!(!top.is_empty() && top.len() <= 20, "{tree}");
    let text = clrspy().args(["report", d]).output().unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(": 2 processes, ")
            && text.contains("not read: broken.nettrace")
            && text.contains("Hottest across the tree")
            && text.contains("To record the tree for less:"),
        "{text}"
    );
    // A report of one trace's kind on a folder is refused, saying what to run.
    clrspy()
        .args(["report", d, "cpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a folder"));
    let empty = tempfile::tempdir().unwrap();
    clrspy()
        .args(["report", empty.path().to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("no .nettrace files"));
}

/// The kernel sampler rides on the thread CPU readings: asked for without them it is refused
/// before anything starts.
#[test]
fn the_kernel_sampler_is_refused_where_it_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    clrspy()
        .args(["record", "--sampler", "kernel", "--no-thread-cpu", "-o"])
        .arg(dir.path().join("t"))
        .args(["--", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--sampler kernel needs"));
    clrspy()
        .args(["record", "--sampler", "perf", "-p", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "possible values: runtime, kernel, auto",
        ));
    // Preferred (auto), the kernel's sampler gives way to --no-thread-cpu, saying so.
    clrspy()
        .args(["record", "--sampler", "auto", "--no-thread-cpu", "-o"])
        .arg(dir.path().join("t"))
        .args(["--", "/nonexistent-program"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "CPU samples from the runtime's sampler (it suspends the threads to sample): the kernel's sampler needs the thread CPU readings",
        ));
}

#[test]
fn a_dump_or_snapshot_given_as_a_trace_names_the_command_that_reads_it() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let zst = dir.path().join("core_1.zst");
    std::fs::write(&zst, [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]).unwrap();
    for (file, said, command) in [
        (
            root.join("fuzz/seeds/core_read/tiny.core"),
            "is a core dump, not a trace",
            "clrspy dump analyze",
        ),
        (
            root.join("fuzz/corpus/gcdump_read/synth60.gcdump"),
            "is a heap snapshot (.gcdump), not a trace",
            "clrspy heap",
        ),
        (
            zst,
            "is compressed (zstd), not a trace",
            "clrspy dump analyze",
        ),
    ] {
        for args in [vec!["report"], vec!["info"], vec!["report", "cpu"]] {
            let mut cmd = clrspy();
            cmd.arg(args[0]).arg(&file).args(&args[1..]);
            cmd.assert()
                .failure()
                .stderr(predicate::str::contains(said))
                .stderr(predicate::str::contains(format!("`{command} ")));
        }
    }
}
