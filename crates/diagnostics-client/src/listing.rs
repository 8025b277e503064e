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

impl RuntimeListing {
    /// The row of process `pid` from what its runtime said (`info`): its name is the entry
    /// assembly, else the kernel's name for the process; its command line the runtime's,
    /// else `/proc/PID/cmdline`'s.
    pub fn new(pid: u32, info: Result<ProcessInfo, String>) -> RuntimeListing {
        let entry = info
            .as_ref()
            .ok()
            .and_then(|p| p.entrypoint_assembly.clone())
            .filter(|n| !n.trim().is_empty());
        let name = entry.or_else(|| procfs::comm(pid)).unwrap_or_default();
        let command_line = match &info {
            Ok(p) if !p.command_line.is_empty() => p.command_line.clone(),
            _ => procfs::cmdline(pid)
                .map(|a| a.join(" "))
                .unwrap_or_default(),
        };
        RuntimeListing {
            pid,
            name,
            command_line,
            info,
        }
    }

    /// True when `name` names this process, as `-n NAME` and the agent's `name=` take it: its
    /// entry assembly or its kernel name, in any case.
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.trim();
        !name.is_empty()
            && (self.name.eq_ignore_ascii_case(name)
                || procfs::comm(self.pid).is_some_and(|c| c.eq_ignore_ascii_case(name)))
    }
}

/// Asks one runtime about itself.
fn ask(ep: Endpoint, timeout: Duration) -> RuntimeListing {
    RuntimeListing::new(
        ep.pid,
        process_info(&ep, timeout).map_err(|e| e.to_string()),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// This process, as a runtime that answered with an entry assembly and one that did not.
    #[test]
    fn a_row_is_named_by_its_entry_assembly_or_its_kernel_name_in_any_case() {
        let me = std::process::id();
        let info = ProcessInfo {
            entrypoint_assembly: Some("Shop.Api".into()),
            command_line: "dotnet Shop.Api.dll".into(),
            ..ProcessInfo::default()
        };
        let row = RuntimeListing::new(me, Ok(info));
        assert_eq!(row.name, "Shop.Api");
        assert_eq!(row.command_line, "dotnet Shop.Api.dll");
        assert!(row.is_named("shop.api") && row.is_named("SHOP.API"));
        assert!(!row.is_named("Shop") && !row.is_named(""));
        let Some(comm) = procfs::comm(me) else { return };
        assert!(row.is_named(&comm.to_uppercase()));
        let silent = RuntimeListing::new(me, Err("no answer".into()));
        assert_eq!(silent.name, comm);
        assert!(silent.is_named(&comm) && !silent.command_line.is_empty());
    }
}
