//! The hold mode of dumps on exceptions: a startup hook in the launched program (built from
//! `hooks/ClrspyHold` by `hooks/build.sh`; the runtime loads it through `DOTNET_STARTUP_HOOKS`)
//! sees each first-chance exception on the throwing thread, and for the matching types tells
//! clrspy over a Unix socket and waits for the answer. clrspy writes the dump and then answers,
//! so the dump shows the thread inside the throw — where an EventPipe event reaches clrspy only
//! after the thread went on. The cost: the hook's load at startup, a type-name check at every
//! first-chance exception, and the throwing thread stopped while the dump is written.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::dumper::{DumpGate, DumpNotice, DumpOutcome, DumpPlan, DumpRequest, OnDump};
use crate::dumpfile::write_dump_file;
use crate::{Error, Result};

/// Serves the hook's hold requests until finished.
pub(crate) struct HoldServer {
    path: PathBuf,
    quit: Arc<AtomicBool>,
    outcomes: Arc<Mutex<Vec<DumpOutcome>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for HoldServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldServer")
            .field("path", &self.path)
            .finish()
    }
}

/// One hold request: `HOLD <pid> <thread> <type> <monotonic ns>`.
fn parse_hold(line: &str) -> Option<(u32, String, Option<u64>)> {
    let mut w = line.split_whitespace();
    if w.next()? != "HOLD" {
        return None;
    }
    let pid = w.next()?.parse().ok()?;
    let _thread = w.next()?;
    let name = w.next()?.to_string();
    let ns = w.next().and_then(|n| n.parse().ok());
    Some((pid, name, ns))
}

/// Serves one connection: reads the request, writes the dump (while the limit allows),
/// answers.
fn serve_one(
    stream: UnixStream,
    plan: &DumpPlan,
    gate: Option<&dyn DumpGate>,
    taken: &mut u32,
    on_dump: &mut OnDump,
) -> Option<DumpOutcome> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut line = String::new();
    let mut reader = BufReader::new(&stream);
    reader.read_line(&mut line).ok()?;
    let (pid, name, event_ns) = parse_hold(&line)?;
    let request = DumpRequest {
        reason: format!("first-chance {name}, thread held"),
        pid: Some(pid),
        event_ns,
    };
    // The answer: OK (dumped, or no more dumps ever: the hook counts it), SKIP (refused now,
    // perhaps admitted later: the hook does not count it).
    let mut answer: &[u8] = b"OK\n";
    let admitted = *taken < plan.max
        && match gate {
            Some(g) if !g.admit(&request) => {
                if !g.closed() {
                    answer = b"SKIP\n";
                }
                false
            }
            _ => true,
        };
    let mut outcome = None;
    if admitted {
        *taken += 1;
        let path = plan.dir.join(format!(
            "{}_{pid}_{}.{}",
            plan.stem,
            taken,
            plan.spec.compress.extension()
        ));
        let delay = crate::dumper::delay_since(event_ns);
        on_dump(&DumpNotice::Started {
            n: *taken,
            request: &request,
            path: &path,
            delay,
        });
        let result = crate::endpoint_for_pid(pid)
            .and_then(|ep| write_dump_file(&ep, pid, &path, &plan.spec));
        let o = DumpOutcome {
            n: *taken,
            request,
            delay,
            result,
        };
        on_dump(&DumpNotice::Done(&o));
        outcome = Some(o);
    }
    // Let the thread go on.
    let mut w = &stream;
    let _ = w.write_all(answer);
    outcome
}

impl HoldServer {
    /// Listens on a fresh socket in the temporary directory.
    #[cfg(test)]
    pub(crate) fn start(plan: DumpPlan, on_dump: OnDump) -> Result<HoldServer> {
        HoldServer::start_gated(plan, None, on_dump)
    }

    /// Listens on a fresh socket in the temporary directory, each hold admitted by `gate` too
    /// (after the plan's limit,
    /// before the dump starts): a refused hold lets the thread go at once, and the hook
    /// does not count it while the gate is not closed.
    pub(crate) fn start_gated(
        plan: DumpPlan,
        gate: Option<Arc<dyn DumpGate>>,
        mut on_dump: OnDump,
    ) -> Result<HoldServer> {
        let path = crate::launch::socket_path().with_extension("hold");
        let listener = UnixListener::bind(&path).map_err(|source| Error::Output {
            path: path.clone(),
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| Error::Output {
                path: path.clone(),
                source,
            })?;
        let quit = Arc::new(AtomicBool::new(false));
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let (q, out) = (quit.clone(), outcomes.clone());
        let thread = std::thread::Builder::new()
            .name("clrspy-hold".into())
            .spawn(move || {
                let mut taken = 0;
                while !q.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            let _ = s.set_nonblocking(false);
                            let gate = gate.as_deref();
                            if let Some(o) = serve_one(s, &plan, gate, &mut taken, &mut on_dump) {
                                if let Ok(mut v) = out.lock() {
                                    v.push(o);
                                }
                            }
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
            .ok();
        Ok(HoldServer {
            path,
            quit,
            outcomes,
            thread,
        })
    }

    /// The launched program's environment: the hook `hook` (ClrspyHold.dll), this socket,
    /// the type patterns and the limit.
    pub(crate) fn env(
        &self,
        hook: &Path,
        patterns: &[String],
        max: u32,
    ) -> Vec<(OsString, OsString)> {
        let mut hooks = hook.as_os_str().to_owned();
        if let Some(theirs) = std::env::var_os("DOTNET_STARTUP_HOOKS").filter(|h| !h.is_empty()) {
            hooks.push(":");
            hooks.push(theirs);
        }
        vec![
            ("DOTNET_STARTUP_HOOKS".into(), hooks),
            (
                "CLRSPY_HOLD_SOCKET".into(),
                self.path.clone().into_os_string(),
            ),
            ("CLRSPY_HOLD_TYPES".into(), patterns.join(";").into()),
            ("CLRSPY_HOLD_MAX".into(), max.to_string().into()),
        ]
    }

    /// Stops listening; returns how the dumps went.
    pub(crate) fn finish(mut self) -> Vec<DumpOutcome> {
        self.quit.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
        self.outcomes
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

impl Drop for HoldServer {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::SeqCst);
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_requests() {
        assert_eq!(
            parse_hold("HOLD 42 7 System.InvalidCastException 123\n"),
            Some((42, "System.InvalidCastException".into(), Some(123)))
        );
        assert_eq!(parse_hold("HOLD 42 7 X"), Some((42, "X".into(), None)));
        assert_eq!(parse_hold("HELLO 42 7 X 1"), None);
        assert_eq!(parse_hold("HOLD x 7 X 1"), None);
        assert_eq!(parse_hold(""), None);
    }

    #[test]
    fn a_request_past_the_limit_is_answered_without_a_dump() {
        let dir = tempfile::tempdir().unwrap();
        let plan = DumpPlan {
            dir: dir.path().to_path_buf(),
            stem: "t".into(),
            spec: crate::DumpSpec::default(),
            max: 0,
        };
        let server = HoldServer::start(plan, Box::new(|_| {})).unwrap();
        let env = server.env(
            Path::new("/h/ClrspyHold.dll"),
            &["A".into(), "*.B".into()],
            0,
        );
        assert_eq!(env[2].1, OsString::from("A;*.B"));
        let mut s = UnixStream::connect(&server.path).unwrap();
        s.write_all(b"HOLD 1 1 A 1\n").unwrap();
        let mut answer = String::new();
        BufReader::new(&s).read_line(&mut answer).unwrap();
        assert_eq!(answer, "OK\n");
        assert!(server.finish().is_empty());
    }

    /// Refuses every ask; closed after `open` asks.
    struct Refusing {
        asks: std::sync::atomic::AtomicU32,
        open: u32,
    }

    impl DumpGate for Refusing {
        fn admit(&self, _request: &DumpRequest) -> bool {
            self.asks.fetch_add(1, Ordering::SeqCst);
            false
        }

        fn closed(&self) -> bool {
            self.asks.load(Ordering::SeqCst) >= self.open
        }
    }

    #[test]
    fn a_hold_the_gate_refuses_is_let_go_without_a_dump_and_not_counted_by_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        let plan = DumpPlan {
            dir: dir.path().to_path_buf(),
            stem: "t".into(),
            spec: crate::DumpSpec::default(),
            max: 5,
        };
        let gate = Arc::new(Refusing {
            asks: 0.into(),
            open: 2,
        });
        let started = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = started.clone();
        let on_dump: OnDump = Box::new(move |n| {
            if matches!(n, DumpNotice::Started { .. }) {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        let server = HoldServer::start_gated(plan, Some(gate.clone()), on_dump).unwrap();
        let ask = || {
            let mut s = UnixStream::connect(&server.path).unwrap();
            s.write_all(b"HOLD 1 1 A 1\n").unwrap();
            let mut answer = String::new();
            BufReader::new(&s).read_line(&mut answer).unwrap();
            answer
        };
        assert_eq!(ask(), "SKIP\n", "refused for now: the hook keeps asking");
        assert_eq!(ask(), "OK\n", "the gate closed: the hook counts it");
        assert!(server.finish().is_empty());
        assert_eq!(started.load(Ordering::SeqCst), 0, "no dump began");
        assert_eq!(gate.asks.load(Ordering::SeqCst), 2);
    }
}
