//! Reader and writer for the .NET EventPipe trace format: NetPerf (version 3), NetTrace V4/V5
//! (FastSerialization objects) and NetTrace V6 (block headers).
#![deny(missing_docs)]

pub mod cursor;
pub mod value;

pub use cursor::{Cursor, CursorError};
pub use value::{Field, Guid, SystemTime, Value};
