//! Targets: what to record or dump — a pid, a process name, or a command to launch — and their
//! resolution to a diagnostics endpoint. Processes in containers are found through
//! diagnostics-client's discovery (their sockets in their own `/tmp`, their host pid here).

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use diagnostics_client::{
    find_endpoints, list_runtimes, process_info, procfs, Endpoint, RuntimeListing,
};

use crate::{Error, Result};

/// How long one runtime may take to say who it is.
const ASK_TIMEOUT: Duration = Duration::from_millis(1500);

/// What to record: a running process, or a program to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A running process, by pid (as seen from here).
    Pid(u32),
    /// A running process, by its entry assembly or executable name (case-insensitive).
    Name(String),
    /// A command line to start suspended and record from its first instruction.
    Launch(Vec<OsString>),
}

impl Target {
    /// The target given as `-p PID`, `-n NAME` or `-- command`: the command wins, then the pid.
    pub fn from_args(pid: Option<u32>, name: Option<&str>, command: &[OsString]) -> Target {
        if !command.is_empty() {
            Target::Launch(command.to_vec())
        } else if let Some(pid) = pid {
            Target::Pid(pid)
        } else {
            Target::Name(name.unwrap_or_default().to_string())
        }
    }

    /// Finds the process (a launch needs nothing found).
    pub fn resolve(&self) -> Result<Resolved> {
        match self {
            Target::Launch(command) => Ok(Resolved::Launch(command.clone())),
            Target::Pid(pid) => {
                let endpoint = endpoint_for_pid(*pid)?;
                let label = match process_name(&endpoint) {
                    Some(n) => format!("{n} (pid {pid})"),
                    None => format!("pid {pid}"),
                };
                Ok(Resolved::Attach { endpoint, label })
            }
            Target::Name(name) => by_name(name),
        }
    }
}

/// A target ready to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// A running process's endpoint and a label for messages and file names.
    Attach {
        /// The endpoint.
        endpoint: Endpoint,
        /// "pid 42", or "app (pid 42)".
        label: String,
    },
    /// A command line to start suspended.
    Launch(Vec<OsString>),
}

/// The diagnostics endpoint of process `pid`, or the error saying why there is none.
pub fn endpoint_for_pid(pid: u32) -> Result<Endpoint> {
    if let Some(ep) = find_endpoints().into_iter().find(|e| e.pid == pid) {
        return Ok(ep);
    }
    if !procfs::alive(pid) {
        return Err(Error::NoProcess { pid });
    }
    Err(Error::NoEndpoint { pid })
}

/// A process's name for messages and file names (its listing row's: the runtime's entry
/// assembly, else its executable); None when neither is known.
fn process_name(endpoint: &Endpoint) -> Option<String> {
    let info = process_info(endpoint, ASK_TIMEOUT).map_err(|e| e.to_string());
    Some(RuntimeListing::new(endpoint.pid, info).name).filter(|n| !n.is_empty())
}

/// The one .NET process `name` names ([`RuntimeListing::is_named`]).
fn by_name(name: &str) -> Result<Resolved> {
    let matches: Vec<RuntimeListing> = list_runtimes(ASK_TIMEOUT)
        .into_iter()
        .filter(|r| r.is_named(name))
        .collect();
    match matches.as_slice() {
        [] => Err(Error::NoMatch {
            name: name.to_string(),
        }),
        [one] => {
            let endpoint = endpoint_for_pid(one.pid)?;
            let label = format!("{} (pid {})", one.name, one.pid);
            Ok(Resolved::Attach { endpoint, label })
        }
        many => Err(Error::Ambiguous {
            name: name.to_string(),
            pids: many.iter().map(|r| r.pid).collect(),
        }),
    }
}

/// A trace file name for `label`: its first word, then the time, `.nettrace`.
pub fn default_output(label: &str) -> std::path::PathBuf {
    let stamp = clrspy_values::time::file_stamp(std::time::SystemTime::now());
    let base: String = label
        .split_whitespace()
        .next()
        .unwrap_or("trace")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_' || *c == '.')
        .collect();
    std::path::PathBuf::from(format!(
        "{}_{stamp}.nettrace",
        if base.is_empty() { "trace" } else { &base }
    ))
}

/// The name a launched command's trace is named after: the program's, or for `dotnet app.dll`
/// the app's.
pub fn launch_name(command: &[OsString]) -> String {
    let Some(program) = command.first() else {
        return "trace".into();
    };
    let name = Path::new(program)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    if name == "dotnet" {
        command
            .get(1)
            .and_then(|a| Path::new(a).file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or(name)
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_from_flags() {
        let cmd = vec![OsString::from("dotnet"), OsString::from("bin/app.dll")];
        assert_eq!(
            Target::from_args(Some(3), None, &cmd),
            Target::Launch(cmd.clone())
        );
        assert_eq!(Target::from_args(Some(3), Some("x"), &[]), Target::Pid(3));
        assert_eq!(
            Target::from_args(None, Some("x"), &[]),
            Target::Name("x".into())
        );
        assert_eq!(launch_name(&cmd), "app");
        assert_eq!(launch_name(&[OsString::from("/usr/bin/tool")]), "tool");
        assert!(default_output("app (pid 4)")
            .to_string_lossy()
            .starts_with("app_"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_missing_pid_says_so() {
        // pid_max is at most 2^22 on Linux: this pid never exists.
        let e = endpoint_for_pid(u32::MAX - 1).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::NoTarget, "{e}");
    }
}
