//! testapps/DiagScenarios, the diagnostics tutorials' symptoms on one MVC web API: built once
//! per test run, started on a free loopback port, and asked over plain HTTP/1.0.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{dotnet_build, repo, FileLock, Running};

/// Builds testapps/DiagScenarios once per test run; returns the path of DiagScenarios.dll.
pub fn diag_scenarios() -> &'static Path {
    static DLL: OnceLock<PathBuf> = OnceLock::new();
    DLL.get_or_init(|| {
        let out = repo().join("target/testapps/DiagScenarios");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let _guard = FileLock::acquire(&repo().join("target/testapps/.build.lock"));
        dotnet_build(&repo().join("testapps/DiagScenarios"), &out);
        out.join("DiagScenarios.dll")
    })
}

/// A running DiagScenarios (killed when dropped).
pub struct Diag {
    /// The process.
    pub app: Running,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// What it wrote on stdout and stderr (the console logger's lines too), for messages.
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Diag {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.app.1
    }

    /// The full URL of `path` (`/api/diag/...`).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What the app wrote so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `GET path` (HTTP/1.0: the answer is the body up to the close, never chunked) and
    /// returns at once with the open connection: for a request that never answers (the
    /// deadlock's); dropping the stream closes it.
    pub fn send(&self, path: &str) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to DiagScenarios");
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        s
    }

    /// `GET path`, waiting at most `limit` for the whole answer: its status and body.
    pub fn get(&self, path: &str, limit: Duration) -> (u16, String) {
        let mut s = self.send(path);
        s.set_read_timeout(Some(limit)).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer)
            .unwrap_or_else(|e| panic!("GET {path}: {e} (app output: {})", self.output()));
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("GET {path}: no status in {answer:?}"));
        let body = answer.split_once("\r\n\r\n").map_or("", |b| b.1);
        (status, body.to_string())
    }
}

/// Starts testapps/DiagScenarios on a free port of 127.0.0.1 (`--urls http://127.0.0.1:0`)
/// with its output in a file, and waits (90 s at most) for its `ready pid=N port=P` line.
pub fn start_diag() -> Diag {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("diag.out");
    let file = std::fs::File::create(&log).unwrap();
    let child = Command::new("dotnet")
        .arg(diag_scenarios())
        .args(["--urls", "http://127.0.0.1:0"])
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .expect("start DiagScenarios");
    let pid = child.id();
    // Killed with the test if it does not come up.
    let app = Running(child, pid);
    // Seconds on an idle machine; far more beside other tests' loads on 2 cores.
    let started = Instant::now();
    let until = started + Duration::from_secs(90);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with("ready pid=")) {
            let field = |k: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .and_then(|v| v.parse::<u32>().ok())
            };
            assert_eq!(field("pid="), Some(pid), "{text}");
            eprintln!("DiagScenarios ready after {:?}", started.elapsed());
            let port = field("port=").unwrap_or_else(|| panic!("no port in {line:?}"));
            return Diag {
                app,
                port: u16::try_from(port).unwrap(),
                log,
                _dir: dir,
            };
        }
        assert!(
            Instant::now() < until,
            "DiagScenarios did not start in {:?}: {text}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
