//! The leak workload of the heap tests: `Workloads heap` holds exactly 12,345
//! `Workloads.HeapOrder` in a static list and grows it by N on `grow N` (stdin).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::workloads;

/// The leak workload (`Workloads heap`), killed when dropped.
pub struct Workload {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    /// Its process id.
    pub pid: u32,
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Workload {
    /// Starts it and waits for its 12,345 orders.
    pub fn start() -> Workload {
        Workload::start_from(workloads())
    }

    /// [`Workload::start`] from `dll`: Workloads.dll through a folder link of the test's own,
    /// so that a rule matching that path matches no other test's workload.
    pub fn start_from(dll: &Path) -> Workload {
        let mut child = Command::new("dotnet")
            .arg(dll)
            .arg("heap")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the workload");
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let pid = first.strip_prefix("ready pid=").unwrap().parse().unwrap();
        let mut w = Workload {
            child,
            stdin,
            lines,
            pid,
        };
        assert_eq!(w.held(), 12_345);
        w
    }

    /// Reads its `held=N` reply.
    pub fn held(&mut self) -> u64 {
        let l = self.lines.next().unwrap().unwrap();
        l.strip_prefix("held=").unwrap().parse().unwrap()
    }

    /// `grow N`: adds N orders; returns how many it holds now.
    pub fn grow(&mut self, n: u64) -> u64 {
        writeln!(self.stdin, "grow {n}").unwrap();
        self.stdin.flush().unwrap();
        self.held()
    }
}
