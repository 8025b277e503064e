//! Launch-and-trace: start a program with `DOTNET_DiagnosticPorts=<our socket>,connect,suspend`
//! so its runtime connects to clrspy and waits before running any managed code; open the
//! session on that connection, then resume the runtime. Events from the runtime's start
//! (assembly loads, the first JIT compilations, `Main`) are in the trace. The child keeps the
//! terminal: its stdin, stdout and stderr pass through.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diagnostics_client::{resume_runtime, start_session, Connection, Connector, ReverseServer};

use crate::session::{create_output, drain, COMMAND_TIMEOUT};
use crate::{Error, OnProgress, Recording, StopReason, Summary};

/// What a launched recording produced.
#[derive(Debug)]
pub struct Launched {
    /// The recording.
    pub summary: Summary,
    /// The child's process id.
    pub pid: u32,
    /// How the child ended (None when it was still running and clrspy left it).
    pub status: Option<ExitStatus>,
    /// True when clrspy ended the child (the recording stopped before the program did).
    pub terminated_by_clrspy: bool,
}

/// The reverse server, handing out the runtime's first connection (already accepted while
/// waiting for the child) before accepting new ones.
struct Port {
    server: ReverseServer,
    first: Mutex<Option<Connection>>,
}

impl Connector for Port {
    fn open(&self, timeout: Duration) -> diagnostics_client::Result<Connection> {
        if let Some(c) = self.first.lock().ok().and_then(|mut f| f.take()) {
            return Ok(c);
        }
        self.server.open(timeout)
    }

    fn path(&self) -> &std::path::Path {
        self.server.path()
    }
}

/// A socket path short enough for a Unix socket, unique to this clrspy.
fn socket_path() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!("clrspy-{}-{nanos:x}.sock", std::process::id());
    let preferred = std::env::temp_dir().join(&name);
    if preferred.as_os_str().len() < 100 {
        preferred
    } else {
        PathBuf::from("/tmp").join(name)
    }
}

/// Asks the child to end (SIGTERM), then kills it if it is still there after `grace`.
fn end_child(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped).
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// Starts `program args`, records it from its first instruction into `rec.out`, and waits for
/// it. When the recording stops first (duration, Ctrl+C), the child is asked to end. `on_spawned`
/// gets the child's pid.
pub fn launch(
    program: &OsString,
    args: &[OsString],
    rec: &Recording<'_>,
    on_spawned: &mut dyn FnMut(u32),
    on_progress: OnProgress<'_>,
) -> Result<Launched, Error> {
    let file = create_output(rec.out)?;
    let server = ReverseServer::bind(&socket_path()).map_err(Error::Client)?;
    let mut child = Command::new(program)
        .args(args)
        .env("DOTNET_DiagnosticPorts", server.diagnostic_ports_value())
        .spawn()
        .map_err(|e| {
            Error::Launch(format!(
                "cannot start '{}': {e}",
                PathBuf::from(program).display()
            ))
        })?;
    let pid = child.id();
    on_spawned(pid);
    // Wait for the runtime to connect while the child lives and nobody asked to stop.
    let mut exited = None;
    let first = server.accept(Duration::MAX, COMMAND_TIMEOUT, &mut || {
        if let Ok(Some(s)) = child.try_wait() {
            exited = Some(s);
            return false;
        }
        rec.stop.count() == 0
    });
    let (conn, _ad) = match first {
        Ok(c) => c,
        Err(e) => {
            if let Some(s) = exited {
                return Err(Error::Launch(format!(
                    "the program exited ({s}) before a .NET runtime connected: it is not a .NET (Core 3.0+) program, or DOTNET_EnableDiagnostics=0 is set"
                )));
            }
            if rec.stop.count() > 0 {
                let _ = end_child(&mut child, Duration::from_secs(2));
                return Err(Error::Launch(
                    "stopped before the program's runtime connected".into(),
                ));
            }
            let _ = end_child(&mut child, Duration::from_secs(2));
            return Err(Error::Client(e));
        }
    };
    let port = Arc::new(Port {
        server,
        first: Mutex::new(Some(conn)),
    });
    let session = match start_session(port.as_ref(), rec.config, COMMAND_TIMEOUT) {
        Ok(s) => s,
        Err(e) => {
            let _ = end_child(&mut child, Duration::from_secs(2));
            return Err(Error::Client(e));
        }
    };
    // The session is open: let the runtime run.
    if let Err(e) = resume_runtime(port.as_ref(), COMMAND_TIMEOUT) {
        let _ = end_child(&mut child, Duration::from_secs(2));
        return Err(Error::Client(e));
    }
    let to: Arc<dyn Connector> = port;
    let summary = match drain(session, to, file, pid, rec, on_progress) {
        Ok(s) => s,
        Err(e) => {
            // The trace cannot be written (full disk): the program was started to be traced,
            // so it does not run on untraced behind the user's back.
            let _ = end_child(&mut child, Duration::from_secs(5));
            return Err(e);
        }
    };
    let mut terminated_by_clrspy = false;
    let status = match summary.reason {
        StopReason::TargetEnded => child.wait().ok(),
        _ => {
            // Ctrl+C reaches the child too: give it a moment to end on its own.
            let until = Instant::now() + Duration::from_secs(1);
            let mut status = None;
            while status.is_none() && Instant::now() < until {
                status = child.try_wait().ok().flatten();
                std::thread::sleep(Duration::from_millis(20));
            }
            status.or_else(|| {
                terminated_by_clrspy = true;
                end_child(&mut child, Duration::from_secs(5))
            })
        }
    };
    Ok(Launched {
        summary,
        pid,
        status,
        terminated_by_clrspy,
    })
}
