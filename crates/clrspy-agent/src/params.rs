//! Request parameters, checked before anything uses them: a pid is a positive integer, a name
//! is from a safe character set, and a query holds only the keys the route knows. Nothing a
//! client sends ever becomes a file path; what fails is a 400.

use std::collections::HashMap;

use crate::error::ApiError;

/// Parses a pid: 1 to 10 ASCII digits, a positive `u32`.
pub fn pid(s: &str) -> Result<u32, ApiError> {
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
pub fn name(s: &str) -> Result<&str, ApiError> {
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

/// Refuses query keys other than `known`.
pub fn only(query: &HashMap<String, String>, known: &[&str]) -> Result<(), ApiError> {
    match query.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) if name(k).is_ok() => Err(ApiError::bad_request(format!(
            "unknown parameter {k:?} (this route takes: {})",
            known.join(", ")
        ))),
        Some(_) => Err(ApiError::bad_request("unknown parameter")),
        None => Ok(()),
    }
}

/// The `pid` parameter, required.
pub fn required_pid(query: &HashMap<String, String>) -> Result<u32, ApiError> {
    pid(query
        .get("pid")
        .ok_or_else(|| ApiError::bad_request("pid is required (?pid=N)"))?)
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
        let q: HashMap<String, String> = [("pid".to_string(), "7".to_string())].into();
        assert!(only(&q, &["pid"]).is_ok());
        assert_eq!(required_pid(&q).unwrap(), 7);
        assert!(only(&q, &["name"]).is_err());
        assert!(required_pid(&HashMap::new()).is_err());
    }
}
