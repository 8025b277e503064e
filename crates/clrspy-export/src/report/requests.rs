//! The `requests` report: the requests an ASP.NET Core app served (the `requests` model), by
//! route with percentiles and statuses, and the slowest, each with what its threads did while
//! it ran (CPU in which methods, blocked in which calls, blocked on a task in which method:
//! sync-over-async inside the request) when the trace has thread samples, and how long it
//! waited to be read before it started (its connection's first request).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::cpu::is_blocking_frame;
use clrspy_analysis::sources::hangs::HangModel;
use clrspy_analysis::sources::requests::{RequestModel, ServedRequest, OTHER};
use clrspy_analysis::task_waits::task_wait;
use clrspy_analysis::Analysis;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::def::ReportDef;
use super::needs::{Models, Needs};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::text::TextStyle;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;
use crate::units::fit;

/// What the report needs recorded: the `aspnet` profile.
const NEEDS: Needs = Needs::SAMPLES
    .with_providers(clr_events::profiles::ASPNET_EVENT_SOURCES)
    .with_profile("aspnet");

/// The `requests` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "requests",
    description: "ASP.NET Core requests served: by route (percentiles, statuses), the slowest with what their threads did",
    needs: NEEDS,
    // The pool's injections (hangs) say when a task's continuation waited for a thread.
    models: Models::Named(&["requests", "hangs"]),
    rows: Some("requests"),
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 62,
        build: |i| Box::new(RequestsSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// One route.
#[derive(Clone, Debug, Serialize)]
pub struct RouteRow {
    /// The HTTP method.
    pub method: String,
    /// The route: the endpoint's name when the trace logged it, else the path.
    pub route: String,
    /// Requests finished.
    pub count: u64,
    /// By status code (`unknown` when the trace has no status), how many.
    pub statuses: BTreeMap<String, u64>,
    /// Of them, 5xx responses.
    pub errors: u64,
    /// Median duration, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// The slowest, ms.
    pub max_ms: f64,
}

/// Samples of a slow request's threads in one method (CPU) or one blocking call.
#[derive(Clone, Debug, Serialize)]
pub struct TimeIn {
    /// The method, or the blocking call.
    pub name: String,
    /// Samples.
    pub samples: u64,
    /// The samples' time, ms (samples × the sampling interval).
    pub ms: f64,
}

/// One of the slowest requests.
#[derive(Clone, Debug, Serialize)]
pub struct SlowRequest {
    /// Its start, ms since the trace started.
    pub start_ms: f64,
    /// The HTTP method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The route (endpoint name), when logged.
    pub route: Option<String>,
    /// The status code, when recorded.
    pub status: Option<u16>,
    /// How long it took, ms.
    pub duration_ms: f64,
    /// Its Kestrel connection id, when recorded.
    pub connection_id: Option<String>,
    /// For its connection's first request: ms from the connection's start (Kestrel's
    /// `ConnectionStart`, once a pool thread took the connection) to the request's start,
    /// before `duration_ms`: the time it took to be read, mostly waiting for a pool thread
    /// when the pool is starved.
    pub queued_ms: Option<f64>,
    /// The threads its events were written on.
    pub threads: Vec<u64>,
    /// Samples of its threads while it ran.
    pub samples: u64,
    /// Of them, on a thread back in the pool waiting for work (the request was awaiting
    /// something elsewhere): neither CPU nor a blocking call of the request.
    pub(crate) idle_samples: u64,
    /// Their time, ms.
    pub(crate) idle_ms: f64,
    /// Of them, running managed code, by innermost method, most first.
    pub cpu: Vec<TimeIn>,
    /// Of them, blocked or outside managed code, by the blocking call (or the innermost
    /// frame), most first; the blocked on a task are in `blocked_on_tasks` instead.
    pub blocked: Vec<TimeIn>,
    /// Of them, blocked on a task inside the request (sync-over-async), by the call and the
    /// method that made it (`Task.Result in App.Orders.Get`; `Task.Wait/.Result` when the JIT
    /// inlined the call), most first.
    pub(crate) blocked_on_tasks: Vec<TimeIn>,
    /// The thread pool injected threads for starvation or blocking while it ran (the `hangs`
    /// model's injections): a task it blocked on then also waited for a pool thread to run
    /// its continuation.
    pub(crate) pool_starved: bool,
}

/// Requests served.
#[derive(Clone, Debug, Serialize)]
pub struct RequestsReport {
    /// Requests started in the window.
    pub started: u64,
    /// Requests finished (start and stop in the trace).
    pub finished: u64,
    /// Started and still running at the end.
    pub in_flight: u64,
    /// Finished without their start in the trace.
    pub finished_unstarted: u64,
    /// Unhandled exceptions the host saw.
    pub unhandled_exceptions: u64,
    /// Finished requests with a status in the trace.
    pub with_status: u64,
    /// Finished requests with an endpoint (route) in the trace.
    pub with_route: u64,
    /// Starts and stops without an activity id (not timed).
    pub without_activity_id: u64,
    /// By route, most requests first.
    pub routes: Vec<RouteRow>,
    /// The slowest requests, slowest first (`--top`).
    pub slowest: Vec<SlowRequest>,
    /// What the trace lacks, with the command that records it, when it lacks something.
    pub missing: Vec<String>,
}

/// What a sample's stack says it was doing.
enum Doing {
    /// Back in the thread pool (or the sockets' loop) waiting for work: the request was
    /// awaiting something elsewhere.
    Idle,
    /// Blocked in this call (or outside managed code in this frame).
    Blocked(String),
    /// Blocked on a task: the call and the method that made it.
    OnTask(String),
    /// Running this method.
    Cpu(String),
}

/// True for a thread waiting for work: the thread pool's semaphore, its worker loop on top,
/// or the sockets' wait for events.
fn is_idle(frames: &[String]) -> bool {
    frames.iter().any(|f| {
        f.starts_with("System.Threading.LowLevelLifoSemaphore.")
            || f.starts_with("Interop+Sys.WaitForSocketEvents")
    }) || frames
        .first()
        .is_some_and(|f| f.starts_with("System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart"))
}

fn classify(frames: &[String], managed: bool, route: Option<&str>) -> Doing {
    if is_idle(frames) {
        return Doing::Idle;
    }
    if let Some(w) = task_wait(frames) {
        return Doing::OnTask(format!("{} in {}", w.call, method_named(&w.method, route)));
    }
    let (blocked, name) = blocked_or_running(frames, managed);
    if blocked {
        Doing::Blocked(name)
    } else {
        Doing::Cpu(name)
    }
}

/// A method as the report names it: the MVC invoker's compiled expression that a small
/// action was inlined into (.NET 10 does) says which action it ran, when the request's route
/// says.
fn method_named(method: &str, route: Option<&str>) -> String {
    match route {
        Some(r) if method.starts_with("dynamicClass.lambda_method") => {
            format!("{method} (the action {r}, inlined)")
        }
        _ => method.to_string(),
    }
}

/// Blocked in a known blocking call (or outside managed code), or running the innermost frame.
fn blocked_or_running(frames: &[String], managed: bool) -> (bool, String) {
    if let Some(f) = frames.iter().find(|f| is_blocking_frame(f)) {
        return (true, f.clone());
    }
    let leaf = frames
        .first()
        .cloned()
        .unwrap_or_else(|| "[no stack]".to_string());
    (!managed, leaf)
}

/// True when the pool injected threads between `from_ms` and `to_ms`.
fn pool_starved(a: &Analysis, from_ms: f64, to_ms: f64) -> bool {
    a.model::<HangModel>()
        .and_then(|m| m.pool.injection_span_ns.filter(|_| m.pool.injections > 0))
        .is_some_and(|(f, l)| (f as f64 / 1e6) <= to_ms && (l as f64 / 1e6) >= from_ms)
}

fn slow_row(a: &Analysis, r: &ServedRequest) -> SlowRequest {
    let per_ms = a.sampling_interval_ns as f64 / 1e6;
    let mut cpu: FxHashMap<String, u64> = FxHashMap::default();
    let mut blocked: FxHashMap<String, u64> = FxHashMap::default();
    let mut on_tasks: FxHashMap<String, u64> = FxHashMap::default();
    let (mut total, mut idle) = (0, 0);
    for s in &r.samples {
        let frames = a.frames(s.stack);
        for (n, managed) in [(s.managed, true), (s.external, false)] {
            if n == 0 {
                continue;
            }
            total += n;
            match classify(&frames, managed, r.route.as_deref()) {
                Doing::Idle => idle += n,
                Doing::Blocked(name) => *blocked.entry(name).or_default() += n,
                Doing::OnTask(name) => *on_tasks.entry(name).or_default() += n,
                Doing::Cpu(name) => *cpu.entry(name).or_default() += n,
            }
        }
    }
    let rows = |m: FxHashMap<String, u64>| {
        let mut v: Vec<TimeIn> = m
            .into_iter()
            .map(|(name, samples)| TimeIn {
                name,
                samples,
                ms: samples as f64 * per_ms,
            })
            .collect();
        v.sort_by(|x, y| y.samples.cmp(&x.samples).then_with(|| x.name.cmp(&y.name)));
        v.truncate(10);
        v
    };
    SlowRequest {
        start_ms: r.start_ms,
        method: r.method.clone(),
        path: r.path.clone(),
        route: r.route.clone(),
        status: r.status,
        duration_ms: r.duration_ms,
        connection_id: r.connection_id.clone(),
        queued_ms: r.queued_ms.map(crate::units::round1),
        threads: r.threads.clone(),
        samples: total,
        idle_samples: idle,
        idle_ms: idle as f64 * per_ms,
        cpu: rows(cpu),
        blocked: rows(blocked),
        pool_starved: !on_tasks.is_empty()
            && pool_starved(a, r.start_ms, r.start_ms + r.duration_ms),
        blocked_on_tasks: rows(on_tasks),
    }
}

/// Builds the requests report.
pub fn build(a: &Analysis, o: &ReportOptions) -> RequestsReport {
    let Some(m) = a.model::<RequestModel>() else {
        return empty(vec![NEEDS.missing_line("ASP.NET Core requests")]);
    };
    let mut routes: Vec<RouteRow> = m
        .routes
        .values()
        .map(|r| {
            let s = r.durations.summary();
            RouteRow {
                method: r.method.clone(),
                route: r.route.clone(),
                count: s.count,
                statuses: r.statuses.clone(),
                errors: r.errors,
                p50_ms: s.p50_ms,
                p95_ms: s.p95_ms,
                p99_ms: s.p99_ms,
                max_ms: s.max_ms,
            }
        })
        .collect();
    routes.sort_by(|x, y| {
        y.count
            .cmp(&x.count)
            .then_with(|| x.route.cmp(&y.route))
            .then_with(|| x.method.cmp(&y.method))
    });
    let slowest = m
        .slowest
        .sorted()
        .into_iter()
        .take(o.top)
        .map(|r| slow_row(a, r))
        .collect();
    let mut missing = Vec::new();
    if m.started == 0 && m.finished_unstarted == 0 {
        missing.push(NEEDS.missing_line("ASP.NET Core requests"));
    } else {
        if m.with_status < m.finished {
            missing.push(format!("{} of {} requests have no status: the trace lacks Microsoft-Diagnostics-DiagnosticSource's HttpRequestIn.Stop (`clrspy record --profile aspnet` records it).", m.finished - m.with_status, m.finished));
        }
        if m.with_route < m.finished {
            missing.push(format!("{} of {} requests have no route (counted by path): the trace lacks the routing middleware's ExecutingEndpoint log (`clrspy record --profile aspnet` records it).", m.finished - m.with_route, m.finished));
        }
        if a.dropped_events > 0 && (m.in_flight > 0 || m.finished_unstarted > 0) {
            missing.push(format!("{} events were lost by the runtime (its buffer filled): a request whose stop was lost counts as in flight, one whose start was lost as finished without its start.", a.dropped_events));
        }
        if m.without_activity_id > 0 {
            missing.push(format!("{} request events have no activity id and were not timed: record System.Threading.Tasks.TplEventSource with keyword 0x80 (`clrspy record --profile aspnet`).", m.without_activity_id));
        }
    }
    RequestsReport {
        started: m.started,
        finished: m.finished,
        in_flight: m.in_flight,
        finished_unstarted: m.finished_unstarted,
        unhandled_exceptions: m.unhandled_exceptions,
        with_status: m.with_status,
        with_route: m.with_route,
        without_activity_id: m.without_activity_id,
        routes,
        slowest,
        missing,
    }
}

fn empty(missing: Vec<String>) -> RequestsReport {
    RequestsReport {
        started: 0,
        finished: 0,
        in_flight: 0,
        finished_unstarted: 0,
        unhandled_exceptions: 0,
        with_status: 0,
        with_route: 0,
        without_activity_id: 0,
        routes: Vec::new(),
        slowest: Vec::new(),
        missing,
    }
}

/// Status counts as `200×5 500×2`.
fn statuses_text(s: &BTreeMap<String, u64>) -> String {
    s.iter()
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn status_text(s: Option<u16>) -> String {
    s.map_or_else(|| "-".to_string(), |s| s.to_string())
}

impl TextView for RequestsReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            style.heading(&format!(
                "Requests: {} finished, {} in flight at the end, {} unhandled exceptions",
                self.finished, self.in_flight, self.unhandled_exceptions
            ))
        )?;
        for m in &self.missing {
            writeln!(out, "  {m}")?;
        }
        if !self.routes.is_empty() {
            writeln!(
                out,
                "\n  {:>7} {:>5} {:>9} {:>9} {:>9} {:>9}  route (statuses)",
                "count", "5xx", "p50 ms", "p95 ms", "p99 ms", "max ms"
            )?;
        }
        for r in &self.routes {
            let name = format!("{} {}  ({})", r.method, r.route, statuses_text(&r.statuses));
            writeln!(
                out,
                "  {:>7} {:>5} {:>9.1} {:>9.1} {:>9.1} {:>9.1}  {}",
                r.count,
                r.errors,
                r.p50_ms,
                r.p95_ms,
                r.p99_ms,
                r.max_ms,
                fit(&name, style.room(58))
            )?;
        }
        if !self.slowest.is_empty() {
            writeln!(out, "\n{}", style.heading("Slowest requests"))?;
        }
        // With breakdowns under them, a blank line sets each request apart; without, a table.
        let spaced = self.slowest.iter().any(|r| r.samples > 0);
        if spaced {
            writeln!(
                out,
                "  under each: its threads' samples while it ran on them (samples × the interval)"
            )?;
        }
        for r in &self.slowest {
            let conn = r
                .connection_id
                .as_deref()
                .map(|c| format!("  conn {c}"))
                .unwrap_or_default();
            let head = format!(
                "{} {}  status {}  at {:.1} ms{conn}",
                r.method,
                r.path,
                status_text(r.status),
                r.start_ms
            );
            writeln!(
                out,
                "{}  {:>9.1} ms  {}",
                if spaced { "\n" } else { "" },
                r.duration_ms,
                fit(&head, style.room(16))
            )?;
            if let Some(q) = r.queued_ms.filter(|&q| q >= 1.0) {
                writeln!(
                    out,
                    "  {q:>9.1} ms    {}",
                    fit(
                        "queued before it started: read after its connection's start (waiting for a pool thread)",
                        style.room(18)
                    )
                )?;
            }
            if r.samples == 0 {
                continue;
            }
            if r.idle_samples > 0 {
                let ms = r.idle_ms;
                writeln!(
                    out,
                    "  {ms:>9.1} ms    idle: its thread back in the pool (the request awaited elsewhere)"
                )?;
            }
            for (what, rows) in [
                ("blocked on", &r.blocked_on_tasks),
                ("blocked in", &r.blocked),
                ("CPU in", &r.cpu),
            ] {
                for (i, t) in rows.iter().take(3).enumerate() {
                    let line = format!("{what} {}", t.name);
                    writeln!(
                        out,
                        "  {:>9.1} ms    {}",
                        t.ms,
                        fit(&line, style.room(18))
                    )?;
                    if i == 0 && what == "blocked on" && r.pool_starved {
                        let note = "the pool was injecting threads meanwhile: the task's continuation waited for a pool thread too";
                        writeln!(out, "{:18}{}", "", fit(note, style.room(18)))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The summary's requests section: two lines when the trace has requests.
struct RequestsSection {
    report: RequestsReport,
    next: Vec<String>,
}

impl RequestsSection {
    fn build(i: &SummaryInput<'_>) -> RequestsSection {
        let report = build(i.a, &ReportOptions { top: 1, ..i.o.clone() });
        let next = (report.finished > 0)
            .then(|| {
                format!(
                    "clrspy report {} requests   (by route, the slowest and what they waited for)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        RequestsSection { report, next }
    }
}

impl SummarySection for RequestsSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        if self.report.finished == 0 {
            return Vec::new();
        }
        vec![("requests", to_json(&self.report))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let r = &self.report;
        if r.finished == 0 {
            return Ok(());
        }
        let errors: u64 = r.routes.iter().map(|x| x.errors).sum();
        writeln!(
            out,
            "\n{}",
            style.heading(&format!(
                "Requests: {} served, {} with 5xx, {} routes",
                r.finished,
                errors,
                r.routes.len()
            ))
        )?;
        if let Some(s) = r.slowest.first() {
            writeln!(
                out,
                "  slowest: {:.1} ms  {}",
                s.duration_ms,
                fit(
                    &format!("{} {} ({})", s.method, s.path, status_text(s.status)),
                    style.room(24)
                )
            )?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// Width of the timeline's chart, in percent of the table cell.
fn timeline(r: &RequestsReport) -> String {
    let end = r
        .slowest
        .iter()
        .map(|s| s.start_ms + s.duration_ms)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let mut h = String::from("<h3>Slowest requests on a timeline</h3><table><tr><th class=n>ms</th><th>request</th><th>when (0 to the last one's end)</th></tr>");
    for s in &r.slowest {
        let left = s.start_ms / end * 100.0;
        let width = (s.duration_ms / end * 100.0).max(0.3);
        let _ = write!(
            h,
            "<tr><td class=n>{:.1}</td><td>{} {} ({})</td><td><div style=\"position:relative;height:10px\"><div style=\"position:absolute;left:{left:.2}%;width:{width:.2}%;height:10px;background:#c44\"></div></div></td></tr>",
            s.duration_ms,
            escape(&s.method),
            escape(&s.path),
            status_text(s.status)
        );
    }
    h.push_str("</table>");
    h
}

/// The HTML report's requests count and its tables (only for a trace with requests).
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let r = build(i.a, &i.options(20));
    if r.finished == 0 {
        return HtmlSection::default();
    }
    let mut h = String::from("<h2>Requests</h2><table><tr><th class=n>count</th><th class=n>5xx</th><th class=n>p50 ms</th><th class=n>p95 ms</th><th class=n>p99 ms</th><th class=n>max ms</th><th>Route</th><th>Statuses</th></tr>");
    for x in &r.routes {
        let _ = write!(
            h,
            "<tr><td class=n>{}</td><td class=n>{}</td><td class=n>{:.1}</td><td class=n>{:.1}</td><td class=n>{:.1}</td><td class=n>{:.1}</td><td>{} {}</td><td>{}</td></tr>",
            x.count,
            x.errors,
            x.p50_ms,
            x.p95_ms,
            x.p99_ms,
            x.max_ms,
            escape(&x.method),
            escape(&x.route),
            escape(&statuses_text(&x.statuses))
        );
    }
    h.push_str("</table>");
    h.push_str(&timeline(&r));
    let routes = r.routes.iter().filter(|x| x.route != OTHER).count();
    HtmlSection {
        facts: vec![Fact {
            order: 80,
            label: "requests served",
            value: format!("{} ({routes} routes)", r.finished),
        }],
        parts: vec![Part { order: 80, html: h }],
    }
}
