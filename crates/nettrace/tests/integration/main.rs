//! The reader's and writer's integration tests, one test binary (each file of this folder is a
//! module of the same name): `cargo test -p nettrace --test integration -- roundtrip::` runs
//! one file's tests.

mod formats;
mod real_traces;
mod roundtrip;
mod scanner;
