//! The `http` report: outgoing HttpClient requests — by host (a connection pool): how many,
//! with which statuses, errors by kind with their messages, duration percentiles, time
//! waiting for a connection and whether requests waited for one another held (pool
//! exhaustion); and the slowest requests one by one, with their queue, DNS, connect and TLS
//! time. Every request streams to `--requests-jsonl` (the `http` model's rows).

use std::fmt::Write as _;
use std::io::{self, Write};

use clrspy_analysis::sketch::SketchSummary;
use clrspy_analysis::sources::http::{HostCalls, HttpModel, HttpRequest};
use clrspy_analysis::Analysis;
use serde::Serialize;

use super::def::ReportDef;
use super::needs::{Models, Needs};
use super::rows::NameCount;
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::text::TextStyle;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;
use crate::units::fit;

/// What the report needs recorded: the `net` profile's System.Net providers and the
/// activity ids that tie their events to a request.
const NEEDS: Needs = Needs::runtime(0, 4)
    .with_providers(
        "System.Net.Http:0xFFFFFFFFFFFFFFFF:5,System.Net.NameResolution:0xFFFFFFFFFFFFFFFF:5,System.Net.Sockets:0xFFFFFFFFFFFFFFFF:5,System.Net.Security:0xFFFFFFFFFFFFFFFF:5,System.Threading.Tasks.TplEventSource:0x80:4",
    )
    .with_profile("net");

/// The `http` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "http",
    description: "Outgoing HTTP requests: by host, errors by kind, pool waits, the slowest with DNS/TLS time",
    needs: NEEDS,
    models: Models::Named(&["http"]),
    rows: Some("http"),
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 64,
        build: |i| Box::new(HttpSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// One kind of error of a host.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct HostError {
    /// `4xx`, `5xx`, `timeout`, `refused`, `dns`, `tls`, `connect`, `canceled` or `other`.
    pub(crate) kind: &'static str,
    /// Requests.
    pub(crate) count: u64,
    /// Their messages (a status class's: `status N`), most first.
    pub(crate) messages: Vec<NameCount>,
}

/// One host's requests.
#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    /// `scheme://host:port`: its connection pool.
    pub host: String,
    /// Requests finished.
    pub count: u64,
    /// Requests by status (`-1`: no response).
    pub statuses: serde_json::Map<String, serde_json::Value>,
    /// Requests that failed (an error kind), of `count`.
    pub errors: u64,
    /// Errors by kind, most first.
    pub(crate) error_kinds: Vec<HostError>,
    /// Durations, ms.
    pub duration: SketchSummary,
    /// Time waiting in the pool's queue, ms, of the requests that waited.
    pub(crate) pool_wait: SketchSummary,
    /// Requests that waited for a connection they did not open (one another request held).
    pub waited_for_connection: u64,
    /// True when any did: the pool had no free connection (pool exhaustion).
    pub(crate) pool_exhausted: bool,
    /// Name resolutions, ms.
    pub dns: SketchSummary,
    /// Socket connects, ms.
    pub connect: SketchSummary,
    /// TLS handshakes, ms.
    pub tls: SketchSummary,
    /// Requests that opened their connection.
    pub new_connections: u64,
    /// Requests sent on a connection already open.
    pub reused_connections: u64,
}

/// Outgoing HTTP requests.
#[derive(Clone, Debug, Serialize)]
pub struct HttpReport {
    /// Requests finished in the trace.
    pub requests: u64,
    /// Of them, failed (a 4xx/5xx status or no response).
    pub failed: u64,
    /// By host, most requests first.
    pub hosts: Vec<HostReport>,
    /// The slowest requests (`--top`), slowest first.
    pub slowest: Vec<HttpRequest>,
    /// Started and not finished by the end of the trace.
    pub in_flight: u64,
    /// Stops whose start was before the trace.
    pub without_start: u64,
    /// HTTP events without an activity id (not tied to a request).
    pub without_activity_id: u64,
    /// What to record when the trace has no requests.
    #[serde(skip)]
    missing: String,
}

fn host_report(host: &str, c: &HostCalls) -> HostReport {
    let mut error_kinds: Vec<HostError> = c
        .errors
        .iter()
        .map(|(kind, e)| {
            let mut messages: Vec<NameCount> = e
                .messages
                .iter()
                .map(|(m, n)| NameCount {
                    name: m.clone(),
                    count: *n,
                })
                .collect();
            messages.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
            HostError {
                kind,
                count: e.count,
                messages,
            }
        })
        .collect();
    error_kinds.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.kind.cmp(b.kind)));
    HostReport {
        host: host.to_string(),
        count: c.duration.count(),
        statuses: c
            .statuses
            .iter()
            .map(|(s, n)| (s.to_string(), serde_json::Value::from(*n)))
            .collect(),
        errors: error_kinds.iter().map(|e| e.count).sum(),
        error_kinds,
        duration: c.duration.summary(),
        pool_wait: c.queue.summary(),
        waited_for_connection: c.waited_for_connection,
        pool_exhausted: c.waited_for_connection > 0,
        dns: c.dns.summary(),
        connect: c.connect.summary(),
        tls: c.tls.summary(),
        new_connections: c.new_connections,
        reused_connections: c.reused_connections,
    }
}

/// Builds the http report.
pub fn build(a: &Analysis, o: &ReportOptions) -> HttpReport {
    let empty = HttpModel::default();
    let m = a.model::<HttpModel>().unwrap_or(&empty);
    let mut hosts: Vec<HostReport> = m.hosts.iter().map(|(h, c)| host_report(h, c)).collect();
    hosts.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.host.cmp(&b.host)));
    HttpReport {
        requests: m.requests,
        failed: hosts.iter().map(|h| h.errors).sum(),
        hosts,
        slowest: m.slowest.iter().take(o.top).cloned().collect(),
        in_flight: m.in_flight,
        without_start: m.without_start,
        without_activity_id: m.without_activity_id,
        missing: NEEDS.missing_line("outgoing HTTP requests (System.Net.Http events)"),
    }
}

/// `12.3`, or `-` for none.
fn ms_or_dash(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

/// The errors by kind, all hosts together: `5xx 3, refused 2`.
fn kinds_line(hosts: &[HostReport]) -> String {
    let mut kinds: std::collections::BTreeMap<&str, u64> = Default::default();
    for e in hosts.iter().flat_map(|h| &h.error_kinds) {
        *kinds.entry(e.kind).or_default() += e.count;
    }
    let mut v: Vec<(&str, u64)> = kinds.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl HttpReport {
    fn heading(&self) -> String {
        let mut s = format!(
            "HTTP requests (outgoing): {} to {} host{}",
            self.requests,
            self.hosts.len(),
            if self.hosts.len() == 1 { "" } else { "s" }
        );
        if self.failed > 0 {
            let _ = write!(s, ", {} failed ({})", self.failed, kinds_line(&self.hosts));
        }
        s
    }

    fn write_hosts(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let room = style.room(72).min(60);
        writeln!(
            out,
            "\n  {:<room$}  {:>6}  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  {:>6}",
            "host", "count", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms", "waited"
        )?;
        for h in &self.hosts {
            writeln!(
                out,
                "  {:<room$}  {:>6}  {:>6}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}  {:>6}",
                fit(&h.host, room),
                h.count,
                h.errors,
                h.duration.p50_ms,
                h.duration.p95_ms,
                h.duration.p99_ms,
                h.duration.max_ms,
                h.waited_for_connection
            )?;
        }
        Ok(())
    }

    fn write_errors(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if self.failed == 0 {
            return Ok(());
        }
        writeln!(out, "\n  Errors by kind:")?;
        for h in &self.hosts {
            for e in &h.error_kinds {
                writeln!(out, "  {:>8}  {:<8} {}", e.count, e.kind, fit(&h.host, style.room(22)))?;
                for m in e.messages.iter().take(3) {
                    writeln!(out, "  {:>8}    {}", m.count, fit(&m.name, style.room(16)))?;
                }
            }
        }
        Ok(())
    }

    fn write_pools(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        for h in self.hosts.iter().filter(|h| h.pool_exhausted) {
            writeln!(out, "\n  Pool exhausted: {}", fit(&h.host, style.room(18)))?;
            writeln!(
                out,
                "    {} request{} waited for a connection another request held (queue p50 {:.1} ms, max {:.1} ms):",
                h.waited_for_connection,
                if h.waited_for_connection == 1 { "" } else { "s" },
                h.pool_wait.p50_ms,
                h.pool_wait.max_ms
            )?;
            writeln!(
                out,
                "    more connections (SocketsHttpHandler.MaxConnectionsPerServer) or fewer at once"
            )?;
        }
        Ok(())
    }

    fn write_slowest(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if self.slowest.is_empty() {
            return Ok(());
        }
        writeln!(out, "\n  Slowest requests (ms; --json has their start times):")?;
        writeln!(
            out,
            "  {:>8}  {:>7}  {:>7}  {:>6}  {:>7}  {:>6}  {:<6}  request",
            "duration", "status", "queue", "dns", "connect", "tls", "conn"
        )?;
        for r in &self.slowest {
            let status = match r.error_kind {
                Some(k) if r.status < 0 => k.to_string(),
                _ => r.status.to_string(),
            };
            writeln!(
                out,
                "  {:>8.1}  {:>7}  {:>7.1}  {:>6}  {:>7}  {:>6}  {:<6}  {}",
                r.duration_ms,
                status,
                r.queue_ms,
                ms_or_dash(r.dns_ms),
                ms_or_dash(r.connect_ms),
                ms_or_dash(r.tls_ms),
                r.connection.unwrap_or("-"),
                fit(&format!("{}{}", r.host, r.path), style.room(64))
            )?;
        }
        Ok(())
    }
}

impl TextView for HttpReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(out, "{}", style.heading(&self.heading()))?;
        if self.requests == 0 && self.in_flight == 0 {
            if self.without_activity_id > 0 {
                writeln!(
                    out,
                    "  {} System.Net.Http events have no activity id, so none is tied to its request: \
                     record System.Threading.Tasks.TplEventSource:0x80 with them (`clrspy record --profile net` does).",
                    self.without_activity_id
                )?;
            } else {
                writeln!(out, "  {}", self.missing)?;
            }
            return Ok(());
        }
        self.write_hosts(out, style)?;
        self.write_errors(out, style)?;
        self.write_pools(out, style)?;
        self.write_slowest(out, style)?;
        if self.in_flight + self.without_start > 0 {
            writeln!(
                out,
                "\n  Not counted: {} still running at the end, {} started before the trace.",
                self.in_flight, self.without_start
            )?;
        }
        Ok(())
    }
}

/// The summary's HTTP section: one line when the trace has requests.
struct HttpSection {
    http: HttpReport,
    next: Vec<String>,
}

impl HttpSection {
    fn build(i: &SummaryInput<'_>) -> HttpSection {
        let http = build(i.a, &ReportOptions { top: 5, ..i.o.clone() });
        let next = (http.requests > 0)
            .then(|| {
                format!(
                    "clrspy report {} http   (outgoing requests: errors, pool waits, slowest)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        HttpSection { http, next }
    }
}

impl SummarySection for HttpSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        if self.http.requests == 0 {
            return Vec::new();
        }
        vec![("http", to_json(&self.http))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if self.http.requests == 0 {
            return Ok(());
        }
        writeln!(out, "\n{}", style.heading(&self.http.heading()))?;
        let waited: u64 = self.http.hosts.iter().map(|h| h.waited_for_connection).sum();
        let slowest = self.http.slowest.first().map_or(0.0, |r| r.duration_ms);
        let mut line = format!("  slowest {slowest:.1} ms");
        if waited > 0 {
            let _ = write!(line, "; {waited} waited for a pooled connection (pool exhausted)");
        }
        writeln!(out, "{line}")
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's request count and its table of hosts (only when the trace has requests).
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let r = build(i.a, &i.options(20));
    if r.requests == 0 {
        return HtmlSection::default();
    }
    let mut h = String::from(
        "<h2>Outgoing HTTP requests</h2><table><tr><th>Host</th><th class=n>count</th>\
         <th class=n>errors</th><th>by kind</th><th class=n>p50 ms</th><th class=n>p95 ms</th>\
         <th class=n>p99 ms</th><th class=n>max ms</th><th class=n>waited for a connection</th></tr>",
    );
    for host in &r.hosts {
        let kinds = host
            .error_kinds
            .iter()
            .map(|e| format!("{} {}", e.kind, e.count))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td class=n>{:.1}</td>\
             <td class=n>{:.1}</td><td class=n>{:.1}</td><td class=n>{:.1}</td><td class=n>{}</td></tr>",
            escape(&host.host),
            host.count,
            host.errors,
            escape(&kinds),
            host.duration.p50_ms,
            host.duration.p95_ms,
            host.duration.p99_ms,
            host.duration.max_ms,
            host.waited_for_connection
        );
    }
    h.push_str("</table>");
    HtmlSection {
        facts: vec![Fact {
            order: 82,
            label: "outgoing HTTP requests",
            value: format!("{} ({} failed)", r.requests, r.failed),
        }],
        parts: vec![Part { order: 82, html: h }],
    }
}
