//! Reading a .NET process's core dump with no SDK.
//!
//! - [`elf`]: the ELF core — memory, threads and registers, mapped files — from a raw core, a
//!   seekable zstd file (read in place, [`seekable`]) or any zstd or gzip stream (unpacked to a
//!   temporary file first).
//! - [`dac`]: the runtime's own reader of its structures, the data access library
//!   (`libmscordaccore.so`) every runtime ships beside `libcoreclr.so`, loaded with a data target
//!   over the core; through it the managed threads and their stacks, the monitors held and
//!   waited on, the exceptions, the heap by type and the modules ([`model::Analysis`]).
//! - [`worker`]: the library runs in a child process, so that a fault inside it (a damaged or
//!   foreign core) is an error here, not a crash.
//! - [`locks`]: the deadlock cycles among the monitors' owners and waiters.

mod analyze;
pub mod dac;
pub mod elf;
mod gcroot;
mod heap;
mod locks;
pub mod model;
mod names;
pub mod seekable;
mod source;
pub mod text;
pub mod worker;

pub use source::Packing;

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    /// The file is not an ELF core this crate reads.
    #[error("not a core dump: {0}")]
    NotACore(String),
    /// The core is not of a .NET process, or its runtime cannot be read.
    #[error("{0}")]
    Runtime(String),
    /// No data access library matching the dump's runtime was found.
    #[error("{0}")]
    NoDac(String),
}

impl Error {
    fn read(e: std::io::Error) -> Error {
        Error::Io("the core".into(), e)
    }
}
