use std::path::Path;

use super::connections::ConnectionModel;
use super::counters::CounterModel;
use super::logs::LogModel;
use super::net::{socket_address, NetModel};
use super::requests::RequestModel;
use crate::{Analysis, ModelSet, Options};

/// The WebApp trace with every EventSource these models read (its README says how it was
/// recorded and what it holds).
fn analysed(models: ModelSet) -> Analysis {
    analysed_file("webapp-eventsources.nettrace.zip", models)
}

/// A trace of crates/clrspy/tests/data analysed with `models`; no payload may fail to decode.
fn analysed_file(name: &str, models: ModelSet) -> Analysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clrspy/tests/data")
        .join(name);
    let trace = crate::trace_file::OpenTrace::open(&path).unwrap();
    let mut reader = trace.reader().unwrap();
    let options = Options {
        models,
        ..Options::default()
    };
    let a = Analysis::run(&mut reader, options, &mut |_| ()).unwrap();
    assert!(a.decode_errors().is_empty(), "{:?}", a.decode_errors());
    a
}

#[test]
fn served_requests_by_route_tied_by_activity() {
    let a = analysed(ModelSet::named(&["requests"]).unwrap());
    let r = a.model::<RequestModel>().unwrap();
    assert_eq!(r.started, 22);
    let counts: Vec<(&str, u64)> = r
        .routes
        .iter()
        .map(|(k, d)| (k.as_str(), d.durations.count()))
        .collect();
    assert_eq!(
        counts,
        [
            ("GET /", 5),
            ("GET /call", 6),
            ("GET /cpu", 5),
            ("GET /log", 5),
            ("GET /nope", 1)
        ],
        "every stop found its start"
    );
    assert_eq!(
        (r.in_flight, r.finished_unstarted, r.unhandled_exceptions),
        (0, 0, 1)
    );
    // /call waits for its own /cpu: it takes longer.
    let p50 = |route: &str| r.routes[route].durations.quantile_ms(0.5);
    assert!(p50("GET /call") > p50("GET /cpu"));
    assert!(
        a.model::<LogModel>().is_none(),
        "only the models picked run"
    );
}

#[test]
fn requests_of_a_dotnet_trace_recording_with_status_route_and_connection() {
    let a = analysed_file(
        "webapp-requests-dotnet-trace.nettrace.zip",
        ModelSet::named(&["requests"]).unwrap(),
    );
    let r = a.model::<RequestModel>().unwrap();
    assert_eq!((r.started, r.finished, r.in_flight), (25, 25, 0));
    assert_eq!((r.with_status, r.with_route), (25, 25));
    assert_eq!(r.unhandled_exceptions, 4);
    type RouteCounts<'a> = (&'a str, &'a str, u64, Vec<(&'a str, u64)>, u64);
    let routes: Vec<RouteCounts<'_>> = r
        .routes
        .values()
        .map(|x| {
            let statuses = x.statuses.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            (
                x.method.as_str(),
                x.route.as_str(),
                x.durations.count(),
                statuses,
                x.errors,
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("GET", "/", 10, vec![("200", 10)], 0),
            ("GET", "/cpu", 5, vec![("200", 5)], 0),
            ("GET", "/fail", 4, vec![("500", 4)], 4),
            ("GET", "/sleep", 6, vec![("200", 6)], 0),
        ]
    );
    // The six sleeps of 50 ms are the slowest, each on its Kestrel connection.
    let slowest = r.slowest.sorted();
    assert_eq!(slowest.len(), 20);
    for s in &slowest[..6] {
        assert_eq!((s.path.as_str(), s.status), ("/sleep", Some(200)));
        assert!((50.0..60.0).contains(&s.duration_ms), "{}", s.duration_ms);
        assert!(s.connection_id.as_deref().is_some_and(|c| c.len() > 8));
    }
    assert!(slowest[6].duration_ms < 5.0);
}

/// The same requests against the same app built for .NET 8 (8.0.31, self-contained): the
/// events' payloads (the logging provider's has three fields fewer) read the same.
#[test]
fn requests_of_a_net8_app() {
    let a = analysed_file(
        "webapp-requests-net8-dotnet-trace.nettrace.zip",
        ModelSet::named(&["requests"]).unwrap(),
    );
    let r = a.model::<RequestModel>().unwrap();
    assert_eq!((r.started, r.finished, r.in_flight), (25, 25, 0));
    assert_eq!(
        (r.with_status, r.with_route, r.unhandled_exceptions),
        (25, 25, 4)
    );
    let counts: Vec<(&str, u64, u64)> = r
        .routes
        .iter()
        .map(|(k, x)| (k.as_str(), x.durations.count(), x.errors))
        .collect();
    assert_eq!(
        counts,
        [
            ("GET /", 10, 0),
            ("GET /cpu", 5, 0),
            ("GET /fail", 4, 4),
            ("GET /sleep", 6, 0)
        ]
    );
    assert_eq!(r.slowest.sorted()[0].path, "/sleep");
}

#[test]
fn route_templates_of_endpoint_names() {
    use super::requests::route_template;
    assert_eq!(route_template("HTTP: GET /items/{id}"), "/items/{id}");
    assert_eq!(route_template("HTTP: GET, POST /"), "/");
    assert_eq!(route_template("/Index"), "/Index");
    assert_eq!(
        route_template("Shop.Controllers.Home.Index (Shop)"),
        "Shop.Controllers.Home.Index (Shop)"
    );
}

#[test]
fn kestrel_connections() {
    let a = analysed(ModelSet::named(&["connections"]).unwrap());
    let c = a.model::<ConnectionModel>().unwrap();
    assert_eq!((c.opened, c.closed.count, c.open_at_end), (17, 16, 1));
    assert_eq!(c.requests.count, 22);
}

#[test]
fn logs_by_category_and_level() {
    let a = analysed(ModelSet::named(&["logs"]).unwrap());
    let l = a.model::<LogModel>().unwrap();
    let total: u64 = l.counts.values().flat_map(|m| m.values()).sum();
    assert_eq!(total, 93);
    assert_eq!(l.counts["WebApp.Requests"]["Warning"], 5);
    let ours: Vec<&str> = l
        .messages
        .iter()
        .filter(|m| m.category == "WebApp.Requests")
        .map(|m| m.message.as_str())
        .collect();
    assert_eq!(ours, ["slow request 42"; 5]);
}

#[test]
fn counters_and_metrics_series() {
    let a = analysed(ModelSet::named(&["counters"]).unwrap());
    let c = a.model::<CounterModel>().unwrap();
    let cpu = &c.series["System.Runtime/cpu-usage"];
    assert!(
        cpu.points.len() >= 3,
        "one a second for 4 s: {:?}",
        cpu.points
    );
    assert_eq!(cpu.unit, "%");
    let heap = &c.series["System.Runtime/gc-heap-size"];
    assert!(heap.points.iter().all(|p| p.1 > 0.0));
    let durations: Vec<&String> = c
        .series
        .keys()
        .filter(|k| k.starts_with("System.Net.Http/http.client.request.duration["))
        .collect();
    assert!(!durations.is_empty(), "{:?}", c.series.keys());
}

#[test]
fn a_model_is_picked_by_name_and_unknown_names_are_refused() {
    assert!(ModelSet::named(&["gc", "requests"]).is_ok());
    let e = ModelSet::named(&["nope"]).unwrap_err();
    assert!(e.contains("nope"), "{e}");
}

/// The sockets/DNS trace (its README says how it was recorded and what it holds).
fn analysed_net(models: ModelSet) -> Analysis {
    analysed_file("webapp-net.nettrace.zip", models)
}

#[test]
fn connects_accepts_and_resolutions_tied_by_activity() {
    let a = analysed_net(ModelSet::named(&["net"]).unwrap());
    let n = a.model::<NetModel>().unwrap();
    let connects: Vec<(&str, u64, u64)> = n
        .connects
        .targets
        .iter()
        .map(|(t, o)| (t.as_str(), o.durations.count, o.failed))
        .collect();
    assert_eq!(
        connects,
        [
            ("[::ffff:127.0.0.1]:1", 2, 2),
            ("[::ffff:127.0.0.1]:34875", 2, 0)
        ]
    );
    let dns: Vec<(&str, u64, u64)> = n
        .resolutions
        .targets
        .iter()
        .map(|(t, o)| (t.as_str(), o.durations.count, o.failed))
        .collect();
    assert_eq!(dns, [("localhost", 1, 0)]);
    // The resolution took 5.68 ms (1_894_949_420 to 1_900_629_810 ns).
    assert!((n.resolutions.targets["localhost"].durations.total_ms - 5.68039).abs() < 1e-3);
    // 11 accepts started; the first stop (of an accept pending before the recording) has no
    // activity id, the last start has no stop yet.
    assert_eq!(n.accepts.count(), 10);
    assert_eq!((n.accepts.in_flight, n.without_activity_id), (1, 1));
    assert_eq!(n.handshakes.count(), 0, "plain HTTP: no TLS");
    // A model not named does not run.
    assert!(a.model::<RequestModel>().is_none());
}

#[test]
fn socket_addresses_read() {
    assert_eq!(
        socket_address("InterNetwork:16:{0,80,10,1,2,3,0,0,0,0,0,0,0,0}").as_deref(),
        Some("10.1.2.3:80")
    );
    let v6 = "InterNetworkV6:28:{136,59,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,0}";
    assert_eq!(socket_address(v6).as_deref(), Some("[::1]:34875"));
    assert_eq!(socket_address("Unix:5:{1,2,3}"), None);
    assert_eq!(socket_address("InterNetwork:16:{0,80}"), None);
    assert_eq!(socket_address("not an address"), None);
}

/// A trace of the logger with both message keywords (its README says how it was recorded).
#[test]
fn logs_with_both_keywords_count_each_message_once() {
    let a = analysed_file(
        "webapp-logs-both.nettrace.zip",
        ModelSet::named(&["logs"]).unwrap(),
    );
    let l = a.model::<LogModel>().unwrap();
    let counts: Vec<(&str, &str, u64)> = l
        .counts
        .iter()
        .flat_map(|(c, by)| by.iter().map(move |(lv, n)| (c.as_str(), *lv, *n)))
        .collect();
    assert_eq!(
        counts,
        [
            ("Microsoft.AspNetCore.Hosting.Diagnostics", "Information", 2),
            (
                "Microsoft.AspNetCore.Routing.EndpointMiddleware",
                "Information",
                2
            ),
            ("WebApp.Requests", "Warning", 1)
        ]
    );
    assert_eq!(l.messages.len(), 5);
    assert!(l
        .messages
        .iter()
        .any(|m| m.category == "WebApp.Requests" && m.message == "slow request 42"));
}

/// Counts by status and by error kind.
type Counts = (Vec<(i32, u64)>, Vec<(&'static str, u64)>);

/// One host's statuses, error kinds and pool waits.
type HostCounts<'a> = (&'a str, Vec<(i32, u64)>, Vec<(&'static str, u64)>, u64);

/// The http-client workload's trace (its README says how it was recorded and what it holds).
fn http_requests(name: &str) -> super::http::HttpModel {
    let a = analysed_file(name, ModelSet::named(&["http"]).unwrap());
    a.model::<super::http::HttpModel>().unwrap().clone()
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
fn http_totals(h: &super::http::HttpModel) -> Counts {
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
    use super::http::HttpModel;
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
    use super::http::HttpModel;
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

/// The `loadfail` scenario recorded by clrspy and by dotnet-trace: the same loads and failures
/// (crates/clrspy/tests/data/README.md).
#[test]
fn assembly_loads_and_failures_of_both_recorders() {
    use super::loader::{context_key, LoaderModel};
    use clr_events::loader::{ResolutionResult, ResolutionStage};
    for file in [
        "loadfail.nettrace.zip",
        "loadfail-dotnet-trace.nettrace.zip",
    ] {
        let a = analysed_file(file, ModelSet::named(&["loader"]).unwrap());
        let m = a.model::<LoaderModel>().unwrap();
        assert_eq!((m.starts, m.stops, m.probes), (31, 31, 15), "{file}");
        assert_eq!((m.stops_unstarted, m.in_flight), (0, 0), "{file}");
        assert_eq!(m.resolution_attempts, 46, "{file}");
        assert_eq!(m.handler_events, 3, "{file}");
        assert_eq!(m.assembly_load_events, 19, "{file}");
        // Every module's assembly was named just before it.
        assert_eq!(
            m.modules.values().map(|s| s.count).sum::<u64>(),
            19,
            "{file}"
        );

        let failed: Vec<(&str, &str, u64)> = m
            .failures
            .iter()
            .map(|((c, n), f)| (c.as_str(), n.as_str(), f.count))
            .collect();
        assert_eq!(
            failed,
            [
                (
                    "Default",
                    "Missing.Assembly, Version=1.2.3.4, Culture=neutral, PublicKeyToken=null",
                    1
                ),
                (
                    "Default",
                    "Workloads.Plugin.Dependency, Culture=neutral, PublicKeyToken=null",
                    1
                ),
            ],
            "{file}"
        );
        let missing = m.failures.values().next().unwrap();
        let stages: Vec<ResolutionStage> = missing.attempts.iter().map(|t| t.stage).collect();
        assert_eq!(
            stages,
            [
                ResolutionStage::FindInLoadContext,
                ResolutionStage::ApplicationAssemblies,
                ResolutionStage::AppDomainAssemblyResolveEvent
            ],
            "{file}"
        );
        assert!(missing
            .attempts
            .iter()
            .all(|t| t.result == ResolutionResult::AssemblyNotFound));
        assert!(missing
            .requested_by
            .starts_with("Workloads, Version=1.0.0.0"));
        // The dependency asked for by the LoadFrom'd plugin: its folder was probed for it.
        let dep = m.failures.values().nth(1).unwrap();
        assert_eq!(dep.probed.len(), 1, "{file}");
        assert!(dep.probed[0]
            .path
            .ends_with("/Workloads.Plugin.Dependency.dll"));
        assert_eq!(dep.probed[0].source, "LoadFromResolveHandler");
        assert!(dep.handlers[0].contains("LoadFromResolveHandler: returned null"));

        // Workloads in the default context and in a second one (loaded there once, then
        // found there again); the plugin at two versions, the second through a handler.
        let of = |name: &str| {
            m.loads
                .iter()
                .filter(|((_, n, _), _)| n.starts_with(name))
                .map(|((c, n, _), l)| (c.clone(), n[name.len()..].to_string(), l.clone()))
                .collect::<Vec<_>>()
        };
        let w = of("Workloads, ");
        let contexts: Vec<&str> = w.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            contexts,
            [
                "\"loadfail-second\" System.Runtime.Loader.AssemblyLoadContext",
                "Default"
            ],
            "{file}"
        );
        assert_eq!((w[0].2.count, w[0].2.reused), (1, 1), "{file}");
        let p = of("Workloads.Plugin, ");
        let found: Vec<(&str, &str, u64)> = p
            .iter()
            .map(|(c, v, l)| (c.as_str(), &v[..15], l.count))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "\"loadfail-v1\" System.Runtime.Loader.AssemblyLoadContext",
                    "Version=1.0.0.0",
                    1
                ),
                (
                    "\"loadfail-v2\" System.Runtime.Loader.AssemblyLoadContext",
                    "Version=2.0.0.0",
                    1
                ),
                ("Default", "Version=1.0.0.0", 1),
            ],
            "{file}"
        );
        assert_eq!(p[1].2.handler.as_deref(), Some("<Run>b__0"), "{file}");
        assert_eq!(p[1].2.reused, 1, "{file}");
    }
    assert_eq!(
        context_key("\"x\" System.Runtime.Loader.AssemblyLoadContext #12"),
        (
            "\"x\" System.Runtime.Loader.AssemblyLoadContext".to_string(),
            Some(12)
        )
    );
    assert_eq!(context_key("Default"), ("Default".to_string(), None));
}

/// One plugin loaded into 20,000 collectible contexts (a new `#N` each), and a missing
/// dependency asked for each time: one entry each, counted, whatever the count.
#[test]
fn the_loader_model_stays_bounded_at_any_load_count() {
    use super::loader::LoaderModel;
    use crate::{EventContext, Model, ModelEvent, Provider};
    use clr_events::loader::ids;
    use clr_events::KnownProvider;

    fn s(p: &mut Vec<u8>, v: &str) {
        p.extend(v.encode_utf16().flat_map(u16::to_le_bytes));
        p.extend([0, 0]);
    }
    fn start(name: &str, ctx: &str) -> Vec<u8> {
        let mut p = 0u16.to_le_bytes().to_vec();
        for v in [name, "", "Host", ctx, "Default"] {
            s(&mut p, v);
        }
        p
    }
    fn stop(name: &str, ctx: &str, ok: bool) -> Vec<u8> {
        let mut p = start(name, ctx);
        p.extend(u32::from(ok).to_le_bytes());
        s(&mut p, if ok { name } else { "" });
        s(&mut p, if ok { "/p/Plugin.dll" } else { "" });
        p.extend(0u32.to_le_bytes());
        p
    }
    let mut m = LoaderModel::default();
    let feed = |m: &mut LoaderModel, id: u32, payload: &[u8], ts: i64| {
        let ev = ModelEvent {
            provider: Provider::Known(KnownProvider::Runtime),
            id,
            version: 0,
            ts_ns: ts,
            thread_id: 1,
            payload,
            pointer_size: 8,
            stack: None,
            context: EventContext::default(),
        };
        m.on_event(&ev).unwrap();
    };
    const N: i64 = 20_000;
    for i in 0..N {
        let ctx = format!("\"plugin\" System.Runtime.Loader.AssemblyLoadContext #{i}");
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_START,
            &start("Plugin", &ctx),
            4 * i,
        );
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_STOP,
            &stop("Plugin", &ctx, true),
            4 * i + 1,
        );
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_START,
            &start("Dep", &ctx),
            4 * i + 2,
        );
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_STOP,
            &stop("Dep", &ctx, false),
            4 * i + 3,
        );
    }
    m.finish();
    assert_eq!((m.loads.len(), m.failures.len(), m.in_flight), (1, 1, 0));
    let l = m.loads.values().next().unwrap();
    assert_eq!((l.count, l.total_ns, l.max_ns), (N as u64, N, 1));
    assert_eq!(l.instances.len(), 64);
    assert!(l.more_instances);
    assert_eq!(m.failures.values().next().unwrap().count, N as u64);
}

/// dotnet-trace's recording of the `hang` workload (tests/data/README.md): two threads each
/// hold one lock and wait for the other's; no `Contention/Stop` ever comes.
#[test]
fn a_dotnet_trace_deadlock_is_one_cycle_of_two_threads() {
    use super::hangs::{HangModel, WaitKind};
    let a = analysed_file(
        "dotnet-trace-deadlock.nettrace.zip",
        ModelSet::named(&["hangs"]).unwrap(),
    );
    let m = a.model::<HangModel>().unwrap();
    assert_eq!((m.lock_waits, m.lock_waits_ended), (2, 0));
    assert_eq!((m.handle_waits, m.handle_waits_ended), (3, 1));
    assert_eq!(m.open_locks.len(), 2);
    let cycles = m.cycles();
    assert_eq!(cycles.len(), 1);
    let c = &cycles[0];
    assert_eq!(c.len(), 2);
    // Each waits for the lock the other holds, and its owner is the other.
    assert_eq!(c[0].wait.owner, c[1].wait.thread);
    assert_eq!(c[1].wait.owner, c[0].wait.thread);
    assert_eq!(c[0].holds_lock, c[1].wait.lock_id);
    assert_eq!(c[1].holds_lock, c[0].wait.lock_id);
    assert_ne!(c[0].wait.lock_id, c[1].wait.lock_id);
    assert!(c[0].wait.thread < c[1].wait.thread);
    for member in c {
        let frames = a.frames(member.wait.stack);
        assert!(
            frames
                .iter()
                .any(|f| f.starts_with("Workloads.Deadlock.Take")),
            "{frames:?}"
        );
    }
    // Both open lock waits are summed by stack until the trace's end.
    let open: u64 = m
        .by_stack
        .iter()
        .filter(|((k, _), _)| *k == WaitKind::Lock)
        .map(|(_, t)| t.open)
        .sum();
    assert_eq!(open, 2);
}

/// Requests fed one by one: distinct raw paths past the cap are counted under `(other)`, every
/// request is streamed to the rows, and only the slowest are kept.
#[test]
fn raw_paths_are_capped_and_every_request_streams() {
    use super::requests::{MAX_ROUTES, OTHER, SLOWEST};
    use crate::event::{EventContext, Provider};
    use crate::model_entry::{ModelInit, Slot};
    use crate::ModelEvent;

    fn utf16z(s: &str, out: &mut Vec<u8>) {
        for u in s.encode_utf16() {
            out.extend_from_slice(&u.to_le_bytes());
        }
        out.extend_from_slice(&[0, 0]);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.jsonl");
    let sink =
        crate::rows::RowSink::new("requests", Box::new(std::fs::File::create(&path).unwrap()));
    let header = nettrace::TraceHeader {
        format: nettrace::FormatVersion::NetTrace4,
        v6_minor: 0,
        trace_object_version: 4,
        sync_time_utc: Default::default(),
        sync_time_ticks: 0,
        ticks_per_second: 1_000_000_000,
        pointer_size: 8,
        process_id: None,
        cpu_count: None,
        sampling_interval_ns: Some(1_000_000),
        key_values: Vec::new(),
    };
    let Slot::Boxed(make) = super::requests::ENTRY.slot else {
        panic!("the requests model is boxed")
    };
    let mut m = make(&ModelInit {
        header: &header,
        rows: Some(&sink),
    });
    let n = MAX_ROUTES as i64 + 500;
    for i in 0..n {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&(i + 1).to_le_bytes());
        let mut payload = Vec::new();
        utf16z("GET", &mut payload);
        utf16z(&format!("/items/{i}"), &mut payload);
        for (name, ts, payload) in [
            ("RequestStart", i * 1_000_000, &payload[..]),
            ("RequestStop", i * 1_000_000 + i * 1_000, &[][..]),
        ] {
            m.feed(&ModelEvent {
                provider: Provider::Named("Microsoft.AspNetCore.Hosting"),
                id: 0,
                version: 0,
                ts_ns: ts,
                thread_id: 7,
                payload,
                pointer_size: 8,
                stack: None,
                context: EventContext {
                    activity_id: nettrace::Guid::from_bytes(id),
                    event_name: name,
                    provider: "Microsoft.AspNetCore.Hosting",
                    ..EventContext::default()
                },
            })
            .unwrap();
        }
    }
    m.end_pass();
    let r = m.as_any().downcast_ref::<RequestModel>().unwrap();
    assert_eq!((r.started, r.finished), (n as u64, n as u64));
    assert_eq!(r.routes.len(), MAX_ROUTES + 1);
    assert_eq!(r.routes[&format!("GET {OTHER}")].durations.count(), 500);
    let slowest = r.slowest.sorted();
    assert_eq!(slowest.len(), SLOWEST);
    assert_eq!(slowest[0].path, format!("/items/{}", n - 1));
    assert_eq!(sink.finish().unwrap(), n as u64);
    let text = std::fs::read_to_string(&path).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["path"], format!("/items/{}", n - 1));
    assert_eq!(last["status"], serde_json::Value::Null);
}
