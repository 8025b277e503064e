//! One reverse port shared by many runtimes: a [`ReverseHub`] serves a [`ReverseServer`] on a
//! thread of its own. Every runtime started with `DOTNET_DiagnosticPorts=<socket>,connect,suspend`
//! connects to it, advertises itself (instance cookie, pid) and waits; it connects again after
//! each command. The hub tells the runtimes apart by their cookie:
//!
//! - a runtime's first connection goes to the hub's owner, which either takes the runtime (it
//!   gets a [`HeldRuntime`]: a [`Connector`] whose `open` gives that first connection, then
//!   each next one of the same runtime as it arrives) or lets it go ([`Admission::Release`]);
//! - a taken runtime's later connections go to its `HeldRuntime` while that lives; once it is
//!   dropped, the newest connection is parked: held open, so the runtime waits quietly instead
//!   of connecting again and again;
//! - a released runtime is let run untraced, one step a connection: the first has its
//!   `DOTNET_DiagnosticPorts` variable emptied (so the programs it starts do not connect to a
//!   socket that may be gone by then; runtimes before .NET 6 do not know the command), the
//!   next resumes it, and the one after that is parked.
//!
//! Runtimes whose process ended are forgotten (their parked connection closed) every few
//! seconds. The socket file is removed when the hub stops.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::ipc::{Connection, Connector, Error, Result};
use crate::process::{resume_runtime, set_environment_variable};
use crate::reverse::{Advertisement, ReverseServer, DIAGNOSTIC_PORTS_VARIABLE};

/// How often the hub looks at its stop flag (and how long one accept waits).
const ACCEPT_WAIT: Duration = Duration::from_millis(100);
/// How often runtimes whose process ended are forgotten.
const TIDY_EVERY: Duration = Duration::from_secs(2);

/// What the hub's owner does with a runtime that connected for the first time.
#[derive(Debug)]
pub enum Admission {
    /// The owner keeps the runtime's [`HeldRuntime`] and sends it commands.
    Taken,
    /// The runtime is let run untraced (its ports variable emptied, then resumed, then its
    /// next connection parked); the owner hands its `HeldRuntime` back.
    Release(HeldRuntime),
}

/// A runtime held at the hub, as a [`Connector`]: each `open` gives the runtime's next
/// connection (the first one it made, then each as it connects again), waiting up to the
/// `open`'s timeout. Dropping it parks the runtime's later connections.
#[derive(Debug)]
pub struct HeldRuntime {
    advertisement: Advertisement,
    first: Mutex<Option<Connection>>,
    rx: Mutex<Receiver<Connection>>,
    path: PathBuf,
    /// The runtime's pid here (0: unknown), shared with the hub, which forgets the runtime
    /// once that process ended.
    pid: Arc<AtomicU32>,
}

impl HeldRuntime {
    /// What the runtime said when it first connected (its cookie, its pid in its own
    /// namespace, and its pid here when the socket told).
    pub fn advertisement(&self) -> &Advertisement {
        &self.advertisement
    }

    /// Tells the hub the runtime's pid here when the advertisement did not (no peer pid, see
    /// [`Advertisement::peer_pid`]): the hub forgets the runtime when that process ends.
    pub fn set_pid(&self, pid: u32) {
        self.pid.store(pid, Ordering::SeqCst);
    }

    /// Takes the first connection out (for a release).
    fn take_first(&self) -> Option<Connection> {
        self.first.lock().ok().and_then(|mut f| f.take())
    }
}

impl Connector for HeldRuntime {
    fn open(&self, timeout: Duration) -> Result<Connection> {
        if let Some(c) = self.take_first() {
            return Ok(c);
        }
        let gone = || {
            timed_out(
                &self.path,
                "the runtime did not connect to the diagnostic port again",
            )
        };
        let rx = self.rx.lock().map_err(|_| gone())?;
        rx.recv_timeout(timeout).map_err(|_| gone())
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

fn timed_out(path: &Path, what: &str) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string()),
    }
}

/// One connection as a connector, for one command.
struct OneConnection {
    conn: Mutex<Option<Connection>>,
    path: PathBuf,
}

impl Connector for OneConnection {
    fn open(&self, _timeout: Duration) -> Result<Connection> {
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

/// Where a released runtime stands.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// Its ports variable is to be emptied.
    #[default]
    Clear,
    /// It is to be resumed.
    Resume,
    /// It runs: its newest connection is parked.
    Park,
}

/// What the hub knows of one runtime (by cookie).
struct Runtime {
    /// To its [`HeldRuntime`], while the runtime is taken and that lives.
    tx: Option<Sender<Connection>>,
    /// Set for a released runtime.
    release: Option<Release>,
    /// The newest connection, held open so the runtime waits quietly.
    parked: Option<Connection>,
    /// Its pid here (0: unknown).
    pid: Arc<AtomicU32>,
}

/// The hub's routing: runtimes by cookie.
struct Router {
    runtimes: HashMap<String, Runtime>,
    releaser: Releaser,
}

/// What releasing a runtime takes.
struct Releaser {
    path: PathBuf,
    /// Runtimes released and resumed.
    released: Arc<AtomicU64>,
    /// How long each release command may take.
    timeout: Duration,
}

impl Router {
    /// Routes one connection of the runtime `ad` describes.
    fn route(
        &mut self,
        conn: Connection,
        ad: Advertisement,
        on_new: &mut dyn FnMut(HeldRuntime) -> Admission,
    ) {
        if let Some(r) = self.runtimes.get_mut(&ad.cookie) {
            let conn = match &r.tx {
                Some(tx) => match tx.send(conn) {
                    Ok(()) => return,
                    // Its HeldRuntime is gone: park from now on.
                    Err(e) => e.0,
                },
                None => conn,
            };
            r.tx = None;
            match r.release {
                Some(step) if step != Release::Park => {
                    r.release = Some(self.releaser.step(step, conn));
                }
                _ => r.parked = Some(conn),
            }
            return;
        }
        let (tx, rx) = channel();
        let pid = Arc::new(AtomicU32::new(ad.peer_pid.unwrap_or(0)));
        let cookie = ad.cookie.clone();
        let held = HeldRuntime {
            advertisement: ad,
            first: Mutex::new(Some(conn)),
            rx: Mutex::new(rx),
            path: self.releaser.path.clone(),
            pid: pid.clone(),
        };
        let mut runtime = Runtime {
            tx: Some(tx),
            release: None,
            parked: None,
            pid,
        };
        if let Admission::Release(held) = on_new(held) {
            runtime.tx = None;
            runtime.release = Some(match held.take_first() {
                Some(first) => self.releaser.step(Release::Clear, first),
                None => Release::Clear,
            });
        }
        self.runtimes.insert(cookie, runtime);
    }

    /// Forgets the runtimes whose process ended.
    fn tidy(&mut self) {
        self.runtimes.retain(|_, r| {
            let pid = r.pid.load(Ordering::SeqCst);
            pid == 0 || crate::procfs::alive(pid)
        });
    }
}

impl Releaser {
    /// Takes one release step on `conn`; returns the next.
    fn step(&self, step: Release, conn: Connection) -> Release {
        let once = OneConnection {
            conn: Mutex::new(Some(conn)),
            path: self.path.clone(),
        };
        match step {
            Release::Clear => {
                let _ =
                    set_environment_variable(&once, DIAGNOSTIC_PORTS_VARIABLE, "", self.timeout);
                Release::Resume
            }
            Release::Resume => {
                if resume_runtime(&once, self.timeout).is_ok() {
                    self.released.fetch_add(1, Ordering::SeqCst);
                }
                Release::Park
            }
            Release::Park => Release::Park,
        }
    }
}

/// A reverse port served on a thread, routing each runtime's connections by its cookie (see
/// the module's note). Stopped (and its socket file removed) by [`stop`](ReverseHub::stop) or
/// when dropped.
///
/// ```no_run
/// use std::time::Duration;
/// use diagnostics_client::{resume_runtime, Admission, ReverseHub, ReverseServer};
///
/// let server = ReverseServer::bind(std::path::Path::new("/tmp/my-tool.sock"))?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// // The first runtime is kept, the others let run.
/// let mut first = true;
/// let hub = ReverseHub::start(server, "my-port", Duration::from_secs(5), move |rt| {
///     if std::mem::take(&mut first) {
///         let _ = tx.send(rt);
///         Admission::Taken
///     } else {
///         Admission::Release(rt)
///     }
/// })?;
/// if let Ok(rt) = rx.recv_timeout(Duration::from_secs(30)) {
///     resume_runtime(&rt, Duration::from_secs(5))?;
/// }
/// println!("{} other runtime(s) let run", hub.stop());
/// # Ok::<(), diagnostics_client::Error>(())
/// ```
#[derive(Debug)]
pub struct ReverseHub {
    quit: Arc<AtomicBool>,
    released: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl ReverseHub {
    /// Serves `server` on a thread named `thread_name`. `on_new` is called on that thread with
    /// each runtime that connects for the first time; `timeout` bounds each connection's reads
    /// and writes (the advertisement, the release commands).
    pub fn start(
        server: ReverseServer,
        thread_name: &str,
        timeout: Duration,
        mut on_new: impl FnMut(HeldRuntime) -> Admission + Send + 'static,
    ) -> Result<ReverseHub> {
        let quit = Arc::new(AtomicBool::new(false));
        let released = Arc::new(AtomicU64::new(0));
        let path = server.path().to_path_buf();
        let mut router = Router {
            runtimes: HashMap::new(),
            releaser: Releaser {
                path: path.clone(),
                released: released.clone(),
                timeout,
            },
        };
        let q = quit.clone();
        let thread = std::thread::Builder::new()
            .name(thread_name.to_string())
            .spawn(move || serve(&server, &mut router, &q, timeout, &mut on_new))
            .map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        Ok(ReverseHub {
            quit,
            released,
            thread: Some(thread),
            path,
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many released runtimes were resumed so far.
    pub fn released(&self) -> u64 {
        self.released.load(Ordering::SeqCst)
    }

    /// Stops serving: the thread ends, parked connections close and the socket file is
    /// removed. Returns how many released runtimes were resumed.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.released()
    }

    fn halt(&mut self) {
        self.quit.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ReverseHub {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The hub's loop: every [`ACCEPT_WAIT`] at most it looks at the quit flag.
fn serve(
    server: &ReverseServer,
    router: &mut Router,
    quit: &AtomicBool,
    timeout: Duration,
    on_new: &mut dyn FnMut(HeldRuntime) -> Admission,
) {
    let mut next_tidy = Instant::now() + TIDY_EVERY;
    while !quit.load(Ordering::SeqCst) {
        if Instant::now() >= next_tidy {
            next_tidy = Instant::now() + TIDY_EVERY;
            router.tidy();
        }
        match server.accept(ACCEPT_WAIT, timeout, &mut || !quit.load(Ordering::SeqCst)) {
            Ok((conn, ad)) => router.route(conn, ad, on_new),
            // A timeout (the wait spent already), or a client that did not advertise itself.
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::ipc::Header;
    use crate::reverse::encode_advertisement;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    /// A fake runtime's connection: advertises `cookie`/`pid`, then writes `marker`.
    fn connect(path: &Path, cookie: u8, pid: u64, marker: &[u8]) -> UnixStream {
        let mut s = UnixStream::connect(path).unwrap();
        s.write_all(&encode_advertisement([cookie; 16], pid))
            .unwrap();
        s.write_all(marker).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(400)))
            .unwrap();
        s
    }

    /// Reads one command on a fake runtime's connection and answers OK; None when nothing
    /// came (the connection is held quietly).
    fn answer(s: &mut UnixStream) -> Option<(u8, u8)> {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).ok()?;
        let h = Header::decode(&h)?;
        let mut payload = vec![0u8; usize::from(h.size) - 20];
        s.read_exact(&mut payload).ok()?;
        let mut reply = Header {
            size: 24,
            command_set: 0xFF,
            command_id: 0,
        }
        .encode()
        .to_vec();
        reply.extend_from_slice(&0u32.to_le_bytes());
        s.write_all(&reply).ok()?;
        Some((h.command_set, h.command_id))
    }

    /// The 2-byte marker the fake runtime wrote after its advertisement.
    fn marker(c: &mut Connection) -> [u8; 2] {
        let mut m = [0u8; 2];
        c.read_exact(&mut m).unwrap();
        m
    }

    #[test]
    fn connections_go_to_their_runtime_and_others_are_released_then_parked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.sock");
        let server = ReverseServer::bind(&path).unwrap();
        let (tx, rx) = channel();
        let t = Duration::from_secs(2);
        // The runtimes of pids 42 and 44 are taken, every other released.
        let hub = ReverseHub::start(server, "test-hub", t, move |rt| {
            if rt.advertisement().pid == 42 || rt.advertisement().pid == 44 {
                tx.send(rt).unwrap();
                Admission::Taken
            } else {
                Admission::Release(rt)
            }
        })
        .unwrap();
        let _a1 = connect(&path, 1, 42, b"a1");
        let a = rx.recv_timeout(t).unwrap();
        assert_eq!(a.advertisement().pid, 42);
        let _c1 = connect(&path, 3, 44, b"c1");
        let c = rx.recv_timeout(t).unwrap();
        assert_eq!(c.advertisement().pid, 44);
        // The released runtime (no marker: it answers commands): its variable emptied (4, 3),
        // then resumed (4, 1), then held.
        let mut b1 = connect(&path, 2, 43, b"");
        assert_eq!(answer(&mut b1), Some((4, 3)));
        // Connections of the taken runtimes interleaved with the released one's.
        let _c2 = connect(&path, 3, 44, b"c2");
        let _a2 = connect(&path, 1, 42, b"a2");
        let mut b2 = connect(&path, 2, 43, b"");
        assert_eq!(answer(&mut b2), Some((4, 1)));
        let mut b3 = connect(&path, 2, 43, b"");
        assert_eq!(answer(&mut b3), None, "parked: no command");
        // Each taken runtime's connections, in order, and only its own.
        assert_eq!(marker(&mut a.open(t).unwrap()), *b"a1");
        assert_eq!(marker(&mut a.open(t).unwrap()), *b"a2");
        assert_eq!(marker(&mut c.open(t).unwrap()), *b"c1");
        assert_eq!(marker(&mut c.open(t).unwrap()), *b"c2");
        let err = a.open(Duration::from_millis(50)).unwrap_err();
        assert!(err.to_string().contains("did not connect"), "{err}");
        // A dropped runtime's next connection is parked, not handed anywhere.
        drop(a);
        let mut a3 = connect(&path, 1, 42, b"a3");
        assert_eq!(answer(&mut a3), None);
        assert!(rx.try_recv().is_err(), "a known runtime is not new again");
        assert_eq!(hub.released(), 1);
        assert_eq!(hub.stop(), 1);
        assert!(!path.exists());
        // Stopped: the parked connection is closed (reset, as it held the unread marker).
        let mut rest = [0u8; 1];
        let closed = match a3.read(&mut rest) {
            Ok(n) => n == 0,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        assert!(closed);
    }
}
