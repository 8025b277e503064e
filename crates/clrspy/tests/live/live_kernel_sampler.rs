//! `record --sampler kernel`: CPU samples taken by the kernel (perf_event_open on the target's
//! threads) instead of the runtime's sample profiler. The samples land in the .nettrace as
//! clrspy events that TraceEvent reads, the reports rank the burner's method from them, each
//! thread's samples agree with its CPU readings, and where the kernel refuses (a seccomp
//! filter here) the recording falls back to the runtime's sampler and says why. `auto` takes
//! the kernel's sampler where it samples kernel mode too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::Command;

use common::{clrspy_command, count, harness, info, json, live, machine, need, start, Need};

/// `clrspy record -p PID --sampler kernel` for `secs` seconds into `trace`; its stderr.
fn record(pid: u32, trace: &std::path::Path, secs: &str, deny_perf: bool) -> String {
    let how = if deny_perf {
        Recorder::NoPerf
    } else {
        Recorder::Plain
    };
    record_with(pid, trace, secs, &["--sampler", "kernel"], how)
}

/// How a test's recorder runs.
#[derive(Clone, Copy, PartialEq)]
enum Recorder {
    /// As the test runs.
    Plain,
    /// Under a seccomp filter that denies `perf_event_open` (a container's default profile).
    NoPerf,
}

/// `clrspy record -p PID SAMPLER_ARGS` for `secs` seconds into `trace`, run `how`; its stderr.
fn record_with(
    pid: u32,
    trace: &std::path::Path,
    secs: &str,
    sampler_args: &[&str],
    how: Recorder,
) -> String {
    let mut cmd = clrspy_command();
    cmd.args(["record", "-p", &pid.to_string()])
        .args(sampler_args)
        .args(["--duration", secs, "-o"])
        .arg(trace);
    if how == Recorder::NoPerf {
        // SAFETY: only async-signal-safe calls (prctl) between fork and exec.
        unsafe {
            cmd.pre_exec(deny_perf_event_open);
        }
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

/// A seccomp filter that makes `perf_event_open` fail with ENOSYS, as a container's default
/// profile does (x86-64 and aarch64 syscall numbers).
fn deny_perf_event_open() -> std::io::Result<()> {
    #[cfg(target_arch = "x86_64")]
    const NR: u32 = 298;
    #[cfg(target_arch = "aarch64")]
    const NR: u32 = 241;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let mut prog = [
        // The syscall number is the first word of seccomp_data.
        stmt((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, 0),
        jump(NR, 0, 1),
        stmt(
            (libc::BPF_RET | libc::BPF_K) as u16,
            RET_ERRNO | libc::ENOSYS as u32,
        ),
        stmt((libc::BPF_RET | libc::BPF_K) as u16, RET_ALLOW),
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: plain prctl calls with a filter that lives until they return.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &fprog as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[test]
fn kernel_samples_name_the_hot_method_and_match_the_thread_cpu() {
    if !live() {
        return;
    }
    // Samples per thread are compared with CPU time: the test takes the machine lock.
    let machine = machine();
    let w = start("cpu", &["--seconds", "20", "--threads", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("k.nettrace");
    let err = record(w.1, &trace, "3s", false);
    assert!(
        err.contains("CPU samples from the kernel at 999 Hz"),
        "{err}"
    );
    let t = trace.to_str().unwrap();

    let i = info(&trace);
    assert_eq!(i["ended_cleanly"], true, "{i}");
    let kernel = i["kernel_samples"].as_u64().unwrap();
    // How many depends on the CPU the burners got: the machine-locked rule below checks the
    // samples against each thread's CPU; here only that there are samples.
    assert!(
        kernel > 100,
        "{kernel} kernel samples in 3 s of two burners: {i}"
    );
    assert_eq!(
        i["runtime_samples"], 0,
        "the runtime's sampler must be off: {i}"
    );
    // The samples of managed code are the runtime's own kind of event (other tools read them).
    assert!(count(&i, "Thread/Sample") > 100, "{i}");
    let text = clrspy_command().args(["info", t]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("taken by the kernel"), "{text}");

    let cpu = json(&["report", t, "cpu", "--json"]);
    assert_eq!(cpu["kernel_samples"], true, "{cpu}");
    // Waits with stacks where kernel-mode samples are allowed (root here; CAP_PERFMON or
    // perf_event_paranoid ≤ 1 elsewhere), else said.
    let waits = json(&["report", t, "waits", "--json"]);
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } == 0 {
        assert!(count(&i, "KernelWait") > 0, "{i}");
        assert_eq!(waits["kernel_waits"], true, "{waits}");
        assert!(waits["total_ms"].as_f64().unwrap() > 1000.0, "{waits}");
    } else if count(&i, "KernelWait") == 0 {
        assert!(err.contains("waiting has no stacks"), "{err}");
    }
    assert_eq!(
        cpu["top_exclusive"][0]["method"], "Workloads.Cpu.Burn",
        "{cpu}"
    );

    // Each burner's samples (999 a second on a CPU) against its CPU readings from /proc.
    let threads = json(&["report", t, "threads", "--json"]);
    let burners: Vec<&serde_json::Value> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"].as_str().is_some_and(|n| n.starts_with("burner")))
        .collect();
    assert_eq!(burners.len(), 2, "{threads}");
    machine.check("samples match the thread CPU within 5%", || {
        for b in &burners {
            let cpu_ms = b["cpu_ms"].as_f64().unwrap();
            let sampled_ms = b["samples"].as_f64().unwrap() * 1000.0 / 999.0;
            assert!(cpu_ms > 300.0, "{b}");
            let off = (sampled_ms - cpu_ms).abs() / cpu_ms;
            assert!(
                off < 0.05,
                "samples {sampled_ms:.1} ms vs CPU {cpu_ms:.1} ms: {b}"
            );
        }
    });

    // TraceEvent opens the file whole and reads the samples' fields.
    let Some(h) = harness() else {
        return;
    };
    let te = Command::new("dotnet")
        .arg(&h)
        .args(["counts", t])
        .output()
        .unwrap();
    assert!(
        te.status.success(),
        "{}",
        String::from_utf8_lossy(&te.stderr)
    );
    let te: serde_json::Value = serde_json::from_slice(&te.stdout).unwrap();
    assert_eq!(te["events"], i["events"], "TraceEvent: {te}");
    // TraceEvent's own CPU stacks (each Thread/Sample one sample, TraceLog naming the frames)
    // rank the burner first, and nothing of clrspy's shows.
    let top = Command::new("dotnet")
        .arg(&h)
        .args(["cpu-top", t, "--top", "10"])
        .output()
        .unwrap();
    assert!(
        top.status.success(),
        "{}",
        String::from_utf8_lossy(&top.stderr)
    );
    let top: serde_json::Value = serde_json::from_slice(&top.stdout).unwrap();
    let methods = top["methods"].as_array().unwrap();
    let by_exclusive = methods
        .iter()
        .filter(|m| m["kind"] != "pseudo")
        .max_by(|a, b| {
            a["exclusive"]
                .as_f64()
                .partial_cmp(&b["exclusive"].as_f64())
                .unwrap()
        })
        .unwrap();
    assert_eq!(by_exclusive["method"], "Workloads.Cpu.Burn", "{top}");
    // (TraceEvent's pseudo frames name the process by its command line, where the
    // checkout's path may say clrspy.)
    assert!(
        !methods
            .iter()
            .any(|m| m["kind"] != "pseudo"
                && m["frame"].as_str().is_some_and(|f| f.contains("clrspy"))),
        "{top}"
    );
    // dotnet-trace's report (thread time: CPU and blocked) the same: two burners first.
    if let Some(dt) = need(Need::DotnetTrace) {
        let r = Command::new(dt)
            .args(["report", t, "topN"])
            .output()
            .unwrap();
        let r = String::from_utf8_lossy(&r.stdout);
        let first = r.lines().find(|l| l.starts_with("1. ")).unwrap_or_default();
        assert!(first.contains("Cpu.Burn"), "{r}");
        // Its rows (not a header that may name the checkout's path).
        let mut rows = r.lines().filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.trim().parse::<u32>().is_ok())
        });
        assert!(!rows.any(|l| l.contains("clrspy")), "{r}");
    }
}

/// The allocating workload spends its time in the runtime's native code (the GC clearing
/// memory with libc's memset): those frames are named from the libraries' ELF symbols, and
/// every frame of the stripped libcoreclr.so gets a function of its own.
#[test]
fn native_frames_are_named_from_the_libraries_symbols() {
    if !live() {
        return;
    }
    let w = start("alloc", &["--seconds", "20"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("n.nettrace");
    record(w.1, &trace, "3s", false);
    let t = trace.to_str().unwrap();
    let i = info(&trace);
    assert!(count(&i, "NativeSymbol") > 0, "{i}");
    let cpu = json(&[
        "report", t, "cpu", "--json", "--top", "30", "--native", "show",
    ]);
    let names: Vec<&str> = cpu["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    let named = |lib: &str| {
        names.iter().any(|n| {
            n.strip_prefix(lib)
                .is_some_and(|f| !f.is_empty() && !f.starts_with('+'))
        })
    };
    assert!(named("libc.so.6!") || named("libcoreclr.so!"), "{names:?}");
    // The hottest frames all have a function. (A CI run once ranked a rare libcoreclr address
    // with no export before it, `libcoreclr.so!+0x39a8b8`, 24th of 30: a naming gap left open,
    // see the stop's note.)
    assert!(
        !names
            .iter()
            .take(10)
            .any(|n| n.starts_with("libcoreclr.so!+0x") || *n == "[native]"),
        "{names:?}"
    );
    // By default each run of native frames is one frame named by what did the work: the
    // table's rows are managed methods or named groups, never a bare offset, and the GC's
    // work is the runtime's.
    let grouped = json(&["report", t, "cpu", "--json", "--top", "30"]);
    let rows: Vec<&str> = grouped["top_exclusive"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert!(
        rows.iter().all(|n| !n.contains('!') || !n.contains("+0x")),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .take(5)
            .any(|n| *n == "[runtime: libcoreclr.so]" || n.starts_with("[libc")),
        "{rows:?}"
    );
}

/// `record --sampler kernel -- dotnet ...`: the runtime held at its start is sampled by the
/// kernel from then on.
#[test]
fn a_launched_program_is_sampled_by_the_kernel() {
    if !live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("l.nettrace");
    let out = common::launch_record(
        &trace,
        &["--sampler", "kernel"],
        &["cpu", "--seconds", "2", "--threads", "1"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let i = info(&trace);
    assert!(i["kernel_samples"].as_u64().unwrap() > 500, "{i}");
    assert_eq!(i["runtime_samples"], 0, "{i}");
    let cpu = json(&["report", trace.to_str().unwrap(), "cpu", "--json"]);
    assert_eq!(
        cpu["top_exclusive"][0]["method"], "Workloads.Cpu.Burn",
        "{cpu}"
    );
    // Burn's loop runs on-stack-replaced code within milliseconds: its frame lies under its
    // Tier0 frame, where the kernel's frame-pointer walk reads Burn twice and skips its
    // caller. The recorder mends that: Burn is called by the lambda, and never by itself.
    let tree = json(&["report", trace.to_str().unwrap(), "cpu", "--json", "--tree"]);
    let tree = &tree["tree"];
    let burn = under_frame(tree, "Workloads.Cpu.Burn");
    let from_lambda = under_frame(tree, "Workloads.Cpu+<>c__DisplayClass1_0.<Run>b__0");
    assert!(burn > 0.0 && from_lambda >= 0.97 * burn, "{tree}");
    assert_eq!(burn_under_burn(tree), 0, "{tree}");
    // Other readers are told where the main thread blocked (in Join) when it began, early in
    // the run, not at its end: their thread-time views weigh each sample by the time to the
    // thread's next, and would give the whole wait to its last sample on a CPU otherwise.
    let out = clrspy_command()
        .args([
            "events",
            trace.to_str().unwrap(),
            "--event",
            "Thread/Sample",
            "--json",
        ])
        .output()
        .unwrap();
    let first_block = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["fields"]["Type"] == 1)
        .filter_map(|e| e["timestamp_ns"].as_u64())
        .min();
    assert!(
        first_block.is_some_and(|t| t < 1_000_000_000),
        "{first_block:?}"
    );
}

/// How many nodes named Burn have a child named Burn.
fn burn_under_burn(node: &serde_json::Value) -> usize {
    let kids = node["children"].as_array().cloned().unwrap_or_default();
    let here = usize::from(
        node["name"] == "Workloads.Cpu.Burn"
            && kids.iter().any(|k| k["name"] == "Workloads.Cpu.Burn"),
    );
    here + kids.iter().map(burn_under_burn).sum::<usize>()
}

#[test]
fn a_refused_kernel_sampler_falls_back_to_the_runtime_and_says_why() {
    if !live() {
        return;
    }
    let w = start("cpu", &["--seconds", "20", "--threads", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("r.nettrace");
    let err = record(w.1, &trace, "2s", true);
    assert!(err.contains("perf_event_open is not available"), "{err}");
    assert!(
        err.contains("CPU samples from the runtime's sampler"),
        "{err}"
    );
    let i = info(&trace);
    assert_eq!(i["kernel_samples"], 0, "{i}");
    assert!(i["runtime_samples"].as_u64().unwrap() > 100, "{i}");
}

/// Threads blocked on a contended lock stop inside libc (no frame pointers there): their
/// waits are unwound through libc by its call frame information, so the blocking call named
/// is the managed one that waited (`Monitor.Enter`), not libc's futex, and the stacks reach
/// the threads' start. Kernel-mode samples (the waits) need root or CAP_PERFMON here.
#[test]
fn waits_in_libc_are_unwound_to_the_managed_code_that_waited() {
    let test = "waits_in_libc_are_unwound_to_the_managed_code_that_waited";
    if !live() || !common::root_for(test, "kernel-mode samples (the waits)") {
        return;
    }
    if !cfg!(target_arch = "x86_64") {
        common::machine_skip(
            test,
            "libc's call frame unwinding is checked on x86_64 only",
        );
        return;
    }
    let w = start("contention", &["--seconds", "20", "--threads", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("waits.nettrace");
    record(w.1, &trace, "3s", false);
    // Every native frame shown (by default each run of them is one group: the libc frames
    // checked here are inside `[runtime: libcoreclr.so]`).
    let waits = json(&[
        "report",
        trace.to_str().unwrap(),
        "waits",
        "--json",
        "--native",
        "show",
    ]);
    assert_eq!(waits["kernel_waits"], true, "{waits}");
    let share = |list: &str, method: &str| {
        waits[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["method"] == method)
            .map_or(0.0, |r| r["percent"].as_f64().unwrap())
    };
    let enter = share(
        "by_blocking_call",
        "System.Threading.Monitor.Enter_Slowpath",
    );
    let futex = share("by_blocking_call", "libc.so.6!__futex_abstimed_wait_common");
    println!("waiting: Monitor.Enter {enter}%, libc futex with no known caller {futex}%");
    assert!(enter > 10.0, "{waits}");
    // The runtime's own threads parked all along (blocked since before the recording: their
    // stacks read when the sampler opened) wait in libc's poll, read and futex; among the
    // other threads, the lock is where they waited most.
    assert_eq!(
        waits["parked"]["others_most_waited_in"]["method"],
        "System.Threading.Monitor.Enter_Slowpath",
        "{waits}"
    );
    assert!(
        futex < enter + share("by_blocking_call", "libc.so.6!__libc_poll"),
        "{waits}"
    );
    // Whole stacks: most waiting is under the threads' start (in the tree: the inclusive
    // table leaves out native frames that call managed code).
    let tree = json(&[
        "report",
        trace.to_str().unwrap(),
        "waits",
        "--json",
        "--tree",
        "--native",
        "show",
    ]);
    let tree = &tree["tree"];
    let under = under_frame(tree, "libc.so.6!start_thread");
    let all = tree["inclusive"].as_f64().unwrap();
    assert!(under > 0.5 * all, "{under} of {all} under start_thread");
    assert!(
        share("top_inclusive", "libc.so.6!start_thread") == 0.0,
        "{waits}"
    );
    assert_eq!(waits["native_callers_left_out"], true, "{waits}");
}

/// The inclusive weight of a call tree under the outermost nodes named `name`.
fn under_frame(node: &serde_json::Value, name: &str) -> f64 {
    if node["name"] == name {
        return node["inclusive"].as_f64().unwrap_or(0.0);
    }
    node["children"]
        .as_array()
        .map_or(0.0, |c| c.iter().map(|n| under_frame(n, name)).sum())
}

const AUTO: &[&str] = &["--sampler", "auto"];

/// The kernel samples kernel mode too here: as root (with its capabilities) or where
/// perf_event_paranoid is 1 or less.
fn kernel_mode_allowed() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root || paranoid() <= 1
}

fn paranoid() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2)
}

/// `clrspy record SAMPLER_ARGS -- dotnet Workloads.dll cpu` for 2 s, as root without any
/// capability (`setpriv`), so the workload has none either (a process with capabilities is
/// another user's to the kernel's sampler); its stderr.
fn launch_without_capabilities(trace: &std::path::Path, sampler_args: &[&str]) -> String {
    let out = Command::new("setpriv")
        .args(["--inh-caps=-all", "--bounding-set=-all"])
        .arg(clrspy_command().get_program())
        .args(["record", "--duration", "2s", "-o"])
        .arg(trace)
        .args(sampler_args)
        .args(["--", "dotnet"])
        .arg(common::workloads())
        .args(["cpu", "--seconds", "10", "--threads", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

/// Asserts a trace's CPU samples are the runtime's, none the kernel's.
fn runtime_sampled(trace: &std::path::Path) {
    let i = info(trace);
    assert_eq!(i["kernel_samples"], 0, "{i}");
    assert!(i["runtime_samples"].as_u64().unwrap() > 100, "{i}");
}

/// `--sampler auto`: the kernel samples where it samples kernel mode too (waits with their
/// stacks); where it would sample user mode only (no capabilities, perf_event_paranoid 2) or
/// is refused (seccomp), the runtime's sampler does, and one line says why.
#[test]
fn auto_is_the_kernels_sampler_where_it_samples_whole_else_the_runtimes() {
    if !live() {
        return;
    }
    let w = start("cpu", &["--seconds", "30", "--threads", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("d.nettrace");
    let err = record_with(w.1, &trace, "2s", AUTO, Recorder::Plain);
    if kernel_mode_allowed() {
        assert!(
            err.contains("CPU samples from the kernel at 999 Hz"),
            "{err}"
        );
        assert!(!err.contains("user mode only"), "{err}");
        let i = info(&trace);
        assert!(i["kernel_samples"].as_u64().unwrap() > 100, "{i}");
        assert_eq!(i["runtime_samples"], 0, "{i}");
    } else {
        assert!(
            err.contains("CPU samples from the runtime's sampler"),
            "{err}"
        );
        assert!(err.contains("user mode only"), "{err}");
        runtime_sampled(&trace);
    }

    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && paranoid() >= 2 {
        let trace = dir.path().join("n.nettrace");
        let err = launch_without_capabilities(&trace, AUTO);
        assert!(
            err.contains("CPU samples from the runtime's sampler (it suspends the threads to sample): the kernel's would sample user mode only here"),
            "{err}"
        );
        assert!(err.contains("kernel.perf_event_paranoid=1"), "{err}");
        runtime_sampled(&trace);
        // Asked for by name, the kernel samples in user mode only, and says so.
        let trace = dir.path().join("u.nettrace");
        let err = launch_without_capabilities(&trace, &["--sampler", "kernel"]);
        assert!(
            err.contains("CPU samples from the kernel at 999 Hz"),
            "{err}"
        );
        assert!(err.contains("user mode only"), "{err}");
        assert!(info(&trace)["kernel_samples"].as_u64().unwrap() > 100);
    }

    let trace = dir.path().join("s.nettrace");
    let err = record_with(w.1, &trace, "2s", AUTO, Recorder::NoPerf);
    assert!(err.contains("perf_event_open is not available"), "{err}");
    assert!(
        err.contains("CPU samples from the runtime's sampler"),
        "{err}"
    );
    runtime_sampled(&trace);
}
