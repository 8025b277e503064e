//! Outgoing HTTP requests one by one (`System.Net.Http`, with the name resolutions, socket
//! connects and TLS handshakes HttpClient runs for them): each request's status, duration,
//! time in the connection pool's queue, DNS, connect and TLS time and whether it opened a
//! connection; by host, bounded aggregates ([`Sketch`]) and errors by kind; the slowest
//! requests ([`Slowest`]); and every request streamed to the model's [`RowSink`] as it ends.
//!
//! How the events tie to their request (measured on .NET 10 with
//! `System.Threading.Tasks.TplEventSource:0x80`): `RequestStart`, `RequestLeftQueue`,
//! `ConnectionEstablished`, `RequestFailed` and `RequestStop` carry the request's activity
//! id; `ResolutionStart`, `ConnectStart`, `HandshakeStart` and `RequestHeadersStart` start a
//! child activity whose *related* activity id is the request's, and their stops and failures
//! carry only the child's id. A trace's events come in the order of the runtime's per-thread
//! buffers, not of time, so each piece is kept under its id whichever comes first, and a
//! finished request is written out once the trace has gone `HOLD_NS` past its stop (the
//! stragglers of its children have come by then). Open requests are held only until then.

use std::collections::{BTreeMap, VecDeque};

use clr_events::net_http::{self as ev, CONNECTION_REFUSED};
use clr_events::ViewError;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::model_entry::{AnyModel, ModelEntry, ModelInit};
use crate::rows::RowSink;
use crate::sketch::{Sketch, Slowest};
use crate::stacks::StackId;
use crate::{Model, ModelEvent, Wanted};

/// How long past a request's stop its events may still come (trace time, ns).
pub(crate) const HOLD_NS: i64 = 1_000_000_000;
/// Pieces of a request (or of a child operation) not completed this long after they were
/// last seen are dropped (a stop whose start was before the trace).
const STALE_NS: i64 = 10_000_000_000;
/// The slowest requests kept (reports show `--top` of them).
pub(crate) const SLOWEST_KEPT: usize = 100;
/// Distinct messages kept per host and error kind; the rest are counted together.
const MESSAGES_KEPT: usize = 20;

type Id = [u8; 16];

/// One finished request.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HttpRequest {
    /// When it started, ms since the trace started.
    pub start_ms: f64,
    /// The method: `null` (System.Net.Http's events do not carry it).
    pub method: Option<String>,
    /// `scheme://host:port`: its connection pool.
    pub host: String,
    /// Path and query as the event writes it (.NET 9+ writes a query as `?*`).
    pub path: String,
    /// The HTTP version of its connection (else the one asked for), e.g. `1.1`.
    pub version: String,
    /// The status; -1 when no response came.
    pub status: i32,
    /// Start to stop, ms.
    pub duration_ms: f64,
    /// Time waiting in the connection pool's queue, ms (0 when it did not wait).
    pub queue_ms: f64,
    /// Name resolution for it, ms (`null`: none ran for it).
    pub dns_ms: Option<f64>,
    /// Socket connect for it, ms (`null`: none).
    pub connect_ms: Option<f64>,
    /// TLS handshake for it, ms (`null`: none).
    pub tls_ms: Option<f64>,
    /// `new` when it opened its connection, `reused` when it was sent on an open one,
    /// `null` when it never got one.
    pub connection: Option<&'static str>,
    /// The connection's id (.NET 8+).
    pub connection_id: Option<i64>,
    /// The error's kind: `4xx`, `5xx`, `timeout`, `refused`, `dns`, `tls`, `connect`,
    /// `canceled`, `other`; `null` when it succeeded.
    pub error_kind: Option<&'static str>,
    /// The failure's message (`RequestFailed`), if any.
    pub error: Option<String>,
}

/// The line `--requests-jsonl` writes per request.
#[derive(Serialize)]
struct Row<'a> {
    start_ms: f64,
    method: Option<&'a str>,
    host: &'a str,
    path: &'a str,
    status: i32,
    duration_ms: f64,
    queue_ms: f64,
    dns_ms: Option<f64>,
    tls_ms: Option<f64>,
    error: Option<&'a str>,
}

/// One kind of error of a host: how many, with which messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ErrorKind {
    /// How many requests.
    pub count: u64,
    /// Their messages (a status class's: the status) and how many had each, at most 20
    /// (the rest under `(other messages)`).
    pub messages: BTreeMap<String, u64>,
}

/// One host's requests (a connection pool: `scheme://host:port`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostCalls {
    /// Requests by status (-1: no response).
    pub statuses: BTreeMap<i32, u64>,
    /// Errors by kind.
    pub errors: BTreeMap<&'static str, ErrorKind>,
    /// Durations.
    pub duration: Sketch,
    /// Time in the pool's queue, of the requests that waited.
    pub queue: Sketch,
    /// Requests that waited for a connection they did not open themselves (one another
    /// request opened or freed): the pool had none free — pool exhaustion when many did.
    pub waited_for_connection: u64,
    /// Name resolutions.
    pub dns: Sketch,
    /// Socket connects.
    pub connect: Sketch,
    /// TLS handshakes.
    pub tls: Sketch,
    /// Requests that opened their connection.
    pub new_connections: u64,
    /// Requests sent on a connection already open.
    pub reused_connections: u64,
    /// The stacks that sent the requests that opened a connection (`RequestStart`'s stack:
    /// the app's call, before its first `await`), with their counts.
    #[serde(skip)]
    pub new_connection_stacks: FxHashMap<StackId, u64>,
}

/// What a request's children are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChildKind {
    Dns,
    Connect,
    Tls,
    Headers,
}

/// A child operation's pieces, in whatever order they came.
#[derive(Clone, Debug)]
struct Child {
    kind: ChildKind,
    request: Option<Id>,
    start: Option<i64>,
    stop: Option<i64>,
    failed: Option<&'static str>,
    connection_id: Option<i64>,
    seen: i64,
}

/// A request's pieces, in whatever order they came.
#[derive(Clone, Debug, Default)]
struct Open {
    start: Option<(i64, String, String, (u8, u8))>,
    stop: Option<(i64, Option<i32>)>,
    queue_ms: Option<f64>,
    version: Option<(u8, u8)>,
    new_connection: bool,
    connection_id: Option<i64>,
    dns_ns: Option<i64>,
    connect_ns: Option<i64>,
    tls_ns: Option<i64>,
    failed: bool,
    message: Option<String>,
    child_failure: Option<&'static str>,
    seen: i64,
    done: bool,
    stack: Option<StackId>,
}

/// Outgoing HTTP requests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HttpModel {
    /// Finished requests.
    pub requests: u64,
    /// By host (`scheme://host:port`).
    pub hosts: BTreeMap<String, HostCalls>,
    /// The slowest requests, slowest first (after the pass).
    pub slowest: Vec<HttpRequest>,
    /// Started and not finished by the end of the trace.
    pub in_flight: u64,
    /// Stops whose start is not in the trace (started before it).
    pub without_start: u64,
    /// HTTP events without an activity id, not tied to their request: the recording did not
    /// enable `System.Threading.Tasks.TplEventSource` with keyword 0x80.
    pub without_activity_id: u64,
    #[serde(skip)]
    kept: Slowest<HttpRequest>,
    #[serde(skip)]
    open: FxHashMap<Id, Open>,
    #[serde(skip)]
    children: FxHashMap<Id, Child>,
    #[serde(skip)]
    done: VecDeque<(Id, i64)>,
    /// Open connections' HTTP versions, by id.
    #[serde(skip)]
    connections: FxHashMap<i64, (u8, u8)>,
    #[serde(skip)]
    latest: i64,
    #[serde(skip)]
    swept: i64,
    #[serde(skip)]
    sink: Option<RowSink>,
}

/// `make` of the registry's entry: the model with its row sink.
fn make(init: &ModelInit<'_>) -> Box<dyn AnyModel> {
    Box::new(HttpModel {
        kept: Slowest::new(SLOWEST_KEPT),
        sink: init.rows.cloned(),
        ..HttpModel::default()
    })
}

/// The kind of error of a request that got `status` (-1: none) and failed with `message`,
/// a child operation having failed with `child` — `None` when it succeeded.
pub(crate) fn error_kind(status: i32, message: Option<&str>, child: Option<&'static str>) -> Option<&'static str> {
    match status {
        500..=599 => return Some("5xx"),
        400..=499 => return Some("4xx"),
        s if s >= 0 && message.is_none() => return None,
        _ => {}
    }
    if let Some(c) = child {
        return Some(c);
    }
    let m = message.unwrap_or("");
    let has = |s: &str| m.contains(s);
    Some(if has("Timeout") || has("timed out") {
        "timeout"
    } else if has("refused") {
        "refused"
    } else if has("SSL") || has("TLS") {
        "tls"
    } else if has("Name or service not known") || has("No such host") || has("nodename nor servname") {
        "dns"
    } else if has("canceled") || has("cancelled") {
        "canceled"
    } else {
        "other"
    })
}

fn version_text((major, minor): (u8, u8)) -> String {
    format!("{major}.{minor}")
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

impl HttpModel {
    fn open_mut(&mut self, id: Id, ts: i64) -> &mut Open {
        let o = self.open.entry(id).or_default();
        o.seen = o.seen.max(ts);
        o
    }

    /// Queues a request whose start and stop are both in for writing out.
    fn check_done(&mut self, id: Id) {
        if let Some(o) = self.open.get_mut(&id) {
            if !o.done {
                if let (Some(_), Some((stop, _))) = (&o.start, o.stop) {
                    o.done = true;
                    self.done.push_back((id, stop));
                }
            }
        }
    }

    fn child_mut(&mut self, id: Id, kind: ChildKind, ts: i64) -> &mut Child {
        let c = self.children.entry(id).or_insert(Child {
            kind,
            request: None,
            start: None,
            stop: None,
            failed: None,
            connection_id: None,
            seen: ts,
        });
        c.seen = c.seen.max(ts);
        c
    }

    /// Hands a child whose pieces are all in to its request.
    fn resolve_child(&mut self, id: Id) {
        let Some(c) = self.children.get(&id) else {
            return;
        };
        let Some(request) = c.request else {
            return;
        };
        let c = c.clone();
        if c.kind == ChildKind::Headers {
            self.children.remove(&id);
            let o = self.open_mut(request, c.seen);
            o.connection_id = o.connection_id.or(c.connection_id);
            return;
        }
        let (Some(start), Some(stop)) = (c.start, c.stop) else {
            return;
        };
        self.children.remove(&id);
        let o = self.open_mut(request, c.seen);
        let took = stop - start;
        let slot = match c.kind {
            ChildKind::Dns => &mut o.dns_ns,
            ChildKind::Connect => &mut o.connect_ns,
            _ => &mut o.tls_ns,
        };
        *slot = Some(slot.unwrap_or(0) + took);
        if c.failed.is_some() {
            o.child_failure = c.failed;
        }
    }

    /// Writes out the finished requests the trace has gone [`HOLD_NS`] past (all at the end).
    fn flush(&mut self, all: bool) {
        while let Some(&(id, stop)) = self.done.front() {
            if !all && stop + HOLD_NS > self.latest {
                break;
            }
            self.done.pop_front();
            // Only the request this entry queued (its id may have been reused since).
            let same = self
                .open
                .get(&id)
                .is_some_and(|o| o.done && o.stop.map(|s| s.0) == Some(stop));
            if same {
                if let Some(o) = self.open.remove(&id) {
                    self.finished(o);
                }
            }
        }
    }

    /// Drops pieces that can no longer complete.
    fn sweep(&mut self) {
        let before = self.latest - STALE_NS;
        self.children.retain(|_, c| c.seen >= before);
        let mut orphans = 0;
        self.open.retain(|_, o| {
            let keep = o.start.is_some() || o.seen >= before;
            if !keep && o.stop.is_some() {
                orphans += 1;
            }
            keep
        });
        self.without_start += orphans;
    }

    fn finished(&mut self, o: Open) {
        let (Some((start, host, path, asked)), Some((stop, status))) = (o.start, o.stop) else {
            return;
        };
        let status = status.unwrap_or(if o.failed { -1 } else { 0 });
        let kind = error_kind(status, o.message.as_deref(), o.child_failure)
            .or_else(|| (status < 0 || o.failed).then_some("other"));
        let version = o
            .version
            .or_else(|| o.connection_id.and_then(|c| self.connections.get(&c).copied()))
            .unwrap_or(asked);
        let connection = if o.new_connection {
            Some("new")
        } else if o.connection_id.is_some() {
            Some("reused")
        } else {
            None
        };
        let r = HttpRequest {
            start_ms: ms(start),
            method: None,
            host,
            path,
            version: version_text(version),
            status,
            duration_ms: ms(stop - start),
            queue_ms: o.queue_ms.unwrap_or(0.0),
            dns_ms: o.dns_ns.map(ms),
            connect_ms: o.connect_ns.map(ms),
            tls_ms: o.tls_ns.map(ms),
            connection,
            connection_id: o.connection_id,
            error_kind: kind,
            error: o.message,
        };
        self.requests += 1;
        let h = self.hosts.entry(r.host.clone()).or_default();
        *h.statuses.entry(status).or_default() += 1;
        h.duration.add(stop - start);
        if let Some(q) = o.queue_ms {
            h.queue.add((q * 1e6) as i64);
            // Its own connection attempt (resolve, connect, handshake) explains its wait.
            let own = o.new_connection || o.dns_ns.is_some() || o.connect_ns.is_some();
            if !own {
                h.waited_for_connection += 1;
            }
        }
        for (sketch, v) in [(&mut h.dns, o.dns_ns), (&mut h.connect, o.connect_ns), (&mut h.tls, o.tls_ns)] {
            if let Some(v) = v {
                sketch.add(v);
            }
        }
        match connection {
            Some("new") => {
                h.new_connections += 1;
                if let Some(stack) = o.stack {
                    *h.new_connection_stacks.entry(stack).or_default() += 1;
                }
            }
            Some(_) => h.reused_connections += 1,
            None => {}
        }
        if let Some(kind) = kind {
            let e = h.errors.entry(kind).or_default();
            e.count += 1;
            let message = match (&r.error, kind) {
                (Some(m), _) => m.clone(),
                (None, "4xx" | "5xx") => format!("status {status}"),
                (None, _) => "(no message)".to_string(),
            };
            if e.messages.len() < MESSAGES_KEPT || e.messages.contains_key(&message) {
                *e.messages.entry(message).or_default() += 1;
            } else {
                *e.messages.entry("(other messages)".into()).or_default() += 1;
            }
        }
        if let Some(sink) = &self.sink {
            sink.write(&Row {
                start_ms: r.start_ms,
                method: r.method.as_deref(),
                host: &r.host,
                path: &r.path,
                status: r.status,
                duration_ms: r.duration_ms,
                queue_ms: r.queue_ms,
                dns_ms: r.dns_ms,
                tls_ms: r.tls_ms,
                error: r.error.as_deref(),
            });
        }
        let key = stop - start;
        if self.kept.would_keep(key) {
            self.kept.offer(key, r);
        }
    }

    fn on_http(&mut self, e: &ModelEvent<'_>, id: Id, related: Option<Id>) -> Result<(), ViewError> {
        let (p, v, ts) = (e.payload, e.version, e.ts_ns);
        // A finished request's id used again by a new one: the finished one is written out
        // now (its children have had their time: the new request started after its stop).
        let reused = e.context.event_name == "RequestStart"
            && self
                .open
                .get(&id)
                .is_some_and(|o| o.done && o.stop.is_some_and(|(stop, _)| stop <= ts));
        if reused {
            if let Some(o) = self.open.remove(&id) {
                self.finished(o);
            }
        }
        match e.context.event_name {
            "RequestStart" => {
                let s = ev::RequestStart::parse(p, v)?;
                let host = format!(
                    "{}://{}:{}",
                    s.scheme.to_string_lossy(),
                    s.host.to_string_lossy(),
                    s.port
                );
                let start = (ts, host, s.path_and_query.to_string_lossy(), (s.version_major, s.version_minor));
                let o = self.open_mut(id, ts);
                o.start = Some(start);
                o.stack = e.stack;
                self.check_done(id);
            }
            "RequestStop" => {
                let s = ev::RequestStop::parse(p, v)?;
                self.open_mut(id, ts).stop = Some((ts, s.status_code));
                self.check_done(id);
            }
            "RequestFailed" => {
                let f = ev::RequestFailed::parse(p, v)?;
                let o = self.open_mut(id, ts);
                o.failed = true;
                o.message = f.exception_message.map(|m| m.to_string_lossy());
            }
            "RequestLeftQueue" => {
                let q = ev::RequestLeftQueue::parse(p, v)?;
                let o = self.open_mut(id, ts);
                o.queue_ms = Some(q.time_on_queue_ms);
                o.version = o.version.or(Some((q.version_major, q.version_minor)));
            }
            "ConnectionEstablished" => {
                let c = ev::Connection::parse_established(p, v)?;
                if let Some(cid) = c.connection_id {
                    self.connections.insert(cid, (c.version_major, c.version_minor));
                }
                let o = self.open_mut(id, ts);
                o.new_connection = true;
                o.version = Some((c.version_major, c.version_minor));
                o.connection_id = c.connection_id.or(o.connection_id);
            }
            "ConnectionClosed" => {
                if let Some(cid) = ev::Connection::parse_closed(p, v)?.connection_id {
                    self.connections.remove(&cid);
                }
            }
            // RequestHeadersStart: a child of the request, naming its connection.
            _ => {
                let h = ev::RequestHeadersStart::parse(p, v)?;
                let c = self.child_mut(id, ChildKind::Headers, ts);
                c.request = related;
                c.connection_id = h.connection_id;
                self.resolve_child(id);
            }
        }
        Ok(())
    }

    fn on_child(&mut self, e: &ModelEvent<'_>, id: Id, related: Option<Id>) -> Result<(), ViewError> {
        let (p, v, ts) = (e.payload, e.version, e.ts_ns);
        let name = e.context.event_name;
        let (kind, what) = if let Some(w) = name.strip_prefix("Resolution") {
            (ChildKind::Dns, w)
        } else if let Some(w) = name.strip_prefix("Connect") {
            (ChildKind::Connect, w)
        } else if let Some(w) = name.strip_prefix("Handshake") {
            (ChildKind::Tls, w)
        } else {
            return Ok(());
        };
        let failure = match (kind, what) {
            (ChildKind::Connect, "Failed") => {
                let f = ev::ConnectFailed::parse(p, v)?;
                Some(match f.error {
                    CONNECTION_REFUSED => "refused",
                    10060 => "timeout",
                    _ => "connect",
                })
            }
            (ChildKind::Tls, "Failed") => {
                ev::HandshakeFailed::parse(p, v)?;
                Some("tls")
            }
            (_, "Failed") => Some("dns"),
            (ChildKind::Tls, "Start") => {
                if ev::HandshakeStart::parse(p, v)?.is_server {
                    // A server's handshake belongs to no outgoing request.
                    return Ok(());
                }
                None
            }
            _ => None,
        };
        let c = self.child_mut(id, kind, ts);
        match what {
            "Start" => {
                c.start = Some(ts);
                c.request = related;
            }
            "Stop" => c.stop = Some(ts),
            _ => c.failed = failure,
        }
        if what == "Start" && related.is_none() {
            // Not run for a request (a socket of the program's own).
            self.children.remove(&id);
            return Ok(());
        }
        self.resolve_child(id);
        Ok(())
    }
}

impl Model for HttpModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(ev::HTTP, "RequestStart").with_stack(),
        Wanted::named(ev::HTTP, "RequestStop"),
        Wanted::named(ev::HTTP, "RequestFailed"),
        Wanted::named(ev::HTTP, "RequestLeftQueue"),
        Wanted::named(ev::HTTP, "ConnectionEstablished"),
        Wanted::named(ev::HTTP, "ConnectionClosed"),
        Wanted::named(ev::HTTP, "RequestHeadersStart"),
        Wanted::named(ev::NAME_RESOLUTION, "ResolutionStart"),
        Wanted::named(ev::NAME_RESOLUTION, "ResolutionStop"),
        Wanted::named(ev::NAME_RESOLUTION, "ResolutionFailed"),
        Wanted::named(ev::SOCKETS, "ConnectStart"),
        Wanted::named(ev::SOCKETS, "ConnectStop"),
        Wanted::named(ev::SOCKETS, "ConnectFailed"),
        Wanted::named(ev::SECURITY, "HandshakeStart"),
        Wanted::named(ev::SECURITY, "HandshakeStop"),
        Wanted::named(ev::SECURITY, "HandshakeFailed"),
    ];

    fn on_event(&mut self, e: &ModelEvent<'_>) -> Result<(), ViewError> {
        let http = e.context.provider == ev::HTTP;
        if e.context.activity_id.is_zero() {
            // ConnectionClosed of an idle connection has none: it needs none.
            if http && e.context.event_name == "ConnectionClosed" {
                if let Some(cid) = ev::Connection::parse_closed(e.payload, e.version)?.connection_id {
                    self.connections.remove(&cid);
                }
            } else if http {
                self.without_activity_id += 1;
            }
            return Ok(());
        }
        self.latest = self.latest.max(e.ts_ns);
        let id = e.context.activity_id.0;
        let related = Some(e.context.related_activity_id)
            .filter(|r| !r.is_zero())
            .map(|r| r.0);
        if http {
            self.on_http(e, id, related)?;
        } else {
            self.on_child(e, id, related)?;
        }
        self.flush(false);
        if self.latest - self.swept > STALE_NS {
            self.sweep();
            self.swept = self.latest;
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.flush(true);
        let mut in_flight = 0;
        let mut orphans = 0;
        for o in self.open.values() {
            match (&o.start, &o.stop) {
                (Some(_), None) => in_flight += 1,
                (None, Some(_)) => orphans += 1,
                _ => {}
            }
        }
        self.open.clear();
        self.children.clear();
        self.in_flight = in_flight;
        self.without_start += orphans;
        self.slowest = self.kept.sorted().into_iter().cloned().collect();
    }
}

/// The registry's entry: outgoing HTTP requests one by one: status, duration, pool queue, DNS,
/// connect and TLS time, errors by kind.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<HttpModel>(
    "http",
    make,
);
