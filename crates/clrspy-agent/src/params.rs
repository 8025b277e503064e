//! Request parameters, checked before anything uses them: a query string is read into the
//! route's own type ([`Query`]: serde, unknown keys refused), a pid is a positive integer, a
//! name is from a safe character set. Nothing a client sends ever becomes a file path; what
//! fails is a 400 with the same JSON body as every other error.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::ApiError;

/// The query string read into `T`, a route's own query type (`deny_unknown_fields`): a key
/// the route does not take, a key given twice or a value of the wrong shape is a 400 saying
/// which, as JSON like every other error.
#[derive(Debug)]
pub(crate) struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Query<T>, ApiError> {
        serde_urlencoded::from_str(parts.uri.query().unwrap_or_default())
            .map(Query)
            .map_err(|e| ApiError::bad_request(format!("the query: {e}")))
    }
}

/// The query of a route that takes no parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoQuery {}

/// Parses a pid: 1 to 10 ASCII digits, a positive `u32`.
pub(crate) fn pid(s: &str) -> Result<u32, ApiError> {
    let bad = || ApiError::bad_request("pid must be a positive integer");
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match s.parse::<u32>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(bad()),
    }
}

/// Checks a name (a process, rule or provider name): 1 to 128 of `A-Z a-z 0-9 . _ -`, not
/// starting with a dot.
pub(crate) fn name(s: &str) -> Result<&str, ApiError> {
    let ok = !s.is_empty()
        && s.len() <= 128
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(s)
    } else {
        Err(ApiError::bad_request(
            "a name is 1 to 128 letters, digits, '.', '_' or '-' (not starting with '.')",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids() {
        assert_eq!(pid("42").unwrap(), 42);
        assert_eq!(pid("4294967295").unwrap(), u32::MAX);
        for bad in [
            "",
            "0",
            "-1",
            "+1",
            "1.0",
            "..",
            "../1",
            "/etc/passwd",
            "4294967296",
            " 1",
            "12345678901",
            "1e3",
        ] {
            assert_eq!(pid(bad).unwrap_err().status, 400, "{bad:?}");
        }
    }

    #[test]
    fn names() {
        assert!(name("Workloads.Web-1_a").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "/abs",
            "a\\b",
            "a b",
            "é",
            ".hidden",
            &"x".repeat(129),
        ] {
            assert!(name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn queries() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Q {
            pid: Option<String>,
            n: Option<u32>,
        }
        let read = |q: &str| -> Result<Q, ApiError> {
            serde_urlencoded::from_str(q)
                .map_err(|e| ApiError::bad_request(format!("the query: {e}")))
        };
        let q = read("pid=7&n=3").unwrap();
        assert_eq!((q.pid.as_deref(), q.n), (Some("7"), Some(3)));
        assert!(read("").unwrap().pid.is_none());
        for (bad, says) in [
            ("x=1", "unknown field `x`"),
            ("pid=1&pid=2", "duplicate field `pid`"),
            ("n=..", "invalid digit"),
        ] {
            let e = read(bad).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
        let none: Result<NoQuery, _> = serde_urlencoded::from_str("a=b");
        assert!(none.is_err());
    }
}
