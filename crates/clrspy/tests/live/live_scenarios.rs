//! The diagnostics tutorials' symptoms on testapps/DiagScenarios, driven over HTTP (`ab`,
//! bounded), recorded as a user would (`clrspy record -p PID --duration …`, the default
//! settings; `--profile aspnet` for the requests), each decisive answer asserted:
//!
//! - starvation (`/taskresult` under `ab -c 80`): the threads counted injected are worker
//!   starts, at most the pool's rise in workers and at most the trace's
//!   `ThreadPoolWorkerThread/Start` events, and the sync-over-async site is named;
//! - the slow requests of that starvation are blocked on the task in the action, and say so;
//! - the deadlock (`/deadlock?waiters=300`, then more requests): its threads and the 300
//!   waiters are not called pool workers (in `stack`, `hangs` and the threads' names), the
//!   requests' threads are; the console logger's cut name is whole; the hang in progress and
//!   the threads still blocked read as one group per place with "… N more".
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::scenarios::{start_diag, Diag};
use common::{clrspy, clrspy_command, count, info, json, live, needs, wait_for_line, Load, Need};
use serde_json::Value;

/// `clrspy record -p PID --duration SECS -o TRACE [args]`, started; returns once it records
/// (its "Recording" line), with its stderr in `log`.
fn start_record(pid: u32, secs: u32, trace: &Path, args: &[&str], log: &Path) -> Child {
    let child = clrspy_command()
        .args([
            "record",
            "-p",
            &pid.to_string(),
            "--duration",
            &format!("{secs}s"),
            "-o",
        ])
        .arg(trace)
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start clrspy record");
    let line = wait_for_line(log, &["Recording "], Duration::from_secs(30));
    assert!(
        line.is_some(),
        "clrspy record did not start: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    child
}

/// Waits for `clrspy record` to end (its duration and a minute more at most).
fn finish_record(mut child: Child, log: &Path) {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            let err = std::fs::read_to_string(log).unwrap_or_default();
            assert!(s.success(), "clrspy record failed: {err}");
            eprintln!("{err}");
            return;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("clrspy record did not end");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `ab -r -s 30 -n N -c C URL` in the background, its output in `out` (killed when dropped).
fn ab(n: u32, c: u32, url: &str, out: &Path) -> Load {
    let child = Command::new(Need::Ab.path())
        .args([
            "-r",
            "-s",
            "30",
            "-n",
            &n.to_string(),
            "-c",
            &c.to_string(),
            url,
        ])
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ab");
    Load(child)
}

/// Waits up to `limit` for `load` to end; its output.
fn ab_done(mut load: Load, out: &Path, limit: Duration) -> String {
    let until = Instant::now() + limit;
    while load.0.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let keep = [
        "Complete requests",
        "Failed requests",
        "Time taken",
        "  50%",
        "  90%",
        " 100%",
    ];
    for l in text
        .lines()
        .filter(|l| keep.iter().any(|k| l.starts_with(k)) || l.contains("Receive:"))
    {
        eprintln!("ab: {l}");
    }
    text
}

/// The app's threads now (`/proc/PID/task`).
fn thread_count(app: &Diag) -> usize {
    std::fs::read_dir(format!("/proc/{}/task", app.pid()))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn warm_up(app: &Diag) {
    for path in [
        "/api/diag/taskresult?ms=10",
        "/api/diag/highcpu/5",
        "/api/diag/leak/1",
    ] {
        let (status, body) = app.get(path, Duration::from_secs(30));
        assert_eq!(status, 200, "{path}: {body}");
    }
}

#[test]
fn starvation_counts_worker_starts_as_injections_and_names_the_blocking_call() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let app = start_diag();
    warm_up(&app);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("starve.nettrace");
    let log = dir.path().join("record.log");
    let record = start_record(app.pid(), 12, &trace, &[], &log);
    let out = dir.path().join("ab.txt");
    let load = ab(300, 80, &app.url("/api/diag/taskresult"), &out);
    let text = ab_done(load, &out, Duration::from_secs(90));
    let complete = text
        .lines()
        .find_map(|l| l.strip_prefix("Complete requests:"))
        .map(str::trim);
    assert_eq!(complete, Some("300"), "{text}");
    finish_record(record, &log);

    // The kernel's sampler (the default) under this bursty load of 80 connections: no ring
    // lost a record, the threads were sampled at the rate asked, and every wait has a stack.
    let i = info(&trace);
    eprintln!(
        "kernel sampler: {} per CPU-second, {} asked, {} lost",
        i["kernel_samples_per_cpu_second"], i["kernel_rate_hz"], i["kernel_records_lost"]
    );
    if i["kernel_samples"].as_u64().unwrap_or(0) > 0 {
        assert_eq!(i["kernel_records_lost"], 0, "{i}");
        let rate = i["kernel_samples_per_cpu_second"].as_f64().unwrap();
        assert!(rate >= 0.9 * i["kernel_rate_hz"].as_f64().unwrap(), "{i}");
        let waits = json(&["report", trace.to_str().unwrap(), "waits", "--json"]);
        let stackless: Vec<_> = waits["top_exclusive"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["method"] == "[no stack]")
            .collect();
        assert!(stackless.is_empty(), "{stackless:?}");
    }

    let v = json(&["report", trace.to_str().unwrap(), "hangs", "--json"]);
    let s = &v["starvation"];
    eprintln!("starvation: {s}");
    assert_eq!(s["detected"], true, "{s}");
    let injections = s["injections"].as_u64().unwrap();
    let starts = s["worker_starts"].as_u64().unwrap();
    let (before, max) = (
        s["workers_before"].as_u64().unwrap(),
        s["workers_max"].as_u64().unwrap(),
    );
    // The decisive numbers: a thread injected is a worker started, never more than the pool
    // grew, nor than the trace's worker starts.
    assert_eq!(s["injections_from"], "worker starts", "{s}");
    assert!(injections >= 3 && injections <= max - before, "{s}");
    assert!(injections <= starts, "{s}");
    assert_eq!(
        starts,
        count(&info(&trace), "ThreadPoolWorkerThread/Start"),
        "{s}"
    );
    // Far fewer than the CooperativeBlocking adjustments, which the old count followed.
    assert!(
        s["blocking_adjustments"].as_u64().unwrap() > injections,
        "{s}"
    );
    // The call that blocks pool threads: the action (inlined into MVC's invoker by .NET 10)
    // in the task's wait.
    let site = &s["sync_over_async"][0];
    let method = site["method"].as_str().unwrap_or_default();
    assert!(
        method.starts_with("dynamicClass.lambda_method")
            || method.contains("DiagController.TaskResult"),
        "{s}"
    );
    // A bare generated method is explained: its action is unknown to this recording.
    let note = s["sync_over_async_note"].as_str().unwrap_or_default();
    assert_eq!(
        note.contains(method),
        method.starts_with("dynamicClass.lambda_method") && !method.contains(" [inlines"),
        "{s}"
    );
    assert!(
        site["blocked_in"]
            .as_str()
            .unwrap_or_default()
            .starts_with("System.Threading.Tasks.Task"),
        "{s}"
    );
    // The summary says the same number.
    let text = clrspy()
        .args(["report", trace.to_str().unwrap(), "summary"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            "thread-pool starvation: {injections} threads injected"
        )),
        "{text}"
    );
}

#[test]
fn a_slow_request_under_starvation_is_blocked_on_the_task_in_its_action() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let app = start_diag();
    warm_up(&app);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("requests.nettrace");
    let log = dir.path().join("record.log");
    let record = start_record(app.pid(), 12, &trace, &["--profile", "aspnet"], &log);
    let out = dir.path().join("ab.txt");
    let load = ab(300, 80, &app.url("/api/diag/taskresult"), &out);
    ab_done(load, &out, Duration::from_secs(90));
    finish_record(record, &log);

    let v = json(&["report", trace.to_str().unwrap(), "requests", "--json"]);
    eprintln!("routes: {}", v["routes"]);
    let slow = v["slowest"].as_array().cloned().unwrap_or_default();
    assert!(!slow.is_empty(), "{v}");
    assert_eq!(slow[0]["path"], "/api/diag/taskresult", "{}", slow[0]);
    // Under 80 at once on a pool of a few threads, the slowest wait seconds, not 500 ms.
    assert!(
        slow[0]["duration_ms"].as_f64().unwrap() > 1500.0,
        "{}",
        slow[0]
    );
    // Of the slow requests, the one the sampler covered best: a thread the pool injected
    // can be followed late (the kernel's events of a thread open when a rescan finds it),
    // and then its request's first seconds have no sample; that is said by `samples`, and
    // the other slow requests tell the same story.
    let covered =
        |r: &Value| r["samples"].as_f64().unwrap_or(0.0) / r["duration_ms"].as_f64().unwrap_or(1.0);
    let slowest = slow
        .iter()
        .filter(|r| r["duration_ms"].as_f64().unwrap_or(0.0) > 1500.0)
        .max_by(|a, b| covered(a).total_cmp(&covered(b)))
        .unwrap();
    eprintln!("slowest covered: {slowest}");
    let duration = slowest["duration_ms"].as_f64().unwrap();
    let on_task = &slowest["blocked_on_tasks"][0];
    let name = on_task["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("Task."), "{slowest}");
    assert!(
        name.contains("DiagController.TaskResult"),
        "the action is named (inlined or not): {slowest}"
    );
    // Nearly all of its time, measured by the kernel's waits.
    assert!(
        on_task["ms"].as_f64().unwrap() > 0.8 * duration,
        "{slowest}"
    );
    assert_eq!(slowest["pool_starved"], true, "{slowest}");
    let queued = slowest["queued_ms"].as_f64();
    assert!(queued.is_some_and(|q| q >= 0.0), "{slowest}");
    let text = clrspy()
        .args(["report", trace.to_str().unwrap(), "requests"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("blocked on Task."), "{text}");
    assert!(
        text.contains("the task's continuation waited for a pool thread"),
        "{text}"
    );
}

/// The threads of a `clrspy stack --json` whose frames contain `method`.
fn stack_threads<'a>(v: &'a Value, method: &str) -> Vec<&'a Value> {
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_str().is_some_and(|f| f.starts_with(method)))
        })
        .collect()
}

#[test]
fn the_deadlocks_threads_and_its_waiters_are_not_called_pool_workers() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let app = start_diag();
    warm_up(&app);
    let before = thread_count(&app);
    let dir = tempfile::tempdir().unwrap();

    // 1. Recorded while it forms: a cycle, and one group of the threads behind it.
    let forming = dir.path().join("forming.nettrace");
    let log = dir.path().join("record.log");
    let record = start_record(app.pid(), 6, &forming, &[], &log);
    let _request = app.send("/api/diag/deadlock?waiters=300");
    let until = Instant::now() + Duration::from_secs(30);
    while thread_count(&app) < before + 302 {
        assert!(Instant::now() < until, "{} threads", thread_count(&app));
        std::thread::sleep(Duration::from_millis(100));
    }
    finish_record(record, &log);
    let v = json(&["report", forming.to_str().unwrap(), "hangs", "--json"]);
    let cycle = v["deadlocks"][0].as_array().unwrap();
    assert_eq!(cycle.len(), 2, "{v}");
    for m in cycle {
        // Started from the request's pool thread, with its OS name: not a pool worker.
        let name = m["thread_name"].as_str().unwrap();
        assert!(name.starts_with("thread started by thread "), "{m}");
        assert!(name.ends_with("(.NET TP Worker)"), "{m}");
    }
    // The cycle's waits last to the trace's end in every table: the longest-waits row of
    // each member says what its cycle entry says (not the time to the last lock wait).
    for m in cycle {
        let method = m["stack"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|f| f.starts_with("DiagScenarios.Locks.Take"))
            .unwrap_or_else(|| panic!("{m}"));
        let row = v["long_waits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["stack"].as_array().unwrap().iter().any(|f| f == method))
            .unwrap_or_else(|| panic!("{method} not in the long waits: {v}"));
        let (max, waiting) = (
            row["max_ms"].as_f64().unwrap(),
            m["waiting_ms"].as_f64().unwrap(),
        );
        assert!((max - waiting).abs() < 1.0, "{row} {m}");
    }
    let g = &v["blocked_groups"][0];
    eprintln!(
        "blocked: {}",
        serde_json::to_string(&v["blocked_groups"]).unwrap()
    );
    // The 300 waiters and the request, on the lock the cycle's first thread holds.
    assert_eq!(g["threads"], 301, "{g}");
    assert_eq!(g["method"], "DiagScenarios.Locks.WaitForFirst", "{g}");
    let owner = g["owner_thread_id"].as_u64().unwrap();
    assert!(cycle.iter().any(|m| m["thread_id"] == owner), "{g}");
    assert_eq!(g["names"][0]["threads"], 300, "{g}");
    assert!(
        g["names"][0]["name"]
            .as_str()
            .unwrap()
            .starts_with("thread started by thread "),
        "{g}"
    );
    assert_eq!(
        g["names"][1],
        serde_json::json!({"name": ".NET TP Worker", "threads": 1}),
        "{g}"
    );
    assert_eq!(v["blocked_total"], 301, "{v}");
    let text = String::from_utf8(
        clrspy()
            .args(["report", forming.to_str().unwrap(), "hangs"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    eprintln!("{text}");
    assert!(
        text.contains("301 threads in System.Threading.Monitor.Enter"),
        "{text}"
    );
    assert!(text.contains("(deadlocked: cycle 1)"), "{text}");
    assert!(text.contains(", … 296 more"), "{text}");
    assert!(text.lines().count() < 60, "{text}");

    // 2. More requests pile up behind it (bounded: they never answer; killed at the end).
    let out = dir.path().join("ab.txt");
    let _load = ab(20, 20, &app.url("/api/diag/deadlock"), &out);
    std::thread::sleep(Duration::from_secs(3));

    // 3. The live stacks: what the runtime's frames say each thread is.
    let s = json(&["stack", "-p", &app.pid().to_string(), "--json"]);
    let deadlocked: Vec<&Value> = [
        "DiagScenarios.Locks.TakeFirstThenSecond",
        "DiagScenarios.Locks.TakeSecondThenFirst",
    ]
    .iter()
    .flat_map(|m| stack_threads(&s, m))
    .collect();
    assert_eq!(deadlocked.len(), 2, "{s}");
    for t in &deadlocked {
        assert_eq!(t["name"], ".NET TP Worker", "{t}");
        assert_eq!(t["pool_worker"], false, "{t}");
        assert_eq!(t["name_inherited"], true, "{t}");
        assert_eq!(
            t["label"], "thread started by DiagScenarios.Locks.FormDeadlock",
            "{t}"
        );
    }
    let waiting = stack_threads(&s, "DiagScenarios.Locks.WaitForFirst");
    let (pool, started): (Vec<&Value>, Vec<&Value>) =
        waiting.iter().partition(|t| t["pool_worker"] == true);
    assert_eq!(started.len(), 300, "{s}");
    for t in &started {
        assert_eq!(
            t["label"], "thread started to run DiagScenarios.Locks.WaitForFirst",
            "{t}"
        );
    }
    // The requests' threads are the pool's (the first request's, and ab's the pool added).
    assert!(!pool.is_empty(), "{s}");
    assert!(pool.iter().all(|t| t["label"] == ".NET TP Worker"), "{s}");
    let logger: Vec<&Value> = s["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "Console logger queue processing thread")
        .collect();
    assert_eq!(logger.len(), 1, "{s}");
    let text = String::from_utf8(
        clrspy()
            .args(["stack", "-p", &app.pid().to_string()])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("Thread ")).collect();
    let named_worker = headings
        .iter()
        .filter(|h| h.ends_with(" \".NET TP Worker\""))
        .count();
    assert!(named_worker >= pool.len(), "{text}");
    let inherited = headings
        .iter()
        .filter(|h| h.ends_with("; OS name \".NET TP Worker\", its creator's)"))
        .count();
    assert_eq!(inherited, 302, "{text}");
    assert_eq!(
        headings
            .iter()
            .filter(|h| h.contains("(thread started by DiagScenarios.Locks.FormDeadlock; OS name \".NET TP Worker\", its creator's)"))
            .count(),
        2,
        "{text}"
    );

    // 4. Recorded after it formed: a hang in progress, one group per place.
    let late = dir.path().join("late.nettrace");
    let record = start_record(app.pid(), 4, &late, &[], &log);
    finish_record(record, &log);
    let v = json(&["report", late.to_str().unwrap(), "hangs", "--json"]);
    let p = &v["in_progress"];
    let groups = p["groups"].as_array().unwrap();
    eprintln!("in progress: {}", serde_json::to_string(groups).unwrap());
    let first = &groups[0];
    assert_eq!(first["method"], "DiagScenarios.Locks.WaitForFirst", "{p}");
    // Every thread the live stacks saw waiting there, before and after (the pool may add one
    // for ab's requests meanwhile).
    let after = json(&["stack", "-p", &app.pid().to_string(), "--json"]);
    let waiting_after = stack_threads(&after, "DiagScenarios.Locks.WaitForFirst").len();
    let n = first["threads"].as_u64().unwrap() as usize;
    assert!(
        n >= waiting.len() && n <= waiting_after,
        "{n} of {} to {waiting_after}: {p}",
        waiting.len()
    );
    assert_eq!(first["names"][0]["threads"], 300, "{p}");
    assert_eq!(
        first["names"][0]["name"], "thread started to run DiagScenarios.Locks.WaitForFirst",
        "{p}"
    );
    assert_eq!(first["names"][1]["name"], ".NET TP Worker", "{p}");
    let others: Vec<&Value> = groups[1..].iter().collect();
    assert_eq!(others.len(), 2, "{p}");
    for g in others {
        assert_eq!(g["threads"], 1, "{g}");
        assert_eq!(
            g["names"][0]["name"], "thread started by DiagScenarios.Locks.FormDeadlock",
            "{g}"
        );
    }
    let text = String::from_utf8(
        clrspy()
            .args(["report", late.to_str().unwrap(), "hangs"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    eprintln!("{text}");
    assert!(
        text.contains(&format!("{n} threads in System.Threading.Monitor.Enter")),
        "{text}"
    );
    assert!(text.contains(&format!(", … {} more", n - 5)), "{text}");
    assert!(text.lines().count() < 40, "{text}");
    assert!(!text.contains("(.NET TP Worker) in"), "{text}");

    // 5. A hang bundle of a process of 300 and more threads samples with the kernel's
    // sampler (the runtime's would suspend them all at each sample), and says so.
    let zip = dir.path().join("hang.zip");
    let out = clrspy_command()
        .args(["bundle", "-p", &app.pid().to_string(), "--symptom", "hang"])
        .args(["--duration", "3s", "-o"])
        .arg(&zip)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(" threads: CPU samples from the kernel's sampler where it is allowed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the kernel samples the CPU at 999 Hz (nothing suspended)"),
        "{stderr}"
    );
    let info = clrspy().args(["info"]).arg(&zip).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("taken by the kernel"), "{info}");
}

#[test]
fn the_other_scenarios_answer_as_the_readme_says() {
    if !live() {
        return;
    }
    let app = start_diag();
    let t = Duration::from_secs(30);
    let (status, body) = app.get("/api/diag/leak/4", t);
    assert_eq!((status, body.as_str()), (200, "customers=1"));
    let (status, body) = app.get("/api/diag/leak/4", t);
    assert_eq!((status, body.as_str()), (200, "customers=2"));
    let (status, body) = app.get("/api/diag/highcpu/20", t);
    assert!(status == 200 && body.starts_with("spins="), "{body}");
    let (status, body) = app.get("/api/diag/taskresult?ms=50", t);
    assert_eq!((status, body.as_str()), (200, "answer=42"));
    let (status, body) = app.get("/api/diag/throw", t);
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("thrown by /api/diag/throw, by design"),
        "{body}"
    );
}

/// The throw scenario (an async action that throws, 50 times): the report names the app's
/// own throw site first and counts the rethrows the exception takes through the async frames
/// and MVC's invoker as rethrows of the 50, not as 50 × N exceptions.
#[test]
fn an_action_that_throws_is_named_with_its_rethrows_said_apart() {
    if !live() || !needs(&[Need::Ab]) {
        return;
    }
    let app = start_diag();
    warm_up(&app);
    // The first throw JIT-compiles the exception path; not recorded.
    let (status, _) = app.get("/api/diag/throw", Duration::from_secs(30));
    assert_eq!(status, 500);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("throws.nettrace");
    let log = dir.path().join("record.log");
    let record = start_record(app.pid(), 8, &trace, &[], &log);
    let out = dir.path().join("ab.txt");
    let load = ab(50, 4, &app.url("/api/diag/throw"), &out);
    let text = ab_done(load, &out, Duration::from_secs(60));
    assert!(text.contains("Non-2xx responses:      50"), "{text}");
    finish_record(record, &log);

    let v = json(&["report", trace.to_str().unwrap(), "exceptions", "--json"]);
    let types = v["types"].as_array().unwrap();
    let t = types
        .iter()
        .find(|t| t["type"] == "DiagScenarios.ScenarioException")
        .unwrap_or_else(|| panic!("{v}"));
    eprintln!("{t}");
    assert_eq!(t["thrown"], 50, "{t}");
    let rethrown = t["rethrown"].as_u64().unwrap();
    assert!(rethrown >= 50 && rethrown.is_multiple_of(50), "{t}");
    assert_eq!(t["count"].as_u64().unwrap(), 50 + rethrown, "{t}");
    let site = &t["thrown_in"][0];
    assert_eq!(site["count"], 50, "{t}");
    let site = site["name"].as_str().unwrap();
    assert!(
        site.starts_with("DiagScenarios.Controllers.DiagController+<Throw>"),
        "{t}"
    );
    // The app's own stack comes first.
    let first = t["throw_sites"][0]["frames"].as_array().unwrap();
    assert!(first.iter().any(|f| f.as_str() == Some(site)), "{t}");
    assert!(
        t["rethrown_in"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"].as_str().unwrap().contains("TaskAwaiter")),
        "{t}"
    );

    let text = clrspy()
        .args(["report", trace.to_str().unwrap(), "exceptions"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let each = rethrown / 50;
    let times = if each == 1 {
        "once".to_string()
    } else {
        format!("{each} times")
    };
    assert!(
        text.contains(&format!(
            "50 thrown (in DiagController.Throw), each rethrown {times} through async frames"
        )),
        "{text}"
    );
    // The app's throw site is the first "thrown in" line, before any rethrow.
    let thrown_in = text.find("thrown in: DiagScenarios").unwrap_or(usize::MAX);
    let rethrown_in = text.find("rethrown in:").unwrap_or(0);
    assert!(thrown_in < rethrown_in, "{text}");
}
