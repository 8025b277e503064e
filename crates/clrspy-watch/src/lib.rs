//! clrspy's watcher: finds every new .NET process — by polling the runtimes' diagnostic
//! sockets (in `/tmp`, and in containers' own `/tmp` through `/proc/PID/root`), and, with a
//! listen socket, as runtimes connect to it held at their first instruction — applies the
//! rules of a clrspy-rules file to it (traces, dumps, heap snapshots, counters and bundles; on exceptions and on a crash, under
//! the rules' limits and disk budgets), and logs every decision. Used by `clrspy watch` and
//! by the agent; no terminal or HTTP here.
//!
//! Its files are layers, each importing only those below it (`python3 bench/import_graph.py
//! crates/clrspy-watch` checks there are no cycles):
//!
//! - `procfs`: what `/proc` and the file system say about a process and the output disk;
//! - `admission`: whether a rule's action may go — a pure function of the rule's state, its
//!   limits, the free bytes, stopping and the time;
//! - `children` (process trees for rules with `children`) and `fatal` (the session that keeps
//!   the fatal exception's message; the ELF core reader and createdump's file names are
//!   clrspy-collect's `crash`); new runtimes come from diagnostics-client's `EndpointWatcher`;
//! - `view`: the read-only public view of a running watch (per rule: state, counts, recent
//!   decisions), fed by the decisions and admissions;
//! - `state`: the watcher's whole state (`WatchState`), its log and
//!   printer, its threads;
//! - `limits`: admission applied (the disk read, refusals logged, budgets kept);
//! - `trace`, `heap`, `counters`, `bundle` (a support bundle, clrspy-handoff's `gather`), and
//!   the dumps: `gate`, `dumps`, `holds`, `crash`;
//! - `dispatch`: a process found → the rules it matches → their actions;
//! - `port`: the listen port (runtimes held at their first instruction);
//! - `run`: the poll loop, reloads and the stop.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod admission;
mod analysis;
mod bundle;
mod children;
mod counters;
mod crash;
mod dispatch;
mod dumps;
mod fatal;
mod gate;
mod heap;
mod holds;
mod limits;
mod port;
mod procfs;
mod run;
mod signals;
mod state;
mod trace;
mod view;

pub use run::{watch, watch_with_view, WatchControl, WatchEnd, WatchError, WatchOptions};
pub use signals::signal_control;
pub use state::DecisionPrinter;
pub use view::{RuleSnapshot, RuleStatus, WatchSummary, WatchView, RULE_LOG_LEN};
