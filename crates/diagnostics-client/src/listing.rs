//! Every runtime on the machine with what it says about itself: each one asked in parallel
//! with a timeout, so one stuck process never holds up the list (`clrspy ps`, and later the
//! live views and the agent).

use std::sync::mpsc;
use std::time::Duration;

use crate::discovery::{find_endpoints, Endpoint};
use crate::process::{process_info, ProcessInfo};
use crate::procfs;

/// One runtime found on the machine.
#[derive(Clone, Debug)]
pub struct RuntimeListing {
    /// Its host pid.
    pub pid: u32,
    /// Its name: the entry assembly, else the kernel's name for the process.
    pub name: String,
    /// Its command line (the runtime's, else `/proc/PID/cmdline`'s).
    pub command_line: String,
    /// What its runtime said, or why it did not answer.
    pub info: Result<ProcessInfo, String>,
}

/// Asks one runtime about itself.
fn ask(ep: Endpoint, timeout: Duration) -> RuntimeListing {
    let info = process_info(&ep, timeout).map_err(|e| e.to_string());
    let entry = info
        .as_ref()
        .ok()
        .and_then(|p| p.entrypoint_assembly.clone())
        .filter(|n| !n.is_empty());
    let name = entry.or_else(|| procfs::comm(ep.pid)).unwrap_or_default();
    let command_line = match &info {
        Ok(p) if !p.command_line.is_empty() => p.command_line.clone(),
        _ => procfs::cmdline(ep.pid)
            .map(|a| a.join(" "))
            .unwrap_or_default(),
    };
    RuntimeListing {
        pid: ep.pid,
        name,
        command_line,
        info,
    }
}

/// Every runtime [`find_endpoints`] finds, asked in parallel (each within `timeout`), by pid.
pub fn list_runtimes(timeout: Duration) -> Vec<RuntimeListing> {
    let (tx, rx) = mpsc::channel();
    for ep in find_endpoints() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(ask(ep, timeout));
        });
    }
    drop(tx);
    // Each query ends by its own timeout; collect what arrives.
    let mut rows: Vec<RuntimeListing> = rx.iter().collect();
    rows.sort_by_key(|r| r.pid);
    rows
}
