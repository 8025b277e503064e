//! The .NET Diagnostics IPC protocol (the one behind dotnet-trace, dotnet-counters and
//! dotnet-dump): finding the runtimes on the machine and sending them commands.
//!
//! Every .NET Core 3+ process opens a diagnostics endpoint, on Linux and macOS a Unix domain
//! socket `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket`. A message is a 20-byte header (magic
//! `DOTNET_IPC_V1\0`, total size, command set, command id, reserved) and a payload; the runtime
//! answers on the same connection with `OK` (and a payload) or `Error` (an HRESULT).
//!
//! This first part covers discovery, the ProcessInfo commands and EventPipe sessions
//! (CollectTracing2, StopTracing). Every read has a timeout; a
//! short or malformed reply is an error, never a panic or a hang.
#![deny(missing_docs)]

mod discovery;
mod eventpipe;
mod ipc;
mod process;

pub use discovery::{find_endpoints, Endpoint};
pub use eventpipe::{start_session, stop_session, Provider, Session, SessionConfig};
pub use ipc::{Error, Header, Result};
pub use process::{process_environment, process_info, ProcessInfo};
