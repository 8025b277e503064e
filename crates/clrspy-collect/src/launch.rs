//! Launch-and-trace: start a program with `DOTNET_DiagnosticPorts=<our socket>,connect,suspend`
//! so its runtime connects to clrspy and waits before running any managed code; open the
//! session on that connection, then resume the runtime. Events from the runtime's start
//! (assembly loads, the first JIT compilations, `Main`) are in the trace. The child keeps the
//! terminal: its stdin, stdout and stderr pass through.
//!
//! The variable is inherited: a build, a test runner or a script starts more .NET programs,
//! and each of their runtimes connects to the same socket and waits to be resumed. A background
//! acceptor serves the port for the whole recording: the first runtime to connect is the one
//! recorded, every other is handled by the [`ExtraRuntimes`] policy (today: resumed at once).
//! Before any runtime is resumed, the variable is set to the empty string inside it (the
//! SetEnvironmentVariable command), so the programs it starts later do not connect to a socket
//! that may be gone by then (the runtime reads an empty value as "no ports").

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diagnostics_client::{
    resume_runtime, set_environment_variable, start_session, Admission, Connector, HeldRuntime,
    ReverseHub, ReverseServer, DIAGNOSTIC_PORTS_VARIABLE,
};

use crate::ring::open_output;
use crate::session::{pump, LiveFeeds, COMMAND_TIMEOUT};
use crate::sink::ByteSink;
use crate::{Error, OnProgress, Recording, Result, StopReason, Summary};

/// The variable that points runtimes at clrspy's socket.
pub(crate) const PORTS_VARIABLE: &str = DIAGNOSTIC_PORTS_VARIABLE;

/// What clrspy does with the runtimes that connect to its port besides the recorded one (the
/// launched program's children, grandchildren, other programs of a script).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtraRuntimes {
    /// Let them run at once, untraced.
    #[default]
    Resume,
}

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
    /// Other runtimes that connected to clrspy's port and were let run untraced.
    pub extra_runtimes: u64,
}

/// Clears the ports variable inside the runtime behind `to`: its children will not connect.
/// Runtimes older than .NET 6 do not know the command; nothing can be done for them.
pub(crate) fn clear_ports_variable(to: &dyn Connector) {
    let _ = set_environment_variable(to, PORTS_VARIABLE, "", COMMAND_TIMEOUT);
}

/// Serves clrspy's reverse port on a thread: the first runtime to connect is the recorded one,
/// handed over on the returned channel; the others are handled by the policy.
fn start_port(
    server: ReverseServer,
    policy: ExtraRuntimes,
) -> Result<(ReverseHub, Receiver<HeldRuntime>)> {
    let (tx, rx) = channel();
    let mut recorded = false;
    let hub = ReverseHub::start(server, "clrspy-port", COMMAND_TIMEOUT, move |rt| {
        if !std::mem::replace(&mut recorded, true) {
            // If nobody takes it any more, its connections are parked.
            let _ = tx.send(rt);
            return Admission::Taken;
        }
        match policy {
            ExtraRuntimes::Resume => Admission::Release(rt),
        }
    })?;
    Ok((hub, rx))
}

/// Waits for the recorded runtime's first connection while `keep_waiting` says so.
fn wait_first(
    rx: &Receiver<HeldRuntime>,
    keep_waiting: &mut dyn FnMut() -> bool,
) -> Option<HeldRuntime> {
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(rt) => return Some(rt),
            Err(RecvTimeoutError::Timeout) if keep_waiting() => {}
            Err(_) => return None,
        }
    }
}

/// The command that starts `program args` with `env` and the ports variable set to
/// `ports_value`, its standard output where `stdout` says.
///
/// The program gets a process group of its own, so a terminal's Ctrl+C (sent to the whole
/// foreground group) reaches clrspy alone: clrspy collects the rundown first and then passes
/// the Ctrl+C on to the program (see `forward_interrupt`).
pub(crate) fn ported_command(
    program: &OsStr,
    args: &[OsString],
    env: &[(OsString, OsString)],
    ports_value: &str,
    stdout: ChildOutput,
) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env(PORTS_VARIABLE, ports_value);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    match stdout {
        ChildOutput::Inherit => {}
        ChildOutput::ToStderr => {
            command.stdout(std::io::stderr());
        }
        ChildOutput::Null => {
            command
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
        }
    }
    command
}

/// A socket path short enough for a Unix socket, unique to this clrspy.
pub(crate) fn socket_path() -> PathBuf {
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
pub fn end_child(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
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

/// Sends SIGINT to the child's process group (its own, see `launch_live`): what the terminal's
/// Ctrl+C would have done had the child stayed in clrspy's group.
pub(crate) fn forward_interrupt(child: &Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) on the process group we created for the child (its pid is the group
        // id); the child is not reaped yet, so the id is still ours.
        unsafe {
            libc::kill(-pid, libc::SIGINT);
        }
    }
    #[cfg(not(unix))]
    let _ = child;
}

/// Where a launched program's standard output goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChildOutput {
    /// To clrspy's own standard output (the program keeps the terminal).
    #[default]
    Inherit,
    /// To clrspy's standard error, so clrspy's standard output carries only what clrspy
    /// prints (JSON a script parses).
    ToStderr,
    /// Nowhere: its standard input, output and error are `/dev/null` (a full-screen view owns
    /// the terminal).
    Null,
}

/// Options of a launch beyond the recording's.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    /// What to do with other runtimes that connect.
    pub extra_runtimes: ExtraRuntimes,
    /// Where the program's standard output goes.
    pub stdout: ChildOutput,
    /// More environment variables for the program (the crash report's, see
    /// [`CrashCapture`](crate::CrashCapture)).
    pub env: Vec<(OsString, OsString)>,
}

/// Starts `program args`, records it from its first instruction into `rec.out`, and waits for
/// it, with `options`, also feeding `live`'s sinks and event consumers. When the recording
/// stops first (duration, Ctrl+C), the child is asked to end. `on_spawned` gets the child's
/// pid.
pub fn launch_live(
    program: &OsString,
    args: &[OsString],
    rec: &Recording<'_>,
    opts: LaunchOptions,
    live: LiveFeeds<'_>,
    on_spawned: &mut dyn FnMut(u32),
    on_progress: OnProgress<'_>,
) -> Result<Launched> {
    let file = rec
        .out
        .map(|p| open_output(p, rec.ring, rec.config))
        .transpose()?;
    let server = ReverseServer::bind(&socket_path())?;
    let ports_value = server.diagnostic_ports_value();
    let (hub, first) = start_port(server, opts.extra_runtimes)?;
    let mut command = ported_command(program, args, &opts.env, &ports_value, opts.stdout);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(source) => {
            // Nothing was recorded: leave no empty trace behind.
            drop(file);
            if let Some(out) = rec.out {
                let _ = std::fs::remove_file(out);
            }
            hub.stop();
            return Err(Error::Spawn {
                program: PathBuf::from(program),
                source,
            });
        }
    };
    let pid = child.id();
    on_spawned(pid);
    let result = record_child(&mut child, &first, file, rec, live, on_progress);
    let summary = match result {
        Ok(r) => r,
        Err(e) => {
            if matches!(e, Error::NotDotnet { .. } | Error::StoppedBeforeStart) {
                // No runtime ever connected: the file holds nothing, leave none behind.
                if let Some(out) = rec
                    .out
                    .filter(|o| std::fs::metadata(o).is_ok_and(|m| m.len() == 0))
                {
                    let _ = std::fs::remove_file(out);
                }
            }
            if !matches!(e, Error::NotDotnet { .. }) {
                // The trace cannot be written (full disk) or the runtime failed: the program
                // was started to be traced, so it does not run on untraced behind the user's
                // back.
                let _ = end_child(&mut child, Duration::from_secs(5));
            }
            hub.stop();
            return Err(e);
        }
    };
    let mut terminated_by_clrspy = false;
    let status = match summary.reason {
        StopReason::TargetEnded => child.wait().ok(),
        reason => {
            // The user's Ctrl+C (or SIGTERM) was for the program too: now that the rundown is
            // in, pass it on as the terminal would have, to the program's process group.
            if reason == StopReason::Requested {
                forward_interrupt(&child);
            }
            let until = Instant::now() + Duration::from_secs(2);
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
    let extra_runtimes = hub.stop();
    Ok(Launched {
        summary,
        pid,
        status,
        terminated_by_clrspy,
        extra_runtimes,
    })
}

/// Waits for the child's runtime, opens the session, lets the runtime run and pumps the
/// session; returns the summary.
fn record_child(
    child: &mut Child,
    first: &Receiver<HeldRuntime>,
    file: Option<Box<dyn ByteSink>>,
    rec: &Recording<'_>,
    mut live: LiveFeeds<'_>,
    on_progress: OnProgress<'_>,
) -> Result<Summary> {
    // Wait for the runtime to connect while the child lives and nobody asked to stop.
    let mut exited = None;
    let runtime = wait_first(first, &mut || {
        if let Ok(Some(s)) = child.try_wait() {
            exited = Some(s);
            return false;
        }
        rec.stop.count() == 0
    });
    let Some(runtime) = runtime else {
        if let Some(status) = exited {
            return Err(Error::NotDotnet { status });
        }
        return Err(Error::StoppedBeforeStart);
    };
    let ad = runtime.advertisement().clone();
    let port = Arc::new(runtime);
    // The runtime's pid as it sees it: the same as ours unless it runs in another namespace.
    let runtime_pid = Some(ad.pid)
        .filter(|&p| diagnostics_client::procfs::alive(p))
        .unwrap_or(child.id());
    // The kernel's sampler, asked for: opened on the runtime held at its start.
    let (config, refused) = crate::kernel::open_asked(
        runtime_pid,
        rec.config,
        live.sampler,
        &mut live.kernel_sampler,
    );
    let rec = Recording {
        config: &config,
        ..rec.clone()
    };
    let session = start_session(port.as_ref(), rec.config, COMMAND_TIMEOUT)?;
    // The session is open: clear the variable, then let the runtime run.
    clear_ports_variable(port.as_ref());
    resume_runtime(port.as_ref(), COMMAND_TIMEOUT)?;
    let to: Arc<dyn Connector> = port.clone();
    let mut summary = pump(session, to, file, runtime_pid, &rec, live, on_progress)?;
    summary.notes.extend(refused);
    Ok(summary)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use diagnostics_client::Header;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    /// A runtime's advertisement with cookie bytes `c` and pid `pid`.
    fn advertisement(c: u8, pid: u64) -> [u8; diagnostics_client::ADVERTISE_SIZE] {
        diagnostics_client::encode_advertisement([c; 16], pid)
    }

    /// Reads one UTF-16 protocol string.
    fn string(p: &[u8]) -> (String, &[u8]) {
        let n = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
        let units: Vec<u16> = p[4..4 + 2 * n]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let text = String::from_utf16(&units).unwrap();
        (text.trim_end_matches('\0').to_string(), &p[4 + 2 * n..])
    }

    /// Commands a fake runtime got, and whether its last connection was held open quietly.
    type Got = (Vec<(u8, u8, Vec<u8>)>, bool);

    /// A suspended runtime that is not the recorded one: answers every command with OK until it
    /// is resumed, then connects once more and waits.
    fn extra_runtime(path: PathBuf) -> std::thread::JoinHandle<Got> {
        std::thread::spawn(move || {
            let mut got: Vec<(u8, u8, Vec<u8>)> = Vec::new();
            for _ in 0..5 {
                let resumed = got.last().is_some_and(|c| (c.0, c.1) == (4, 1));
                let mut s = UnixStream::connect(&path).unwrap();
                let wait = if resumed { 300 } else { 5000 };
                s.set_read_timeout(Some(Duration::from_millis(wait)))
                    .unwrap();
                s.write_all(&advertisement(2, 77)).unwrap();
                let mut h = [0u8; 20];
                if let Err(e) = s.read_exact(&mut h) {
                    // Parked: clrspy holds the connection and sends nothing.
                    let held = matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    );
                    return (got, resumed && held);
                }
                let h = Header::decode(&h).unwrap();
                let mut payload = vec![0u8; usize::from(h.size) - 20];
                s.read_exact(&mut payload).unwrap();
                let mut reply = Header {
                    size: 24,
                    command_set: 0xFF,
                    command_id: 0,
                }
                .encode()
                .to_vec();
                reply.extend_from_slice(&0u32.to_le_bytes());
                s.write_all(&reply).unwrap();
                got.push((h.command_set, h.command_id, payload));
            }
            (got, false)
        })
    }

    #[test]
    fn other_runtimes_get_the_variable_cleared_then_are_resumed() {
        let dir = std::env::temp_dir().join(format!("clrspy-acc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.sock");
        let server = ReverseServer::bind(&path).unwrap();
        let (hub, first) = start_port(server, ExtraRuntimes::Resume).unwrap();
        // The first runtime to connect is the recorded one: its connection goes to the port.
        let mut recorded = UnixStream::connect(&path).unwrap();
        recorded.write_all(&advertisement(1, 42)).unwrap();
        let mut polls = 0;
        let rt = wait_first(&first, &mut || {
            polls += 1;
            polls < 250
        });
        assert_eq!(rt.map(|r| r.advertisement().pid), Some(42));
        let (got, parked) = extra_runtime(path.clone()).join().unwrap();
        assert!(parked, "{got:?}");
        // SetEnvironmentVariable (4, 3) with the empty value, then ResumeRuntime (4, 1).
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].0, got[0].1), (4, 3));
        let (name, rest) = string(&got[0].2);
        let (value, _) = string(rest);
        assert_eq!((name.as_str(), value.as_str()), (PORTS_VARIABLE, ""));
        assert_eq!((got[1].0, got[1].1), (4, 1));
        assert_eq!(hub.stop(), 1);
        drop(recorded);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
