//! Reader and writer for the .NET EventPipe trace format: NetPerf (version 3), NetTrace V4/V5
//! (FastSerialization objects) and NetTrace V6 (block headers).
#![deny(missing_docs)]

pub mod cursor;
pub mod value;

pub use cursor::{Cursor, CursorError};
pub use value::{Field, Guid, SystemTime, Value};

pub mod decoder;
pub mod error;
pub mod event;
mod framing;
pub mod header;
pub mod metadata;
pub mod payload;
pub mod reader;
pub mod writer;

pub use decoder::TraceStats;
pub use error::{BlockKind, Error, ErrorKind, Result};
pub use event::{Event, Ips, LabelList, Stack, ThreadInfo};
pub use header::{format_unix_ns, Clock, FormatVersion, TraceHeader};
pub use metadata::{EventMetadata, FieldDesc, FieldType};
pub use payload::{decode_payload, DecodedPayload};
pub use reader::{
    ByteSource, ReadSource, Reader, SliceSource, StreamReader, TraceFile, TraceReader,
};
pub use writer::{EventRecord, TraceWriter, WriteFormat, WriterOptions};
