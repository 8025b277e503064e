//! Errors of the reader and writer. An error names the absolute byte offset where reading
//! failed, the block being read, and what was expected there.

use crate::cursor::CursorError;
use std::fmt;

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
    pub fn from_v6(kind: u8) -> BlockKind {
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

    /// The V6 kind byte of this block kind (`None` for the stream header).
    pub fn v6_code(self) -> Option<u8> {
        Some(match self {
            BlockKind::EndOfStream => 0,
            BlockKind::Trace => 1,
            BlockKind::Event => 2,
            BlockKind::Metadata => 3,
            BlockKind::SequencePoint => 4,
            BlockKind::Stack => 5,
            BlockKind::Thread => 6,
            BlockKind::RemoveThread => 7,
            BlockKind::LabelList => 8,
            BlockKind::Unknown(k) => k,
            BlockKind::StreamHeader => return None,
        })
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

/// What went wrong.
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
    /// The input does not start with a NetTrace/NetPerf header.
    NotATrace,
    /// A format version this reader cannot read.
    UnsupportedVersion(u32),
    /// A value that breaks the format (the message says which value and what was expected).
    Malformed(String),
    /// A size or count over one of the reader's hard limits.
    LimitExceeded {
        /// What was too large.
        what: &'static str,
        /// The value found.
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// Reading from the underlying source failed.
    Io(std::io::ErrorKind, String),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Truncated { needed, available } => write!(
                f,
                "unexpected end of data: needed {needed} more bytes, found {available}"
            ),
            ErrorKind::NotATrace => write!(
                f,
                "not a NetTrace/NetPerf trace (expected 'Nettrace' or '!FastSerialization.1')"
            ),
            ErrorKind::UnsupportedVersion(v) => {
                write!(f, "unsupported trace format version {v}")
            }
            ErrorKind::Malformed(m) => write!(f, "{m}"),
            ErrorKind::LimitExceeded { what, value, limit } => {
                write!(f, "{what} is {value}, over the limit of {limit}")
            }
            ErrorKind::Io(_, m) => write!(f, "read error: {m}"),
        }
    }
}

/// An error while reading or writing a trace: where, in which block, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Absolute byte offset in the stream where the problem was found.
    pub offset: u64,
    /// The block being read, when known.
    pub block: Option<BlockKind>,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// Builds an error.
    pub fn new(offset: u64, block: Option<BlockKind>, kind: ErrorKind) -> Error {
        Error {
            offset,
            block,
            kind,
        }
    }

    /// A malformed-value error.
    pub fn malformed(offset: u64, block: BlockKind, msg: impl Into<String>) -> Error {
        Error::new(offset, Some(block), ErrorKind::Malformed(msg.into()))
    }

    /// True when the error is a truncation (the data ended early).
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, ErrorKind::Truncated { .. })
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
        match self.block {
            Some(b) => write!(f, "at byte offset {} ({b}): {}", self.offset, self.kind),
            None => write!(f, "at byte offset {}: {}", self.offset, self.kind),
        }
    }
}

impl std::error::Error for Error {}

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
            CursorError::BadVarInt { offset } => Error::new(
                offset,
                None,
                ErrorKind::Malformed("variable-length integer is too long".into()),
            ),
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
