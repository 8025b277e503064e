//! The reader's and writer's error: what went wrong and at which byte offset.

/// A `.gcdump` that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{kind} (at byte offset {offset})")]
pub struct Error {
    /// Byte offset in the file where the problem was found (0 for the writer's errors).
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file ended in the middle of `what`.
    #[error("the file ends inside {what}")]
    Truncated {
        /// The item being read.
        what: &'static str,
    },
    /// Not a FastSerialization stream.
    #[error("not a .gcdump file: the header is {found:?}, expected \"!FastSerialization.1\"")]
    BadHeader {
        /// What the file has instead.
        found: String,
    },
    /// A tag other than the one the format has there.
    #[error("unexpected tag {found} while reading {what} (expected {expected})")]
    UnexpectedTag {
        /// The tag found.
        found: u8,
        /// The tag expected.
        expected: &'static str,
        /// The item being read.
        what: &'static str,
    },
    /// An object of a type this reader does not expect there.
    #[error("object of type {found:?} where {expected} was expected")]
    WrongType {
        /// The type name found.
        found: String,
        /// The type expected.
        expected: &'static str,
    },
    /// A type reference to a label that names no type.
    #[error("reference to an unknown type at label {label}")]
    UnknownTypeLabel {
        /// The label.
        label: u32,
    },
    /// A version this reader cannot read.
    #[error("{what} version {version} is not supported (this reader reads {supported})")]
    Version {
        /// The object.
        what: &'static str,
        /// Its version.
        version: i32,
        /// What is supported.
        supported: &'static str,
    },
    /// A count or length that cannot be true.
    #[error("{what} is {value}, which {why}")]
    BadValue {
        /// The field.
        what: &'static str,
        /// Its value.
        value: i64,
        /// Why it is wrong.
        why: &'static str,
    },
    /// A node record of the graph's blob is damaged.
    #[error("node {node}: {why}")]
    BadNode {
        /// The node's index.
        node: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// A graph given to the writer or builder is inconsistent.
    #[error("invalid graph: {0}")]
    InvalidGraph(String),
    /// Reading or writing the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    pub(crate) fn at(offset: usize, kind: ErrorKind) -> Error {
        Error {
            offset: offset as u64,
            kind,
        }
    }
}
