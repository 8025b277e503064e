//! `/operations`: the long-running actions (dumps, heap snapshots) started with `mode=operation` —
//! `GET /operations` (newest first), `GET /operations/{id}` (its state), `GET
//! /operations/{id}/result` (its file, streamed from disk), `DELETE /operations/{id}` (cancels a
//! running one: 202; forgets an ended one and deletes its file: 204). Ids are checked (32 hex
//! digits, else 400) before they are looked up (unknown: 404). Also the file streaming `/dump` and
//! `/gcdump` answer with.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::io::ReaderStream;

use crate::audit::Subject;
use crate::error::ApiError;
use crate::operations::{parse_id, Deleted, Operation, Operations};
use crate::params::{NoQuery, Query};
use crate::state::AppState;

/// The area's routes: downloading a result and cancelling or deleting are audited.
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![
        super::table::Route::new("/operations").get(list),
        super::table::Route::new("/operations/{id}").get(one),
        super::table::Route::new("/operations/{id}")
            .delete(delete)
            .audited(),
        super::table::Route::new("/operations/{id}/result")
            .get(result)
            .audited(),
    ]
}

async fn list(
    State(state): State<AppState>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Vec<Operation>>, ApiError> {
    Ok(Json(state.operations.list()))
}

async fn one(
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Operation>, ApiError> {
    Ok(Json(state.operations.get(&parse_id(&id)?)?))
}

async fn result(
    State(state): State<AppState>,
    subject: Subject,
    UrlPath(id): UrlPath<String>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    if let Ok(op) = state.operations.get(&id) {
        subject.pid(op.pid);
    }
    let (path, artifact) = state.operations.artifact(&id)?;
    file_response(&path, &artifact.name, None).await
}

async fn delete(
    State(state): State<AppState>,
    subject: Subject,
    UrlPath(id): UrlPath<String>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    if let Ok(op) = state.operations.get(&id) {
        subject.pid(op.pid);
    }
    let operations = state.operations.clone();
    // Deleting an ended operation removes its folder: off the async workers.
    let deleted = tokio::task::spawn_blocking(move || operations.delete(&id))
        .await
        .map_err(|e| ApiError::internal(format!("deleting the operation failed: {e}")))?;
    Ok(match deleted? {
        Deleted::Cancelling(op) => (StatusCode::ACCEPTED, Json(op)).into_response(),
        Deleted::Removed => StatusCode::NO_CONTENT.into_response(),
    })
}

/// Forgets an operation (and deletes its folder) when dropped: a direct request's, once its
/// file has been sent or the client went away.
pub(super) struct Forget {
    pub(super) operations: Arc<Operations>,
    pub(super) id: String,
}

impl Drop for Forget {
    fn drop(&mut self) {
        // Dropped with the response body, on an async worker: the folder is removed on a
        // blocking thread.
        let (operations, id) = (self.operations.clone(), std::mem::take(&mut self.id));
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(move || operations.remove(&id));
            }
            Err(_) => operations.remove(&id),
        }
    }
}

/// A file being sent, holding what must live as long as the sending.
struct Sending {
    file: tokio::fs::File,
    _forget: Option<Forget>,
}

impl AsyncRead for Sending {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.file).poll_read(cx, buf)
    }
}

/// The file at `path` streamed (64 KB at a time, never read whole) as an attachment named
/// `name` (one of the agent's names); `forget` is dropped when the sending ends.
pub(super) async fn file_response(
    path: &Path,
    name: &str,
    forget: Option<Forget>,
) -> Result<Response, ApiError> {
    let failed = |e: std::io::Error| ApiError::internal(format!("reading the result: {e}"));
    let file = tokio::fs::File::open(path).await.map_err(failed)?;
    let len = file.metadata().await.map_err(failed)?.len();
    let body = Body::from_stream(ReaderStream::with_capacity(
        Sending {
            file,
            _forget: forget,
        },
        64 << 10,
    ));
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
        .map_err(|_| ApiError::internal("an artifact name that is not a header"))?;
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CONTENT_DISPOSITION, disposition);
    Ok(resp)
}
