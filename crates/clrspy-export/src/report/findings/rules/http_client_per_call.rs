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
//! requests); critical at 90% (every call a new connection). A server that closes every
//! connection (`Connection: close`) looks the same: the evidence says how many were reused.

use super::super::finding::{count, Found, Input, Rule, Severity};

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
    let said = format!(
        "{} of {} requests to {} opened a new connection ({:.0}%; {} reused one){}",
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
            .fact("connects", count(host.connect.count)),
    )
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
