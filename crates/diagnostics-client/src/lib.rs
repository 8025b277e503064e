//! The .NET Diagnostics IPC protocol (the one behind dotnet-trace, dotnet-counters and
//! dotnet-dump): finding the runtimes on the machine and sending them commands.
//!
//! Every .NET Core 3+ process opens a diagnostics endpoint, on Linux and macOS a Unix domain
//! socket `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket`. A message is a 20-byte header (magic
//! `DOTNET_IPC_V1\0`, total size, command set, command id, reserved) and a payload; the runtime
//! answers on the same connection with `OK` (and a payload) or `Error` (an HRESULT).
//!
//! Commands go through a [`Connector`]: an [`Endpoint`] (the runtime listens) or a
//! [`ReverseServer`] (the runtime was started with `DOTNET_DiagnosticPorts=<path>,connect,suspend`
//! and connects to us — how a program is traced from its first instruction). Covered: ProcessInfo
//! 1/2/3, ProcessEnvironment, SetEnvironmentVariable, ResumeRuntime, EnablePerfMap/DisablePerfMap,
//! ApplyStartupHook, CollectTracing 2–5 and StopTracing, GenerateCoreDump 1–3; each command falls
//! back to the older version when the runtime answers "unknown command". Every read has a
//! timeout; a short or malformed reply is an error, never a panic or a hang. Windows named pipes
//! sit behind the same API but are not implemented yet (calls return [`Error::Unsupported`]).
//!
//! Around the protocol: [`find_endpoints`] lists the runtimes once, and an [`EndpointWatcher`]
//! follows them cheaply (inotify, cached folder listings) and says which came and went; a
//! [`ReverseHub`] serves one reverse port for many runtimes, routing each one's connections by
//! its instance cookie; [`procfs`] reads what Linux's `/proc` says of a process (start time,
//! namespaces and `NSpid`, environment, command line); [`container`] which container it runs
//! in; [`rooted`] opens the paths a process chose (its dump folder, its temporary folder) below
//! its own root, never through a link.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod connect;
pub mod container;
mod discovery;
mod dump;
mod eventpipe;
mod hub;
mod ipc;
mod listing;
mod process;
pub mod procfs;
mod reverse;
#[cfg(target_os = "linux")]
pub mod rooted;
mod watcher;

pub use discovery::{container_folder, find_endpoints, ContainerFolder, Endpoint};
pub use dump::{generate_core_dump, DumpFlags, DumpType};
pub use eventpipe::{
    start_session, start_session_allowing, stop_session, Provider, Session, SessionConfig,
    DEFAULT_RUNDOWN_KEYWORD,
};
pub use hub::{Admission, HeldRuntime, ReverseHub};
pub use ipc::{Connection, Connector, Error, Header, Result, HEADER_SIZE};
pub use listing::{list_runtimes, RuntimeListing};
pub use process::{
    apply_startup_hook, disable_perf_map, enable_perf_map, parse_environment, parse_process_info,
    process_environment, process_info, resume_runtime, set_environment_variable, PerfMapType,
    ProcessInfo,
};
pub use reverse::{
    encode_advertisement, parse_advertisement, Advertisement, ReverseServer, ADVERTISE_SIZE,
    DIAGNOSTIC_PORTS_VARIABLE,
};
pub use watcher::{EndpointChanges, EndpointWatcher};
