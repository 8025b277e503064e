//! Which process a request means, as dotnet-monitor's routes take it: exactly one of `pid`,
//! `uid` (the runtime instance cookie, 32 hex digits) or `name` (the entry assembly's or the
//! kernel's name in any case, as `-n NAME` takes it; more than one process of that name is a
//! 400 naming their pids). Resolved on a blocking thread against the runtimes the agent can
//! see; never a path.

use diagnostics_client::Endpoint;

use crate::error::ApiError;
use crate::{params, proc_cache};

/// A process, as the request names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Selector {
    /// By process id.
    Pid(u32),
    /// By runtime instance cookie (lowercase hex).
    Uid(String),
    /// By name.
    Name(String),
}

impl Selector {
    /// From a query's `pid`, `uid` and `name`: exactly one given, checked.
    pub(crate) fn new(
        pid: Option<&str>,
        uid: Option<&str>,
        name: Option<&str>,
    ) -> Result<Selector, ApiError> {
        match (pid, uid, name) {
            (Some(pid), None, None) => params::pid(pid).map(Selector::Pid),
            (None, Some(value), None) => {
                let ok = value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit());
                if ok {
                    Ok(Selector::Uid(value.to_ascii_lowercase()))
                } else {
                    Err(ApiError::bad_request(
                        "uid is a runtime instance cookie: 32 hex digits",
                    ))
                }
            }
            (None, None, Some(name)) => params::name(name).map(|n| Selector::Name(n.to_string())),
            _ => Err(ApiError::bad_request(
                "name the process with exactly one of pid=N, uid=COOKIE or name=NAME",
            )),
        }
    }

    /// Like [`Selector::new`], but none at all is fine (`None`: the route picks).
    pub(crate) fn maybe(
        pid: Option<&str>,
        uid: Option<&str>,
        name: Option<&str>,
    ) -> Result<Option<Selector>, ApiError> {
        if pid.is_none() && uid.is_none() && name.is_none() {
            return Ok(None);
        }
        Selector::new(pid, uid, name).map(Some)
    }

    /// The pid, when the request gave one.
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            Selector::Pid(p) => Some(*p),
            _ => None,
        }
    }

    /// The endpoint of the process meant (blocking: asks the runtimes not yet known, see
    /// [`proc_cache`]). 404 when none matches, 400 when a name matches several.
    pub(crate) fn resolve(&self) -> Result<Endpoint, ApiError> {
        let missing =
            |what: String| ApiError::not_found(format!("no .NET process {what} is visible"));
        match self {
            Selector::Pid(pid) => proc_cache::global()
                .endpoint(*pid)
                .ok_or_else(|| missing(format!("with pid {pid}"))),
            Selector::Uid(uid) => {
                let pid = proc_cache::global()
                    .listing()
                    .into_iter()
                    .find(|r| {
                        r.info
                            .as_ref()
                            .is_ok_and(|i| i.runtime_cookie.eq_ignore_ascii_case(uid))
                    })
                    .map(|r| r.pid)
                    .ok_or_else(|| missing(format!("with uid {uid}")))?;
                Selector::Pid(pid).resolve()
            }
            Selector::Name(name) => {
                let pids: Vec<u32> = proc_cache::global()
                    .listing()
                    .into_iter()
                    .filter(|r| r.is_named(name))
                    .map(|r| r.pid)
                    .collect();
                match pids.as_slice() {
                    [] => Err(missing(format!("named {name}"))),
                    [pid] => Selector::Pid(*pid).resolve(),
                    many => Err(ApiError::bad_request(format!(
                        "{} processes are named {name} (pids {}); name one by pid or uid",
                        many.len(),
                        many.iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<Selector, ApiError> {
        let get = |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        Selector::new(get("pid"), get("uid"), get("name"))
    }

    #[test]
    fn exactly_one_checked_selector() {
        assert_eq!(q(&[("pid", "12")]).unwrap(), Selector::Pid(12));
        let uid = "0123456789ABCDEF0123456789abcdef";
        assert_eq!(
            q(&[("uid", uid)]).unwrap(),
            Selector::Uid(uid.to_ascii_lowercase())
        );
        assert_eq!(
            q(&[("name", "Workloads")]).unwrap(),
            Selector::Name("Workloads".into())
        );
        assert_eq!(Selector::maybe(None, None, None).unwrap(), None);
        for bad in [
            q(&[]),
            q(&[("pid", "1"), ("name", "x")]),
            q(&[("pid", "../1")]),
            q(&[("uid", "xyz")]),
            q(&[("uid", "../../../../../../../../etc/passwd")]),
            q(&[("name", "../etc/passwd")]),
            q(&[("name", "/bin/sh")]),
        ] {
            assert_eq!(bad.unwrap_err().status, 400);
        }
    }

    #[test]
    fn an_unknown_process_is_404() {
        // No runtime has this cookie, and no process this name.
        let e = Selector::Uid("f".repeat(32)).resolve().unwrap_err();
        assert_eq!(e.status, 404);
        let e = Selector::Name("no-such-process-name-4711".into())
            .resolve()
            .unwrap_err();
        assert_eq!(e.status, 404);
    }
}
