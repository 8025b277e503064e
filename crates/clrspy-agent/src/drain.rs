//! Stopping without cutting what is being sent. Every response is counted from its request
//! until its body was sent or dropped ([`track`]); on SIGTERM or Ctrl+C the agent stops
//! accepting connections and calls [`Drain::finish`]: every stream is asked to end (a
//! recording ends with its rundown, so its trace is whole; counters and logs send what they
//! have), a new request on a connection still open is answered 503 and the connection closed,
//! and the responses in flight — downloads of dumps and results, pulls, the streams' last
//! bytes — get the grace period to finish. What is still in flight then is cut, and counted.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use clrspy_collect::StopSignal;
use hyper::body::Frame;
use tokio::sync::Notify;

use crate::error::ApiError;

/// The responses in flight, and the streams to end when the agent stops.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    in_flight: AtomicUsize,
    stopping: AtomicBool,
    changed: Notify,
    streams: Mutex<Vec<Weak<StopSignal>>>,
}

impl Drain {
    /// Nothing in flight.
    pub(crate) fn new() -> Arc<Drain> {
        Arc::new(Drain::default())
    }

    /// A stream's stop signal, asked when the agent stops.
    pub(crate) fn stream(&self, stop: &Arc<StopSignal>) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.retain(|s| s.strong_count() > 0);
        streams.push(Arc::downgrade(stop));
        if self.stopping.load(Ordering::SeqCst) {
            stop.request();
        }
    }

    /// Responses whose body has not been sent (or dropped) yet.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Stops: new requests are refused, streams asked to end; waits until nothing is in
    /// flight or `grace` passed. Returns how many responses were still in flight (the ones
    /// the agent's end cuts).
    pub(crate) async fn finish(&self, grace: Duration) -> usize {
        self.stopping.store(true, Ordering::SeqCst);
        let streams = std::mem::take(&mut *self.streams.lock().unwrap_or_else(|e| e.into_inner()));
        for s in streams.iter().filter_map(Weak::upgrade) {
            s.request();
        }
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            // Made before the count is read: a change in between still wakes it.
            let changed = self.changed.notified();
            let n = self.in_flight();
            if n == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.in_flight();
            }
        }
    }
}

/// One response in flight; counted off when dropped.
struct InFlight(Arc<Drain>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

/// The middleware over the whole app: counts each response until its body is gone; once
/// the agent is stopping, answers 503 and closes the connection.
pub(crate) async fn track(State(drain): State<Arc<Drain>>, req: Request, next: Next) -> Response {
    if drain.stopping.load(Ordering::SeqCst) {
        let mut resp =
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the agent is stopping").into_response();
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return resp;
    }
    drain.in_flight.fetch_add(1, Ordering::SeqCst);
    let guard = InFlight(drain);
    let resp = next.run(req).await;
    let (parts, body) = resp.into_parts();
    Response::from_parts(
        parts,
        Body::new(Held {
            inner: body,
            _guard: guard,
        }),
    )
}

/// A body that keeps its response counted in flight while it lives.
struct Held {
    inner: Body,
    _guard: InFlight,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    /// A body sent in the pieces a channel gives it.
    struct Channel(tokio::sync::mpsc::Receiver<Bytes>);

    impl HttpBody for Channel {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
        }
    }

    /// An app whose `/slow` body is sent in the pieces `rx` gives it.
    fn app(drain: Arc<Drain>, rx: tokio::sync::mpsc::Receiver<Bytes>) -> Router {
        let rx = Arc::new(Mutex::new(Some(rx)));
        Router::new()
            .route(
                "/slow",
                get(move || {
                    let rx = rx.lock().unwrap().take().unwrap();
                    async move { Body::new(Channel(rx)) }
                }),
            )
            .route("/quick", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(drain, track))
    }

    async fn get_body(app: &Router, uri: &str) -> Response {
        app.clone()
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn stopping_waits_for_responses_in_flight_and_counts_what_it_cuts() {
        let drain = Drain::new();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let app = app(drain.clone(), rx);
        let quick = get_body(&app, "/quick").await;
        drop(quick);
        assert_eq!(drain.in_flight(), 0);
        let slow = get_body(&app, "/slow").await;
        assert_eq!(drain.in_flight(), 1, "answered, its body not sent yet");
        let stream = Arc::new(StopSignal::new());
        drain.stream(&stream);
        // The body finishes within the grace period: nothing cut.
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            tx.send(Bytes::from_static(b"last")).await.unwrap();
        });
        let reader = tokio::spawn(async move {
            axum::body::to_bytes(slow.into_body(), 1 << 20)
                .await
                .unwrap()
        });
        let cut = drain.finish(Duration::from_secs(10)).await;
        assert_eq!(cut, 0);
        assert_eq!(&reader.await.unwrap()[..], b"last");
        sender.await.unwrap();
        assert_eq!(stream.count(), 1, "streams are asked to end");
        // Once stopping: 503, and the connection closed.
        let refused = get_body(&app, "/quick").await;
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.headers()[header::CONNECTION], "close");
        // A stream registered after the stop is asked at once.
        let late = Arc::new(StopSignal::new());
        drain.stream(&late);
        assert_eq!(late.count(), 1);
    }

    #[tokio::test]
    async fn a_body_outliving_the_grace_period_is_counted_as_cut() {
        let drain = Drain::new();
        let (_tx, rx) = tokio::sync::mpsc::channel(4);
        let app = app(drain.clone(), rx);
        let slow = get_body(&app, "/slow").await;
        let t0 = std::time::Instant::now();
        assert_eq!(drain.finish(Duration::from_millis(300)).await, 1);
        assert!(t0.elapsed() >= Duration::from_millis(300));
        drop(slow);
        assert_eq!(drain.in_flight(), 0);
    }
}
