//! clrspy's live views of a running process, each a command of its own: its options, the
//! session it opens through clrspy-live, and what it draws on a terminal or writes to a file.
//!
//! - [`counters`]: `clrspy counters list|monitor|collect` — EventCounters and
//!   System.Diagnostics.Metrics meters, as a live table or as CSV, JSON Lines or Prometheus text;
//! - [`logs`]: `clrspy logs` — the app's ILogger messages as they are logged;
//! - [`metrics`]: `clrspy metrics` — system and process metrics from /proc and the cgroups
//!   every interval, as CSV and a page of charts;
//! - [`stack`]: `clrspy stack` — the managed stack of every thread now;
//! - [`top`]: `clrspy top` — the hottest methods of the last few seconds, full-screen.
//!
//! The binary parses the flags (the `Args` types here) and calls each view's `run`; the models
//! live in clrspy-analysis, the sessions in clrspy-live, the file formats in clrspy-export.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod counters;
pub mod logs;
pub mod metrics;
pub mod stack;
pub mod top;
