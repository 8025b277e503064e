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
pub(super) fn analysed_file(name: &str, models: ModelSet) -> Analysis {
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
    let Slot::Boxed(make) = super::requests::ENTRY.slot else {
        panic!("the requests model is boxed")
    };
    let mut m = make(&ModelInit { rows: Some(&sink) });
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
    m.end_pass(0);
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

mod hangs;
mod http;
mod loader;
