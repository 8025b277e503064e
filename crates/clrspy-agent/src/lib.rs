//! clrspy's agent (`clrspy agent`): an HTTP API over the .NET processes this machine (or this
//! container) can see, for places where nobody gets a shell beside the process.
//!
//! Security is on by default: every route but the public ones (`/health`) needs
//! `Authorization: Bearer` with an API key (only its SHA-256 is configured) or a JWT verified
//! against a public key in dotnet-monitor's format, checked by one layer over the whole app; a
//! non-loopback address needs TLS and credentials unless `--insecure`. What takes something
//! out of a process is written to an audit log; every file the agent writes is owner-only.
//! Limits live in one place: body size, request and header timeouts, open connections, and
//! concurrent work per kind (429).
//!
//! Modules (all private: the crate exports only [`run`] and [`AgentArgs`], which the `clrspy`
//! binary names): `config` (the TOML file, its schema, the start-up checks), `keys` (new keys and
//! hashes), `jwk` (JWT keys and verification), `auth` (the middleware and the public routes),
//! `audit` (the audit log), `limits` (semaphores, blocking work, threads of their own), `params`
//! (typed queries, parameter checks), `folder` (the agent's own folder), `drain` (stopping without
//! cutting what is being sent), `pull` (profile pulls recorded and converted to pprof),
//! `report_pull` (`/reports`: recorded and analysed into the registry's reports), `rules_host` (the
//! watcher running inside the agent, behind `/rules`), `select` (which process: pid, uid or name),
//! `proc_cache` (what each runtime said, asked once), `metrics` (the counters sessions behind
//! `/metrics` and its text format), `operations` (long-running actions: dumps, heap snapshots) and
//! `artifact` (their child processes and the disk budget), `spool` (growing files the streamed
//! routes follow), `routes` (one router per area), `server` (listening, TLS, slow clients), `cmd`
//! (the commands). Format details stay in the crates below: the agent calls diagnostics-client,
//! clrspy-live and clrspy-export.

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod artifact;
mod audit;
mod auth;
mod cmd;
mod config;
mod drain;
mod error;
mod folder;
mod jwk;
mod keys;
mod limits;
mod metrics;
mod operations;
mod params;
mod proc_cache;
mod pull;
mod report_pull;
mod routes;
mod rules_host;
mod select;
mod server;
mod spool;
mod state;

pub use cmd::{run, AgentArgs};
