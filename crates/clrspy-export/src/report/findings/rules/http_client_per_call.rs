//! `http-client-per-call`: an `HttpClient` (or its handler) created per request: each has
//! its own connection pool, so every outgoing call opens a new connection (a TCP handshake,
//! a TLS one for https, a name lookup) and leaves a socket in TIME_WAIT; under load the
//! ports run out.
//!
//! Evidence: the outgoing requests by host (the `http` report) with the connections they
//! opened and reused, and the name lookups.
//!
//! Thresholds: a warning when a host's requests (20 or more) opened a new connection for
//! half of them or more (a shared client reuses its connections: a handful for thousands of
//! requests); critical at 90% (every call a new connection).
//!
//! A server that closes every connection (HTTP/1.0, `Connection: close`) opens as many
//! connections, and the events cannot tell who closed one. What tells is the handlers: a
//! client per call builds and disposes a handler (and its connection pool) per call, so the
//! CPU in building and disposing handlers grows with the requests; a shared client or the
//! factory builds one now and then. Without that CPU (5 µs a request or more, from 3
//! samples), the finding is info and names both causes.

use clrspy_analysis::profile::Metric;
use clrspy_analysis::sources::http::HttpModel;

use super::super::finding::{caller_outside, count, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "http-client-per-call",
    title: "Outgoing HTTP calls open a new connection each (HttpClient per call)",
    fix: "Create one HttpClient (or one SocketsHttpHandler) and reuse it for the app's lifetime, or use IHttpClientFactory; set PooledConnectionLifetime for DNS changes instead of recreating clients.",
    link: "https://learn.microsoft.com/dotnet/fundamentals/networking/http/httpclient-guidelines",
    check,
};

const MIN_REQUESTS: u64 = 20;
const WARN_NEW: f64 = 0.5;
const CRITICAL_NEW: f64 = 0.9;
/// Handler CPU a request that says handlers are built per call, µs (measured: 40 µs a
/// request with a client per call; under 2 with the factory, its one-off first build's
/// compiling and initialising apart).
const HANDLER_US: f64 = 5.0;
/// Samples in handler work needed to tell anything.
const HANDLER_SAMPLES: f64 = 3.0;

/// Frames that build or dispose a handler and its connection pool (not `HttpClient..ctor`
/// alone: the factory builds a client per call over a pooled handler).
fn builds_handler(name: &str) -> bool {
    const HANDLER: &[&str] = &[
        "System.Net.Http.SocketsHttpHandler..ctor",
        "System.Net.Http.SocketsHttpHandler.SetupHandlerChain",
        "System.Net.Http.SocketsHttpHandler.Dispose",
        "System.Net.Http.HttpClientHandler..ctor",
        "System.Net.Http.HttpClientHandler.Dispose",
        "System.Net.Http.HttpConnectionPoolManager..ctor",
        "System.Net.Http.HttpConnectionPoolManager.Dispose",
    ];
    HANDLER.iter().any(|h| name.starts_with(h))
}

/// Work done once, the first time: compiling, static constructors, lazy initialisation.
fn first_time(name: &str) -> bool {
    name.starts_with("[JIT compiler")
        || name.contains("..cctor")
        || name.contains("GetGCStaticBaseSlow")
        || name.contains("LazyInitializer")
        || name.starts_with("System.Lazy`1")
}

/// The CPU building and disposing handlers, ms, and its samples.
fn handler_cpu(input: &Input<'_>) -> (f64, f64) {
    let symbols = &input.a.symbols;
    let (mut units, mut samples) = (0.0, 0.0);
    for r in &input.profile().rows {
        let w = r.weight(Metric::Cpu);
        if w <= 0.0 {
            continue;
        }
        let name = |i: usize| symbols.frame(r.frames[i]).name.as_str();
        // A factory's own handler builds come every few minutes: never the app's per call.
        // A handler's first build compiles and initialises what later builds reuse (the
        // JIT, static constructors, lazy defaults): a one-off, not a build per call.
        let Some(at) = (0..r.frames.len()).find(|&i| builds_handler(name(i))) else {
            continue;
        };
        if (0..r.frames.len()).any(|i| name(i).starts_with("Microsoft.Extensions.Http."))
            || (0..at).any(|i| first_time(name(i)))
        {
            continue;
        }
        units += w;
        samples += r.samples_of(Metric::Cpu);
    }
    (units * input.ms_per_unit(), samples)
}

/// The methods that sent the requests to `host` that opened a connection (from each
/// request's start: the app's own frame, else the first outside the framework), with how
/// many each sent, and how many the trace has stacks for.
fn call_sites(input: &Input<'_>, host: &str) -> (Vec<(String, f64)>, f64) {
    let Some(h) = input.a.model::<HttpModel>().and_then(|m| m.hosts.get(host)) else {
        return (Vec::new(), 0.0);
    };
    let app = input.a.symbols.app_code();
    let mut by: rustc_hash::FxHashMap<String, f64> = Default::default();
    let mut all = 0.0;
    for (&stack, &n) in &h.new_connection_stacks {
        let frames = input.a.frames(Some(stack));
        let site = frames
            .iter()
            .find(|f| app.contains(f))
            .map(String::as_str)
            .or_else(|| caller_outside(&frames, &["System.", "Microsoft."]))
            .unwrap_or("[no stack]");
        *by.entry(site.to_string()).or_default() += n as f64;
        all += n as f64;
    }
    (by.into_iter().collect(), all)
}

/// The severity of a host's requests (enough of them) opening a new connection `share` of
/// the time.
fn grade(share: f64) -> Option<Severity> {
    if share >= CRITICAL_NEW {
        Some(Severity::Critical)
    } else if share >= WARN_NEW {
        Some(Severity::Warning)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let http = input.http();
    let host = http
        .hosts
        .iter()
        .filter(|h| h.count >= MIN_REQUESTS)
        .max_by(|a, b| {
            let share = |h: &super::super::super::http::HostReport| {
                h.new_connections as f64 / h.count as f64
            };
            share(a).total_cmp(&share(b))
        })?;
    let share = host.new_connections as f64 / host.count as f64;
    let severity = grade(share)?;
    let (handler_ms, handler_samples) = handler_cpu(input);
    let (sites, all_sent) = call_sites(input, &host.host);
    let per_request_us = handler_ms * 1000.0 / host.count as f64;
    let per_call = handler_samples >= HANDLER_SAMPLES && per_request_us >= HANDLER_US;
    let severity = if per_call { severity } else { Severity::Info };
    let why = if per_call {
        format!(
            "; handlers were built and disposed for {} of CPU ({per_request_us:.0} µs a request): a client per call",
            ms_text(handler_ms)
        )
    } else {
        format!(
            "; but no handler was built per call (building and disposing handlers took {} of CPU, {per_request_us:.1} µs a request): the server may close each connection (HTTP/1.0 or `Connection: close`), or the trace has too few samples to tell",
            ms_text(handler_ms)
        )
    };
    let said = format!(
        "{} of {} requests to {} opened a new connection ({:.0}%; {} reused one){}{why}",
        count(host.new_connections),
        count(host.count),
        host.host,
        share * 100.0,
        count(host.reused_connections),
        if host.dns.count > 0 {
            format!(", with {} name lookups", count(host.dns.count))
        } else {
            String::new()
        }
    );
    Some(
        Found::new(severity, said)
            .fact("host", host.host.clone())
            .fact("requests", count(host.count))
            .fact("new connections", count(host.new_connections))
            .fact("reused connections", count(host.reused_connections))
            .fact("name lookups", count(host.dns.count))
            .fact("connects", count(host.connect.count))
            .fact("handler CPU", ms_text(handler_ms))
            .fact("handler CPU a request", format!("{per_request_us:.1} µs"))
            .sites(top_sites(sites, all_sent, 5, |n| {
                format!("{} opened a connection", count(n as u64))
            })),
    )
}

fn ms_text(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ms")
    } else {
        super::super::finding::ms(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(1.0), Some(Severity::Critical));
        assert_eq!(grade(0.6), Some(Severity::Warning));
        // A shared client: a handful of connections for thousands of requests.
        assert_eq!(grade(0.002), None);
    }
}
