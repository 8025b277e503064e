//! The decoders' integration tests, one test binary (each file of this folder is a module of
//! the same name): `cargo test -p clr-events --test integration -- families::` runs one file's
//! tests.

mod counters_real;
mod families;
mod fuzz;
mod real_traces;
mod tables;
mod views;
