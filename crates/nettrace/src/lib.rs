//! Reader and writer for the .NET EventPipe trace format: NetPerf (version 3), NetTrace V4/V5
//! (FastSerialization objects) and NetTrace V6 (block headers).
//!
//! [`TraceReader`] reads a byte slice or a memory map ([`TraceFile`]) without copying payloads;
//! [`StreamReader`] reads any `io::Read` incrementally, holding one block at a time. Both yield
//! the same [`Event`]: provider, id, version, level, keywords, opcode, timestamp (ticks, ns since
//! the trace start, UTC), threads, processor, stack addresses, activity ids or V6 labels, and
//! the payload bytes, which [`Event::decode_with_metadata`] decodes for self-describing events.
//! Damage never panics: every complete event before it is yielded, then an [`Error`] names the
//! byte offset, the block and what was expected.
//!
//! [`Scanner`] is the framing alone, sans I/O: fed bytes in any pieces, it reports the stream
//! header, each whole block and the end of the stream with their offsets, for programs that
//! move a trace's bytes (splice, keep a ring, repair a cut file). [`TraceWriter`] writes V5 and
//! V6 traces.
//!
//! ```
//! use nettrace::{EventMetadata, EventRecord, TraceReader, TraceWriter, WriterOptions};
//!
//! // Write a small V6 trace, then read it back.
//! let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
//! let id = w
//!     .define(&EventMetadata { provider: "My-Source".into(), event_id: 1, ..Default::default() })
//!     .unwrap();
//! w.write(&EventRecord {
//!     metadata_id: id,
//!     thread_id: 7,
//!     capture_thread_id: 7,
//!     timestamp: 1_500,
//!     stack: &[0x7f00_1234, 0x7f00_5678],
//!     ..Default::default()
//! })
//! .unwrap();
//! let bytes = w.finish().unwrap();
//!
//! let mut reader = TraceReader::new(&bytes).unwrap();
//! while let Some(ev) = reader.next_event().unwrap() {
//!     assert_eq!(ev.provider(), "My-Source");
//!     assert_eq!(ev.thread_id, 7);
//!     assert_eq!(ev.timestamp_ns(), 1_500);
//!     assert_eq!(ev.stack.ips().collect::<Vec<_>>(), [0x7f00_1234, 0x7f00_5678]);
//! }
//! assert!(reader.stats().ended_cleanly);
//! ```
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod cursor;
mod decoder;
mod error;
mod event;
mod framing;
mod header;
mod metadata;
mod netperf_upgrade;
mod ordered;
mod payload;
mod reader;
mod repair;
mod repaired;
mod scan;
#[cfg(test)]
mod testutil;
mod value;
mod writer;

pub use decoder::brief::{BriefAnswer, EventBrief};
pub use decoder::TraceStats;
pub use error::{BlockKind, Error, ErrorKind, Result};
pub use event::{Event, Ips, LabelList, Stack};
pub use header::{format_unix_ns, Clock, FormatVersion, TraceHeader};
pub use metadata::{EventMetadata, FieldDesc, FieldType};
pub use ordered::TimeOrder;
pub use payload::{decode_payload, DecodedPayload};
pub use reader::{
    ByteSource, ReadSource, Reader, SliceSource, StreamReader, TraceFile, TraceReader,
};
pub use repair::repair;
pub use repaired::Repair;
pub use scan::{end_of_stream, Block, Item, Scanner, Step};
pub use value::{Field, Guid, SystemTime, Value};
pub use writer::{EventRecord, TraceWriter, WriteFormat, WriterOptions};
