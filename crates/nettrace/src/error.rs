//! Errors of the reader and writer. An error names the absolute byte offset where reading
//! failed, the block being read, and what was expected there.

use crate::cursor::CursorError;
use std::fmt;
use std::sync::Arc;

/// The kind of block (or object) a trace is made of. V3-V5 traces use FastSerialization
/// objects named `EventBlock`, `MetadataBlock`, `StackBlock` and `SPBlock`; V6 numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockKind {
    /// The stream header (magic and serialization header) before any block.
    StreamHeader,
    /// The trace object/block: start time, clock, pointer size.
    Trace,
    /// Events.
    Event,
    /// Event metadata (provider, name, fields).
    Metadata,
    /// Interned stacks.
    Stack,
    /// A sequence point: cache flush and drop detection.
    SequencePoint,
    /// V6 thread table rows.
    Thread,
    /// V6 removal of thread table rows.
    RemoveThread,
    /// V6 label lists (activity ids and other key/value labels).
    LabelList,
    /// The end-of-stream marker.
    EndOfStream,
    /// A block kind this reader does not know (V6 allows new kinds; they are skipped).
    Unknown(u8),
}

impl BlockKind {
    /// The V6 block kind for a kind byte.
    pub(crate) fn from_v6(kind: u8) -> BlockKind {
        match kind {
            0 => BlockKind::EndOfStream,
            1 => BlockKind::Trace,
            2 => BlockKind::Event,
            3 => BlockKind::Metadata,
            4 => BlockKind::SequencePoint,
            5 => BlockKind::Stack,
            6 => BlockKind::Thread,
            7 => BlockKind::RemoveThread,
            8 => BlockKind::LabelList,
            k => BlockKind::Unknown(k),
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockKind::StreamHeader => write!(f, "stream header"),
            BlockKind::Trace => write!(f, "Trace block"),
            BlockKind::Event => write!(f, "EventBlock"),
            BlockKind::Metadata => write!(f, "MetadataBlock"),
            BlockKind::Stack => write!(f, "StackBlock"),
            BlockKind::SequencePoint => write!(f, "SequencePoint block"),
            BlockKind::Thread => write!(f, "Thread block"),
            BlockKind::RemoveThread => write!(f, "RemoveThread block"),
            BlockKind::LabelList => write!(f, "LabelList block"),
            BlockKind::EndOfStream => write!(f, "end of stream"),
            BlockKind::Unknown(k) => write!(f, "unknown block kind {k}"),
        }
    }
}

/// What went wrong. Each variant carries the values it is about; [`Error`] adds where.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended inside a structure: it is truncated.
    Truncated {
        /// Bytes the structure needed from the failing offset.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// A block's declared size runs past the end of the data (the trace was cut inside it).
    TruncatedBlock {
        /// Payload bytes the block declares.
        declared: u64,
        /// Payload bytes present before the data ends.
        available: u64,
    },
    /// The stream ends between two blocks, without its end-of-stream marker.
    MissingEndOfStream,
    /// Bytes follow the end-of-stream marker.
    DataAfterEnd,
    /// The input does not start with a NetTrace/NetPerf header.
    NotATrace,
    /// A format version this reader cannot read.
    UnsupportedVersion(u32),
    /// A FastSerialization tag byte is not the one the format puts there.
    UnexpectedTag {
        /// The tag(s) the format puts there, e.g. `"BeginObject (4 or 5)"`.
        expected: &'static str,
        /// The byte found.
        found: u8,
    },
    /// An object's type name is not one of the format's block types.
    UnknownObjectType {
        /// The type name found.
        name: String,
    },
    /// The first block after the stream header is not the Trace block.
    TraceNotFirst {
        /// What came first instead.
        found: BlockKind,
    },
    /// A second Trace block.
    SecondTrace,
    /// A code this reader does not know (field type, metadata tag, thread info or label kind).
    UnknownCode {
        /// What the code selects, e.g. `"field type code"`.
        what: &'static str,
        /// The code found.
        found: u64,
    },
    /// A value the format does not allow.
    InvalidValue {
        /// Which value, e.g. `"pointer size"`.
        what: &'static str,
        /// The value found.
        found: i64,
        /// What the format allows there, e.g. `"4 or 8"`.
        expected: &'static str,
    },
    /// A size outside the range its structure allows.
    SizeOutOfRange {
        /// Which size, e.g. `"event size"`.
        what: &'static str,
        /// The size found.
        found: u64,
        /// The smallest size allowed there.
        min: u64,
        /// The largest size allowed there.
        max: u64,
    },
    /// A count of items that cannot fit in the bytes that are left.
    CountTooLarge {
        /// What is counted, e.g. `"fields"`.
        what: &'static str,
        /// The count found.
        count: u64,
        /// Bytes left for them.
        room: u64,
    },
    /// A variable-length integer longer than its type allows.
    BadVarInt,
    /// A size or count over one of the reader's hard limits.
    LimitExceeded {
        /// What was too large.
        what: &'static str,
        /// The value found.
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// Reading from the underlying source failed; the `io::Error` is the [`Error`]'s source.
    Io(std::io::ErrorKind),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Truncated { needed, available } => write!(
                f,
                "unexpected end of data: needed {needed} more bytes, found {available}"
            ),
            ErrorKind::TruncatedBlock {
                declared,
                available,
            } => write!(
                f,
                "the block starting here declares {declared} bytes but the data ends after {available} of them (truncated trace)"
            ),
            ErrorKind::MissingEndOfStream => write!(
                f,
                "the stream ends without its end-of-stream marker (truncated trace)"
            ),
            ErrorKind::DataAfterEnd => write!(f, "data follows the end-of-stream marker"),
            ErrorKind::NotATrace => write!(
                f,
                "not a NetTrace/NetPerf trace (expected 'Nettrace' or '!FastSerialization.1')"
            ),
            ErrorKind::UnsupportedVersion(v) => {
                write!(f, "unsupported trace format version {v}")
            }
            ErrorKind::UnexpectedTag { expected, found } => {
                write!(f, "expected {expected}, found byte {found}")
            }
            ErrorKind::UnknownObjectType { name } => write!(
                f,
                "unknown object type '{name}' (expected EventBlock, MetadataBlock, StackBlock, SPBlock or Trace)"
            ),
            ErrorKind::TraceNotFirst { found } => {
                write!(f, "expected the Trace block first, found {found}")
            }
            ErrorKind::SecondTrace => write!(f, "a second Trace block in the stream"),
            ErrorKind::UnknownCode { what, found } => write!(f, "unknown {what} {found}"),
            ErrorKind::InvalidValue {
                what,
                found,
                expected,
            } => write!(f, "{what} is {found}, expected {expected}"),
            ErrorKind::SizeOutOfRange {
                what,
                found,
                min,
                max,
            } => {
                if *found < *min {
                    write!(f, "{what} {found} is smaller than the {min} bytes it must hold")
                } else {
                    write!(f, "{what} {found} is larger than the {max} bytes available")
                }
            }
            ErrorKind::CountTooLarge { what, count, room } => {
                write!(f, "{count} {what} cannot fit in the {room} bytes left")
            }
            ErrorKind::BadVarInt => write!(f, "variable-length integer is too long"),
            ErrorKind::LimitExceeded { what, value, limit } => {
                write!(f, "{what} is {value}, over the limit of {limit}")
            }
            ErrorKind::Io(kind) => write!(f, "read error ({kind})"),
        }
    }
}

/// An error while reading a trace: where (absolute byte offset), in which block, and what,
/// with the values involved as typed fields of [`ErrorKind`]. A read error keeps the
/// `io::Error` as its [`source`](std::error::Error::source).
///
/// ```
/// use nettrace::{ErrorKind, TraceReader};
///
/// let err = TraceReader::new(b"not a trace at all").err().unwrap();
/// assert_eq!(err.offset, 0);
/// assert_eq!(err.kind, ErrorKind::NotATrace);
/// assert!(err.to_string().starts_with("at byte offset 0"));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Error {
    /// Absolute byte offset in the stream where the problem was found.
    pub offset: u64,
    /// The block being read, when known.
    pub block: Option<BlockKind>,
    /// What went wrong.
    pub kind: ErrorKind,
    source: Option<Arc<std::io::Error>>,
}

impl PartialEq for Error {
    /// Errors are equal when offset, block and kind are (an I/O source is compared by kind).
    fn eq(&self, other: &Error) -> bool {
        self.offset == other.offset && self.block == other.block && self.kind == other.kind
    }
}

impl Eq for Error {}

impl Error {
    /// Builds an error.
    pub fn new(offset: u64, block: Option<BlockKind>, kind: ErrorKind) -> Error {
        Error {
            offset,
            block,
            kind,
            source: None,
        }
    }

    /// A read error at `offset`; `err` becomes the source.
    pub fn io(offset: u64, err: std::io::Error) -> Error {
        Error {
            offset,
            block: None,
            kind: ErrorKind::Io(err.kind()),
            source: Some(Arc::new(err)),
        }
    }

    /// An error in `block`.
    pub(crate) fn at(offset: u64, block: BlockKind, kind: ErrorKind) -> Error {
        Error::new(offset, Some(block), kind)
    }

    /// True when the error is a truncation (the data ended early).
    pub fn is_truncation(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Truncated { .. }
                | ErrorKind::TruncatedBlock { .. }
                | ErrorKind::MissingEndOfStream
        )
    }

    pub(crate) fn in_block(mut self, block: BlockKind) -> Error {
        if self.block.is_none() {
            self.block = Some(block);
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte offset {}", self.offset)?;
        if let Some(b) = self.block {
            write!(f, " ({b})")?;
        }
        write!(f, ": {}", self.kind)?;
        if let Some(s) = &self.source {
            write!(f, ": {s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<CursorError> for Error {
    fn from(e: CursorError) -> Error {
        match e {
            CursorError::Eof {
                offset,
                needed,
                available,
            } => Error::new(
                offset,
                None,
                ErrorKind::Truncated {
                    needed: needed as u64,
                    available: available as u64,
                },
            ),
            CursorError::BadVarInt { offset } => Error::new(offset, None, ErrorKind::BadVarInt),
        }
    }
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Attaches a block kind to cursor errors.
pub(crate) trait InBlock<T> {
    fn in_block(self, block: BlockKind) -> Result<T>;
}

impl<T> InBlock<T> for std::result::Result<T, CursorError> {
    #[inline]
    fn in_block(self, block: BlockKind) -> Result<T> {
        self.map_err(|e| Error::from(e).in_block(block))
    }
}

impl<T> InBlock<T> for Result<T> {
    #[inline]
    fn in_block(self, block: BlockKind) -> Result<T> {
        self.map_err(|e| e.in_block(block))
    }
}
