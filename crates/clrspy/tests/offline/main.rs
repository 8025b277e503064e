//! The tests that need no .NET runtime: the CLI on recorded traces (tests/data,
//! crates/nettrace/tests/data) and on files it makes or repairs, against TraceEvent's figures
//! stored beside them. One test binary, one module per file of this folder (the file names
//! are the module names): `cargo test -p clrspy --test offline -- cli::` runs one file's
//! tests. See ../README.md.

#[path = "../common/mod.rs"]
mod common;

mod app_code;
mod cli;
mod convert;
mod cpu_vs_traceevent;
mod diff_cli;
mod findings;
mod gc_vs_traceevent;
mod heap_cli;
mod manual;
mod r2r_symbols;
mod repair;
mod report_callers;
mod report_fixes;
mod report_snapshots;
mod rules_cli;
