//! `GET /dump?pid|uid|name&type=mini|heap|triage|full` (a core dump, gzip-compressed as the runtime
//! writes it) and `GET /gcdump?pid|uid|name` (a heap snapshot, `.gcdump`). Each is an operation
//! (see [`crate::operations`]) run as a child process of the clrspy binary (`clrspy dump`, `clrspy
//! gcdump`) writing into the operation's own folder, so that a huge heap's graph never lives in the
//! agent and cancelling is killing the child. By default the request waits and the finished file is
//! streamed back, then deleted (a client that goes away cancels the work); with `mode=operation`
//! the answer is at once: 202 Accepted, `Location: /operations/{id}` and the operation. Bounded by
//! `limits.concurrent.dumps` / `gcdumps` (one per process at a time, else 429), the disk budget
//! (507) and their own time limit, not `limits.request_timeout`. `/dump?...&analyze=1` answers
//! with the dump's analysis instead of the file (JSON: threads and stacks, monitors with owners
//! and waiters, deadlock cycles, exceptions — `clrspy dump analyze --json`), read in a child
//! process; the dump is deleted after (direct mode only).

use std::ffi::OsString;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::operations::{file_response, Forget};
use crate::artifact::{self, Job, JobEnd};
use crate::audit::Subject;
use crate::error::ApiError;
use crate::limits::{blocking, on_thread, Kind};
use crate::operations::{OpKind, OpState};
use crate::params::Query;
use crate::select::Selector;
use crate::state::AppState;

/// The longest a dump or heap snapshot may take before its child is killed.
pub(super) const JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// What `clrspy gcdump` waits for the runtime's heap walk (below [`JOB_TIMEOUT`], leaving
/// time to build and write the graph).
const HEAP_WALK_TIMEOUT: &str = "240s";

/// What a direct request may take beyond the job (resolving the process, sending headers).
const MARGIN: Duration = Duration::from_secs(30);

/// The least a job is estimated to write (a mini dump of a small process is a few MB).
const MIN_ESTIMATE: u64 = 4 << 20;

/// The routes: audited, bounded by [`BOUND`].
pub(super) fn routes() -> Vec<super::table::Route> {
    vec![
        super::table::Route::new("/dump")
            .get(dump)
            .bound(BOUND)
            .audited(),
        super::table::Route::new("/gcdump")
            .get(gcdump)
            .bound(BOUND)
            .audited(),
    ]
}

/// How long a request of these routes may take (instead of the request timeout).
const BOUND: Duration = JOB_TIMEOUT.saturating_add(MARGIN);

/// `/dump`'s query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DumpQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    #[serde(rename = "type")]
    dump_type: Option<String>,
    mode: Option<String>,
    analyze: Option<String>,
}

/// `/gcdump`'s query.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GcdumpQuery {
    pid: Option<String>,
    uid: Option<String>,
    name: Option<String>,
    mode: Option<String>,
}

/// A dump type as the request names it (dotnet-monitor's names too, any case): the name
/// `clrspy dump --type` takes.
fn dump_type(s: Option<&str>) -> Result<&'static str, ApiError> {
    match s.map(str::to_ascii_lowercase).as_deref() {
        None | Some("heap") | Some("withheap") => Ok("heap"),
        Some("mini") => Ok("mini"),
        Some("triage") => Ok("triage"),
        Some("full") => Ok("full"),
        _ => Err(ApiError::bad_request(
            "type is mini, heap (the default), triage or full",
        )),
    }
}

/// `analyze`: absent, `0`/`false`, or `1`/`true`.
fn flag(name: &str, s: Option<&str>) -> Result<bool, ApiError> {
    match s {
        None | Some("0") | Some("false") => Ok(false),
        Some("1") | Some("true") => Ok(true),
        _ => Err(ApiError::bad_request(format!("{name} is 1 or 0"))),
    }
}

/// `mode`: absent or `direct` (wait and stream the file), `operation` (202 at once).
fn as_operation(s: Option<&str>) -> Result<bool, ApiError> {
    match s {
        None | Some("direct") => Ok(false),
        Some("operation") => Ok(true),
        _ => Err(ApiError::bad_request(
            "mode is direct (the default: wait for the file) or operation (202 and /operations/{id})",
        )),
    }
}

/// What a job of `kind` is expected to write for a process of `resident` bytes: a gzip'd
/// core about a quarter of what it holds in memory (a mini dump far less), a heap snapshot's
/// temporary trace and graph about half. A floor of [`MIN_ESTIMATE`].
fn estimate(kind: OpKind, dump_type: &str, resident: Option<u64>) -> u64 {
    let r = resident.unwrap_or(0);
    let guess = match (kind, dump_type) {
        (OpKind::Dump, "mini" | "triage") => r / 16,
        (OpKind::Dump, _) => r / 4,
        (OpKind::Gcdump, _) => r / 2,
    };
    guess.max(MIN_ESTIMATE)
}

async fn dump(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<DumpQuery>,
) -> Result<Response, ApiError> {
    let t = dump_type(q.dump_type.as_deref())?;
    let operation = as_operation(q.mode.as_deref())?;
    let analyze = flag("analyze", q.analyze.as_deref())?;
    if analyze && operation {
        return Err(ApiError::bad_request(
            "analyze=1 answers with the analysis directly: drop mode=operation",
        ));
    }
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    let kind = if analyze { Then::Analyze } else { Then::Stream };
    start(state, subject, selector, operation, OpKind::Dump, t, kind).await
}

/// What a direct request answers with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    /// The file.
    Stream,
    /// The dump's analysis (the dump is deleted).
    Analyze,
}

async fn gcdump(
    State(state): State<AppState>,
    subject: Subject,
    Query(q): Query<GcdumpQuery>,
) -> Result<Response, ApiError> {
    let operation = as_operation(q.mode.as_deref())?;
    let selector = Selector::new(q.pid.as_deref(), q.uid.as_deref(), q.name.as_deref())?;
    start(
        state,
        subject,
        selector,
        operation,
        OpKind::Gcdump,
        "",
        Then::Stream,
    )
    .await
}

/// The child's arguments and the artifact's name.
fn command(
    kind: OpKind,
    dump_type: &str,
    pid: u32,
    dir: &std::path::Path,
) -> (Vec<OsString>, String) {
    let stamp = clrspy_values::time::file_stamp(std::time::SystemTime::now());
    let (name, mut args): (String, Vec<OsString>) = match kind {
        OpKind::Dump => (
            format!("core_{pid}_{stamp}_{dump_type}.dmp.gz"),
            vec![
                "dump".into(),
                "--type".into(),
                dump_type.into(),
                "--compress".into(),
                "gzip".into(),
                "--timeout".into(),
                format!("{}s", JOB_TIMEOUT.as_secs()).into(),
            ],
        ),
        OpKind::Gcdump => (
            format!("{pid}_{stamp}.gcdump"),
            vec![
                "gcdump".into(),
                "--yes".into(),
                "--timeout".into(),
                HEAP_WALK_TIMEOUT.into(),
            ],
        ),
    };
    args.extend(["-p".into(), pid.to_string().into(), "-o".into()]);
    args.push(dir.join(&name).into_os_string());
    (args, name)
}

async fn start(
    state: AppState,
    subject: Subject,
    selector: Selector,
    operation: bool,
    kind: OpKind,
    dump_type: &'static str,
    then: Then,
) -> Result<Response, ApiError> {
    // The process is looked up first (a 404 starts nothing), as a listing is.
    let admission = state.limits.admit(Kind::Processes, None)?;
    let pid = blocking(admission, move || selector.resolve().map(|e| e.pid)).await??;
    subject.pid(pid);
    let limit = match kind {
        OpKind::Dump => Kind::Dump,
        OpKind::Gcdump => Kind::Gcdump,
    };
    let admission = state.limits.admit(limit, Some(pid))?;
    let program = std::env::current_exe()
        .map_err(|e| ApiError::internal(format!("cannot find the clrspy binary: {e}")))?;
    let resident = diagnostics_client::procfs::resident_bytes(pid);
    let ops = state.operations.clone();
    let detail = (kind == OpKind::Dump).then(|| dump_type.to_string());
    // Admission measures the agent's folder: a walk, off the async workers.
    let registry = ops.clone();
    let begun = tokio::task::spawn_blocking(move || {
        registry.begin(kind, detail, pid, estimate(kind, dump_type, resident))
    })
    .await
    .map_err(|e| ApiError::internal(format!("admitting the job failed: {e}")))??;
    let (args, output) = command(kind, dump_type, pid, &begun.dir);
    let job = Job {
        program,
        args,
        dir: begun.dir.clone(),
        output,
        timeout: JOB_TIMEOUT,
    };
    let (id, stop, runner) = (begun.id.clone(), begun.stop.clone(), ops.clone());
    // Up to JOB_TIMEOUT of a child process watched: on a thread of its own.
    let thread = match kind {
        OpKind::Dump => "agent-dump",
        OpKind::Gcdump => "agent-gcdump",
    };
    let task = tokio::spawn(on_thread(thread, admission, move || {
        let end = artifact::run(&job, &stop, &|| runner.over_budget());
        let status = match &end {
            JobEnd::Done(_) => StatusCode::OK,
            JobEnd::OverBudget(_) => StatusCode::INSUFFICIENT_STORAGE,
            JobEnd::Failed(_) => StatusCode::BAD_GATEWAY,
            JobEnd::Cancelled => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, runner.finish(&id, end))
    }));
    if operation {
        let op = ops.get(&begun.id)?;
        let location = HeaderValue::from_str(&format!("/operations/{}", begun.id))
            .map_err(|_| ApiError::internal("an id that is not a header"))?;
        return Ok((
            StatusCode::ACCEPTED,
            [(header::LOCATION, location)],
            Json(op),
        )
            .into_response());
    }
    // Direct: the operation is forgotten (its file deleted) once answered, or when the client
    // goes away (which stops the child).
    let forget = Forget {
        operations: ops.clone(),
        id: begun.id.clone(),
    };
    let (status, op) = task
        .await
        .map_err(|e| ApiError::internal(format!("the job failed: {e}")))??;
    match op {
        Some(op) if op.state == OpState::Succeeded && then == Then::Analyze => {
            let (path, _) = ops.artifact(&op.id)?;
            // The dump is deleted before the answer, not after it as a streamed file is.
            let (remover, id) = (ops.clone(), op.id.clone());
            let read = tokio::task::spawn_blocking(move || {
                let a = clrspy_collect::analyze_dump(&path, false);
                remover.remove(&id);
                a
            })
            .await
            .map_err(|e| ApiError::internal(format!("the analysis failed: {e}")))?;
            drop(forget);
            match read {
                Ok(a) => Ok(Json(a).into_response()),
                Err(e) => Err(ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    format!("the dump of pid {pid} was written but could not be read: {e}"),
                )),
            }
        }
        Some(op) if op.state == OpState::Succeeded => {
            let (path, a) = ops.artifact(&op.id)?;
            file_response(&path, &a.name, Some(forget)).await
        }
        Some(op) => Err(ApiError::new(
            status,
            format!(
                "{} of pid {pid}: {}",
                match kind {
                    OpKind::Dump => "the dump",
                    OpKind::Gcdump => "the heap snapshot",
                },
                op.error.unwrap_or_else(|| "cancelled".into())
            ),
        )),
        None => Err(ApiError::internal("the operation was deleted while it ran")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert_eq!(dump_type(None).unwrap(), "heap");
        assert_eq!(dump_type(Some("WithHeap")).unwrap(), "heap");
        assert_eq!(dump_type(Some("Mini")).unwrap(), "mini");
        for bad in ["", "..", "/etc/passwd", "normal2", "full "] {
            assert_eq!(dump_type(Some(bad)).unwrap_err().status, 400, "{bad:?}");
        }
        assert!(!flag("analyze", None).unwrap());
        assert!(flag("analyze", Some("1")).unwrap());
        assert_eq!(flag("analyze", Some("yes")).unwrap_err().status, 400);
        assert!(!as_operation(None).unwrap());
        assert!(as_operation(Some("operation")).unwrap());
        assert_eq!(as_operation(Some("../x")).unwrap_err().status, 400);
    }

    #[test]
    fn estimates_have_a_floor_and_follow_the_process() {
        assert_eq!(estimate(OpKind::Dump, "mini", None), MIN_ESTIMATE);
        assert_eq!(estimate(OpKind::Dump, "full", Some(1 << 30)), 256 << 20);
        assert_eq!(estimate(OpKind::Gcdump, "", Some(1 << 30)), 512 << 20);
        assert_eq!(estimate(OpKind::Dump, "mini", Some(1 << 30)), 64 << 20);
    }

    #[test]
    fn children_write_our_names_in_the_job_folder() {
        let dir = std::path::Path::new("/x/operations/ab");
        let (args, name) = command(OpKind::Dump, "mini", 42, dir);
        assert!(
            name.starts_with("core_42_") && name.ends_with("_mini.dmp.gz"),
            "{name}"
        );
        assert_eq!(args.last().unwrap(), &dir.join(&name).into_os_string());
        assert!(args.iter().any(|a| a == "gzip"));
        let (args, name) = command(OpKind::Gcdump, "", 42, dir);
        assert!(name.starts_with("42_") && name.ends_with(".gcdump"));
        assert_eq!(args[0], "gcdump");
        assert!(args.iter().any(|a| a == "--yes"));
    }
}
