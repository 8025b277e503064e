//! The state of a walk through one event block: how its event headers are encoded, the header
//! decoded last (the base of the next compressed one) and where the next event starts. Shared
//! by the checked decoder and the compressed-header fast path.

use crate::value::Guid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventEncoding {
    /// NetPerf: fixed header, inline stack, 4-byte aligned.
    V3,
    /// V4/V5 uncompressed headers.
    V5Plain,
    /// V4/V5 compressed headers.
    V5Compressed,
    /// V6 uncompressed headers.
    V6Plain,
    /// V6 compressed headers.
    V6Compressed,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RawHeader {
    pub(super) metadata_id: u32,
    pub(super) sequence: u32,
    pub(super) thread: u64,
    pub(super) capture_thread: u64,
    pub(super) processor: u32,
    pub(super) stack_id: u32,
    pub(super) timestamp: i64,
    pub(super) activity: Guid,
    pub(super) related: Guid,
    pub(super) label_list: u32,
    pub(super) payload_size: u32,
    pub(super) is_sorted: bool,
}

/// Iteration state inside one event block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockIter {
    pub(super) encoding: EventEncoding,
    /// Position of the next event within the block.
    pub(crate) pos: usize,
    /// The event decoded last (its header is also the base of the next compressed header).
    pub(crate) cur: RawEvent,
}

/// One decoded event header with its payload position inside the block.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawEvent {
    pub(super) h: RawHeader,
    pub(super) offset: u64,
    pub(super) payload_start: usize,
    /// V3 inline stack range in the block.
    pub(super) inline_stack: Option<(usize, usize)>,
}
