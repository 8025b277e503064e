//! The `http` model's tests: the http-client workload's traces (clrspy's and dotnet-trace's),
//! the web app's, event order and reused activity ids.

use std::path::Path;

use super::analysed_file;
use crate::ModelSet;

/// Counts by status and by error kind.
type Counts = (Vec<(i32, u64)>, Vec<(&'static str, u64)>);

/// One host's statuses, error kinds and pool waits.
type HostCounts<'a> = (&'a str, Vec<(i32, u64)>, Vec<(&'static str, u64)>, u64);

/// The http-client workload's trace (its README says how it was recorded and what it holds).
fn http_requests(name: &str) -> crate::sources::http::HttpModel {
    let a = analysed_file(name, ModelSet::named(&["http"]).unwrap());
    a.model::<crate::sources::http::HttpModel>()
        .unwrap()
        .clone()
}

#[test]
fn http_requests_one_by_one_with_their_children() {
    let h = http_requests("httpclient-net.nettrace.zip");
    assert_eq!((h.requests, h.in_flight, h.without_start), (25, 0, 0));
    assert_eq!(h.without_activity_id, 0);
    let by_host: Vec<HostCounts> = h
        .hosts
        .iter()
        .map(|(k, c)| {
            (
                k.as_str(),
                c.statuses.iter().map(|(s, n)| (*s, *n)).collect(),
                c.errors.iter().map(|(e, k)| (*e, k.count)).collect(),
                c.waited_for_connection,
            )
        })
        .collect();
    assert_eq!(
        by_host,
        [
            (
                "http://127.0.0.1:41139",
                vec![(-1, 2)],
                vec![("refused", 2)],
                0
            ),
            (
                "http://127.0.0.1:43647",
                vec![(-1, 1), (200, 16), (500, 3)],
                vec![("5xx", 3), ("timeout", 1)],
                3
            ),
            ("http://localhost:43647", vec![(200, 1)], vec![], 0),
            (
                "http://nothing.invalid:80",
                vec![(-1, 1)],
                vec![("dns", 1)],
                0
            ),
            (
                "https://127.0.0.1:43647",
                vec![(-1, 1)],
                vec![("tls", 1)],
                0
            ),
        ]
    );
    let main = &h.hosts["http://127.0.0.1:43647"];
    assert_eq!((main.new_connections, main.reused_connections), (3, 17));
    assert!(main.errors["timeout"]
        .messages
        .keys()
        .any(|m| m.contains("HttpClient.Timeout of 0.25 seconds")));
    // The slowest: the three that waited for the one pooled connection (queue 300, 200,
    // 100 ms, each then 100 ms served), and the two 300 ms sleeps.
    let top: Vec<(f64, f64, &str)> = h
        .slowest
        .iter()
        .take(5)
        .map(|r| (r.duration_ms.round(), r.queue_ms.round(), r.path.as_str()))
        .collect();
    assert_eq!(
        top,
        [
            (403.0, 301.0, "/slow?*"),
            (301.0, 200.0, "/slow?*"),
            (301.0, 0.0, "/slow?*"),
            (301.0, 0.0, "/slow?*"),
            (252.0, 0.0, "/slow?*"),
        ]
    );
    assert_eq!(h.slowest[4].error_kind, Some("timeout"));
    let dns = h.slowest.iter().find(|r| r.path == "/ok/dns").unwrap();
    assert_eq!((dns.dns_ms, dns.connection), (Some(2.375161), Some("new")));
    let tls = h.slowest.iter().find(|r| r.path == "/tls").unwrap();
    assert_eq!(
        (tls.tls_ms, tls.status, tls.connection),
        (Some(32.13099), -1, None)
    );
    let reused = h.slowest.iter().find(|r| r.path == "/ok/1").unwrap();
    assert_eq!(
        (
            reused.connection,
            reused.connection_id,
            reused.dns_ms,
            reused.version.as_str()
        ),
        (Some("reused"), Some(0), None, "1.1")
    );
}

#[test]
fn http_layouts_match_a_net10_trace() {
    // Every layout clr-events' views read is the one the .NET 10 runtime declares.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data/httpclient-net.nettrace.zip");
    let trace = crate::trace_file::OpenTrace::open(&path).unwrap();
    let mut reader = trace.reader().unwrap();
    let mut seen = std::collections::BTreeMap::new();
    while let Some(ev) = reader.next_event().unwrap() {
        let m = &ev.metadata;
        let names: Vec<String> = m.fields.iter().map(|f| f.name.clone()).collect();
        seen.insert(
            (m.provider.clone(), m.event_name.clone()),
            (ev.version(), names),
        );
    }
    for (provider, event, from, fields) in clr_events::net_http::LAYOUTS {
        let Some((version, names)) = seen.get(&(provider.to_string(), event.to_string())) else {
            panic!("{provider}/{event} not in the trace");
        };
        assert!(version >= from, "{provider}/{event}: version {version}");
        let want: Vec<&str> = fields.iter().map(|f| f.name).collect();
        assert_eq!(names, &want, "{provider}/{event}");
    }
}

/// Requests by status and by error kind, every host together.
fn http_totals(h: &crate::sources::http::HttpModel) -> Counts {
    let mut statuses = std::collections::BTreeMap::new();
    let mut kinds = std::collections::BTreeMap::new();
    for c in h.hosts.values() {
        for (s, n) in &c.statuses {
            *statuses.entry(*s).or_insert(0) += n;
        }
        for (k, e) in &c.errors {
            *kinds.entry(*k).or_insert(0) += e.count;
        }
    }
    (statuses.into_iter().collect(), kinds.into_iter().collect())
}

#[test]
fn http_requests_of_a_dotnet_trace_recording() {
    // The same workload recorded by dotnet-trace (with its rundown): the same counts.
    let h = http_requests("dotnet-trace-httpclient.nettrace.zip");
    assert_eq!((h.requests, h.in_flight, h.without_start), (25, 0, 0));
    assert_eq!(
        http_totals(&h),
        (
            vec![(-1, 5), (200, 17), (500, 3)],
            vec![
                ("5xx", 3),
                ("dns", 1),
                ("refused", 2),
                ("timeout", 1),
                ("tls", 1)
            ]
        )
    );
    let waited: u64 = h.hosts.values().map(|c| c.waited_for_connection).sum();
    assert_eq!(waited, 3);
}

#[test]
fn http_requests_of_the_web_app() {
    // The WebApp calling itself: five 200s and a 404 whose failure is its message.
    let h = http_requests("webapp-eventsources.nettrace.zip");
    assert_eq!(
        http_totals(&h),
        (vec![(200, 5), (404, 1)], vec![("4xx", 1)])
    );
    let failed = h.slowest.iter().find(|r| r.status == 404).unwrap();
    assert!(
        failed.error.as_deref().unwrap_or("").contains("404"),
        "{failed:?}"
    );
    // No sockets events recorded: no connect times, but the connections are known.
    assert!(h
        .slowest
        .iter()
        .all(|r| r.connect_ms.is_none() && r.connection.is_some()));
}

/// One event of the trace, owned (for feeding a model in another order).
struct OwnedEvent {
    provider: String,
    name: String,
    version: u8,
    ts_ns: i64,
    payload: Vec<u8>,
    activity: nettrace::Guid,
    related: nettrace::Guid,
}

#[test]
fn http_requests_do_not_depend_on_the_order_events_come_in() {
    // The runtime writes per-thread buffers: a stop may come before its start, a child's
    // events before their request's. Fed backwards in chunks of 40 events (every stop before
    // its start within a chunk), the model finds the same requests.
    use crate::sources::http::HttpModel;
    use crate::Model;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data/httpclient-net.nettrace.zip");
    let trace = crate::trace_file::OpenTrace::open(&path).unwrap();
    let mut reader = trace.reader().unwrap();
    let t0 = reader.header().sync_time_ticks;
    let mut events = Vec::new();
    while let Some(ev) = reader.next_event().unwrap() {
        let m = &ev.metadata;
        if !m.provider.starts_with("System.Net.") {
            continue;
        }
        events.push(OwnedEvent {
            provider: m.provider.clone(),
            name: m.event_name.clone(),
            version: ev.version(),
            ts_ns: ev.timestamp - t0,
            payload: ev.payload.to_vec(),
            activity: ev.activity_id,
            related: ev.related_activity_id,
        });
    }
    let feed = |order: &[&OwnedEvent]| {
        let mut m = HttpModel::default();
        for e in order {
            let Some(w) = HttpModel::EVENTS.iter().find(|w| {
                w.event == Some(e.name.as_str())
                    && w.provider == crate::Provider::Named(leak(&e.provider))
            }) else {
                continue;
            };
            let ev = crate::ModelEvent {
                provider: w.provider,
                id: 0,
                version: e.version,
                ts_ns: e.ts_ns,
                thread_id: 0,
                payload: &e.payload,
                pointer_size: 8,
                stack: None,
                context: crate::EventContext {
                    activity_id: e.activity,
                    related_activity_id: e.related,
                    event_name: &e.name,
                    provider: &e.provider,
                    fields: &[],
                },
            };
            m.on_event(&ev).unwrap();
        }
        m.finish();
        m
    };
    let forward: Vec<&OwnedEvent> = events.iter().collect();
    let backward: Vec<&OwnedEvent> = events.chunks(40).flat_map(|c| c.iter().rev()).collect();
    let (a, b) = (feed(&forward), feed(&backward));
    assert_eq!((a.requests, b.requests), (25, 25));
    assert_eq!((b.in_flight, b.without_start), (0, 0));
    // Sketches compare by their figures (their kept values are in arrival order).
    let json = |m: &HttpModel| serde_json::to_value(&m.hosts).unwrap();
    assert_eq!(json(&a), json(&b));
    let key = |m: &HttpModel| {
        let mut v: Vec<String> = m.slowest.iter().map(|r| format!("{r:?}")).collect();
        v.sort();
        v
    };
    assert_eq!(key(&a), key(&b));
}

/// A `&'static str` for a provider name (Wanted::named's are static; a test's few leak).
fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

#[test]
fn http_request_ids_used_again_are_two_requests() {
    use crate::sources::http::HttpModel;
    use crate::Model;
    fn utf16(out: &mut Vec<u8>, s: &str) {
        s.encode_utf16()
            .for_each(|u| out.extend_from_slice(&u.to_le_bytes()));
        out.extend_from_slice(&[0, 0]);
    }
    let mut start = Vec::new();
    for s in ["http", "example.org"] {
        utf16(&mut start, s);
    }
    start.extend_from_slice(&80i32.to_le_bytes());
    utf16(&mut start, "/");
    start.extend_from_slice(&[1, 1, 0]);
    let id = nettrace::Guid([7; 16]);
    let mut m = HttpModel::default();
    let mut feed = |name: &str, version: u8, ts_ns: i64, payload: &[u8]| {
        let ev = crate::ModelEvent {
            provider: crate::Provider::Named("System.Net.Http"),
            id: 0,
            version,
            ts_ns,
            thread_id: 0,
            payload,
            pointer_size: 8,
            stack: None,
            context: crate::EventContext {
                activity_id: id,
                related_activity_id: nettrace::Guid::ZERO,
                event_name: name,
                provider: "System.Net.Http",
                fields: &[],
            },
        };
        m.on_event(&ev).unwrap();
    };
    feed("RequestStart", 0, 1_000_000, &start);
    feed("RequestStop", 1, 3_000_000, &200i32.to_le_bytes());
    feed("RequestStart", 0, 5_000_000, &start);
    feed("RequestStop", 1, 9_000_000, &500i32.to_le_bytes());
    m.finish();
    let h = &m.hosts["http://example.org:80"];
    assert_eq!(
        h.statuses.iter().map(|(s, n)| (*s, *n)).collect::<Vec<_>>(),
        [(200, 1), (500, 1)]
    );
    assert_eq!(
        m.slowest.iter().map(|r| r.duration_ms).collect::<Vec<_>>(),
        [4.0, 2.0]
    );
}
