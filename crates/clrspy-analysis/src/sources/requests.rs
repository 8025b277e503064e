//! Requests an ASP.NET Core app served: each from its `Microsoft.AspNetCore.Hosting`
//! RequestStart/RequestStop (method, path, duration; tied by their activity id), with its
//! status from the DiagnosticSource bridge's `HttpRequestIn.Stop` (`Response.StatusCode`), its
//! route from the routing middleware's `ExecutingEndpoint` log (the endpoint's name: `HTTP: GET
//! /items/{id}` for a minimal API), its Kestrel connection id (the request's related activity
//! is its connection's), how long a connection's first request waited from the connection's
//! start (reading it: under a starved pool, its continuation's wait for a pool thread;
//! [`super::kestrel_links`]), and — with thread samples — what its threads did while it ran.
//!
//! Memory stays bounded at any request count: per route a [`Sketch`] and status counts, the N
//! slowest requests with their samples ([`Slowest`]), and only the requests in flight; each
//! finished request is streamed to the model's [`RowSink`] when it has one
//! (`--requests-jsonl`), never held.
//!
//! A trace's events come in the order of the runtime's per-thread buffers, not in time order:
//! a request's stop (written on the thread it ended on) can come before its start. Its stop
//! then waits for its start; the events written beside a start on its thread (the route) come
//! after it, so a request completed at its start waits for them until the next request starts
//! on that thread (or the pass ends).
//!
//! With the kernel's sampler, a request's samples and waits are the kernel's
//! (`kernel_bits`), written a drain late: a finished request settles for `SETTLE_NS` of
//! trace time before it is counted, and takes then what the kernel saw of its threads while
//! it ran.

use std::collections::{BTreeMap, VecDeque};

use clr_events::aspnet::{ConnectionStart, DiagnosticEvent, LogMessage, RequestStart};
use clr_events::{KnownProvider, ThreadSampleType, ViewError};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::kernel_bits::{Bit, KernelBits};
use super::kestrel_links::{Key, KestrelLinks};
use super::shared::text;
use crate::event::Provider;
use crate::model_entry::{AnyModel, ModelEntry, ModelInit};
use crate::rows::RowSink;
use crate::sketch::{Sketch, Slowest};
use crate::stacks::StackId;
use crate::{Model, ModelEvent, Wanted};

const HOSTING: &str = "Microsoft.AspNetCore.Hosting";
const KESTREL: &str = "Microsoft-AspNetCore-Server-Kestrel";
const DIAGNOSTIC_SOURCE: &str = "Microsoft-Diagnostics-DiagnosticSource";
const LOGGING: &str = "Microsoft-Extensions-Logging";
/// The logger whose `ExecutingEndpoint` names each request's endpoint.
const ENDPOINT_LOGGER: &str = "Microsoft.AspNetCore.Routing.EndpointMiddleware";

/// Distinct routes kept (by endpoint name, or by raw path when no endpoint was logged); the
/// rest are counted under [`OTHER`].
pub(crate) const MAX_ROUTES: usize = 1000;
/// The route of requests past `MAX_ROUTES`.
pub const OTHER: &str = "(other)";
/// The slowest requests kept, with what their threads did.
pub(crate) const SLOWEST: usize = 20;

/// One route: its requests' durations and statuses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouteStats {
    /// The HTTP method.
    pub method: String,
    /// The route: the endpoint's name when the trace logged it, else the path.
    pub route: String,
    /// Durations (count, percentiles).
    pub durations: Sketch,
    /// By status code (`unknown` when the trace has no status), how many.
    pub statuses: BTreeMap<String, u64>,
    /// Of them, 5xx responses.
    pub errors: u64,
}

/// Samples of a request's threads while it ran, by stack.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StackSamples {
    /// The stack (named by the report).
    #[serde(skip)]
    pub stack: Option<StackId>,
    /// Samples with managed code on top.
    pub managed: u64,
    /// Samples outside managed code (native code, a wait).
    pub external: u64,
}

/// A finished request (the slowest are kept with their samples).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServedRequest {
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
    /// For its connection's first request, ms from the connection's start (Kestrel's
    /// `ConnectionStart`, once a pool thread took it) to the request's: the time it took to
    /// be read, before the request's own duration.
    pub queued_ms: Option<f64>,
    /// The threads it ran on (where its events were written).
    pub threads: Vec<u64>,
    /// Samples of those threads while it ran there.
    pub samples: Vec<StackSamples>,
}

/// A row of `--requests-jsonl`.
#[derive(Serialize)]
struct Row<'a> {
    start_ms: f64,
    method: &'a str,
    path: &'a str,
    route: Option<&'a str>,
    status: Option<u16>,
    duration_ms: f64,
}

/// A request between its start and its end (or completed, waiting for its route).
#[derive(Clone, Debug, Default)]
struct Open {
    start_ns: i64,
    end_ns: i64,
    method: String,
    path: String,
    route: Option<String>,
    status: Option<u16>,
    connection: Option<String>,
    /// From its connection's start to its own, ns (the connection's first request).
    queued_ns: Option<i64>,
    /// Activities started inside it (the DiagnosticSource bridge's), for its later events.
    children: Vec<Key>,
    threads: Vec<u64>,
    /// Samples of its threads while it ran there: (time, stack, managed code on top).
    samples: Vec<(i64, Option<StackId>, bool)>,
}

/// Samples kept per request in flight (a minute of one thread at the default 1 ms).
const MAX_SAMPLES: usize = 60_000;

/// How long (trace time) a finished request waits for the kernel sampler's events of its
/// threads: the recorder drains them every few hundred ms and writes them at the next gap
/// between the runtime's blocks.
pub(crate) const SETTLE_NS: i64 = 2_000_000_000;

/// Served requests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RequestModel {
    /// Requests that started in the window.
    pub started: u64,
    /// Requests that finished (start and stop seen).
    pub finished: u64,
    /// Unhandled exceptions the host saw.
    pub unhandled_exceptions: u64,
    /// By `METHOD route`, the finished requests.
    pub routes: BTreeMap<String, RouteStats>,
    /// The slowest finished requests.
    #[serde(skip)]
    pub slowest: Slowest<ServedRequest>,
    /// Requests started and not finished by the end.
    pub in_flight: u64,
    /// Requests that finished in the window without their start (it came before).
    pub finished_unstarted: u64,
    /// Starts and stops without an activity id, not timed: the recording did not enable
    /// `System.Threading.Tasks.TplEventSource` with keyword 0x80, which flows the ids.
    pub without_activity_id: u64,
    /// Finished requests whose status the trace had (DiagnosticSource's `HttpRequestIn.Stop`).
    pub with_status: u64,
    /// Finished requests whose endpoint the trace had (the routing middleware's log).
    pub with_route: u64,
    /// Thread samples read while requests ran.
    pub samples: u64,
    #[serde(skip)]
    open: FxHashMap<Key, Open>,
    /// Stops read before their start: (time, status).
    #[serde(skip)]
    early: FxHashMap<Key, Vec<(i64, Option<u16>)>>,
    /// Child activity → its request's.
    #[serde(skip)]
    alias: FxHashMap<Key, Key>,
    /// Per thread, the status of the last `HttpRequestIn.Stop` (the host's RequestStop follows
    /// it on the same thread).
    #[serde(skip)]
    last_status: FxHashMap<u64, u16>,
    /// Per thread, the request running on it (samples go to it).
    #[serde(skip)]
    running: FxHashMap<u64, Key>,
    /// Per thread, a request completed at its start, waiting for its route.
    #[serde(skip)]
    waiting: FxHashMap<u64, (Key, Open)>,
    /// Kestrel connections: activity → connection id, and their starts.
    #[serde(skip)]
    connections: KestrelLinks,
    #[serde(skip)]
    raw_paths: FxHashSet<String>,
    /// The kernel sampler's samples and waits, held for the requests they fell in.
    #[serde(skip)]
    kernel: KernelBits,
    /// Finished requests waiting [`SETTLE_NS`] for the kernel's late events, oldest first.
    #[serde(skip)]
    settling: VecDeque<Open>,
    #[serde(skip)]
    rows: Option<RowSink>,
}

/// The 16 bytes of an activity id.
fn key(g: nettrace::Guid) -> Key {
    g.0
}

/// The route of an endpoint's name: a minimal API's `HTTP: GET /items/{id}` is its template
/// `/items/{id}`; other names (a controller action's, a Razor page's) stay as they are.
pub(crate) fn route_template(endpoint: &str) -> String {
    endpoint
        .strip_prefix("HTTP: ")
        .and_then(|rest| rest.find('/').map(|i| rest[i..].to_string()))
        .unwrap_or_else(|| endpoint.to_string())
}

impl RequestModel {
    /// A model streaming its finished requests to `rows`.
    pub(crate) fn with_rows(rows: Option<RowSink>) -> RequestModel {
        RequestModel {
            slowest: Slowest::new(SLOWEST),
            rows,
            ..RequestModel::default()
        }
    }

    /// The request an activity belongs to (itself or the one that started it).
    fn owner(&self, id: &Key) -> Option<Key> {
        if self.open.contains_key(id) {
            return Some(*id);
        }
        self.alias.get(id).copied()
    }

    fn open_mut(&mut self, id: &Key) -> Option<&mut Open> {
        let owner = self.owner(id)?;
        self.open.get_mut(&owner)
    }

    fn on_start(&mut self, ev: &ModelEvent<'_>, id: Key) -> Result<(), ViewError> {
        let start = RequestStart::parse(ev.payload)?;
        self.flush_waiting(ev.thread_id);
        let connection = self
            .connections
            .connection(&key(ev.context.related_activity_id))
            .cloned();
        let queued_ns = connection
            .as_deref()
            .and_then(|c| self.connections.first_request(c, ev.ts_ns));
        let mut r = Open {
            start_ns: ev.ts_ns,
            method: start.method.to_string_lossy(),
            path: start.path.to_string_lossy(),
            connection,
            queued_ns,
            threads: vec![ev.thread_id],
            ..Open::default()
        };
        let early = self.early.get_mut(&id).and_then(|v| {
            let i = (0..v.len())
                .filter(|&i| v[i].0 >= ev.ts_ns)
                .min_by_key(|&i| v[i].0)?;
            Some(v.swap_remove(i))
        });
        if self.early.get(&id).is_some_and(Vec::is_empty) {
            self.early.remove(&id);
        }
        match early {
            Some((end, status)) => {
                r.end_ns = end;
                r.status = status;
                self.waiting.insert(ev.thread_id, (id, r));
            }
            None => {
                self.open.insert(id, r);
                self.running.insert(ev.thread_id, id);
            }
        }
        Ok(())
    }

    fn on_stop(&mut self, ev: &ModelEvent<'_>, id: Key) {
        let status = self.last_status.remove(&ev.thread_id);
        // A logging scope around the request (the host's, recorded when the session also
        // asks for the app's logs) is stopped before the request: the runtime's activity
        // tracker then ends the request's activity with it, and RequestStop carries an outer
        // id. The request is the one still running on this thread.
        let id = match self.running.get(&ev.thread_id) {
            Some(k) if !self.open.contains_key(&id) && !self.alias.contains_key(&id) => {
                match self.open.get(k) {
                    Some(r) if r.start_ns <= ev.ts_ns => *k,
                    _ => id,
                }
            }
            _ => id,
        };
        match self.open.remove(&id) {
            Some(mut r) if r.start_ns <= ev.ts_ns => {
                r.end_ns = ev.ts_ns;
                r.status = r.status.or(status);
                if !r.threads.contains(&ev.thread_id) {
                    r.threads.push(ev.thread_id);
                }
                self.finish_request(id, r);
            }
            other => {
                if let Some(r) = other {
                    self.open.insert(id, r);
                }
                self.early.entry(id).or_default().push((ev.ts_ns, status));
            }
        }
    }

    /// A request's own activity or a child's event on a thread: the thread runs it.
    fn touch(&mut self, id: &Key, thread: u64) {
        let Some(owner) = self.owner(id) else {
            return;
        };
        self.running.insert(thread, owner);
        if let Some(r) = self.open.get_mut(&owner) {
            if !r.threads.contains(&thread) {
                r.threads.push(thread);
            }
        }
    }

    fn on_diagnostic(&mut self, ev: &ModelEvent<'_>, id: Key) -> Result<(), ViewError> {
        let d = DiagnosticEvent::parse(ev.payload)?;
        let name = d.event_name.to_string_lossy();
        if name.ends_with("HttpRequestIn.Start") {
            let parent = key(ev.context.related_activity_id);
            if let Some(owner) = self.owner(&parent) {
                self.alias.insert(id, owner);
                if let Some(r) = self.open.get_mut(&owner) {
                    r.children.push(id);
                }
                self.touch(&id, ev.thread_id);
            }
        } else if name.ends_with("HttpRequestIn.Stop") {
            let status = d
                .arguments
                .get("StatusCode")
                .and_then(|s| s.to_string_lossy().trim().parse::<u16>().ok());
            if let Some(s) = status {
                self.last_status.insert(ev.thread_id, s);
                if let Some(r) = self.open_mut(&id) {
                    r.status = Some(s);
                }
            }
        }
        Ok(())
    }

    fn on_log(&mut self, ev: &ModelEvent<'_>, id: Key) -> Result<(), ViewError> {
        // `Message` (keyword 0x2) has the arguments; `FormattedMessage` (0x4) the text, and so
        // has `MessageJson` (0x8: what `clrspy logs` and the bundle ask for).
        let endpoint = if ev.context.event_name == "Message" {
            let m = LogMessage::parse(ev.payload)?;
            if !m.logger_name.eq_str(ENDPOINT_LOGGER) || !m.event_name.eq_str("ExecutingEndpoint")
            {
                return Ok(());
            }
            m.arguments.get("EndpointName").map(|e| e.to_string_lossy())
        } else {
            let d = ev.decode();
            if text(&d, "LoggerName") != ENDPOINT_LOGGER
                || text(&d, "EventName") != "ExecutingEndpoint"
            {
                return Ok(());
            }
            let m = text(&d, "FormattedMessage");
            m.strip_prefix("Executing endpoint '")
                .and_then(|rest| rest.strip_suffix('\''))
                .map(str::to_string)
        };
        let Some(endpoint) = endpoint.map(|e| route_template(&e)) else {
            return Ok(());
        };
        // The log's activity is the host's logging scope, a child of the request's that the
        // trace does not tie to it (its start is not recorded): the request is the one
        // running on the thread, whose start was written just before.
        let owner = self
            .owner(&id)
            .or_else(|| self.running.get(&ev.thread_id).copied());
        if let Some(r) = owner.and_then(|o| self.open.get_mut(&o)) {
            r.route = Some(endpoint);
            return Ok(());
        }
        // A request completed at its start on this thread: its route came after.
        if let Some((k, mut r)) = self.waiting.remove(&ev.thread_id) {
            r.route = Some(endpoint);
            self.finish_request(k, r);
        }
        Ok(())
    }

    fn on_sample(&mut self, ev: &ModelEvent<'_>) {
        let Some(id) = self.running.get(&ev.thread_id) else {
            return;
        };
        let Some(r) = self.open.get_mut(id) else {
            return;
        };
        // A thread's samples are mostly in its own stream, in time order, but a few come
        // out of order: only those inside the request count (checked again at its end).
        if ev.ts_ns < r.start_ns || r.samples.len() >= MAX_SAMPLES {
            return;
        }
        let managed =
            ThreadSampleType::from_payload(ev.payload) == Some(ThreadSampleType::Managed);
        r.samples.push((ev.ts_ns, ev.stack, managed));
    }

    fn flush_waiting(&mut self, thread: u64) {
        if let Some((k, r)) = self.waiting.remove(&thread) {
            self.finish_request(k, r);
        }
    }

    /// The route a request is counted under.
    fn route_of(&mut self, r: &Open) -> String {
        if let Some(route) = &r.route {
            return route.clone();
        }
        if self.raw_paths.contains(&r.path) || self.raw_paths.len() < MAX_ROUTES {
            self.raw_paths.insert(r.path.clone());
            return r.path.clone();
        }
        OTHER.to_string()
    }

    /// A request ended: no more events go to it; it is counted once settled.
    fn finish_request(&mut self, id: Key, r: Open) {
        for c in &r.children {
            self.alias.remove(c);
        }
        self.running.retain(|_, k| *k != id);
        self.settling.push_back(r);
    }

    /// Counts the finished requests that ended [`SETTLE_NS`] before `now_ns` (all of them
    /// with `None`: the end of the pass).
    fn settle(&mut self, now_ns: Option<i64>) {
        while let Some(r) = self.settling.front() {
            if now_ns.is_some_and(|now| r.end_ns.saturating_add(SETTLE_NS) >= now) {
                break;
            }
            if let Some(r) = self.settling.pop_front() {
                self.close(r);
            }
        }
        if self.kernel.prune_due() {
            let oldest = self
                .open
                .values()
                .chain(self.settling.iter())
                .map(|r| r.start_ns)
                .min();
            self.kernel.prune(oldest.or(now_ns).unwrap_or(i64::MIN));
        }
    }

    /// A kernel sample or wait (of the thread in its payload).
    fn on_kernel(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        use clr_events::clrspy;
        match ev.id {
            clrspy::ids::KERNEL_SAMPLE if !clrspy::KernelSample::is_blocked_mark(ev.payload) => {
                let thread = clrspy::KernelSample::thread_of(ev.payload, ev.thread_id)?;
                self.kernel.sample(u64::from(thread), ev.ts_ns, ev.stack);
            }
            clrspy::ids::KERNEL_WAIT => {
                let k = clrspy::KernelWait::parse(ev.payload)?;
                let thread = u64::from(k.sample.thread_id);
                self.kernel
                    .wait(thread, ev.ts_ns, k.duration_ns, ev.stack, k.preempted);
            }
            _ => {}
        }
        Ok(())
    }

    /// Counts a settled request: its route's statistics, its row, the slowest.
    fn close(&mut self, r: Open) {
        self.finished += 1;
        self.with_status += u64::from(r.status.is_some());
        self.with_route += u64::from(r.route.is_some());
        let duration = r.end_ns - r.start_ns;
        let route = self.route_of(&r);
        let mut route = route;
        let mut name = format!("{} {route}", r.method);
        if !self.routes.contains_key(&name) && self.routes.len() >= MAX_ROUTES {
            route = OTHER.to_string();
            name = format!("{} {OTHER}", r.method);
        }
        let stats = self.routes.entry(name).or_insert_with(|| RouteStats {
            method: r.method.clone(),
            route,
            ..RouteStats::default()
        });
        stats.durations.add(duration);
        let status_key = r
            .status
            .map_or_else(|| "unknown".to_string(), |s| s.to_string());
        *stats.statuses.entry(status_key).or_default() += 1;
        stats.errors += u64::from(r.status.is_some_and(|s| s >= 500));
        let start_ms = r.start_ns as f64 / 1e6;
        let duration_ms = duration as f64 / 1e6;
        if let Some(sink) = &self.rows {
            sink.write(&Row {
                start_ms,
                method: &r.method,
                path: &r.path,
                route: r.route.as_deref(),
                status: r.status,
                duration_ms,
            });
        }
        // The runtime's samples (one each), or what the kernel saw of its threads.
        let mut bits: Vec<Bit> = r
            .samples
            .iter()
            .filter(|s| s.0 <= r.end_ns)
            .map(|&(ts_ns, stack, managed)| Bit {
                ts_ns,
                stack,
                running: managed,
                units: 1,
            })
            .collect();
        if self.kernel.any() {
            for &t in &r.threads {
                self.kernel.between(t, r.start_ns, r.end_ns, &mut bits);
            }
        }
        self.samples += bits.iter().map(|b| b.units).sum::<u64>();
        if self.slowest.would_keep(duration) {
            let mut by_stack: FxHashMap<Option<StackId>, (u64, u64)> = FxHashMap::default();
            for b in &bits {
                let e = by_stack.entry(b.stack).or_default();
                if b.running {
                    e.0 += b.units;
                } else {
                    e.1 += b.units;
                }
            }
            let mut samples: Vec<StackSamples> = by_stack
                .into_iter()
                .map(|(stack, (managed, external))| StackSamples {
                    stack,
                    managed,
                    external,
                })
                .collect();
            samples.sort_by(|a, b| {
                (b.managed + b.external)
                    .cmp(&(a.managed + a.external))
                    .then_with(|| a.stack.cmp(&b.stack))
            });
            self.slowest.offer(
                duration,
                ServedRequest {
                    start_ms,
                    method: r.method,
                    path: r.path,
                    route: r.route,
                    status: r.status,
                    duration_ms,
                    connection_id: r.connection,
                    queued_ms: r.queued_ns.map(|q| q as f64 / 1e6),
                    threads: r.threads,
                    samples,
                },
            );
        }
    }
}

const SAMPLES: Wanted = Wanted {
    provider: Provider::Known(KnownProvider::SampleProfiler),
    id: 0,
    stack: true,
    windowed: true,
    event: None,
};

/// A kernel sampler's event, with its stack.
const fn kernel(id: u32) -> Wanted {
    Wanted {
        provider: Provider::Clrspy,
        id,
        stack: true,
        windowed: true,
        event: None,
    }
}

impl Model for RequestModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(HOSTING, "RequestStart"),
        Wanted::named(HOSTING, "RequestStop"),
        Wanted::named(HOSTING, "UnhandledException"),
        Wanted::named(KESTREL, "ConnectionStart"),
        Wanted::named(KESTREL, "ConnectionStop"),
        Wanted::named(DIAGNOSTIC_SOURCE, "Activity1Start"),
        Wanted::named(DIAGNOSTIC_SOURCE, "Activity1Stop"),
        Wanted::named(LOGGING, "Message"),
        Wanted::named(LOGGING, "FormattedMessage"),
        Wanted::named(LOGGING, "MessageJson"),
        Wanted::named(LOGGING, "ActivityJsonStart"),
        Wanted::named(LOGGING, "ActivityJsonStop"),
        SAMPLES,
        kernel(clr_events::clrspy::ids::KERNEL_SAMPLE),
        kernel(clr_events::clrspy::ids::KERNEL_WAIT),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        self.settle(Some(ev.ts_ns));
        match ev.provider {
            Provider::Known(_) => {
                self.on_sample(ev);
                return Ok(());
            }
            Provider::Clrspy => return self.on_kernel(ev),
            Provider::Named(_) => {}
        }
        let id = key(ev.context.activity_id);
        let unpaired = ev.context.activity_id.is_zero();
        match (ev.context.provider, ev.context.event_name) {
            (HOSTING, "RequestStart" | "RequestStop") if unpaired => {
                self.without_activity_id += 1;
                if ev.context.event_name == "RequestStart" {
                    self.started += 1;
                }
            }
            (HOSTING, "RequestStart") => {
                self.started += 1;
                self.on_start(ev, id)?;
            }
            (HOSTING, "RequestStop") => self.on_stop(ev, id),
            (HOSTING, _) => self.unhandled_exceptions += 1,
            (KESTREL, "ConnectionStart") => {
                let c = ConnectionStart::parse(ev.payload)?;
                self.connections
                    .start(id, c.connection_id.to_string_lossy(), ev.ts_ns);
            }
            (KESTREL, _) => self.connections.stop_connection(&id),
            (DIAGNOSTIC_SOURCE, _) if !unpaired => self.on_diagnostic(ev, id)?,
            // A logging scope between a connection and its requests: the requests' related
            // activity is the scope's, whose related one is the connection's.
            (LOGGING, "ActivityJsonStart") => {
                let parent = key(ev.context.related_activity_id);
                self.connections.nest(id, &parent);
            }
            (LOGGING, "ActivityJsonStop") => self.connections.stop_scope(&id),
            (LOGGING, _) if !unpaired => self.on_log(ev, id)?,
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) {
        let threads: Vec<u64> = self.waiting.keys().copied().collect();
        for t in threads {
            self.flush_waiting(t);
        }
        self.settle(None);
        self.in_flight = self.open.len() as u64;
        self.finished_unstarted = self.early.values().map(|v| v.len() as u64).sum();
    }
}

fn make(init: &ModelInit<'_>) -> Box<dyn AnyModel> {
    Box::new(RequestModel::with_rows(init.rows.cloned()))
}

/// The registry's entry: requests an ASP.NET Core app served, by route, the slowest with what their
/// threads did.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<RequestModel>(
    "requests",
    make,
);
