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

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diagnostics_client::{
    resume_runtime, set_environment_variable, start_session, Advertisement, Connection, Connector,
    ReverseServer,
};

use crate::session::{pump, Live, COMMAND_TIMEOUT};
use crate::sink::{open_output, ByteSink};
use crate::{Error, OnProgress, Recording, Result, StopReason, Summary};

/// The variable that points runtimes at clrspy's socket.
pub(crate) const PORTS_VARIABLE: &str = "DOTNET_DiagnosticPorts";

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
    /// The recorded runtime's process id (the child's, unless the child started it).
    pub runtime_pid: u32,
    /// How the child ended (None when it was still running and clrspy left it).
    pub status: Option<ExitStatus>,
    /// True when clrspy ended the child (the recording stopped before the program did).
    pub terminated_by_clrspy: bool,
    /// Other runtimes that connected to clrspy's port and were let run untraced.
    pub extra_runtimes: u64,
}

/// One connection used as a connector for one command.
pub(crate) struct Once {
    pub(crate) conn: Mutex<Option<Connection>>,
    pub(crate) path: PathBuf,
}

impl Connector for Once {
    fn open(&self, _timeout: Duration) -> diagnostics_client::Result<Connection> {
        self.conn
            .lock()
            .ok()
            .and_then(|mut c| c.take())
            .ok_or_else(|| timed_out(&self.path, "the runtime's connection was used already"))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

pub(crate) fn timed_out(path: &Path, what: &str) -> diagnostics_client::Error {
    diagnostics_client::Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string()),
    }
}

/// Clears the ports variable inside the runtime behind `conn`: its children will not connect.
/// Runtimes older than .NET 6 do not know the command; nothing can be done for them.
pub(crate) fn clear_ports_variable(to: &dyn Connector) {
    let _ = set_environment_variable(to, PORTS_VARIABLE, "", COMMAND_TIMEOUT);
}

/// Where an extra runtime (one clrspy does not trace) stands.
#[derive(Default)]
pub(crate) struct Extra {
    cleared: bool,
    resumed: bool,
    /// The connection it opened after being resumed: held so it waits quietly (a closed one
    /// makes it connect again at once).
    parked: Option<Connection>,
}

impl Extra {
    /// Lets the runtime behind `conn` go on untraced, one step a connection: the first clears
    /// its ports variable (so its children do not connect), the next resumes it (counted in
    /// `resumed`), and the one after that is held so it waits quietly.
    pub(crate) fn let_go(&mut self, conn: Connection, path: &Path, resumed: &AtomicU64) {
        let once = Once {
            conn: Mutex::new(Some(conn)),
            path: path.to_path_buf(),
        };
        if !self.cleared {
            self.cleared = true;
            clear_ports_variable(&once);
        } else if !self.resumed {
            self.resumed = true;
            if resume_runtime(&once, COMMAND_TIMEOUT).is_ok() {
                resumed.fetch_add(1, Ordering::SeqCst);
            }
        } else {
            self.parked = once.conn.lock().ok().and_then(|mut c| c.take());
        }
    }
}

/// Serves clrspy's reverse port on a background thread: connections of the recorded runtime
/// (the first to connect) go to [`Port`], the others are handled by the policy.
struct Acceptor {
    quit: Arc<AtomicBool>,
    extras: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Acceptor {
    fn start(server: ReverseServer, policy: ExtraRuntimes) -> (Acceptor, Port) {
        let (tx, rx) = channel();
        let quit = Arc::new(AtomicBool::new(false));
        let extras = Arc::new(AtomicU64::new(0));
        let path = server.path().to_path_buf();
        let (q, n) = (quit.clone(), extras.clone());
        let thread = std::thread::Builder::new()
            .name("clrspy-port".into())
            .spawn(move || serve(&server, policy, &tx, &q, &n))
            .ok();
        let port = Port {
            rx: Mutex::new(rx),
            first: Mutex::new(None),
            path,
        };
        (
            Acceptor {
                quit,
                extras,
                thread,
            },
            port,
        )
    }

    /// Stops serving (the socket is removed); returns how many extra runtimes were let run.
    fn stop(mut self) -> u64 {
        self.quit.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.extras.load(Ordering::SeqCst)
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::SeqCst);
    }
}

/// The acceptor's loop: every 100 ms at most it looks at the quit flag.
fn serve(
    server: &ReverseServer,
    policy: ExtraRuntimes,
    to_port: &Sender<(Connection, Advertisement)>,
    quit: &AtomicBool,
    extras: &AtomicU64,
) {
    let mut recorded: Option<String> = None;
    let mut others: HashMap<String, Extra> = HashMap::new();
    while !quit.load(Ordering::SeqCst) {
        let Ok((conn, ad)) =
            server.accept(Duration::from_millis(100), COMMAND_TIMEOUT, &mut || {
                !quit.load(Ordering::SeqCst)
            })
        else {
            // A timeout (100 ms spent already), or a client that did not advertise itself.
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let cookie = recorded.get_or_insert_with(|| ad.cookie.clone());
        if *cookie == ad.cookie {
            // The recorded runtime; if nobody takes it any more, it waits parked in the channel.
            let _ = to_port.send((conn, ad));
            continue;
        }
        let e = others.entry(ad.cookie).or_default();
        match policy {
            ExtraRuntimes::Resume => e.let_go(conn, server.path(), extras),
        }
    }
}

/// The recorded runtime's connections, as the acceptor hands them over.
struct Port {
    rx: Mutex<Receiver<(Connection, Advertisement)>>,
    first: Mutex<Option<Connection>>,
    path: PathBuf,
}

impl Port {
    /// Waits for the recorded runtime's first connection while `keep_waiting` says so.
    fn wait_first(&self, keep_waiting: &mut dyn FnMut() -> bool) -> Option<Advertisement> {
        let rx = self.rx.lock().ok()?;
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok((conn, ad)) => {
                    if let Ok(mut f) = self.first.lock() {
                        *f = Some(conn);
                    }
                    return Some(ad);
                }
                Err(RecvTimeoutError::Timeout) if keep_waiting() => {}
                Err(_) => return None,
            }
        }
    }
}

impl Connector for Port {
    fn open(&self, timeout: Duration) -> diagnostics_client::Result<Connection> {
        if let Some(c) = self.first.lock().ok().and_then(|mut f| f.take()) {
            return Ok(c);
        }
        let rx = self
            .rx
            .lock()
            .map_err(|_| timed_out(&self.path, "the port's acceptor is gone"))?;
        rx.recv_timeout(timeout)
            .map(|(c, _)| c)
            .map_err(|_| timed_out(&self.path, "no runtime connected to the diagnostic port"))
    }

    fn path(&self) -> &Path {
        &self.path
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
    if stdout == ChildOutput::ToStderr {
        command.stdout(std::io::stderr());
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
pub(crate) fn end_child(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
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
/// it. When the recording stops first (duration, Ctrl+C), the child is asked to end. `on_spawned`
/// gets the child's pid.
pub fn launch(
    program: &OsString,
    args: &[OsString],
    rec: &Recording<'_>,
    on_spawned: &mut dyn FnMut(u32),
    on_progress: OnProgress<'_>,
) -> Result<Launched> {
    launch_live(
        program,
        args,
        rec,
        LaunchOptions::default(),
        Live::default(),
        on_spawned,
        on_progress,
    )
}

/// [`launch`] with options, also feeding `live`'s sinks and event consumers.
pub fn launch_live(
    program: &OsString,
    args: &[OsString],
    rec: &Recording<'_>,
    opts: LaunchOptions,
    live: Live<'_>,
    on_spawned: &mut dyn FnMut(u32),
    on_progress: OnProgress<'_>,
) -> Result<Launched> {
    let file = open_output(rec.out, rec.ring)?;
    let server = ReverseServer::bind(&socket_path())?;
    let ports_value = server.diagnostic_ports_value();
    let (acceptor, port) = Acceptor::start(server, opts.extra_runtimes);
    let port = Arc::new(port);
    let mut command = ported_command(program, args, &opts.env, &ports_value, opts.stdout);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(source) => {
            // Nothing was recorded: leave no empty trace behind.
            drop(file);
            let _ = std::fs::remove_file(rec.out);
            acceptor.stop();
            return Err(Error::Spawn {
                program: PathBuf::from(program),
                source,
            });
        }
    };
    let pid = child.id();
    on_spawned(pid);
    let result = record_child(&mut child, &port, file, rec, live, on_progress);
    let (summary, runtime_pid) = match result {
        Ok(r) => r,
        Err(e) => {
            if matches!(e, Error::NotDotnet { .. } | Error::StoppedBeforeStart) {
                // No runtime ever connected: the file holds nothing, leave none behind.
                if std::fs::metadata(rec.out).is_ok_and(|m| m.len() == 0) {
                    let _ = std::fs::remove_file(rec.out);
                }
            }
            if !matches!(e, Error::NotDotnet { .. }) {
                // The trace cannot be written (full disk) or the runtime failed: the program
                // was started to be traced, so it does not run on untraced behind the user's
                // back.
                let _ = end_child(&mut child, Duration::from_secs(5));
            }
            acceptor.stop();
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
    let extra_runtimes = acceptor.stop();
    Ok(Launched {
        summary,
        pid,
        runtime_pid,
        status,
        terminated_by_clrspy,
        extra_runtimes,
    })
}

/// Waits for the child's runtime, opens the session, lets the runtime run and pumps the
/// session; returns the summary and the runtime's pid.
fn record_child(
    child: &mut Child,
    port: &Arc<Port>,
    file: Box<dyn ByteSink>,
    rec: &Recording<'_>,
    live: Live<'_>,
    on_progress: OnProgress<'_>,
) -> Result<(Summary, u32)> {
    // Wait for the runtime to connect while the child lives and nobody asked to stop.
    let mut exited = None;
    let ad = port.wait_first(&mut || {
        if let Ok(Some(s)) = child.try_wait() {
            exited = Some(s);
            return false;
        }
        rec.stop.count() == 0
    });
    let Some(ad) = ad else {
        if let Some(status) = exited {
            return Err(Error::NotDotnet { status });
        }
        return Err(Error::StoppedBeforeStart);
    };
    let session = start_session(port.as_ref(), rec.config, COMMAND_TIMEOUT)?;
    // The session is open: clear the variable, then let the runtime run.
    clear_ports_variable(port.as_ref());
    resume_runtime(port.as_ref(), COMMAND_TIMEOUT)?;
    // The runtime's pid as it sees it: the same as ours unless it runs in another namespace.
    let runtime_pid = Some(ad.pid)
        .filter(|&p| diagnostics_client::procfs::alive(p))
        .unwrap_or(child.id());
    let to: Arc<dyn Connector> = port.clone();
    let summary = pump(session, to, file, runtime_pid, rec, live, on_progress)?;
    Ok((summary, runtime_pid))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use diagnostics_client::Header;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    /// A runtime's advertisement with cookie bytes `c` and pid `pid`.
    fn advertisement(c: u8, pid: u64) -> Vec<u8> {
        let mut b = b"ADVR_V1\0".to_vec();
        b.extend_from_slice(&[c; 16]);
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b
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
        let (acceptor, port) = Acceptor::start(server, ExtraRuntimes::Resume);
        // The first runtime to connect is the recorded one: its connection goes to the port.
        let mut recorded = UnixStream::connect(&path).unwrap();
        recorded.write_all(&advertisement(1, 42)).unwrap();
        let mut polls = 0;
        let ad = port.wait_first(&mut || {
            polls += 1;
            polls < 250
        });
        assert_eq!(ad.map(|a| a.pid), Some(42));
        let (got, parked) = extra_runtime(path.clone()).join().unwrap();
        assert!(parked, "{got:?}");
        // SetEnvironmentVariable (4, 3) with the empty value, then ResumeRuntime (4, 1).
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].0, got[0].1), (4, 3));
        let (name, rest) = string(&got[0].2);
        let (value, _) = string(rest);
        assert_eq!((name.as_str(), value.as_str()), (PORTS_VARIABLE, ""));
        assert_eq!((got[1].0, got[1].1), (4, 1));
        assert_eq!(acceptor.stop(), 1);
        drop(recorded);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
