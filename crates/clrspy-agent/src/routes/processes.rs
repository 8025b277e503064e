//! `GET /processes` (every .NET process the agent can see, as `clrspy ps --json` finds them:
//! diagnostics-client's listing) and `GET /processes/{pid}` (the same for one, with its
//! environment). Command lines and environments are redacted as the bundle redacts them.
//! What each runtime says about itself is asked once per process ([`crate::proc_cache`]); a
//! listing that starts no ask takes no `processes` permit (nor a blocking thread, when the
//! last scan is recent); the environment is read at each call.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::Json;
use clrspy_handoff::scrub::Redactor;
use diagnostics_client::{procfs, Endpoint, ProcessInfo, RuntimeListing};
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::limits::{blocking, Kind};
use crate::params::{self, NoQuery, Query};
use crate::proc_cache;
use crate::select::Selector;
use crate::state::AppState;

/// How long one runtime may take to answer.
const TIMEOUT: Duration = Duration::from_millis(1500);

/// The area's routes.
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![
        super::table::Route::new("/processes").get(list),
        super::table::Route::new("/processes/{pid}").get(one),
    ]
}

/// The command line, redacted: the kernel's argument list when it can be read (exact), else
/// the runtime's string split at spaces.
fn command_line(pid: u32, fallback: &str, redactor: &mut Redactor) -> String {
    let args = procfs::cmdline(pid)
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| fallback.split_whitespace().map(str::to_string).collect());
    redactor
        .args(&args, &format!("the command line of pid {pid}"))
        .join(" ")
}

/// One process as JSON; `redactor` masks its command line (a redactor that has seen the
/// process's environment also masks the secrets it learned there).
fn describe(
    pid: u32,
    name: &str,
    cmd: &str,
    info: &Result<ProcessInfo, String>,
    redactor: &mut Redactor,
) -> Value {
    let command_line = command_line(pid, cmd, redactor);
    match info {
        Ok(p) => json!({
            "pid": pid,
            "name": name,
            "runtime_version": p.runtime_version,
            "command_line": command_line,
            "runtime_instance_cookie": p.runtime_cookie,
            "os": p.os,
            "arch": p.arch,
            "entrypoint_assembly": p.entrypoint_assembly,
            "runtime_identifier": p.portable_rid,
        }),
        Err(e) => json!({
            "pid": pid,
            "name": name,
            "runtime_version": null,
            "command_line": command_line,
            "runtime_instance_cookie": null,
            "error": e,
        }),
    }
}

async fn list(
    State(state): State<AppState>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let cache = proc_cache::global();
    // Known runtimes and a recent scan: answered here, reading only /proc.
    let rows = match cache.known_listing() {
        Some(rows) => rows,
        // A listing that only waits for asks under way (another request's) starts no IPC.
        None => match tokio::task::spawn_blocking(|| (!cache.needs_ask()).then(|| cache.listing()))
            .await
        {
            Ok(Some(rows)) => rows,
            // Some runtime is to be asked: that is work under the limit.
            _ => {
                let admission = state.limits.admit(Kind::Processes, None)?;
                blocking(admission, || cache.listing()).await?
            }
        },
    };
    let list = rows
        .iter()
        .map(|r| {
            let mut redactor = Redactor::new(true);
            describe(r.pid, &r.name, &r.command_line, &r.info, &mut redactor)
        })
        .collect();
    Ok(Json(Value::Array(list)))
}

fn details(ep: &Endpoint) -> Value {
    let pid = ep.pid;
    let row = RuntimeListing::new(pid, proc_cache::global().info(ep));
    // The runtime's own view of its environment, else the kernel's (its start-up one). Read
    // first: the secrets learned from it are masked in the command line too.
    let env = diagnostics_client::process_environment(ep, TIMEOUT)
        .map_err(|e| e.to_string())
        .or_else(|e| procfs::environ(pid).map(|env| env.pairs()).ok_or(e));
    let mut redactor = Redactor::new(true);
    let env = env.map(|vars| redactor.env(&vars, &format!("the environment of pid {pid}")));
    let mut v = describe(pid, &row.name, &row.command_line, &row.info, &mut redactor);
    if let Some(o) = v.as_object_mut() {
        match env {
            Ok(vars) => {
                let map: Map<String, Value> = vars
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                o.insert("environment".into(), Value::Object(map));
            }
            Err(e) => {
                o.insert("environment".into(), Value::Null);
                o.insert("environment_error".into(), Value::String(e));
            }
        }
    }
    v
}

async fn one(
    State(state): State<AppState>,
    Path(pid): Path<String>,
    Query(NoQuery {}): Query<NoQuery>,
) -> Result<Json<Value>, ApiError> {
    let pid = params::pid(&pid)?;
    let admission = state.limits.admit(Kind::Processes, None)?;
    let v = blocking(admission, move || {
        Selector::Pid(pid).resolve().map(|ep| details(&ep))
    })
    .await??;
    Ok(Json(v))
}
