//! The reports' integration tests on real traces, one test binary (each file of this folder is
//! a module of the same name): `cargo test -p clrspy-export --test integration --
//! report_views::` runs one file's tests.

mod call_views;
mod invariants;
mod loader_report;
mod report_http;
mod report_views;
