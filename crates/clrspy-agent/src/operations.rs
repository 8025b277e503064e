//! The registry of long-running actions (`/operations`): each operation has an id of ours (128
//! random bits, 32 lowercase hex digits), a kind (`dump`, `gcdump`; a recording can be added as
//! another), the process, a state (`running`, `succeeded`, `failed`, `cancelled`), its times, and
//! when done its artifact (name, size, SHA-256) or its error. Each operation writes in a folder of
//! its own under the agent's folder (`operations-<agent pid>/<id>`), made when it is admitted by
//! the disk budget (see [`crate::artifact`]) and removed when it fails, is cancelled, deleted or
//! evicted: at most [`KEEP_FINISHED`] finished operations are kept, the oldest going first. Ids
//! never become paths unchecked: [`parse_id`] takes only 32 hex digits.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::http::StatusCode;
use clrspy_collect::StopSignal;
use serde::Serialize;

use crate::artifact::{Artifact, Budget, JobEnd};
use crate::error::ApiError;

/// How many finished operations are kept (more: the oldest are forgotten and their files
/// deleted).
pub(crate) const KEEP_FINISHED: usize = 100;

/// The sub-folder of the agent's folder holding one folder per operation:
/// `operations-<the agent's pid>` (so that [`sweep`] knows a dead agent's leftovers).
const SUBFOLDER: &str = "operations-";

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OpKind {
    /// A process dump (`clrspy dump`), gzip-compressed.
    Dump,
    /// A heap snapshot (`clrspy gcdump`).
    Gcdump,
}

/// Where an operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OpState {
    /// Under way.
    Running,
    /// Done; its artifact can be downloaded.
    Succeeded,
    /// It failed (see its error).
    Failed,
    /// Stopped on request.
    Cancelled,
}

/// An operation as `/operations` shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Operation {
    /// Its id.
    pub(crate) id: String,
    /// What it does.
    pub(crate) kind: OpKind,
    /// A detail of the kind (the dump's type), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<String>,
    /// The process.
    pub(crate) pid: u32,
    /// Where it is.
    pub(crate) state: OpState,
    /// When it was started (RFC 3339 UTC).
    pub(crate) created: String,
    /// When it ended.
    pub(crate) ended: Option<String>,
    /// The file it made, when it succeeded.
    pub(crate) artifact: Option<Artifact>,
    /// Why it failed.
    pub(crate) error: Option<String>,
}

/// One operation with what the registry keeps beside it.
struct Entry {
    view: Operation,
    stop: Arc<StopSignal>,
    dir: PathBuf,
    estimate: u64,
}

/// A started operation's handles, for the job that runs it.
#[derive(Debug)]
pub(crate) struct Begun {
    /// Its id.
    pub(crate) id: String,
    /// Its own folder (made).
    pub(crate) dir: PathBuf,
    /// Set when it is cancelled.
    pub(crate) stop: Arc<StopSignal>,
}

/// What deleting an operation did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// It was running: it is being stopped (its state turns to `cancelled`).
    Cancelling(Operation),
    /// It had ended: it is forgotten and its file deleted.
    Removed,
}

/// The registry.
pub(crate) struct Operations {
    /// The agent's folder (all of it counts in the budget).
    folder: PathBuf,
    budget: Budget,
    keep: usize,
    /// Oldest first.
    entries: Mutex<Vec<Entry>>,
}

/// A new id: 128 bits from the kernel's random source, as 32 lowercase hex digits.
pub(crate) fn new_id() -> Result<String, ApiError> {
    let mut b = [0u8; 16];
    // SAFETY: getrandom writes at most the 16 bytes of the buffer it is given.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 16 {
        return Err(ApiError::internal("no random bytes for an operation id"));
    }
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Checks an id from a request: 32 hex digits (lowercased), else 400.
pub(crate) fn parse_id(s: &str) -> Result<String, ApiError> {
    if s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(ApiError::bad_request(
            "an operation id is 32 hex digits, as /operations lists them",
        ))
    }
}

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(format!("no operation {id}"))
}

fn now() -> String {
    clrspy_values::time::rfc3339(SystemTime::now())
}

impl Operations {
    /// A registry writing under `folder` (the agent's), bounded by `budget`, keeping `keep`
    /// finished operations.
    pub(crate) fn new(folder: &Path, budget: Budget, keep: usize) -> Operations {
        Operations {
            folder: folder.to_path_buf(),
            budget,
            keep,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// This agent's folder of operations.
    fn root(&self) -> PathBuf {
        self.folder
            .join(format!("{SUBFOLDER}{}", std::process::id()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits an operation estimated to write `estimate` bytes (507 when the disk budget or
    /// the disk cannot take it), makes its folder (0700) and lists it as running. Blocking:
    /// the agent's folder is measured.
    pub(crate) fn begin(
        &self,
        kind: OpKind,
        detail: Option<String>,
        pid: u32,
        estimate: u64,
    ) -> Result<Begun, ApiError> {
        let id = new_id()?;
        let mut entries = self.lock();
        let reserved: u64 = entries
            .iter()
            .filter(|e| e.view.state == OpState::Running)
            .map(|e| e.estimate)
            .sum();
        let used = clrspy_rules::folder_bytes(&self.folder);
        let free = clrspy_collect::disk::free_bytes(&self.folder);
        self.budget
            .admits(used, reserved, estimate, free)
            .map_err(|m| ApiError::new(StatusCode::INSUFFICIENT_STORAGE, m))?;
        let dir = self.root().join(&id);
        clrspy_collect::private::create_private_dir(&dir)
            .map_err(|e| ApiError::internal(format!("cannot make the operation's folder: {e}")))?;
        let stop = Arc::new(StopSignal::new());
        entries.push(Entry {
            view: Operation {
                id: id.clone(),
                kind,
                detail,
                pid,
                state: OpState::Running,
                created: now(),
                ended: None,
                artifact: None,
                error: None,
            },
            stop: stop.clone(),
            dir: dir.clone(),
            estimate,
        });
        Ok(Begun { id, dir, stop })
    }

    /// What a stream's spool may grow to now within the disk budget and the disk's free
    /// space (507 when nothing). Blocking: the agent's folder is measured.
    pub(crate) fn spool_room(&self) -> Result<u64, ApiError> {
        self.budget
            .room(
                clrspy_rules::folder_bytes(&self.folder),
                clrspy_collect::disk::free_bytes(&self.folder),
            )
            .map_err(|m| ApiError::new(StatusCode::INSUFFICIENT_STORAGE, m))
    }

    /// Why a running job must stop now (the budget exceeded, the disk too full), or None.
    pub(crate) fn over_budget(&self) -> Option<String> {
        self.budget.exceeded(
            clrspy_rules::folder_bytes(&self.folder),
            clrspy_collect::disk::free_bytes(&self.folder),
        )
    }

    /// Records how the job of `id` ended (its folder is already emptied unless it succeeded)
    /// and forgets the oldest finished operations beyond the bound. Returns the operation as
    /// it is now (None when it was deleted meanwhile).
    pub(crate) fn finish(&self, id: &str, end: JobEnd) -> Option<Operation> {
        let mut entries = self.lock();
        let out = entries.iter_mut().find(|e| e.view.id == id).map(|e| {
            let v = &mut e.view;
            v.ended = Some(now());
            match end {
                JobEnd::Done(a) => {
                    v.state = OpState::Succeeded;
                    v.artifact = Some(a);
                }
                JobEnd::Failed(m) | JobEnd::OverBudget(m) => {
                    v.state = OpState::Failed;
                    v.error = Some(m);
                }
                JobEnd::Cancelled => v.state = OpState::Cancelled,
            }
            v.clone()
        });
        if out.is_none() {
            // Forgotten while it ran: what it wrote goes too.
            let _ = std::fs::remove_dir_all(self.root().join(id));
        }
        self.evict(&mut entries);
        out
    }

    /// Forgets the oldest finished operations beyond `keep`, deleting their folders.
    fn evict(&self, entries: &mut Vec<Entry>) {
        let finished = entries
            .iter()
            .filter(|e| e.view.state != OpState::Running)
            .count();
        let mut extra = finished.saturating_sub(self.keep);
        entries.retain(|e| {
            if extra > 0 && e.view.state != OpState::Running {
                extra -= 1;
                let _ = std::fs::remove_dir_all(&e.dir);
                false
            } else {
                true
            }
        });
    }

    /// Every operation, newest first.
    pub(crate) fn list(&self) -> Vec<Operation> {
        self.lock().iter().rev().map(|e| e.view.clone()).collect()
    }

    /// One operation (404 when unknown).
    pub(crate) fn get(&self, id: &str) -> Result<Operation, ApiError> {
        self.lock()
            .iter()
            .find(|e| e.view.id == id)
            .map(|e| e.view.clone())
            .ok_or_else(|| unknown(id))
    }

    /// The artifact of a succeeded operation: its path and name (404 unknown, 409 not
    /// succeeded).
    pub(crate) fn artifact(&self, id: &str) -> Result<(PathBuf, Artifact), ApiError> {
        let entries = self.lock();
        let e = entries
            .iter()
            .find(|e| e.view.id == id)
            .ok_or_else(|| unknown(id))?;
        match (&e.view.state, &e.view.artifact) {
            (OpState::Succeeded, Some(a)) => Ok((e.dir.join(&a.name), a.clone())),
            (s, _) => Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "operation {id} is {}: it has no result",
                    serde_json::to_value(s)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                ),
            )),
        }
    }

    /// Cancels a running operation or forgets a finished one (deleting its file); 404 when
    /// unknown.
    pub(crate) fn delete(&self, id: &str) -> Result<Deleted, ApiError> {
        let mut entries = self.lock();
        let i = entries
            .iter()
            .position(|e| e.view.id == id)
            .ok_or_else(|| unknown(id))?;
        if entries[i].view.state == OpState::Running {
            entries[i].stop.request();
            return Ok(Deleted::Cancelling(entries[i].view.clone()));
        }
        let e = entries.remove(i);
        let _ = std::fs::remove_dir_all(&e.dir);
        Ok(Deleted::Removed)
    }

    /// Forgets `id` whatever its state (a direct request's operation once answered), deleting
    /// its folder; a running one is stopped first.
    pub(crate) fn remove(&self, id: &str) {
        let mut entries = self.lock();
        if let Some(i) = entries.iter().position(|e| e.view.id == id) {
            let e = entries.remove(i);
            e.stop.request();
            let _ = std::fs::remove_dir_all(&e.dir);
        }
    }
}

/// Removes what agents that ended left in `folder` (operations live in memory: a folder
/// `operations-<pid>` whose agent is gone is never served again); returns how many folders
/// went. An agent calls it once at start, before it serves.
pub(crate) fn sweep(folder: &Path) -> usize {
    let mine = std::process::id();
    let mut removed = 0;
    for e in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SUBFOLDER))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = diagnostics_client::procfs::alive(pid);
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if pid != mine && !alive && is_dir && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("clrspy-agent-ops-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn big() -> Budget {
        Budget {
            limit: u64::MAX,
            min_free: 0,
        }
    }

    fn done(dir: &Path, name: &str) -> JobEnd {
        std::fs::write(dir.join(name), b"abc").unwrap();
        let (bytes, sha256) = crate::artifact::measure(&dir.join(name)).unwrap();
        JobEnd::Done(Artifact {
            name: name.into(),
            bytes,
            sha256,
        })
    }

    #[test]
    fn ids_are_random_hex_and_checked() {
        let (a, b) = (new_id().unwrap(), new_id().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(parse_id(&a).unwrap(), a);
        assert_eq!(parse_id(&a.to_ascii_uppercase()).unwrap(), a);
        for bad in [
            "",
            "..",
            "../../etc/passwd",
            &"g".repeat(32),
            &"a".repeat(31),
            &"a".repeat(33),
            "/abs",
        ] {
            assert_eq!(parse_id(bad).unwrap_err().status, 400, "{bad:?}");
        }
    }

    #[test]
    fn lifecycle_list_result_delete() {
        let d = temp("life");
        let ops = Operations::new(&d, big(), 10);
        let a = ops.begin(OpKind::Dump, Some("mini".into()), 7, 0).unwrap();
        assert!(a.dir.is_dir() && a.dir.starts_with(&d));
        assert_eq!(ops.get(&a.id).unwrap().state, OpState::Running);
        assert_eq!(ops.artifact(&a.id).unwrap_err().status, 409);
        let v = ops.finish(&a.id, done(&a.dir, "x.dmp.gz")).unwrap();
        assert_eq!(v.state, OpState::Succeeded);
        assert!(v.ended.is_some());
        let (path, art) = ops.artifact(&a.id).unwrap();
        assert_eq!((art.bytes, path), (3, a.dir.join("x.dmp.gz")));
        let b = ops.begin(OpKind::Gcdump, None, 8, 0).unwrap();
        // Newest first.
        let ids: Vec<String> = ops.list().into_iter().map(|o| o.id).collect();
        assert_eq!(ids, [b.id.clone(), a.id.clone()]);
        let json = serde_json::to_value(ops.get(&b.id).unwrap()).unwrap();
        assert_eq!(json["kind"], "gcdump");
        assert_eq!(json["state"], "running");
        // Deleting a running one stops it; it stays listed until its job ends.
        assert!(matches!(ops.delete(&b.id).unwrap(), Deleted::Cancelling(_)));
        assert!(b.stop.count() > 0);
        ops.finish(&b.id, JobEnd::Cancelled);
        assert_eq!(ops.get(&b.id).unwrap().state, OpState::Cancelled);
        // Deleting a finished one forgets it and its file.
        assert!(matches!(ops.delete(&a.id).unwrap(), Deleted::Removed));
        assert!(!a.dir.exists());
        assert_eq!(ops.get(&a.id).unwrap_err().status, 404);
        assert_eq!(ops.delete(&a.id).unwrap_err().status, 404);
        // A failure says why.
        let c = ops.begin(OpKind::Dump, None, 9, 0).unwrap();
        let v = ops
            .finish(&c.id, JobEnd::OverBudget("over".into()))
            .unwrap();
        assert_eq!(
            (v.state, v.error.as_deref()),
            (OpState::Failed, Some("over"))
        );
        ops.remove(&c.id);
        assert_eq!(ops.list().len(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_oldest_finished_are_evicted_with_their_files() {
        let d = temp("evict");
        let ops = Operations::new(&d, big(), 3);
        let running = ops.begin(OpKind::Gcdump, None, 1, 0).unwrap();
        let mut done_dirs = Vec::new();
        for i in 0..5 {
            let b = ops.begin(OpKind::Dump, None, 100 + i, 0).unwrap();
            ops.finish(&b.id, done(&b.dir, "f"));
            done_dirs.push((b.id, b.dir));
        }
        let list = ops.list();
        assert_eq!(list.len(), 4, "3 finished and the running one");
        // The two oldest finished went, files and all; the running one stays.
        for (id, dir) in &done_dirs[..2] {
            assert_eq!(ops.get(id).unwrap_err().status, 404);
            assert!(!dir.exists());
        }
        for (id, dir) in &done_dirs[2..] {
            assert!(ops.get(id).is_ok() && dir.exists());
        }
        assert_eq!(ops.get(&running.id).unwrap().state, OpState::Running);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn leftovers_of_ended_agents_are_swept_not_a_live_ones() {
        let d = temp("sweep");
        let ops = Operations::new(&d, big(), 10);
        let mine = ops.begin(OpKind::Dump, None, 1, 0).unwrap();
        // pid 1 is alive; no process has pid 4194304 (above Linux's largest).
        for name in [
            "operations-4194304/x",
            "operations-1/y",
            "operations-abc/z",
            "other/w",
        ] {
            std::fs::create_dir_all(d.join(name)).unwrap();
        }
        assert_eq!(sweep(&d), 1);
        assert!(!d.join("operations-4194304").exists());
        for kept in ["operations-1", "operations-abc", "other"] {
            assert!(d.join(kept).exists(), "{kept}");
        }
        assert!(mine.dir.exists(), "this agent's own");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_budget_counts_the_folder_and_jobs_under_way() {
        let d = temp("budget");
        let ops = Operations::new(
            &d,
            Budget {
                limit: 1 << 20,
                min_free: 0,
            },
            10,
        );
        std::fs::write(d.join("other"), vec![0u8; 512 << 10]).unwrap();
        let a = ops.begin(OpKind::Dump, None, 1, 256 << 10).unwrap();
        // 512 KB on disk + 256 KB reserved + 300 KB: over 1 MB.
        let e = ops.begin(OpKind::Dump, None, 2, 300 << 10).unwrap_err();
        assert_eq!(e.status, 507, "{}", e.message);
        assert!(ops.begin(OpKind::Dump, None, 2, 200 << 10).is_ok());
        assert!(ops.over_budget().is_none());
        std::fs::write(a.dir.join("grew"), vec![0u8; 600 << 10]).unwrap();
        assert!(ops.over_budget().is_some());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
