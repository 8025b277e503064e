//! Payloads as .NET 7 (version 0: no status, no message, no connection id) and .NET 8+
//! (version 1) write them.

use super::*;

fn s(out: &mut Vec<u8>, text: &str) {
    for u in text.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&[0, 0]);
}

#[test]
fn request_start_reads_every_field() {
    let mut p = Vec::new();
    s(&mut p, "https");
    s(&mut p, "example.org");
    p.extend_from_slice(&443i32.to_le_bytes());
    s(&mut p, "/a?*");
    p.extend_from_slice(&[2, 0, 1]);
    let r = RequestStart::parse(&p, 0).unwrap();
    assert_eq!(r.scheme.to_string_lossy(), "https");
    assert_eq!(r.host.to_string_lossy(), "example.org");
    assert_eq!(r.port, 443);
    assert_eq!(r.path_and_query.to_string_lossy(), "/a?*");
    assert_eq!((r.version_major, r.version_minor), (2, 0));
    // Cut inside the path: an error naming the field.
    let e = RequestStart::parse(&p[..p.len() - 6], 0).unwrap_err();
    assert!(e.to_string().contains("pathAndQuery"), "{e}");
}

#[test]
fn stops_and_failures_by_version() {
    // .NET 7: empty payloads.
    assert_eq!(RequestStop::parse(&[], 0).unwrap().status_code, None);
    assert_eq!(
        RequestFailed::parse(&[], 0).unwrap().exception_message,
        None
    );
    assert_eq!(
        RequestHeadersStart::parse(&[], 0).unwrap().connection_id,
        None
    );
    // .NET 8+.
    assert_eq!(
        RequestStop::parse(&(-1i32).to_le_bytes(), 1)
            .unwrap()
            .status_code,
        Some(-1)
    );
    assert_eq!(
        RequestStop::parse(&503i32.to_le_bytes(), 1)
            .unwrap()
            .status_code,
        Some(503)
    );
    assert!(RequestStop::parse(&[1, 2], 1).is_err());
    let mut m = Vec::new();
    s(&mut m, "Connection refused (127.0.0.1:1)");
    let f = RequestFailed::parse(&m, 1).unwrap();
    assert_eq!(
        f.exception_message.map(|m| m.to_string_lossy()).as_deref(),
        Some("Connection refused (127.0.0.1:1)")
    );
    assert!(
        RequestFailed::parse(&m[..m.len() - 2], 1).is_err(),
        "no terminator"
    );
    assert_eq!(
        RequestHeadersStart::parse(&7i64.to_le_bytes(), 1)
            .unwrap()
            .connection_id,
        Some(7)
    );
}

#[test]
fn queue_and_connections_by_version() {
    let mut q = 12.5f64.to_le_bytes().to_vec();
    q.extend_from_slice(&[1, 1]);
    let l = RequestLeftQueue::parse(&q, 0).unwrap();
    assert_eq!(
        (l.time_on_queue_ms, l.version_major, l.version_minor),
        (12.5, 1, 1)
    );
    assert!(RequestLeftQueue::parse(&q[..8], 0).is_err());

    let c = Connection::parse_established(&[2, 0], 0).unwrap();
    assert_eq!(
        (c.version_major, c.connection_id, c.remote_address),
        (2, None, None)
    );
    let mut e = vec![1, 1];
    e.extend_from_slice(&42i64.to_le_bytes());
    s(&mut e, "http");
    s(&mut e, "localhost");
    e.extend_from_slice(&8080i32.to_le_bytes());
    s(&mut e, "::1");
    let c = Connection::parse_established(&e, 1).unwrap();
    assert_eq!(c.connection_id, Some(42));
    assert_eq!(
        c.remote_address.map(|a| a.to_string_lossy()).as_deref(),
        Some("::1")
    );
    let mut closed = vec![1, 1];
    closed.extend_from_slice(&42i64.to_le_bytes());
    assert_eq!(
        Connection::parse_closed(&closed, 1).unwrap().connection_id,
        Some(42)
    );
    assert_eq!(
        Connection::parse_closed(&closed[..2], 0)
            .unwrap()
            .connection_id,
        None
    );
    assert!(Connection::parse_closed(&closed[..5], 1).is_err());
}

#[test]
fn resolution_connect_and_handshake() {
    let mut cf = 10061i32.to_le_bytes().to_vec();
    s(&mut cf, "");
    let f = ConnectFailed::parse(&cf, 0).unwrap();
    assert_eq!(f.error, CONNECTION_REFUSED);
    assert!(f.exception_message.is_empty());
    let mut hs = 0u32.to_le_bytes().to_vec();
    s(&mut hs, "example.org");
    let h = HandshakeStart::parse(&hs, 0).unwrap();
    assert!(!h.is_server);
    assert_eq!(h.target_host.to_string_lossy(), "example.org");
    let mut hf = 0u32.to_le_bytes().to_vec();
    hf.extend_from_slice(&15.5f64.to_le_bytes());
    s(&mut hf, "unexpected EOF");
    let h = HandshakeFailed::parse(&hf, 0).unwrap();
    assert_eq!(h.elapsed_ms, 15.5);
    assert_eq!(h.exception_message.to_string_lossy(), "unexpected EOF");
    assert!(HandshakeFailed::parse(&hf[..6], 0).is_err());
}
