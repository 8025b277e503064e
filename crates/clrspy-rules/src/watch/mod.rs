//! The watcher, in layers (each file imports only those below it; `bench/import_graph.py`
//! checks there are no cycles):
//!
//! - `procfs`: what `/proc` and the file system say about a process and the output disk;
//! - `admission`: whether a rule's action may go — a pure function of the rule's state, its
//!   limits, the free bytes, stopping and the time;
//! - `children` (process trees for rules with `children`), `discover` (the runtimes'
//!   sockets);
//! - `state`: the watcher's whole state ([`state::WatchState`]), its log and printer, its
//!   threads;
//! - `limits`: admission applied (the disk read, refusals logged, budgets kept);
//! - `trace`, and the dumps: `gate`, `dumps`, `holds`, `crash`;
//! - `dispatch`: a process found → the rules it matches → their actions;
//! - `port`: the listen port (runtimes held at their first instruction);
//! - `run`: the poll loop, reloads and the stop.
//!
//! The rules file proper (model, parse, values, doc, facts, budget, log) imports nothing
//! from here.

mod admission;
mod children;
pub(crate) mod crash;
mod discover;
mod dispatch;
mod dumps;
mod gate;
mod holds;
mod limits;
mod port;
mod procfs;
mod run;
mod state;
mod trace;

pub use admission::{admission, admit, disk_full, Admission, AdmissionInput, MIN_FREE};
pub use run::{watch, WatchControl, WatchEnd, WatchError, WatchOptions};
pub use state::DecisionPrinter;
