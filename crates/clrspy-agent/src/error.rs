//! The agent's errors: [`AgentError`] (starting up: config, refusals, TLS, sockets) and
//! [`ApiError`] (a request's failure as an HTTP status with a JSON body `{"error": ...}`).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Why the agent cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    /// The config or a command-line value is wrong.
    #[error("{0}")]
    Config(String),
    /// The settings are unsafe and the agent refuses them (without `--insecure`).
    #[error("{0}")]
    Refused(String),
    /// TLS could not be set up.
    #[error("TLS: {0}")]
    Tls(String),
    /// A socket, file or the runtime failed.
    #[error("{0}")]
    Io(String),
}

/// A request's failure.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// Its status.
    pub(crate) status: StatusCode,
    /// What to say (never which part of a credential was wrong).
    pub(crate) message: String,
    /// Seconds after which a retry may succeed (429).
    pub(crate) retry_after: Option<u32>,
}

impl ApiError {
    /// An error with this status and message.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400: a parameter is not acceptable.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404.
    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 429 with `Retry-After`.
    pub(crate) fn busy(message: impl Into<String>, retry_after: u32) -> ApiError {
        ApiError {
            retry_after: Some(retry_after),
            ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, message)
        }
    }

    /// 500.
    pub(crate) fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}
